"""``perfsuite sweep --spark-master URL --hosts N``: a sweep profile on each host of a Spark
cluster (on this machine the sweep is ``pytest --benchmark-only``)."""

from __future__ import annotations

import sys
from pathlib import Path

from perfsuite.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.execute.isolation import WorkerError
from perfsuite.fleet.fan_out import FleetUsageError, clock_line
from perfsuite.fleet.scoring import FleetError
from perfsuite.fleet.sweep import compare_hosts, sweep_fleet
from perfsuite.options import add_options
from perfsuite.store import StoreError, open_importer
from perfsuite.sweep.finish import failures
from perfsuite.sweep.plan import PlanError, load_profiles, select_profile
from perfsuite.sweep.report import sweep_table
from perfsuite.text import terminal_line
from perfsuite.writing import NotWritable, check_writable_dir

INPUT_ERRORS: tuple[type[Exception], ...] = (StoreError, FleetError)


def cmd_sweep(args) -> int:
    """The profile's points on each executor host; a run directory per host under --out, each
    recorded in the results history, the sweep table per host and each point's spread across
    hosts. Exit 1 when a host or a point failed."""
    try:
        profiles = load_profiles(Path("pyproject.toml"), args.config)
        profile = select_profile(profiles, args.profile, {})
        check_writable_dir(args.out, "--out")
        open_importer(args.store).close()  # a bad store URL is a usage error up front
        fleet = sweep_fleet(
            args.spark_master,
            args.hosts,
            profile,
            out=args.out,
            host_cores=args.host_cores,
            store_url=args.store,
            timeout=args.timeout,
        )
    except (PlanError, NotWritable, StoreError, FleetUsageError, WorkerError) as exc:
        print(f"perfsuite sweep: {exc}", file=sys.stderr)
        return EXIT_FAIL if isinstance(exc, WorkerError) else EXIT_USAGE
    failed = bool(fleet.errors)
    for host in sorted(fleet.records):
        cls = fleet.fingerprints[host].hardware_class
        print(f"== {host} ({cls}): {fleet.runs[host]}")
        sweep_table(print, fleet.records[host])
        for pid, why in sorted(fleet.skipped[host].items()):
            print(f"skipped {pid}: {why}")
        failed |= bool(failures(fleet.records[host]))
    for host, why in sorted(fleet.errors.items()):
        print(terminal_line(f"== {host}: no results: {why}"))
    for host, offset in sorted(fleet.clock_offsets.items()):
        print(terminal_line(f"== {host}: {clock_line(offset)}: its records are put on the "
                            "driver's clock"))  # fmt: skip
    if len(fleet.records) > 1:
        print("== across hosts")
        for line in compare_hosts(fleet.records):
            print(line)
    return EXIT_FAIL if failed else EXIT_OK


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "sweep")
    add_options(p.add_argument, "sweep")  # --profile, --config, --spark-master, --out, ...
    p.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds before the fleet run is cancelled (default: 3600)",
    )
    p.set_defaults(func=cmd_sweep)
