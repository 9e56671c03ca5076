"""A shards point: the tuning article's multi-socket recipe as a sweep placement. One worker
per NUMA node (``shards = "node"``) or per L3 domain (``"l3"``), each bound to its CPUs and
memory (``numactl``, or the syscalls where it is missing: the record says which), all started
together; a barrier holds every shard's measurement window until all are warmed up, so the
windows overlap. The point's throughput is the shards' sum, its latency samples pooled, and
each shard's figures are kept (``Measurement.shards``), so the report shows the spread.

A shard that fails (its worker dies, cannot bind, or never reaches the barrier) fails its
point with one line naming the shard; the run goes on.
"""

from __future__ import annotations

import shutil
import tempfile

import numpy as np

from perfsuite import records
from perfsuite.execute.bound import run_shards
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.measure import summarize
from perfsuite.execute.runner import measure_in_place
from perfsuite.host import placement as pl
from perfsuite.host.numa import BindingError
from perfsuite.host.topology import read_topology
from perfsuite.records import Measurement, MeasureProtocol, Point


def run_sharded(
    point: Point, protocol: MeasureProtocol, *, timeout: float, mechanism: str = "auto", topo=None
) -> Measurement:
    """Every shard of ``point`` measured together (one session each), pooled."""
    try:
        placements = pl.shards(read_topology("/") if topo is None else topo, point.shards)
    except pl.PlacementError as exc:
        raise WorkerError(f"shards by {point.shards}: {exc}") from exc
    folder = tempfile.mkdtemp(prefix="perfsuite-shards-")
    one = protocol.model_copy(update={"sessions": 1, "barrier": f"{folder}:{len(placements)}"})
    try:
        bound = run_shards(measure_in_place, point, one, placements=placements,
                           mechanism=mechanism, timeout=timeout)  # fmt: skip
    except (WorkerError, BindingError, RuntimeError) as exc:
        raise WorkerError(f"a shard of {len(placements)} failed: {exc}") from exc
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return pooled(point, [(b, Measurement.model_validate(b.result)) for b in bound])


def pooled(point: Point, shards: list) -> Measurement:
    """One measurement from the shards' (``Bound``, ``Measurement``) pairs: samples pooled,
    throughput summed, the first shard's session details (settings, model, calibration)."""
    parts = [m for _, m in shards]
    samples = [x for m in parts for x in m.samples_s]
    stats = summarize(samples, items_per_call=point.batch)
    stats["throughput_ips"] = float(sum(m.stats.throughput_ips for m in parts))
    runs = [
        records.ShardRun(placement=b.placement, cpus=b.binding.cpus_allowed,
                         throughput_ips=m.stats.throughput_ips,
                         latency_p50_ms=m.stats.latency_p50_ms, mechanism=b.mechanism)
        for b, m in shards
    ]  # fmt: skip
    first = parts[0]
    return first.model_copy(
        update={
            "samples_s": samples,
            "session_medians_s": [float(np.median(samples))],
            "stats": records.Stats(**stats),
            "binding": first.binding,
            "shards": runs,
            "isolation": f"shards ({len(runs)} bound workers, {shards[0][0].mechanism})",
        }
    )
