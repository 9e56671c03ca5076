"""A sweep across hosts on Spark (``perfsuite sweep --spark-master URL --hosts N``): the same
``fan_out.run_on_hosts`` path as fleet qualification, each host running the profile's points
in its own fresh workers; the driver writes one run directory per host, records each in the
results history and compares the hosts point by point."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.fleet.fan_out import run_on_hosts
from perfsuite.host.fingerprint import fingerprint
from perfsuite.host.topology import read_topology
from perfsuite.prepare.backends import software_versions
from perfsuite.store.database import open_history
from perfsuite.store.files import RunDir
from perfsuite.sweep.plan import make_profile
from perfsuite.sweep.session import PerfSession, run_summary


def sweep_task(payload: dict) -> dict:
    """Runs on an executor host: every runnable point of the profile, each in a fresh worker
    (the sweep's ``worker`` executor, closed with the session whatever happens). The records
    travel back serialised (``records.dump``): the record format is the contract between
    machines."""
    profile = make_profile(payload["name"], payload["profile"])
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
        return {
            "fingerprint": session.fingerprint.as_dict(),
            "records": [records.dump(res) for res in results],
            "skipped": {p.id: p.skip for p in points if p.skip},
        }


@dataclass
class FleetSweep:
    runs: dict[str, Path]  # host -> its run directory
    records: dict[str, list[records.Result]]
    fingerprints: dict[str, records.Fingerprint]
    skipped: dict[str, dict]
    errors: dict[str, str]


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
    raw = profile.as_dict()
    raw.pop("name")
    payload = {"name": profile.name, "profile": raw}
    got = run_on_hosts(master, hosts, sweep_task, payload, host_cores=host_cores, timeout=timeout)
    fleet = FleetSweep({}, {}, {}, {}, {})
    store = open_history(store_url)
    for r in got:
        if r.error or not r.value:
            fleet.errors[r.host] = r.error or "no result"
            continue
        # the host's JSON, read as records; loopback "hosts" share a hostname
        fp = records.Fingerprint.model_validate(r.value["fingerprint"]).on_host(r.host)
        results = [records.load_result(d, f"{r.host}: {d.get('id')}") for d in r.value["records"]]
        run = RunDir(out / r.host.replace("/", "_"), profile.name)
        if results:
            done = records.Run(summary=run_summary(profile.as_dict(), fp, results),
                               results=results, source=str(run.path))  # fmt: skip
            run.write(done)
            store.add_run(done)
        fleet.runs[r.host] = run.path
        fleet.records[r.host] = results
        fleet.fingerprints[r.host] = fp
        fleet.skipped[r.host] = r.value["skipped"]
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
