"""``perfsuite compare BASELINE CURRENT``: the gate, offline, on baseline files or run
directories; exit 1 on a failing verdict (regressions are not re-measured here)."""

from __future__ import annotations

from pathlib import Path

from perfsuite.cli import EXIT_FAIL, EXIT_OK, add_verb
from perfsuite.gate.config import GateConfigError, load_gate_config
from perfsuite.gate.judge import judge
from perfsuite.gate.report import render, terminal
from perfsuite.options import add_options
from perfsuite.store.baseline import BaselineError
from perfsuite.sweep.compare import load_sides
from perfsuite.sweep.gate_files import write_reports
from perfsuite.writing import NotWritable, check_writable_dir

INPUT_ERRORS: tuple[type[Exception], ...] = (BaselineError, GateConfigError, NotWritable)


def cmd_compare(args) -> int:
    """Gate offline: BASELINE is a baseline file, a run directory or a store URL; CURRENT a
    baseline file or a run directory."""
    config = args.config or (Path("pyproject.toml") if Path("pyproject.toml").is_file() else None)
    if args.report:
        check_writable_dir(args.report, "--report")
    cfg = load_gate_config(config, args.threshold, args.alpha)
    base, cur = load_sides(args.baseline, args.current)
    comparison = judge(base, cur, cfg)
    terminal(print, comparison, base.source, cur.source)
    if args.report:
        paths = write_reports(args.report, render(comparison, base, cur, args.fail_on))
        print("reports: " + ", ".join(str(p) for p in paths.values()))
    if failing := comparison.failing(args.fail_on):
        names = ", ".join(f"{v.id} {v.verdict}" for v in failing)
        print(f"GATE FAILED (--fail-on={args.fail_on}): {names}")
        print("(offline comparison: regressions are not re-measured, so not confirmed)")
        return EXIT_FAIL
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "compare")
    p.add_argument(
        "baseline",
        help="baseline JSON, perfsuite run directory, or a store URL (a baselines folder, "
        "sqlite:///FILE, postgresql+psycopg://...) holding the current run's class and profile",
    )
    p.add_argument("current", type=Path, help="baseline JSON or perfsuite run directory")
    add_options(p.add_argument, "compare")
    p.add_argument(
        "--config",
        type=Path,
        help="TOML file whose [tool.perfsuite.gate] configures the gate, as the plugin reads "
        "it from the project's pyproject.toml (default: ./pyproject.toml if it exists)",
    )
    p.add_argument(
        "--report",
        type=Path,
        help="write gate.md, gate-junit.xml and gate.html here (default: none)",
    )
    p.set_defaults(func=cmd_compare)
