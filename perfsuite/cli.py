"""The ``perfsuite`` command: ``perfsuite info | compare | qualify | sweep | db``.

Exit codes, the same for every subcommand: 0 pass; 1 a regression (compare) or a FAIL
(qualify); 2 a usage or input error (bad option, unreadable or invalid file, output location
that cannot take files), one line on stderr; 3 an internal error (a bug: one line, and the
traceback with PERFSUITE_DEBUG=1)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from perfsuite import cli_db, cli_runs
from perfsuite.host.fingerprint import FIELD_CLASSES, fingerprint
from perfsuite.options import add_gate_options, add_store_option


def _fmt(value) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            return "; ".join(
                f"node{n['node']}: cpus {n['cpus'] or '-'}, "
                + (f"{n['mem_total_bytes'] / 2**30:.1f} GiB" if n["mem_total_bytes"] else "mem ?")
                for n in value
            )
        return " | ".join(str(v) for v in value)
    return str(value)


def _fmt_field(key: str, value) -> str:
    if key.startswith("software.") and value is None:
        return "not installed"
    if key.endswith("_bytes") and isinstance(value, int):
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if value >= scale:
                return f"{value / scale:.4g} {unit}"
    return _fmt(value)


def print_info(fp: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"perfsuite host fingerprint - class {fp['hardware_class']}")
    table.add_column("field")
    table.add_column("value")
    table.add_column("class", style="dim")
    isa = [k[4:] for k, v in fp["fields"].items() if k.startswith("isa.") and v]
    for key, value in fp["fields"].items():
        if key.startswith("isa."):
            continue
        table.add_row(key, _fmt_field(key, value), fp["classes"].get(key, ""))
    table.add_row("isa (flags present)", ", ".join(isa) or "none", "must_match")
    console.print(table)
    for note in fp["notes"]:
        console.print(f"note: {note}", style="yellow")


def cmd_info(args) -> int:
    from perfsuite.prepare.backends import software_versions

    root = Path(args.root)
    if not root.is_dir():
        print(f"perfsuite info: --root {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if not (root / "proc" / "cpuinfo").is_file() and not (root / "sys" / "devices").is_dir():
        print(
            f"perfsuite info: --root {root} holds no host tree (proc/cpuinfo or sys/devices)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    fp = fingerprint(args.root, frameworks=software_versions())
    if args.json:
        json.dump(fp, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_info(fp)
    return 0


def cmd_compare(args) -> int:
    """Gate offline: BASELINE and CURRENT are baseline files or run directories."""
    from perfsuite.files import NotWritable, check_writable_dir
    from perfsuite.gate.config import GateConfigError, load_gate_config
    from perfsuite.gate.engine import evaluate, load_results
    from perfsuite.gate.report import terminal, write_all
    from perfsuite.store.baseline import BaselineError

    config = args.config
    if config is None and Path("pyproject.toml").is_file():
        config = Path("pyproject.toml")
    try:
        if args.report:
            check_writable_dir(args.report, "--report")
        cfg = load_gate_config(config, args.threshold, args.alpha)
        base, cur = load_results(args.baseline), load_results(args.current)
    except (BaselineError, GateConfigError, NotWritable) as exc:
        print(f"perfsuite compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    comparison = evaluate(base, cur, cfg)
    terminal(print, comparison, base.source, cur.source)
    if args.report:
        paths = write_all(args.report, comparison, base, cur, args.fail_on)
        print("reports: " + ", ".join(str(p) for p in paths.values()))
    failing = comparison.failing(args.fail_on)
    if failing:
        print(
            f"GATE FAILED (--fail-on={args.fail_on}): "
            + ", ".join(f"{v.id} {v.verdict}" for v in failing)
        )
        print("(offline comparison: regressions are not re-measured, so not confirmed)")
        return 1
    return 0


def cmd_qualify(args) -> int:
    """Qualify this server against its SKU reference (or, for a class with none, on what needs
    no reference); exit 1 on any FAIL, 2 on a reference that cannot apply."""
    import datetime
    import time

    from perfsuite.files import atomic_write_text
    from perfsuite.host.fingerprint import fingerprint
    from perfsuite.qualify import checks as qualify

    t0 = time.perf_counter()
    from perfsuite.prepare.backends import software_versions

    fp = fingerprint("/", frameworks=software_versions())
    if args.save_reference and args.reference:
        print(
            "perfsuite qualify: --save-reference and --reference exclude each other",
            file=sys.stderr,
        )
        return 2
    if args.save_reference and args.quick:
        print(
            "perfsuite qualify: --save-reference needs full measurements; drop --quick",
            file=sys.stderr,
        )
        return 2
    if args.repeats < 1:
        print(f"perfsuite qualify: --repeats must be >= 1, got {args.repeats}", file=sys.stderr)
        return 2
    if args.spark_master:
        return cli_runs.cmd_qualify_fleet(args)
    from perfsuite.files import NotWritable, check_writable_dir

    try:  # before minutes of measuring, not after
        check_writable_dir(args.out, "--out")
        if args.save_reference:
            check_writable_dir(Path(args.save_reference).parent, "--save-reference's folder")
            if Path(args.save_reference).is_dir():
                raise NotWritable(f"--save-reference {args.save_reference} is a directory")
    except NotWritable as exc:
        print(f"perfsuite qualify: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from perfsuite.qualify.here import qualify_here

    try:
        report, checks, runs = qualify_here(
            quick=args.quick,
            reference=None
            if args.no_reference or args.save_reference
            else qualify.load_reference(args.reference, fp["hardware_class"]),
            repeats=args.repeats if args.save_reference else 1,
            inference=(args.out, args.baselines, args.inference_profile)
            if args.inference
            else None,
            fp=fp,
        )
    except qualify.QualifyError as exc:
        print(f"perfsuite qualify: {exc}", file=sys.stderr)
        return 2
    ref, result = report["reference"], report["verdict"]
    for c in checks:
        print(
            f"{c.status:<5} {c.group:<10} {c.name:<48} measured {c.measured!s:<22} "
            f"expected {c.expected!s:<18} {c.detail}"
        )
    elapsed = time.perf_counter() - t0
    against = f"'{ref['sku']}'" if ref else "no reference (checks that need one are WARN)"
    print(f"qualification of {fp['hardware_class']} against {against}: {result} ({elapsed:.0f} s)")
    out = Path(args.out)
    atomic_write_text(out / "qualification.json", json.dumps(report, indent=1))
    atomic_write_text(
        out / "qualification.html", qualify.html(checks, f"qualification of {fp['hardware_class']}")
    )
    print(f"reports: {out / 'qualification.json'}, {out / 'qualification.html'}")
    if args.save_reference:
        if result == "FAIL":
            print(
                "reference NOT saved: this host fails checks that need no reference",
                file=sys.stderr,
            )
            return 1
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        new_ref = qualify.make_reference(fp, runs, when=when)
        atomic_write_text(Path(args.save_reference), json.dumps(new_ref, indent=1) + "\n")
        print(f"reference saved: {args.save_reference} ({new_ref['source']})")
    return 1 if result == "FAIL" else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfsuite", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print the host fingerprint")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.add_argument(
        "--root", default="/", help="read sysfs/procfs below this directory (default: /)"
    )
    info.set_defaults(func=cmd_info)
    cmp_ = sub.add_parser("compare", help="gate CURRENT against BASELINE (files or run dirs)")
    cmp_.add_argument("baseline", type=Path, help="baseline JSON or perfsuite run directory")
    cmp_.add_argument("current", type=Path, help="baseline JSON or perfsuite run directory")
    add_gate_options(cmp_.add_argument, "--", fail_on_default="regression")
    cmp_.add_argument(
        "--config",
        type=Path,
        default=None,
        help="TOML file whose [tool.perfsuite.gate] configures the gate, as the plugin reads "
        "it from the project's pyproject.toml (default: ./pyproject.toml if it exists)",
    )
    cmp_.add_argument(
        "--report",
        type=Path,
        default=None,
        help="write gate.md, gate-junit.xml and gate.html here (default: none)",
    )
    cmp_.set_defaults(func=cmd_compare)
    q = sub.add_parser("qualify", help="qualify this server against its SKU reference")
    q.add_argument(
        "--no-reference",
        action="store_true",
        help="ignore shipped references: judge only what needs none (as for a class with none)",
    )
    q.add_argument(
        "--save-reference",
        type=Path,
        default=None,
        metavar="FILE",
        help="measure --repeats times and write a reference for this class from the medians "
        "(use on a known-good host)",
    )
    q.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="measurement runs for --save-reference (default: 3)",
    )
    q.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="reference JSON (default: the shipped one for this hardware class)",
    )
    q.add_argument(
        "--out",
        type=Path,
        default=Path("qualification"),
        help="directory for the JSON and HTML reports (default: qualification)",
    )
    q.add_argument(
        "--quick",
        action="store_true",
        help="smaller arrays and fewer repeats (seconds instead of a minute)",
    )
    q.add_argument(
        "--inference",
        action="store_true",
        help="also run the inference sweep, gated against --baselines (default: off; minutes)",
    )
    q.add_argument(
        "--inference-profile",
        default="qualification",
        help="sweep profile for --inference (default: qualification)",
    )
    q.add_argument(
        "--baselines",
        type=Path,
        default=Path("baselines"),
        help="baseline directory for --inference (default: baselines)",
    )
    q.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="qualify the executor hosts of this Spark cluster instead of this machine "
        "(spark://host:7077, yarn, k8s://...) (default: off)",
    )
    cli_runs.fleet_options(q)
    add_store_option(q.add_argument, "--")
    q.set_defaults(func=cmd_qualify)
    cli_runs.add_parsers(sub)
    cli_db.add_parser(sub)
    return parser


EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def main(argv: list[str] | None = None) -> int:
    import os

    args = build_parser().parse_args(argv)  # usage errors: argparse exits 2
    from perfsuite import kernels

    problem = kernels.forced_isa_problem()
    if problem:
        print(f"perfsuite: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except cli_db.input_errors() as exc:  # bad input to perfsuite db: one line
        print(f"perfsuite {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("perfsuite: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line, not a traceback, and a code of its own
        if os.environ.get("PERFSUITE_DEBUG"):
            raise
        name = getattr(args, "func", None).__name__.removeprefix("cmd_")
        print(
            f"perfsuite {name}: internal error: {exc.__class__.__name__}: {exc} "
            "(PERFSUITE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "FIELD_CLASSES"]
