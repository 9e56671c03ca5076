"""``perfsuite qualify``: this server against its SKU reference (or, for a class with none, on
what needs no reference); with ``--spark-master``, every executor host of a Spark cluster and
the fleet table. Exit 1 on any FAIL, 2 on a reference that cannot apply."""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

from perfsuite import records
from perfsuite.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.cli.tables import fleet_table
from perfsuite.execute.isolation import WorkerError
from perfsuite.fleet import scoring as fleet
from perfsuite.fleet.fan_out import FleetUsageError, clock_line
from perfsuite.fleet.qualification import qualify_fleet
from perfsuite.host.fingerprint import fingerprint
from perfsuite.options import add_options, output_dir, output_file
from perfsuite.prepare.backends import software_versions
from perfsuite.qualify import checks as qualify
from perfsuite.qualify.here import qualify_here
from perfsuite.store import StoreError, open_importer
from perfsuite.text import finite_json, terminal_line
from perfsuite.writing import NotWritable, atomic_write_text, check_writable_dir, write_json

INPUT_ERRORS = (StoreError, fleet.FleetError, qualify.QualifyError, NotWritable, FleetUsageError)


def _error(message: str, code: int = EXIT_USAGE) -> int:
    print(f"perfsuite qualify: {message}", file=sys.stderr)
    return code


def cmd_qualify(args) -> int:
    """Qualify this server (see the module docstring)."""
    t0 = time.perf_counter()
    fp = fingerprint("/", frameworks=software_versions())
    if args.save_reference and args.reference:
        return _error("--save-reference and --reference exclude each other")
    if args.save_reference and args.quick:
        return _error("--save-reference needs full measurements; drop --quick")
    if args.repeats < 1:
        return _error(f"--repeats must be >= 1, got {args.repeats}")
    if args.spark_master:
        return cmd_qualify_fleet(args)
    check_writable_dir(args.out, "--out")  # before minutes of measuring, not after
    if args.save_reference:
        check_writable_dir(Path(args.save_reference).parent, "--save-reference's folder")
        if Path(args.save_reference).is_dir():
            raise NotWritable(f"--save-reference {args.save_reference} is a directory")
    report, runs = qualify_here(
        quick=args.quick,
        reference=None
        if args.no_reference or args.save_reference
        else qualify.load_reference(args.reference, fp.hardware_class),
        repeats=args.repeats if args.save_reference else 1,
        inference=(args.out, args.baseline, args.inference_profile) if args.inference else None,
        fp=fp,
    )
    ref, result = report.reference, report.verdict
    for c in report.checks:
        print(
            f"{c.status:<5} {c.group:<10} {c.name:<48} measured {c.measured!s:<22} "
            f"expected {c.expected!s:<18} {c.detail}"
        )
    for claim in report.claims:
        print(terminal_line(claim.line()))
    elapsed = time.perf_counter() - t0
    against = f"'{ref.sku}'" if ref else "no reference (checks that need one are WARN)"
    print(f"qualification of {fp.hardware_class} against {against}: {result} ({elapsed:.0f} s)")
    out = Path(args.out)
    write_json(out / "qualification.json", records.dump(report))
    page = qualify.html(report.checks, f"qualification of {fp.hardware_class}", report.claims)
    atomic_write_text(out / "qualification.html", page)
    print(f"reports: {out / 'qualification.json'}, {out / 'qualification.html'}")
    if args.save_reference:
        if result == "FAIL":
            print(
                "reference NOT saved: this host fails checks that need no reference",
                file=sys.stderr,
            )
            return EXIT_FAIL
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        new_ref = qualify.make_reference(fp, runs, when=when)
        text = finite_json(records.dump(new_ref), indent=1) + "\n"
        atomic_write_text(Path(args.save_reference), text)
        print(f"reference saved: {args.save_reference} ({new_ref.source})")
    return EXIT_FAIL if result == "FAIL" else EXIT_OK


def cmd_qualify_fleet(args) -> int:
    """``qualify --spark-master URL --hosts N``: one qualification per executor host, reports
    per host under --out and in the results history, and the fleet table; exit 1 when a host
    fails its checks, has no report, or fails the fleet rules."""
    if args.save_reference or args.inference:
        return _error(
            "--spark-master runs the hardware checks on each host; "
            "--save-reference and --inference are for one host (use `perfsuite db fleet "
            "--save-reference` for a fleet reference)"
        )
    check_writable_dir(args.out, "--out")
    open_importer(args.store).close()  # a bad store URL is a usage error before anything runs
    ref = qualify.load_reference(args.reference, None) if args.reference else None
    try:
        run = qualify_fleet(
            args.spark_master,
            args.hosts,
            out=args.out,
            host_cores=args.host_cores,
            quick=args.quick,
            reference=ref,
            no_reference=args.no_reference,
            store_url=args.store,
        )
    except WorkerError as exc:
        return _error(str(exc), EXIT_FAIL)
    by_class: dict = {}
    for host, report in sorted(run.reports.items()):
        cls = report.fingerprint.hardware_class
        by_class.setdefault(cls, {})[host] = report
        print(terminal_line(f"{host}: {cls}: {report.verdict} ({run.written[host]})"))
    for host, why in sorted(run.errors.items()):
        print(terminal_line(f"{host}: no report: {why}"))  # a Spark worker's words
    for host, offset in sorted(run.clock_offsets.items()):
        print(terminal_line(f"{host}: {clock_line(offset)}; its report keeps the host's time"))
    failed = bool(run.errors) or any(r.verdict == "FAIL" for r in run.reports.values())
    rules = fleet.load_rules(None)
    tabled = False
    for cls, reports in sorted(by_class.items()):
        if len(reports) < 2:
            print(terminal_line(f"fleet of {cls}: 1 host, nothing to score against"))
            continue
        scores = fleet.score(
            {h: fleet.metrics(records.dump(r.measurements)) for h, r in reports.items()}, rules, cls
        )
        fleet_table(scores, {h: r.verdict for h, r in reports.items()}, run.errors)
        tabled = True
        failed |= any(s.verdict == "FAIL" for s in scores)
    if run.errors and not tabled:
        fleet_table([], {}, run.errors)
    return EXIT_FAIL if failed else EXIT_OK


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "qualify")
    p.add_argument(
        "--no-reference",
        action="store_true",
        help="ignore shipped references: judge only what needs none (as for a class with none)",
    )
    p.add_argument(
        "--save-reference",
        type=output_file,
        metavar="FILE",
        help="measure --repeats times and write a reference for this class from the medians "
        "(use on a known-good host)",
    )
    p.add_argument(
        "--repeats", type=int, default=3, help="measurement runs for --save-reference (default: 3)"
    )
    p.add_argument(
        "--reference",
        type=Path,
        help="reference JSON (default: the shipped one for this hardware class)",
    )
    p.add_argument(
        "--out",
        type=output_dir,
        default=Path("qualification"),
        help="directory for the JSON and HTML reports (default: qualification)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smaller arrays and fewer repeats (seconds instead of a minute)",
    )
    p.add_argument(
        "--inference",
        action="store_true",
        help="also run the inference sweep, gated against --baselines (default: off; minutes)",
    )
    p.add_argument(
        "--inference-profile",
        default="qualification",
        help="sweep profile for --inference (default: qualification)",
    )
    add_options(p.add_argument, "qualify")  # --spark-master, --baseline(s), --store, --hosts...
    p.set_defaults(func=cmd_qualify)
