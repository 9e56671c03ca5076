"""Qualify the host this runs on: fingerprint, SKU check, measurements, checks, and the
validated ``perfsuite.qualification/1`` report. The same function runs for
``perfsuite qualify`` on this machine and inside a Spark task on each host of a fleet."""

from __future__ import annotations

import time

from perfsuite import records
from perfsuite.host.fingerprint import fingerprint
from perfsuite.host.topology import read_topology
from perfsuite.prepare.backends import software_versions
from perfsuite.qualify import checks as qualify
from perfsuite.sweep.run_report import judge_claims


def qualify_here(
    *,
    quick: bool = False,
    reference: records.Reference | None = None,
    repeats: int = 1,
    inference: tuple | None = None,
    fp: records.Fingerprint | None = None,
) -> tuple[records.QualificationReport, list[records.HostMeasurements]]:
    """Returns the report and the measurement runs. Raises QualifyError when the reference
    does not apply to this host."""
    t0 = time.perf_counter()
    fp = fp or fingerprint("/", frameworks=software_versions())
    qualify.check_sku(fp.fields, reference)
    topo = read_topology("/")
    runs = [qualify.measure(topo, quick=quick) for _ in range(repeats)]
    m, results = runs[0], None
    if inference:
        info, results = qualify.measure_inference(*inference)
        m = m.model_copy(update={"inference": info})
    checks = qualify.evaluate(fp.fields, m, reference, results)
    report = records.QualificationReport(
        claims=judge_claims(results or [], fp),
        schema=records.QUALIFICATION,
        verdict=qualify.verdict(checks),
        reference=reference,
        fingerprint=fp,
        measurements=m,
        seconds=time.perf_counter() - t0,
        checks=checks,
    )
    return report, runs
