"""What runs inside Spark's Python workers: the dataset's decode, a framework session cached
per Python worker, and the two patterns' task functions. Module-level, so Spark pickles them
by reference and each worker imports this module (not a closure over the driver's state).

A session is built once per Python worker and reused by later tasks and jobs
(``spark.python.worker.reuse``, Spark's default); its build time is reported by the task
that paid it, so the cost of "getting the model inside the task" is measured, not hidden.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from perfsuite.host import numa
from perfsuite.prepare.backends import RunConfig, get_backend
from perfsuite.records import SparkTask, SparkWorker

# key -> (session, seconds it took to build, its model folder); one model at a time per worker
_SESSIONS: dict = {}


@dataclass(frozen=True)
class SparkJob:
    """What a task needs to build its session: pickled with the task function."""

    framework: str
    files: object  # a Spark broadcast of {file name: bytes}: executors on other hosts too
    main: str  # the model file among them
    threads: int
    batch: int
    options: dict
    input: str  # the model's input name
    shape: tuple[int, ...]
    key: str  # what the session was built from: a worker rebuilds when it changes


def image_bytes(index: int, shape: tuple[int, ...]) -> bytes:
    """Deterministic uint8 image ``index`` (what a real pipeline ships: raw pixels)."""
    rng = np.random.default_rng(index)
    x = rng.standard_normal(shape) * 40.0 + 128.0
    return np.clip(np.rint(x), 0, 255).astype(np.uint8).tobytes()


def decode(blobs, shape: tuple[int, ...]) -> np.ndarray:
    """uint8 pixels -> the models' float input (about standard normal, what calibration saw)."""
    u8 = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), *shape)
    return (u8.astype(np.float32) - 128.0) / 40.0


def _binding() -> SparkWorker:
    try:
        mems = numa.read_status().get("Mems_allowed_list")
    except OSError:
        mems = None
    return SparkWorker(pid=os.getpid(), cpus=sorted(os.sched_getaffinity(0)), mems=mems)


def session(job: SparkJob):
    """The worker's session for ``job`` (built on first use) and the seconds this call spent
    building it (0.0 when it was already there)."""
    if job.key in _SESSIONS:
        return _SESSIONS[job.key][0], 0.0

    for old, _, folder in _SESSIONS.values():
        old.close()
        shutil.rmtree(folder, ignore_errors=True)
    _SESSIONS.clear()
    t0 = time.perf_counter()

    threadpool_limits(job.threads)  # numpy/BLAS pools of this worker: the task's CPUs
    folder = Path(tempfile.mkdtemp(prefix="perfsuite-spark-"))
    for name, data in job.files.value.items():
        (folder / name).write_bytes(data)
    cfg = RunConfig(threads=job.threads, batch=job.batch, options=dict(job.options))
    built = get_backend(job.framework).prepare(folder / job.main, cfg)
    _SESSIONS[job.key] = (built, time.perf_counter() - t0, folder)
    return built, _SESSIONS[job.key][1]


def _meta(started: float, build_s: float, items: int, settings: dict) -> str:
    elapsed_s = time.perf_counter() - started
    task = SparkTask(
        elapsed_s=elapsed_s, build_s=build_s, items=items, settings=settings, **dict(_binding())
    )
    return json.dumps(task.model_dump(), default=str)


def infer_partition(job: SparkJob):
    """The recommended pattern (``mapInArrow``): one session per worker, Arrow batches of
    ``job.batch`` rows (``spark.sql.execution.arrow.maxRecordsPerBatch``). Yields a row per
    item (index, logits, the batch's latency on its first row) and one meta row (index -1)."""
    import pyarrow as pa  # optional (perfsuite[frameworks]); only Spark's workers need it

    schema = pa.schema(  # SCHEMA_DDL in Arrow types
        {"idx": pa.int64(), "out": pa.binary(), "latency_s": pa.float64(), "meta": pa.string()}
    )

    def batch(*columns) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(
            dict(zip(schema.names, columns, strict=True)), schema=schema
        )

    def run(batches):
        started = time.perf_counter()
        sess, build_s = session(job)
        items = 0
        for rb in batches:
            idx = rb.column("idx").to_pylist()
            x = decode(rb.column("image").to_pylist(), job.shape)
            t0 = time.perf_counter()
            out = sess.infer({job.input: x})[0]
            lat = time.perf_counter() - t0
            items += len(idx)
            rows = np.ascontiguousarray(out, dtype=np.float32).reshape(len(idx), -1)
            latency = [lat] + [None] * (len(idx) - 1)
            yield batch(idx, [r.tobytes() for r in rows], latency, [None] * len(idx))
        yield batch([-1], [b""], [None], [_meta(started, build_s, items, dict(sess.settings))])

    return run


SCHEMA_DDL = "idx long, out binary, latency_s double, meta string"


def infer_record(job: SparkJob, record: tuple[int, bytes]) -> tuple:
    """The article's pattern: ``sc.parallelize(images, n).map(infer)``, one image per call,
    the model obtained inside the task (the worker's cached session; the first call in each
    worker pays the build and says so)."""
    index, blob = record
    t0 = time.perf_counter()
    sess, build_s = session(job)
    x = decode([blob], job.shape)
    t1 = time.perf_counter()
    out = sess.infer({job.input: x})[0]
    lat = time.perf_counter() - t1
    meta = _meta(t0, build_s, 1, dict(sess.settings)) if build_s else None
    return index, np.ascontiguousarray(out, dtype=np.float32).tobytes(), lat, meta
