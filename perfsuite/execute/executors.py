"""Executors: how a point's measurement is run. The sweep hands an executor a point and the
protocol and gets back the measurement part of a result record (``run_point``'s plain data,
plus how it was isolated); it never branches on the kind. A new executor (Spark, a remote
host) is one class here with a ``name``, registered in ``EXECUTORS``.

- ``in-process``: in the pytest process itself, for debugging. It cannot bind a point to a
  NUMA node (that would bind the whole run), so it refuses bound points.
- ``worker``: a fresh spawned process per point with a deadline; a crash or hang is an error
  for that point only; a bound point is bound inside the worker before anything allocates.
- ``auto`` (default): ``worker`` for bound points, ``in-process`` for unbound ones.
- ``spark`` (``perfsuite.execute.spark``): Spark points (``point["spark"]``) go to it whatever
  the executor chosen for the others; one SparkSession for the sweep, stopped by ``close``.

Either way the contract is the serialised record: what comes back is JSON-able data.
"""

from __future__ import annotations

from typing import Protocol

from perfsuite.execute.isolation import WorkerError, run_isolated
from perfsuite.execute.runner import run_point


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
    name = "worker"

    def __init__(self, timeout: float = 300.0):
        self.timeout = timeout

    def run(self, point: dict, protocol: dict) -> dict:
        res = run_isolated(run_point, point, protocol, timeout=self.timeout)
        label = "worker (teardown hung, killed)" if res.teardown_hung else "worker"
        return {**res.value, "isolation": label}


class Auto:
    name = "auto"

    def __init__(self, timeout: float = 300.0):
        self._bound, self._unbound = FreshWorker(timeout), InProcess(timeout)

    def run(self, point: dict, protocol: dict) -> dict:
        chosen = self._unbound if point["numa_node"] is None else self._bound
        return chosen.run(point, protocol)


EXECUTORS: dict[str, type] = {e.name: e for e in (Auto, InProcess, FreshWorker)}


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
