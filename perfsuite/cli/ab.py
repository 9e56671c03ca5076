"""``perfsuite ab --a PY --b PY``: relative runs, the same points from two interpreters or
venvs, interleaved; B gated against A on the per-round ratios."""

from __future__ import annotations

import datetime
import shutil
import sys
from pathlib import Path

from perfsuite.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.gate.paired import looks
from perfsuite.gate.statistics import GateConfig
from perfsuite.host.fingerprint import fingerprint
from perfsuite.host.topology import read_topology
from perfsuite.kernels import cpu_features
from perfsuite.options import add_options, profile_overrides
from perfsuite.records import mode_kind
from perfsuite.sweep import ab, ab_report
from perfsuite.sweep.declared import check_declared, declare_for_run
from perfsuite.sweep.plan import (
    PlanError,
    expand,
    load_profiles,
    require_points,
    select_profile,
)
from perfsuite.text import terminal_line
from perfsuite.writing import NotWritable, check_writable_dir

INPUT_ERRORS: tuple[type[Exception], ...] = ()


def _env_pairs(values: list[str] | None, flag: str) -> dict:
    out = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} {v!r}: use KEY=VALUE")
        out[key] = val
    return out


def cmd_ab(args) -> int:
    """Exit 1 when a point regressed or failed (the rest: the module's docstring)."""
    try:
        sides = []
        for name in ("a", "b"):
            py = getattr(args, name)
            exe = shutil.which(py) or (py if Path(py).is_file() else None)
            if exe is None:
                raise ValueError(f"--{name} {py}: no such interpreter")
            sides.append(
                ab.Arm(name, exe, _env_pairs(getattr(args, f"{name}_env"), f"--{name}-env"))
            )
        if args.rounds < 3:
            raise ValueError(f"--rounds {args.rounds}: at least 3 rounds are needed to judge")
        if args.turns < 0 or not 0 < args.turn_time <= 60:
            raise ValueError(f"--turns {args.turns} --turn-time {args.turn_time}: use turns "
                             ">= 0 (0: none) and 0 < turn time <= 60 s")  # fmt: skip
        most = 4 * args.rounds if args.max_rounds is None else args.max_rounds
        if most < args.rounds:
            raise ValueError(f"--max-rounds {most}: fewer than --rounds {args.rounds}")
        overrides = profile_overrides(lambda key: getattr(args, key), "ab")
        overrides = declare_for_run(
            Path("pyproject.toml"), args.config, args.model, args.dims, overrides
        )
        profile = select_profile(
            load_profiles(Path("pyproject.toml"), args.config), args.profile, overrides
        )
        check_declared(profile.models, max(profile.batch))
        cfg = GateConfig(threshold=args.threshold, alpha=args.alpha)
        check_writable_dir(args.out, "--out")
    except (ValueError, PlanError, NotWritable) as exc:
        print(f"perfsuite ab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        planned = expand(profile, read_topology("/"), bf16=bool(cpu_features().get("avx512_bf16")))
        planned = require_points(profile, planned)
    except PlanError as exc:
        print(f"perfsuite ab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    points = [p for p in planned if not (p.skip or p.spark or p.shards)
              and mode_kind(p.mode) == "window"]  # fmt: skip
    for p in planned:
        if p.skip:
            print(terminal_line(f"skip {p.id}: {p.skip}"))
        elif mode_kind(p.mode) != "window":
            print(f"skip {p.id}: {p.mode} points are not compared in turns (use the sweep's gate)")
        elif p.shards:
            print(f"skip {p.id}: a turn is one process a side; shards run one per shard")
    if not points:
        print(
            f"perfsuite ab: profile {profile.name!r} plans no point that runs in turns "
            "(every point is skipped, above, or a LoadGen/decode/Spark point)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    protocol = profile.protocol(sessions=1)  # the rounds are the repetitions
    print(f"A: {sides[0].describe()}\nB: {sides[1].describe()}")
    plan = looks(args.rounds, most, cfg.alpha)
    at = ", ".join(str(n) for n in plan.rounds)
    print(f"{len(points)} point(s): looks after {at} rounds (a point stops once decided), "
          "A and B alternating first, fresh processes")  # fmt: skip
    result, verdicts = ab.run_sequential(
        points, protocol, *sides, plan, cfg, timeout=profile.timeout,
        progress=_progress if args.verbose else None, on_look=_look, turns=args.turns,
        turn_s=args.turn_time,
    )  # fmt: skip
    fp = fingerprint("/")
    run_dir = Path(args.out) / f"{datetime.datetime.now():%Y%m%d-%H%M%S}-ab"
    # written aside and renamed into place: its outputs appear together or not at all
    partial = run_dir.with_name(f".{run_dir.name}.partial")
    try:
        ab.write(partial, result, points, fp, profile.as_dict(), verdicts)
        ab_report.write(partial, verdicts, sides[0].describe(), sides[1].describe(),
                        fp.hardware_class)  # fmt: skip
        partial.rename(run_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    head = f"{'verdict':<10} {'B/A-1':>8} {'95% CI':>19} {'p (Holm)':>9} {'alpha':>7} rounds"
    print(f"{head}  benchmark")
    for v in verdicts:
        if v.change is None:
            print(f"{v.verdict:<10} {'':>8} {'':>19} {'':>9} {'':>7} {v.rounds:>6}  {v.id}  "
                  f"{v.reason}")  # fmt: skip
            continue
        ci = f"[{v.ci[0]:+.1%}, {v.ci[1]:+.1%}]"
        print(f"{v.verdict:<10} {v.change:>+8.1%} {ci:>19} {v.p_value:>9.2g} {v.alpha:>7.2g} "
              f"{v.rounds:>6}  {v.id}" + (f"  ({v.reason})" if v.reason else ""))  # fmt: skip
    print(f"results: {run_dir}/a, {run_dir}/b, {run_dir}/ab.json, {run_dir}/ab.html")
    bad = [v for v in verdicts if v.verdict in ("regressed", "error")]
    return EXIT_FAIL if bad else EXIT_OK


def _look(k: int, rounds: int, alpha: float, verdicts) -> None:
    pending = sum(v.verdict == "pending" for v in verdicts)
    print(f"look {k} after {rounds} rounds (alpha {alpha:.2g}): "
          f"{len(verdicts) - pending} decided, {pending} pending", flush=True)  # fmt: skip


def _progress(r: int, pid: str) -> None:
    print(f"round {r + 1}: {pid}", flush=True)


# How the rounds go: flag, type, default, help.
ROUNDS = (
    ("--rounds", int, 5, "rounds per look: a point is judged after these and after every as "
     "many more (default: 5)"),
    ("--max-rounds", int, None, "rounds at most for a point that stays undecided; equal to "
     "--rounds for a fixed number (default: 4 x --rounds)"),
    ("--turns", int, 24, "call-interleaved rounds: both sides' processes stay open and take "
     "this many turns each (0: each side measures its whole window in turn; default: 24)"),
    ("--turn-time", float, 0.01, "seconds of calls per turn, at least one call (default: "
     "0.01, so one call of a ResNet-50, tens of a sub-ms model)"),
)  # fmt: skip


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "ab")
    for side, what in (("a", "the reference"), ("b", "the change")):
        p.add_argument(
            f"--{side}", required=True, metavar="PYTHON",
            help=f"side {side.upper()}'s interpreter ({what})",
        )  # fmt: skip
    for side in ("a", "b"):
        p.add_argument(
            f"--{side}-env", action="append", metavar="KEY=VALUE",
            help=f"environment for {side.upper()}'s processes (repeatable)",
        )  # fmt: skip
    for flag, kind, default, text in ROUNDS:
        p.add_argument(flag, type=kind, default=default, help=text)
    add_options(p.add_argument, "ab")  # --profile, --config, --models, ..., --threshold, --out
    p.add_argument("--verbose", action="store_true", help="print each measurement as it ends")
    p.set_defaults(func=cmd_ab)
