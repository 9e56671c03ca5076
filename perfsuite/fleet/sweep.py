"""A sweep across hosts on Spark (``perfsuite sweep --spark-master URL --hosts N``): the same
``fan_out.run_on_hosts`` path as fleet qualification, each host running the profile's points
in its own fresh workers; the driver writes one run directory per host, records each in the
results history and compares the hosts point by point."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from perfsuite import records
from perfsuite.fleet.fan_out import run_on_hosts
from perfsuite.host.fingerprint import fingerprint
from perfsuite.host.topology import read_topology
from perfsuite.prepare.backends import software_versions
from perfsuite.store import open_importer
from perfsuite.store.files import RunDir
from perfsuite.sweep.plan import Profile
from perfsuite.sweep.session import PerfSession, run_summary


class SweepReply(NamedTuple):
    """A host's sweep, serialised (``records.dump``): the record format is the contract
    between machines."""

    fingerprint: dict
    records: list[dict]
    skipped: dict[str, str]  # point id -> why it did not run


def sweep_task(profile: Profile) -> SweepReply:
    """Runs on an executor host: every runnable point of the profile, each in a fresh worker
    (the sweep's ``worker`` executor, closed with the session whatever happens)."""
    with tempfile.TemporaryDirectory(prefix="perfsuite-fleet-", ignore_cleanup_errors=True) as tmp:
        session = PerfSession(
            profile,
            Path(tmp) / "results",
            read_topology("/"),
            fingerprint("/", frameworks=software_versions()),
            executor="worker",
            baselines=Path(tmp) / "baselines",
        )
        try:
            points = session.points()
            results = [session.run(p) for p in points if not p.skip]
        finally:
            session.close()
        return SweepReply(
            session.fingerprint.as_dict(),
            [records.dump(res) for res in results],
            {p.id: p.skip for p in points if p.skip},
        )


@dataclass
class FleetSweep:
    runs: dict[str, Path]  # host -> its run directory
    records: dict[str, list[records.Result]]
    fingerprints: dict[str, records.Fingerprint]
    skipped: dict[str, dict]
    errors: dict[str, str]
    clock_offsets: dict[str, float]  # host -> its clock minus the driver's, where far off


def sweep_fleet(
    master: str,
    hosts: int,
    profile,
    *,
    out: Path,
    host_cores: int = 1,
    store_url: str | None = None,
    timeout: float = 3600.0,
) -> FleetSweep:
    got = run_on_hosts(master, hosts, sweep_task, profile, host_cores=host_cores, timeout=timeout)
    fleet = FleetSweep({}, {}, {}, {}, {}, {})
    store = open_importer(store_url)
    for r in got:
        if r.clock_offset_s:
            fleet.clock_offsets[r.host] = r.clock_offset_s
        if r.error or not r.value:
            fleet.errors[r.host] = r.error or "no result"
            continue
        reply = SweepReply(*r.value)  # the host's JSON, read as records
        fp = records.Fingerprint.model_validate(reply.fingerprint).on_host(r.host)
        read = [
            records.load_result(d, f"{r.host}: result {i + 1}") for i, d in enumerate(reply.records)
        ]
        results = [  # on the driver's clock: the history orders runs by their time
            x.model_copy(update={"timestamp": x.timestamp - r.clock_offset_s}) for x in read
        ]
        run = RunDir(out / r.host.replace("/", "_"), profile.name)
        if results:
            done = records.Run(summary=run_summary(profile.as_dict(), fp, results),
                               results=results, source=str(run.path))  # fmt: skip
            run.write(done)
            store.add_run(done)
        fleet.runs[r.host] = run.path
        fleet.records[r.host] = results
        fleet.fingerprints[r.host] = fp
        fleet.skipped[r.host] = reply.skipped
    return fleet


def compare_hosts(results: dict[str, list[records.Result]]) -> list[str]:
    """Per point: each host's throughput against the fleet median (same run, same code)."""
    by_point: dict[str, dict[str, float]] = {}
    for host, host_results in results.items():
        for rec in host_results:
            if rec.status == "ok" and rec.stats is not None:
                by_point.setdefault(rec.id, {})[host] = rec.stats.throughput_ips
    lines = []
    for pid, per_host in sorted(by_point.items()):
        median = float(np.median(list(per_host.values())))
        cells = ", ".join(
            f"{h} {v:.2f} ({v / median - 1:+.1%})" for h, v in sorted(per_host.items())
        )
        lines.append(f"{pid}: median {median:.2f} items/s; {cells}")
    return lines
