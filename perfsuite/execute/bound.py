"""Run a function in a worker bound to a placement, by the preferred mechanism:

1. ``numactl`` when installed: ``numactl --physcpubind=... --membind=... python -m
   perfsuite.execute.worker`` (job on stdin);
2. otherwise in-process ``sched_setaffinity`` + ``set_mempolicy`` in a spawned worker.

Either way the binding the kernel has in force is checked against the request
(``numa.verify``). Shards run one worker per placement, started together; ``BoundWorker`` is
the ``numactl`` executor.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from perfsuite import records
from perfsuite.execute.executors import BaseExecutor, FreshWorker, isolated, per_session
from perfsuite.execute.isolation import (
    WorkerCrashed,
    WorkerError,
    WorkerTimeout,
    last_line,
    run_isolated,
)
from perfsuite.execute.runner import measure_in_place, pool_sessions
from perfsuite.host import numa
from perfsuite.host import placement as pl
from perfsuite.host.numa import BindingError
from perfsuite.host.placement import Placement
from perfsuite.host.topology import read_topology
from perfsuite.kernels import triad_gbs
from perfsuite.records import Measurement, MeasureProtocol, Point

MECHANISMS = ("auto", "numactl", "syscall")


@dataclass(frozen=True)
class Bound:
    """What a bound call returned, the binding the kernel had in force, and how it was made."""

    result: Any
    binding: records.Binding
    mechanism: str  # numactl | syscall
    placement: str


def _bind_then_call(cpus, mem_nodes, fn, args, kwargs):
    binding = numa.bind(list(cpus), list(mem_nodes) if mem_nodes is not None else None)
    return fn(*args, **kwargs), binding


def _numactl(placement, fn, args, kwargs, timeout):
    cmd = ["numactl", *placement.numactl_args(), sys.executable, "-m", "perfsuite.execute.worker"]
    # The job is pickled by reference: the worker must import what the parent can.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    job = pickle.dumps((fn, args, kwargs))
    try:
        proc = subprocess.run(cmd, input=job, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise WorkerTimeout(f"numactl worker gave no answer within {timeout:g} s; killed") from None
    if proc.returncode < 0:
        raise WorkerCrashed(f"numactl worker killed by signal {-proc.returncode}")
    if proc.returncode != 0 or not proc.stdout:
        raise BindingError(
            f"numactl {' '.join(placement.numactl_args())} failed "
            f"(exit {proc.returncode}): {last_line(proc.stderr.decode(errors='replace'))}"
        )
    status, payload = pickle.loads(proc.stdout)
    if status != "ok":
        raise WorkerError(payload)
    return payload


def run_bound(
    fn, *args, placement: Placement, mechanism: str = "auto", timeout: float = 600, **kwargs
) -> Bound:
    """fn(*args, **kwargs) run under ``placement``, its binding verified."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"binding mechanism {mechanism!r}: use one of {', '.join(MECHANISMS)}")
    numactl = shutil.which("numactl")
    use = ("numactl" if numactl else "syscall") if mechanism == "auto" else mechanism
    if use == "numactl":
        if not numactl:
            raise BindingError("numactl was requested but is not installed (Debian: numactl)")
        result, binding = _numactl(placement, fn, args, kwargs, timeout)
    else:
        result, binding = run_isolated(
            _bind_then_call, placement.cpus, placement.mem_nodes, fn, args, kwargs, timeout=timeout
        ).value
    numa.verify(binding, placement.cpus, placement.mem_nodes, use)
    return Bound(result, binding, use, placement.label)


def run_shards(
    fn, *args, placements: list[Placement], mechanism: str = "auto", timeout: float = 600, **kwargs
) -> list[Bound]:
    """One bound worker per placement, all started together (the multi-socket recipe)."""
    how = {"mechanism": mechanism, "timeout": timeout, **kwargs}
    with ThreadPoolExecutor(max_workers=len(placements)) as pool:
        return list(pool.map(lambda p: run_bound(fn, *args, placement=p, **how), placements))


def _on_pairs(topo, fn, args, **how) -> dict[tuple[int, int], Any]:
    """fn(*args(placement)) with the threads on CPU node i and the memory on node j, for every
    pair of ``placement.matrix``: the diagonal is local, the rest remote."""
    out = {}
    for cpu_node, mem_node in pl.matrix(topo):
        p = pl.Placement(f"cpu{cpu_node}-mem{mem_node}", pl.node(topo, cpu_node).cpus, (mem_node,))
        out[(cpu_node, mem_node)] = run_bound(fn, *args(p), placement=p, **how).result
    return out


def bandwidth_matrix(
    topo, *, n: int = 1 << 24, repeats: int = 3, mechanism: str = "auto", timeout: float = 600
) -> dict[tuple[int, int], float]:
    """STREAM triad GB/s of every (CPU node, memory node) pair (the article's "~15% from
    binding")."""
    return _on_pairs(
        topo,
        triad_gbs,
        lambda p: (n, len(p.cpus), repeats),
        best=True,  # the best of the repeats, as STREAM reports
        mechanism=mechanism,
        timeout=timeout,
    )


def inference_matrix(
    point: dict, protocol: MeasureProtocol, topo, *, mechanism: str = "auto", timeout: float = 900
) -> dict[tuple[int, int], dict]:
    """Inference stats of one sweep point (its numa_node ignored) for every (CPU node, memory
    node) pair: local vs remote latency and throughput."""
    args = (dict(point, numa_node=None), protocol)
    got = _on_pairs(topo, measure_in_place, lambda p: args, mechanism=mechanism, timeout=timeout)
    return {pair: Measurement.model_validate(m).stats for pair, m in got.items()}


class BoundWorker(BaseExecutor):
    """The ``numactl`` executor: each session of a bound point in its own worker started under
    ``numactl --physcpubind --membind`` of the point's node (``mechanism`` "auto" falls back
    to the syscalls where numactl is missing), the binding verified; unbound points as the
    ``worker`` executor. A binding that cannot be made is an error for that point."""

    name = "numactl"

    def __init__(self, timeout: float = 300.0, mechanism: str = "numactl"):
        if mechanism not in MECHANISMS:
            raise ValueError(f"binding mechanism {mechanism!r}: use one of {', '.join(MECHANISMS)}")
        self.timeout, self.mechanism = timeout, mechanism
        self._unbound = FreshWorker(timeout)
        self._topo = None

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        if point.numa_node is None:
            return self._unbound.run(point, protocol)
        if self._topo is None:
            self._topo = read_topology("/")
        try:
            where = pl.node(self._topo, point.numa_node)
        except pl.PlacementError as exc:
            raise WorkerError(str(exc)) from exc
        parts, used = [], self.mechanism
        for session in per_session(protocol):
            try:
                out = run_bound(measure_in_place, point, session, placement=where,
                                mechanism=self.mechanism, timeout=self.timeout)  # fmt: skip
            except BindingError as exc:
                raise WorkerError(str(exc)) from exc
            parts.append(Measurement.model_validate(out.result))
            used = out.mechanism
        return isolated(pool_sessions(point, parts), f"bound worker ({used})")
