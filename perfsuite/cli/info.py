"""``perfsuite info``: the host fingerprint, as a table or as JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from perfsuite.cli import EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.host.fingerprint import fingerprint
from perfsuite.prepare.backends import software_versions
from perfsuite.records import Fingerprint, NumaNodeFact
from perfsuite.text import finite_json

INPUT_ERRORS: tuple[type[Exception], ...] = ()


def _fmt_field(key: str, value) -> str:
    if value is None:
        return "not installed" if key.startswith("software.") else "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_bytes") and isinstance(value, int):
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if value >= scale:
                return f"{value / scale:.4g} {unit}"
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            nodes = [NumaNodeFact.model_validate(n) for n in value]
            return "; ".join(
                f"node{n.node}: cpus {n.cpus or '-'}, "
                + (f"{n.mem_total_bytes / 2**30:.1f} GiB" if n.mem_total_bytes else "mem ?")
                for n in nodes
            )
        return " | ".join(str(v) for v in value)
    return str(value)


def print_info(fp: Fingerprint) -> None:
    console = Console()
    table = Table(title=f"perfsuite host fingerprint - class {fp.hardware_class}")
    table.add_column("field")
    table.add_column("value")
    table.add_column("class", style="dim")
    isa = [k[4:] for k, v in fp.fields.items() if k.startswith("isa.") and v]
    for key, value in fp.fields.items():
        if not key.startswith("isa."):
            table.add_row(key, _fmt_field(key, value), fp.classes.get(key, ""))
    table.add_row("isa (flags present)", ", ".join(isa) or "none", "must_match")
    console.print(table)
    for note in fp.notes or []:
        console.print(f"note: {note}", style="yellow")


def cmd_info(args) -> int:
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
        print(finite_json(fp.as_dict(), indent=2))
    else:
        print_info(fp)
    return EXIT_OK


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "info")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--root", default="/", help="read sysfs/procfs below this directory (default: /)"
    )
    p.set_defaults(func=cmd_info)
