"""``perfsuite export --format FORMAT RUN_OR_STORE``: a run directory, or a run kept in a
results history (a store URL, ``--run`` picks which), in github-action-benchmark's,
Bencher's (BMF) or Conbench's JSON; to stdout, or to ``--out``. Exit 2 on a run that cannot
be read."""

from __future__ import annotations

import json
import sys
from contextlib import closing
from pathlib import Path

from perfsuite.cli import EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.history.exports import FORMATS, MEASURES, export
from perfsuite.store.baseline import BaselineError
from perfsuite.store.database import StoreError, open_history
from perfsuite.store.files import read_run
from perfsuite.writing import NotWritable, atomic_write_text, check_writable_dir

INPUT_ERRORS: tuple[type[Exception], ...] = ()


def cmd_export(args) -> int:
    try:
        if args.out:
            check_writable_dir(args.out.parent, "--out's folder")
        if "://" in args.run:
            with closing(open_history(args.run)) as store:
                run = store.load_run(args.run_key)
        else:
            run = read_run(Path(args.run))
    except (BaselineError, NotWritable, StoreError) as exc:
        print(f"perfsuite export: {exc}", file=sys.stderr)
        return EXIT_USAGE
    text = json.dumps(export(run, args.format, args.measure), indent=1) + "\n"
    if args.out:
        atomic_write_text(args.out, text)
        print(f"{args.format}: {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


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
        default="latency",
        help="github-action-benchmark: latency p50 (customSmallerIsBetter, the default) or "
        "throughput (customBiggerIsBetter)",
    )
    p.add_argument("--out", type=Path, help="file to write (default: stdout)")
    p.set_defaults(func=cmd_export)
