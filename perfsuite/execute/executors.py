"""Executors: how a point's measurement is run. The sweep hands an executor a point and the
protocol and gets back the measurement part of a result record (``run_point``'s plain data,
plus how it was isolated); it never branches on the kind. A new executor (Spark, a remote
host) is one class here with a ``name``, registered in ``EXECUTORS``.

- ``worker`` (default): a fresh spawned process for each session of a point, with a deadline;
  a crash or hang is an error for that point only; a bound point is bound inside the worker
  before anything allocates. Nothing an earlier point left (framework thread pools, allocator
  state) reaches the next one, and each session draws its own process state.
- ``in-process``: in the pytest process itself, for debugging. It cannot bind a point to a
  NUMA node (that would bind the whole run), so it refuses bound points.
- ``auto``: ``worker`` for bound points, ``in-process`` for unbound ones.
- ``spark`` (``perfsuite.execute.spark``): Spark points (``point["spark"]``) go to it whatever
  the executor chosen for the others; one SparkSession for the sweep, stopped by ``close``.

Either way the contract is the serialised record: what comes back is JSON-able data.
"""

from __future__ import annotations

from typing import Protocol

from perfsuite.execute.isolation import WorkerError, run_isolated
from perfsuite.execute.runner import (
    extension_modules,
    pool_sessions,
    run_point,
    run_point_in_worker,
)


class Executor(Protocol):
    name: str

    def run(self, point: dict, protocol: dict) -> dict:
        """Measure ``point``; raise WorkerError (or a subclass) when it could not be."""
        ...


class InProcess:
    name = "in-process"

    def __init__(self, timeout: float = 300.0):
        self.timeout = timeout  # not enforceable in-process; kept for a uniform constructor

    def run(self, point: dict, protocol: dict) -> dict:
        if point["numa_node"] is not None:
            raise WorkerError(
                f"the in-process executor cannot bind to NUMA node {point['numa_node']} "
                "(it would bind the whole run); use --perf-executor worker or auto"
            )
        return {**run_point(point, protocol), "isolation": "in-process"}


class FreshWorker:
    """One spawned process per session. A process draws state once that its sessions share:
    on the 2-vCPU Zen 4 VM, two sessions in one process agreed within 0.3-0.6% while
    processes started seconds apart spread 4-8% at 2 threads (ONNX Runtime int8_dynamic
    134 or 164 ms, OpenVINO int8_static_rr 10.5 or 11.9 ms; six processes each, with or
    without ASLR). Sessions in separate processes sample that spread; in one they hide it."""

    name = "worker"

    def __init__(self, timeout: float = 300.0):
        self.timeout = timeout

    def run(self, point: dict, protocol: dict) -> dict:
        one = {**protocol, "sessions": 1}
        extensions = extension_modules()
        done = [
            run_isolated(run_point_in_worker, extensions, point,
                         one if i == 0 else {**one, "counters": False}, timeout=self.timeout)
            for i in range(protocol.get("sessions", 1))
        ]  # fmt: skip
        hung = any(res.teardown_hung for res in done)
        label = "worker (teardown hung, killed)" if hung else "worker"
        return {**pool_sessions(point, [res.value for res in done]), "isolation": label}


class Auto:
    name = "auto"

    def __init__(self, timeout: float = 300.0):
        self._bound, self._unbound = FreshWorker(timeout), InProcess(timeout)

    def run(self, point: dict, protocol: dict) -> dict:
        chosen = self._unbound if point["numa_node"] is None else self._bound
        return chosen.run(point, protocol)


EXECUTORS: dict[str, type] = {e.name: e for e in (Auto, InProcess, FreshWorker)}

# A fresh worker per session: in-process a point reads whatever the points before it left, and
# sessions in one process share what that process drew. Measured: README, "Isolation".
DEFAULT = FreshWorker.name


class WithSpark:
    """Sends Spark points to the sweep's one SparkExecutor (started on first use), the others
    to the chosen executor."""

    def __init__(self, inner: Executor, timeout: float, master: str | None, items: int):
        self.inner, self.name = inner, inner.name
        self._args = {"timeout": timeout, "master": master, "items": items}
        self._spark = None

    def run(self, point: dict, protocol: dict) -> dict:
        if not point.get("spark"):
            return self.inner.run(point, protocol)
        if self._spark is None:
            from perfsuite.execute.spark import SparkExecutor

            self._spark = SparkExecutor(**self._args)
        return self._spark.run(point, protocol)

    def close(self) -> None:
        if self._spark is not None:
            self._spark.close()


def get_executor(
    name: str,
    *,
    timeout: float = 300.0,
    spark_master: str | None = None,
    spark_items: int = 512,
) -> Executor:
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
    return WithSpark(EXECUTORS[name](timeout=timeout), timeout, spark_master, spark_items)
