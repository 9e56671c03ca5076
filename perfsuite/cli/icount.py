"""``perfsuite icount``: instruction counts of the kernel points under valgrind, saved or
compared with a saved set at a tight threshold; exit 1 when a count grew past it."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import ValidationError

from perfsuite import records
from perfsuite.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.execute import instructions as ic
from perfsuite.gate.judge import judge_counts
from perfsuite.options import csv, output_file
from perfsuite.writing import atomic_write_text

INPUT_ERRORS: tuple[type[Exception], ...] = ()


def _saved_counts(path: Path) -> dict[str, int]:
    try:
        return records.IcountFile.model_validate_json(Path(path).read_bytes()).counts
    except (OSError, ValidationError) as exc:
        why = records.one_line(exc) if isinstance(exc, ValidationError) else exc
        raise ValueError(f"{path}: not a perfsuite icount file ({why})") from None


def cmd_icount(args) -> int:
    problem = ic.unavailable()
    base = None
    try:
        if problem:
            raise ValueError(problem)
        if args.against:
            base = _saved_counts(args.against)
        known = {p.id: p for p in ic.POINTS}
        wanted = args.points or list(known)
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise ValueError(f"unknown point(s) {', '.join(unknown)}; valid: {', '.join(known)}")
        if not 0 < args.threshold < 1:
            raise ValueError(f"--threshold {args.threshold}: use a fraction, e.g. 0.01")
    except ValueError as exc:
        print(f"perfsuite icount: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        counts = ic.count_all([known[w] for w in wanted], block=args.block or "")
    except RuntimeError as exc:  # valgrind or the --block code failed: one line
        print(f"perfsuite icount: {str(exc).splitlines()[-1]}", file=sys.stderr)
        return EXIT_FAIL
    if args.save:
        atomic_write_text(Path(args.save), ic.dump(counts) + "\n")
        print(f"saved: {args.save}")
    if base is None:
        for pid, n in counts.items():
            print(f"{pid:<24} {n:>16,d} instructions ({ic.ISA}, valgrind)")
        return EXIT_OK
    rows = judge_counts({k: v for k, v in base.items() if k in counts}, counts, args.threshold)
    print("\n".join(ic.table(rows)))
    return EXIT_FAIL if any(r[4] == "regressed" for r in rows) else EXIT_OK


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "icount")
    p.add_argument(
        "--points", type=csv("kernel points"), help="kernel points, comma-separated (default: all)"
    )
    p.add_argument("--save", type=output_file, help="write the counts here (JSON)")
    p.add_argument("--against", type=Path, help="a saved counts file: gate the counts against it")
    p.add_argument(
        "--threshold",
        type=float,
        default=0.01,
        help="relative growth that is a regression (default: 0.01)",
    )
    p.add_argument(
        "--block",
        help="Python run after the default blocking is made, to count a changed kernel "
        "setting, e.g. 'blk = kernels.Blocking(blk.kc_l1 // 2, blk.mc_l2, blk.nc_l3)'",
    )
    p.set_defaults(func=cmd_icount)
