"""``perfsuite sweep``, ``perfsuite ab`` and ``perfsuite qualify --spark-master``: runs that
go beyond one measurement on this machine (other hosts through Spark, two environments
side by side). Exit codes as in ``perfsuite.cli``."""

from __future__ import annotations

import sys
from pathlib import Path

from perfsuite import cli_db
from perfsuite.host.fingerprint import fingerprint
from perfsuite.options import add_store_option

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def cmd_qualify_fleet(args) -> int:
    """``qualify --spark-master URL --hosts N``: one qualification per executor host, reports
    per host under --out and in the results history, and the fleet table; exit 1 when a host
    fails its checks, has no report, or fails the fleet rules."""
    from perfsuite.execute.isolation import WorkerError
    from perfsuite.execute.spark_hosts import FleetUsageError
    from perfsuite.files import NotWritable, check_writable_dir
    from perfsuite.qualify import fleet
    from perfsuite.qualify.checks import QualifyError, load_reference
    from perfsuite.qualify.on_spark import qualify_fleet
    from perfsuite.store.database import StoreError, open_history

    if args.save_reference or args.inference:
        print(
            "perfsuite qualify: --spark-master runs the hardware checks on each host; "
            "--save-reference and --inference are for one host (use `perfsuite db fleet "
            "--save-reference` for a fleet reference)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        check_writable_dir(args.out, "--out")
        open_history(args.store)  # a bad store URL is a usage error before anything runs
        ref = load_reference(args.reference, None) if args.reference else None
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
    except (NotWritable, QualifyError, FleetUsageError, StoreError, WorkerError) as exc:
        print(f"perfsuite qualify: {exc}", file=sys.stderr)
        return EXIT_USAGE if not isinstance(exc, WorkerError) else EXIT_FAIL
    for host, report in sorted(run.reports.items()):
        cls = report["fingerprint"]["hardware_class"]
        print(f"{host}: {cls}: {report['verdict']} ({run.written[host]})")
    for host, why in sorted(run.errors.items()):
        print(f"{host}: no report: {why}")
    by_class: dict = {}
    for host, report in run.reports.items():
        by_class.setdefault(report["fingerprint"]["hardware_class"], {})[host] = report
    failed = bool(run.errors) or any(r["verdict"] == "FAIL" for r in run.reports.values())
    rules = fleet.load_rules(None)
    for cls, reports in sorted(by_class.items()):
        if len(reports) < 2:
            print(f"fleet of {cls}: 1 host, nothing to score against")
            continue
        scores = fleet.score(
            {h: fleet.metrics(r["measurements"]) for h, r in reports.items()}, rules, cls
        )
        cli_db.fleet_table(scores, {h: r["verdict"] for h, r in reports.items()})
        failed |= any(s.verdict == "FAIL" for s in scores)
    return EXIT_FAIL if failed else EXIT_OK


def cmd_sweep(args) -> int:
    """``perfsuite sweep --spark-master URL --hosts N``: the profile's points on each executor
    host; a run directory per host under --out, each recorded in the results history, the
    sweep table per host and each point's spread across hosts. Exit 1 when a host or a point
    failed."""
    from perfsuite.execute.isolation import WorkerError
    from perfsuite.execute.spark_hosts import FleetUsageError
    from perfsuite.files import NotWritable, check_writable_dir
    from perfsuite.store.database import StoreError, open_history
    from perfsuite.sweep.on_spark import compare_hosts, sweep_fleet
    from perfsuite.sweep.plan import PlanError, load_profiles, select_profile
    from perfsuite.sweep.report import sweep_table

    try:
        profiles = load_profiles(Path("pyproject.toml"), args.config)
        profile = select_profile(profiles, args.profile, {})
        check_writable_dir(args.out, "--out")
        open_history(args.store)
        fleet = sweep_fleet(
            args.spark_master,
            args.hosts,
            profile,
            out=args.out,
            host_cores=args.host_cores,
            store_url=args.store,
            timeout=args.timeout,
        )
    except (PlanError, NotWritable, StoreError, FleetUsageError) as exc:
        print(f"perfsuite sweep: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WorkerError as exc:
        print(f"perfsuite sweep: {exc}", file=sys.stderr)
        return EXIT_FAIL
    failed = bool(fleet.errors)
    for host in sorted(fleet.records):
        cls = fleet.fingerprints[host]["hardware_class"]
        print(f"== {host} ({cls}): {fleet.runs[host]}")
        sweep_table(print, fleet.records[host], hardware_class=cls)
        for pid, why in sorted(fleet.skipped[host].items()):
            print(f"skipped {pid}: {why}")
        failed |= any(r["status"] != "ok" for r in fleet.records[host])
    for host, why in sorted(fleet.errors.items()):
        print(f"== {host}: no results: {why}")
    if len(fleet.records) > 1:
        print("== across hosts")
        for line in compare_hosts(fleet.records):
            print(line)
    return EXIT_FAIL if failed else EXIT_OK


def _env_pairs(values: list[str] | None, flag: str) -> dict:
    out = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} {v!r}: use KEY=VALUE")
        out[key] = val
    return out


def cmd_ab(args) -> int:
    """``perfsuite ab --a PY --b PY``: interleaved relative runs, B gated against A on the
    per-round ratios; exit 1 when a point regressed or failed."""
    import datetime
    import shutil

    from perfsuite.files import NotWritable, check_writable_dir
    from perfsuite.gate.paired import looks
    from perfsuite.gate.statistics import GateConfig
    from perfsuite.host.topology import read_topology
    from perfsuite.sweep import ab, ab_report
    from perfsuite.sweep.plan import PlanError, expand, load_profiles, select_profile

    try:
        sides = []
        for name in ("a", "b"):
            py = getattr(args, name)
            exe = shutil.which(py) or (py if Path(py).is_file() else None)
            if exe is None:
                raise ValueError(f"--{name} {py}: no such interpreter")
            sides.append(
                ab.Side(name, exe, _env_pairs(getattr(args, f"{name}_env"), f"--{name}-env"))
            )
        if args.rounds < 3:
            raise ValueError(f"--rounds {args.rounds}: at least 3 rounds are needed to judge")
        if args.turns < 0 or not 0 < args.turn_time <= 60:
            raise ValueError(f"--turns {args.turns} --turn-time {args.turn_time}: use turns "
                             ">= 0 (0: none) and 0 < turn time <= 60 s")  # fmt: skip
        most = 4 * args.rounds if args.max_rounds is None else args.max_rounds
        if most < args.rounds:
            raise ValueError(f"--max-rounds {most}: fewer than --rounds {args.rounds}")
        overrides = {
            "models": args.models, "frameworks": args.frameworks, "precisions": args.precisions,
            "threads": args.threads, "numa_nodes": args.numa_nodes, "batch": args.batch,
            "mode": [args.mode] if args.mode else None, "min_time": args.min_time,
        }  # fmt: skip
        profile = select_profile(
            load_profiles(Path("pyproject.toml"), args.config), args.profile, overrides
        )
        cfg = GateConfig(threshold=args.threshold, alpha=args.alpha)
        check_writable_dir(args.out, "--out")
    except (ValueError, PlanError, NotWritable) as exc:
        print(f"perfsuite ab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from perfsuite.kernels import cpu_features

    planned = expand(profile, read_topology("/"), bf16=bool(cpu_features().get("avx512_bf16")))
    points = [p.as_dict() for p in planned if not p.skip and not p.spark]
    for p in planned:
        if p.skip:
            print(f"skip {p.id}: {p.skip}")
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
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.out) / f"{stamp}-ab"
    ab.write(run_dir, result, points, fp["hardware_class"], verdicts)
    ab_report.write(run_dir, verdicts, sides[0].describe(), sides[1].describe(),
                    fp["hardware_class"])  # fmt: skip
    head = f"{'verdict':<10} {'B/A-1':>8} {'95% CI':>19} {'p (Holm)':>9} {'alpha':>7} rounds"
    print(f"{head}  benchmark")
    for v in verdicts:
        if v.change is None:
            print(f"{v.verdict:<10} {'':>8} {'':>19} {'':>9} {'':>7} {v.rounds:>6}  {v.id}  "
                  f"{v.reason}")  # fmt: skip
            continue
        ci = f"[{v.ci[0]:+.1%}, {v.ci[1]:+.1%}]"
        print(f"{v.verdict:<10} {v.change:>+8.1%} {ci:>19} {v.p:>9.2g} {v.alpha:>7.2g} "
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


def fleet_options(p) -> None:
    p.add_argument(
        "--hosts", type=int, default=2, help="hosts to run on, one task each (default: 2)"
    )
    p.add_argument(
        "--host-cores",
        type=int,
        default=1,
        help="cores of each executor; a task takes them all so no two tasks share a host "
        "(spark.task.cpus) (default: 1)",
    )


def cmd_icount(args) -> int:
    """``perfsuite icount``: instruction counts of the kernel points (valgrind), saved or
    compared with a saved set at a tight threshold; exit 1 when a count grew past it."""
    import json

    from perfsuite.execute import instructions as ic
    from perfsuite.files import atomic_write_text

    problem = ic.unavailable()
    base = None
    try:
        if problem:
            raise ValueError(problem)
        if args.against:
            try:
                data = json.loads(Path(args.against).read_text())
                base = {str(k): int(v) for k, v in data["counts"].items()}
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"{args.against}: not a perfsuite icount file ({exc})") from None
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
    rows = ic.compare({k: v for k, v in base.items() if k in counts}, counts, args.threshold)
    print("\n".join(ic.table(rows)))
    return EXIT_FAIL if any(r[4] == "regressed" for r in rows) else EXIT_OK


def add_parsers(sub) -> None:
    sw = sub.add_parser(
        "sweep",
        help="run a sweep profile on each host of a Spark cluster (on this machine: "
        "pytest --benchmark-only)",
    )
    sw.add_argument(
        "--spark-master",
        required=True,
        metavar="URL",
        help="the cluster: spark://host:7077, yarn, k8s://...",
    )
    sw.add_argument("--profile", default="default", help="sweep profile (default: default)")
    sw.add_argument(
        "--config", type=Path, default=None, help="TOML file overriding/adding profiles"
    )
    sw.add_argument(
        "--out",
        type=Path,
        default=Path("perf-results") / "fleet",
        help="a run directory per host goes under OUT/<host>/ (default: perf-results/fleet)",
    )
    sw.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds before the fleet run is cancelled (default: 3600)",
    )
    fleet_options(sw)
    add_store_option(sw.add_argument, "--")
    sw.set_defaults(func=cmd_sweep)
    ab = sub.add_parser(
        "ab",
        help="relative runs: the same points from two interpreters/venvs, interleaved, B "
        "gated against A",
    )
    ab.add_argument(
        "--a", required=True, metavar="PYTHON", help="side A's interpreter (the reference)"
    )
    ab.add_argument(
        "--b", required=True, metavar="PYTHON", help="side B's interpreter (the change)"
    )
    ab.add_argument(
        "--a-env",
        action="append",
        metavar="KEY=VALUE",
        help="environment for A's processes (repeatable)",
    )
    ab.add_argument(
        "--b-env",
        action="append",
        metavar="KEY=VALUE",
        help="environment for B's processes (repeatable)",
    )
    ab.add_argument(
        "--rounds", type=int, default=5,
        help="rounds per look: a point is judged after these and after every as many more "
        "(default: 5)",
    )  # fmt: skip
    ab.add_argument(
        "--max-rounds", type=int, default=None,
        help="rounds at most for a point that stays undecided; equal to --rounds for a fixed "
        "number (default: 4 x --rounds)",
    )  # fmt: skip
    ab.add_argument(
        "--turns", type=int, default=24,
        help="call-interleaved rounds: both sides' processes stay open and take this many "
        "turns each (0: each side measures its whole window in turn; default: 24)",
    )  # fmt: skip
    ab.add_argument(
        "--turn-time", type=float, default=0.01,
        help="seconds of calls per turn, at least one call (default: 0.01, so one call of a "
        "ResNet-50, tens of a sub-ms model)",
    )  # fmt: skip
    ab.add_argument("--profile", default="default", help="sweep profile (default: default)")
    ab.add_argument(
        "--config", type=Path, default=None, help="TOML file overriding/adding profiles"
    )
    for name in ("models", "frameworks", "precisions", "threads", "numa-nodes", "batch"):
        ab.add_argument(f"--{name}", type=lambda v: v.split(","), default=None,
                        help=f"{name}, comma-separated (default: the profile's)")  # fmt: skip
    ab.add_argument(
        "--mode", choices=("latency", "throughput"), default=None, help="default: the profile's"
    )
    ab.add_argument(
        "--min-time",
        type=float,
        default=None,
        help="seconds per measurement with --turns 0 (default: the profile's)",
    )
    ab.add_argument(
        "--threshold",
        type=float,
        default=0.02,
        help="relative change that counts; paired rounds cancel host drift, so it can be "
        "tighter than the baseline gate's (default: 0.02)",
    )
    ab.add_argument(
        "--alpha", type=float, default=0.01, help="family-wise error rate, Holm (default: 0.01)"
    )
    ab.add_argument(
        "--out",
        type=Path,
        default=Path("perf-results"),
        help="where the run goes (default: perf-results)",
    )
    ab.add_argument("--verbose", action="store_true", help="print each measurement as it ends")
    ab.set_defaults(func=cmd_ab)
    ic = sub.add_parser(
        "icount",
        help="instruction counts of the kernels under valgrind: deterministic, gated at 1%%",
    )
    ic.add_argument("--points", type=lambda v: v.split(","), default=None,
                    help="kernel points, comma-separated (default: all)")  # fmt: skip
    ic.add_argument("--save", type=Path, default=None, help="write the counts here (JSON)")
    ic.add_argument("--against", type=Path, default=None,
                    help="a saved counts file: gate the counts against it")  # fmt: skip
    ic.add_argument("--threshold", type=float, default=0.01,
                    help="relative growth that is a regression (default: 0.01)")  # fmt: skip
    ic.add_argument(
        "--block",
        default=None,
        help="Python run after the default blocking is made, to count a changed kernel "
        "setting, e.g. 'blk = kernels.Blocking(blk.kc_l1 // 2, blk.mc_l2, blk.nc_l3)'",
    )
    ic.set_defaults(func=cmd_icount)
