"""Executors: how a point's measurement is run. The sweep hands an executor a point and the
protocol and gets back the measurement part of a result record (``run_point``'s plain data,
plus how it was isolated); it never branches on the kind. Every executor has ``run`` and
``close`` and is a context manager; ``close`` stops what it started (processes, a
SparkSession), and the sweep closes its executor at the end of the run.

- ``worker`` (default): a fresh spawned process for each session of a point, with a deadline;
  a crash or hang is an error for that point only; a bound point is bound inside the worker
  before anything allocates.
- ``in-process``: in the pytest process itself, for debugging; refuses NUMA-bound points.
- ``auto``: ``worker`` for bound points, ``in-process`` for unbound ones.
- ``numactl`` (``execute.bound``), ``interpreter`` (``execute.interpreter``, a side of
  ``perfsuite ab``) and ``spark`` (``execute.spark``; ``WithSpark`` sends a run's Spark
  points there whatever the others' executor).

Executors are found by name in ``EXECUTORS``, the ``perfsuite.executors`` entry points
(``perfsuite.prepare.extensions``). ``run`` takes a ``records.Point`` and returns a
``records.Measurement``; between processes and hosts that travels serialised (JSON).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from perfsuite.execute.isolation import WorkerError, run_isolated
from perfsuite.execute.runner import (
    pool_sessions,
    run_point,
    run_point_in_worker,
    runtime_extensions,
)
from perfsuite.execute.serving import per_search
from perfsuite.prepare.backends import BackendError
from perfsuite.prepare.extensions import EXECUTORS as GROUP
from perfsuite.prepare.extensions import Registry
from perfsuite.records import Measurement, MeasureProtocol, Point, Unsupported


@runtime_checkable
class Executor(Protocol):
    name: str

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        """Measure ``point``; raise WorkerError (or a subclass) when it could not be."""

    def close(self) -> None:
        """Stop whatever this executor started; it runs nothing more afterwards."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc) -> None: ...


class BaseExecutor:
    """The ``timeout`` constructor, ``close`` (nothing to stop) and the context manager, for
    executors to inherit."""

    name = ""

    def __init__(self, timeout: float = 300.0):
        self.timeout = timeout

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(BaseExecutor):
    name = "in-process"  # its timeout is not enforceable in-process

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        if point.numa_node is not None:
            raise WorkerError(
                f"the in-process executor cannot bind to NUMA node {point.numa_node} "
                "(it would bind the whole run); use --perf-executor worker or auto"
            )
        try:
            measured = run_point(point, protocol)
        except (BackendError, Unsupported, ValueError) as exc:  # the point's, as in a worker
            raise WorkerError(f"{exc.__class__.__name__}: {exc}") from exc
        return isolated(Measurement.model_validate(measured), "in-process")


class FreshWorker(BaseExecutor):
    """One spawned process per session. A process draws state once that its sessions share,
    so sessions in separate processes sample that spread; in one they hide it
    (docs/measurements/2026-12-05-zen4-process-spread.md). What a conftest registered at run
    time is imported in the worker first (``runner.runtime_extensions``)."""

    name = "worker"

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        extensions = runtime_extensions()
        done = [
            run_isolated(run_point_in_worker, extensions, point, one, timeout=self.timeout)
            for one in per_session(protocol)
        ]
        label = "worker (teardown hung, killed)" if any(r.teardown_hung for r in done) else "worker"
        parts = [Measurement.model_validate(res.value) for res in done]
        return isolated(pool_sessions(point, parts), label)


class Auto(BaseExecutor):
    name = "auto"

    def __init__(self, timeout: float = 300.0):
        self._bound, self._unbound = FreshWorker(timeout), InProcess(timeout)

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        # a server point's several rate searches: each in a fresh process, as the figure's
        # spread across processes is what their median is for
        fresh = point.numa_node is not None or (point.mode == "server" and protocol.sessions > 1)
        return (self._bound if fresh else self._unbound).run(point, protocol)


def per_session(protocol: MeasureProtocol) -> list[MeasureProtocol]:
    """A one-session protocol for each session of ``protocol`` (a worker each); perf stat
    counts the first window only; a server point's searches each log to their own folder."""
    if protocol.loadgen is not None:
        return per_search(protocol)
    one = protocol.model_copy(update={"sessions": 1})
    rest = one.model_copy(update={"counters": False})
    return [one] + [rest] * (protocol.sessions - 1)


def isolated(measured: Measurement, how: str) -> Measurement:
    """``measured``, saying how the point was isolated."""
    return measured.model_copy(update={"isolation": how})


# name -> executor class (or any callable taking keyword options): the entry points
EXECUTORS: Registry = Registry(GROUP)

# in-process a point reads whatever the points before it left (docs/guide/sweep.md, "Isolation")
DEFAULT = FreshWorker.name


class WithSpark(BaseExecutor):
    """Sends Spark points to the run's one ``spark`` executor (started on first use), the
    others to the chosen executor; ``close`` closes both."""

    def __init__(self, inner: Executor, spark_options: dict):
        self.inner, self.name = inner, inner.name
        self._spark_options = spark_options
        self._spark: Executor | None = None

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        if not point.spark:
            return self.inner.run(point, protocol)
        if self._spark is None:
            self._spark = get_executor("spark", **self._spark_options)
        return self._spark.run(point, protocol)

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            if self._spark is not None:
                self._spark.close()
                self._spark = None


def get_executor(
    name: str,
    *,
    timeout: float = 300.0,
    spark_master: str | None = None,
    spark_items: int | None = None,
    **options,
) -> Executor:
    """The executor ``name`` built with ``timeout`` and ``options`` (its own keywords). With
    ``spark_master`` or ``spark_items``, the run's Spark points go to one ``spark`` executor
    (``WithSpark``) whatever ``name`` is."""
    if name == "spark":
        given = {"master": spark_master, "items": spark_items}
        options = {**{k: v for k, v in given.items() if v is not None}, **options}
    executor = EXECUTORS.named(name, "executor")(timeout=timeout, **options)
    if name == "spark" or (spark_master is None and spark_items is None):
        return executor
    spark = {"timeout": timeout, "spark_master": spark_master, "spark_items": spark_items}
    return WithSpark(executor, spark)
