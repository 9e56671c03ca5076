"""Fleet qualification on Spark: ``perfsuite qualify --spark-master URL --hosts N`` runs
``qualify_here`` as one task on each of N executor hosts (``fan_out.run_on_hosts``), brings
the reports back, writes them per host and records them in the results history; the CLI
scores the fleet (``scoring``)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from perfsuite import records
from perfsuite.fleet.fan_out import run_on_hosts
from perfsuite.host.fingerprint import fingerprint
from perfsuite.prepare.backends import software_versions
from perfsuite.qualify import checks
from perfsuite.qualify.here import qualify_here
from perfsuite.store import open_importer
from perfsuite.writing import atomic_write_text, write_json


class QualifyAsked(NamedTuple):
    quick: bool
    reference: dict | None  # a reference record sent along (JSON), else the host's class's
    no_reference: bool


class QualifyReply(NamedTuple):
    report: dict  # the QualificationReport record (JSON: the contract between machines)
    html: str


def qualify_task(asked: QualifyAsked) -> QualifyReply:
    """Runs on an executor host: its own fingerprint, its class's shipped reference (or the
    one sent along), its own measurements."""
    fp = fingerprint("/", frameworks=software_versions())
    ref = asked.reference and records.load_reference(asked.reference)
    if ref is None and not asked.no_reference:
        ref = checks.load_reference(None, fp.hardware_class)
    report, _ = qualify_here(quick=asked.quick, reference=ref, fp=fp)
    page = checks.html(report.checks, f"qualification of {socket.gethostname()}")
    return QualifyReply(records.dump(report), page)


@dataclass
class FleetRun:
    reports: dict[str, records.QualificationReport]  # by host
    errors: dict[str, str]  # host -> why it has no report
    written: dict[str, Path]
    clock_offsets: dict[str, float]  # host -> its clock minus the driver's, where far off


def qualify_fleet(
    master: str,
    hosts: int,
    *,
    out: Path,
    host_cores: int = 1,
    quick: bool = False,
    reference: records.Reference | None = None,
    no_reference: bool = False,
    store_url: str | None = None,
) -> FleetRun:
    asked = QualifyAsked(quick, reference and records.dump(reference), no_reference)
    results = run_on_hosts(master, hosts, qualify_task, asked, host_cores=host_cores)
    run = FleetRun({}, {}, {}, {})
    for r in results:
        if r.clock_offset_s:
            run.clock_offsets[r.host] = r.clock_offset_s
        if r.error or not r.value:
            run.errors[r.host] = r.error or "no report"
            continue
        reply = QualifyReply(*r.value)
        report = records.load_qualification(reply.report, f"the report of {r.host}")
        # loopback "hosts" share a hostname: the fleet tells them apart by executor
        report = report.model_copy(update={"fingerprint": report.fingerprint.on_host(r.host)})
        folder = out / r.host.replace("/", "_")
        atomic_write_text(folder / "qualification.html", reply.html)
        run.reports[r.host] = report
        run.written[r.host] = write_json(folder / "qualification.json", records.dump(report))
    if run.reports:  # where results go: --store, $PERFSUITE_STORE or the default SQLite
        store = open_importer(store_url)
        for host, path in run.written.items():
            store.import_qualification(path, records.dump(run.reports[host]))
    return run
