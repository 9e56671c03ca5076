"""Executors: the default runs every session of a point in a fresh process of its own, and the
pooled record is the same shape as one measured in-process."""

from __future__ import annotations

import os

import numpy as np
import pytest

from perfsuite.execute import executors
from perfsuite.execute.isolation import WorkerResult
from perfsuite.records import MeasureProtocol, Point

pytest.importorskip("onnxruntime")

POINT = Point(model="small_cnn", framework="onnxruntime", precision="fp32", threads=1,
              batch=1, mode="latency")  # fmt: skip
PROTOCOL = MeasureProtocol(min_time=0.05, min_samples=10, warmup_time=0.02, warmup_calls=3,
                           sessions=3)  # fmt: skip


def _pid_and_record(point, protocol):
    from perfsuite.execute.runner import run_point

    return os.getpid(), run_point(point, protocol)


def test_the_default_is_a_fresh_worker():
    assert executors.DEFAULT == "worker"


def test_each_session_runs_in_a_process_of_its_own(monkeypatch):
    calls, pids = [], []
    real = executors.run_isolated

    def spy(fn, extensions, point, protocol, timeout):
        calls.append(protocol)
        res = real(_pid_and_record, point, protocol, timeout=timeout)
        pid, record = res.value
        pids.append(pid)
        return WorkerResult(record, res.seconds, res.teardown_hung)

    monkeypatch.setattr(executors, "run_isolated", spy)
    rec = executors.FreshWorker(timeout=120).run(
        POINT, PROTOCOL.model_copy(update={"counters": True})
    )
    assert [c.sessions for c in calls] == [1, 1, 1]
    assert [c.counters for c in calls] == [True, False, False]  # perf stat: first window
    assert rec.isolation == "worker" and len(rec.session_medians_s) == 3
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert len(rec.interference.sessions) == len(rec.calibration.sessions) == 3


def test_a_pooled_record_matches_one_measured_in_process():
    """Same keys, statistics from all the samples, the CV of the session medians."""
    from perfsuite.dispersion import cv

    here = executors.InProcess().run(POINT, PROTOCOL)
    there = executors.FreshWorker(timeout=120).run(POINT, PROTOCOL)
    assert here.model_fields_set == there.model_fields_set
    assert here.stats.model_fields_set == there.stats.model_fields_set
    assert there.stats.n == len(there.samples_s)
    assert there.stats.latency_p50_ms == pytest.approx(float(np.median(there.samples_s)) * 1e3)
    assert there.stats.between_session_cv == pytest.approx(cv(there.session_medians_s))
    assert len(there.protocol.sessions) == 3


def test_a_session_that_crashes_is_an_error_for_the_point(monkeypatch):
    monkeypatch.setenv("PERFSUITE_FAULT", "crash")
    with pytest.raises(executors.WorkerError, match="SIGSEGV"):
        executors.FreshWorker(timeout=120).run(POINT, PROTOCOL)


def test_every_executor_is_registered_and_closes():
    """One registry by name (the perfsuite.executors entry points); each is a context manager."""
    assert {"worker", "in-process", "auto", "numactl", "interpreter", "spark"} <= set(
        executors.EXECUTORS
    )
    for name in executors.EXECUTORS:
        with executors.get_executor(name, timeout=60) as ex:
            assert isinstance(ex, executors.Executor) and ex.name == name
    routed = executors.get_executor("worker", spark_items=8)
    assert isinstance(routed, executors.WithSpark) and routed.name == "worker"
    routed.close()


def test_a_bound_worker_measures_each_session_in_a_bound_process():
    from perfsuite.execute.bound import BoundWorker

    point = POINT.but(numa_node=0)
    with BoundWorker(timeout=120, mechanism="syscall") as ex:
        rec = ex.run(point, PROTOCOL.model_copy(update={"sessions": 2}))
        assert rec.isolation == "bound worker (syscall)"
        assert len(rec.session_medians_s) == 2 and rec.binding.mechanism == "external"
        assert (
            ex.run(POINT, PROTOCOL.model_copy(update={"sessions": 1})).isolation == "worker"
        )  # unbound


def test_another_interpreter_runs_a_point_and_serves_turns():
    import sys

    point = POINT
    with executors.get_executor("interpreter", timeout=120, python=sys.executable,
                                label="side x") as ex:  # fmt: skip
        rec = ex.run(point, PROTOCOL.model_copy(update={"sessions": 1}))
        assert rec.isolation == f"interpreter {sys.executable}" and ex.software
        worker = ex.turns(point, PROTOCOL)
        assert worker.ask(None).ready and len(worker.ask("turn 0.01").samples_s) >= 1
    assert worker.proc.poll() is not None  # closing the executor ended its turn worker
    broken = executors.get_executor("interpreter", timeout=60, python="false", label="side y")
    with broken, pytest.raises(executors.WorkerError, match=f"^side y: {POINT.id}: no output$"):
        broken.run(point, PROTOCOL)
