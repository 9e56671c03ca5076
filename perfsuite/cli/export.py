"""``perfsuite export --format FORMAT RUN_OR_STORE``: a run directory, or a run kept in a
results history (a store URL, ``--run`` picks which), in github-action-benchmark's,
Bencher's (BMF) or Conbench's JSON; to stdout, or to ``--out``. Exit 2 on a run that cannot
be read."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

from perfsuite.cli import EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.history.exports import FORMATS, MEASURES, ExportError, export
from perfsuite.options import output_file
from perfsuite.records import Provenance
from perfsuite.store import StoreError, open_queries
from perfsuite.store.baseline import BaselineError
from perfsuite.store.files import read_run
from perfsuite.text import NotFinite, finite_json
from perfsuite.writing import atomic_write_text

INPUT_ERRORS: tuple[type[Exception], ...] = ()


def cmd_export(args) -> int:
    try:
        if args.measure and args.format != "github-action-benchmark":
            raise BaselineError(
                f"--measure applies to github-action-benchmark, not {args.format} "
                "(its file holds every measure)"
            )
        if (args.repository or args.commit) and args.format != "conbench":
            raise BaselineError(f"--repository/--commit apply to conbench, not {args.format}")
        if "://" in args.run:
            with closing(open_queries(args.run)) as store:
                run = store.load_run(args.run_key)
        elif args.run_key is not None:
            raise BaselineError("--run picks a run in a store URL; a run directory is one run")
        else:
            run = read_run(Path(args.run))
        source = _source(run, args)
        doc = export(run, args.format, args.measure or "latency", source)
        text = finite_json(doc, indent=1) + "\n"
    except (BaselineError, StoreError, ExportError, NotFinite) as exc:
        print(f"perfsuite export: {exc}", file=sys.stderr)
        return EXIT_USAGE
    atomic_write_text(args.out or Path("-"), text)
    if args.out and str(args.out) != "-":
        print(f"{args.format}: {args.out}")
    return EXIT_OK


def _source(run, args) -> Provenance | None:
    """The run's provenance with --repository/--commit applied (None when neither is given)."""
    if args.repository is None and args.commit is None:
        return None
    recorded = run.summary.source or Provenance()
    return Provenance.model_validate(  # validated: a token in the URL is dropped
        recorded.model_dump() | {"repository": args.repository or recorded.repository,
                                 "commit": args.commit or recorded.commit}
    )  # fmt: skip


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "export")
    p.add_argument(
        "run",
        metavar="RUN_OR_STORE",
        help="a run directory (or its summary.json), or a results history's URL "
        "(sqlite:///FILE, postgresql+psycopg://...)",
    )
    p.add_argument(
        "--run",
        dest="run_key",
        metavar="KEY",
        help="with a store URL: the run's id or key prefix (default: the newest)",
    )
    p.add_argument("--format", required=True, choices=FORMATS, help="the consumer's format")
    p.add_argument(
        "--measure",
        choices=MEASURES,
        help="github-action-benchmark: latency p50 (customSmallerIsBetter, the default) or "
        "throughput (customBiggerIsBetter)",
    )
    p.add_argument(
        "--repository",
        metavar="URL",
        help="conbench: the GitHub repository the run measured, where it recorded none or "
        "another (https://github.com/ORG/REPO)",
    )
    p.add_argument("--commit", metavar="SHA", help="conbench: the commit the run measured")
    p.add_argument("--out", type=output_file, help="file to write, - for stdout (default: stdout)")
    p.set_defaults(func=cmd_export)
