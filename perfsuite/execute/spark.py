"""Spark as a system under test: the article's data-parallel inference
(``sc.parallelize(images, n).map(infer)``) beside the per-partition pattern (``mapInArrow``
with a session cached per Python worker), measured end to end over a generated dataset and
checked against single-process outputs (docs/guide/spark.md).

One SparkSession per sweep (``SparkExecutor``), ``local[<cores>]`` unless a master URL is
given (``--perf-spark-master`` or ``$PERFSUITE_SPARK_MASTER``). A point's slots are its
partitions, and each task's framework session gets ``cpus_per_task`` threads and its
backend's ``shared_core_options``. With a local or loopback master everything binds to
127.0.0.1; otherwise Spark's own address choice stands, since remote executors must reach
the driver.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.execute import spark_tasks as tasks
from perfsuite.execute.executors import BaseExecutor
from perfsuite.execute.interference import Sampler
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.measure import summarize
from perfsuite.execute.runner import CONTAMINATED_RETRIES, interference_record, model_info
from perfsuite.execute.spark_numa import NumaUnavailable, wrapper_script
from perfsuite.execute.spark_tasks import decode, image_bytes
from perfsuite.host import placement
from perfsuite.host.topology import read_topology
from perfsuite.prepare import accuracy, models, quantize
from perfsuite.prepare.backends import get_backend
from perfsuite.records import Measurement, MeasureProtocol, Point

ENV_MASTER = "PERFSUITE_SPARK_MASTER"
MIN_RUNS = 3  # measured passes over the dataset, after one warm-up pass
REFERENCE_ITEMS = 64  # items also run single-process for the output check


def java_problem() -> str | None:
    """Why Spark cannot start here (no pyspark, no Java 17+), or None."""
    try:
        import pyspark  # noqa: F401 (heavy, optional: only whether it is installed)
    except ImportError:
        return "pyspark is not installed (pip install 'perfsuite[frameworks]')"
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return "Spark needs Java 17+: no java on PATH (apt install openjdk-17-jre-headless)"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Spark needs Java 17+: {java} -version failed ({exc})"
    version = out.split('"')[1] if '"' in out else ""
    major = version.split(".")[0]
    if not major.isdigit() or int(major) < 17:
        return f"Spark 4 needs Java 17+; {java} is {version or 'unknown'}"
    return None


def is_loopback(master: str) -> bool:
    if master.startswith("local"):
        return True
    host = urllib.parse.urlparse(master).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def start(master: str | None = None, *, cores: int | None = None, conf: dict | None = None):
    """The sweep's SparkSession (getOrCreate: a second call reuses the running one)."""
    if problem := java_problem():
        raise WorkerError(problem)
    from pyspark.sql import SparkSession  # heavy, optional (perfsuite[frameworks])

    master = master or os.environ.get(ENV_MASTER) or f"local[{cores or os.cpu_count() or 1}]"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    loopback = {}
    if is_loopback(master):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        loopback = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    settings = {
        **loopback,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2, cores or 2)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "2g",
        # stray numpy/BLAS/OpenMP pools in the Python workers must not oversubscribe the
        # task's CPUs; the framework's own threads are set per task in its session options
        "spark.executorEnv.OMP_NUM_THREADS": "1",
        "spark.executorEnv.OPENBLAS_NUM_THREADS": "1",
        "spark.python.worker.reuse": "true",
        **(conf or {}),
    }
    builder = SparkSession.builder.master(master).appName("perfsuite").config(map=settings)
    spark = builder.getOrCreate()
    # a failing task's traceback reaches the point's record; Spark's own ERROR log of it
    # would only repeat it as pages of JVM stack on the terminal
    spark.sparkContext.setLogLevel("FATAL")
    return spark


class Deadline:
    """Cancels the point's Spark jobs at the deadline: a stuck task must not hang the sweep."""

    def __init__(self, sc, seconds: float, group: str):
        self.sc, self.group, self.expired = sc, group, False
        self._timer = threading.Timer(seconds, self._cancel)

    def _cancel(self):
        self.expired = True
        self.sc.cancelJobGroup(self.group)

    def __enter__(self):
        self.sc.setJobGroup(self.group, "perfsuite point", interruptOnCancel=True)
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()


class SparkExecutor(BaseExecutor):
    """Runs Spark points (``point.spark``); one SparkSession for the whole sweep."""

    name = "spark"

    def __init__(self, timeout: float = 900.0, master: str | None = None, items: int = 512):
        self.timeout = timeout
        self.master = master
        self.items = items
        self._spark = None
        self._data: dict = {}  # (model, items) -> list of (index, image bytes)
        self._frames: dict = {}  # (model, items, slots) -> cached DataFrame
        self._broadcast: dict = {}  # variant path -> Broadcast of its files
        self.start_s = 0.0  # JVM and SparkSession start, once per sweep
        self._python = None  # the workers' interpreter without binding

    @property
    def spark(self):
        if self._spark is None:
            t0 = time.perf_counter()
            self._spark = start(self.master, cores=os.cpu_count())
            self.start_s = time.perf_counter() - t0
            self._python = self._spark.sparkContext.pythonExec
        return self._spark

    def _bind(self, node: int | None) -> None:
        """Point the next jobs' Python workers at node's numactl wrapper (or unbound).
        PySpark reads ``SparkContext.pythonExec`` when it wraps each job's function, and
        Spark keeps one worker pool per interpreter, so a bound point gets its own workers."""
        sc = self.spark.sparkContext
        if node is None:
            sc.pythonExec = self._python
            return
        if not hasattr(self, "_scripts"):
            self._scripts = Path(tempfile.mkdtemp(prefix="perfsuite-spark-numa-"))
        try:
            sc.pythonExec = str(wrapper_script(node, self._python, self._scripts))
        except NumaUnavailable as exc:
            raise WorkerError(str(exc)) from exc

    def close(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    # -- inputs -------------------------------------------------------------------------------

    def _rows(self, model) -> list[tuple[int, bytes]]:
        key = (model.name, self.items)
        if key not in self._data:
            self._data[key] = [(i, image_bytes(i, model.image[1])) for i in range(self.items)]
        return self._data[key]

    def _frame(self, model, slots: int):
        """The dataset as a cached DataFrame in ``slots`` equal partitions (Spark's data, as
        a pipeline that reads images would have it; generation is not timed)."""
        key = (model.name, self.items, slots)
        if key not in self._frames:
            rdd = self.spark.sparkContext.parallelize(self._rows(model), slots)
            df = self.spark.createDataFrame(rdd, "idx long, image binary").cache()
            df.count()
            self._frames[key] = df
        return self._frames[key]

    def _files(self, path):
        if path not in self._broadcast:
            for old in self._broadcast.values():  # one model's files on the executors at a time
                old.unpersist()
            self._broadcast.clear()
            # an OpenVINO IR keeps its weights beside the xml
            files = {p.name: p.read_bytes() for p in (path, path.with_suffix(".bin")) if p.exists()}
            self._broadcast[path] = self.spark.sparkContext.broadcast(files)
        return self._broadcast[path]

    # -- one point ------------------------------------------------------------------------------

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        spec = point.spark
        if not spec:
            raise WorkerError(
                f"{point.id}: the spark executor runs Spark points only (--perf-spark); "
                "choose another executor for the others"
            )
        model = models.get(point.model)
        if model.image is None:
            raise WorkerError(f"{point.id}: Spark points feed one fixed-shape float input from "
                              f"encoded rows; {point.model} has {len(model.signature)} input(s) "
                              "of other kinds")  # fmt: skip
        variant = quantize.prepare(model, point.precision, point.framework)
        # several tasks share the cores: the framework's own knobs for that (no spinning pool
        # stealing another task's CPU, no pinning every process to the first core of its mask)
        options = {**variant.framework_options, **get_backend(point.framework).shared_core_options}
        built_from = (str(variant.path), variant.path.stat().st_mtime, spec.cpus_per_task,
                      point.batch, sorted(options.items()))  # fmt: skip
        job = tasks.SparkJob(
            framework=point.framework,
            files=self._files(variant.path),
            main=variant.path.name,
            threads=spec.cpus_per_task,
            batch=point.batch,
            options=options,
            input=model.image[0],
            shape=model.image[1],
            key=hashlib.sha256(repr(built_from).encode()).hexdigest(),
        )
        self._bind(point.numa_node)  # starts the SparkSession
        with Deadline(self.spark.sparkContext, self.timeout, f"perfsuite-{point.id}") as deadline:
            try:
                return self._measure(point, protocol, model, variant, job)
            except WorkerError:
                raise
            except Exception as exc:  # py4j/Spark errors: an error for this point only
                if deadline.expired:
                    raise WorkerError(
                        f"Spark point exceeded its {self.timeout:.0f} s deadline"
                    ) from exc
                raise WorkerError(f"Spark job failed: {_cause(exc)}") from exc

    def _pass(self, point: Point, model, job: tasks.SparkJob) -> tuple[float, Pass]:
        """One pass over the dataset; returns (wall seconds, parsed task output)."""
        spec, spark = point.spark, self.spark
        if spec.pattern == "partition":
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(point.batch))
            df = self._frame(model, spec.slots)
            t0 = time.perf_counter()
            table = df.mapInArrow(tasks.infer_partition(job), tasks.SCHEMA_DDL).toArrow()
            wall = time.perf_counter() - t0
            rows = zip(*table.to_pydict().values(), strict=True)  # idx, out, latency_s, meta
        else:
            data, infer = self._rows(model), functools.partial(tasks.infer_record, job)
            t0 = time.perf_counter()
            rows = spark.sparkContext.parallelize(data, spec.slots).map(infer).collect()
            wall = time.perf_counter() - t0
        return wall, _parse(rows)

    def _measure(self, point: Point, protocol: MeasureProtocol, model, variant, job) -> Measurement:
        cold_s, cold = self._pass(point, model, job)  # warm-up: workers, imports, sessions
        local = is_loopback(self.spark.sparkContext.master)
        walls, latencies, windows, discarded, last = [], [], [], [], cold
        while len(walls) < MIN_RUNS or sum(walls) < protocol.min_time:
            for attempt in range(1 + CONTAMINATED_RETRIES):
                with Sampler(tree=True) as sampler:
                    wall, got = self._pass(point, model, job)
                window = sampler.result if local else None
                if not (local and sampler.result.contaminated) or attempt == CONTAMINATED_RETRIES:
                    break
                discarded.append(window)
            walls.append(wall)
            latencies += got.latencies
            windows.append(window)
            last = got
        if len(last.outputs) != self.items:
            raise WorkerError(f"Spark returned {len(last.outputs)} outputs for {self.items} items")
        tasks = cold.tasks + last.tasks
        _check_binding(point.numa_node, tasks)
        agreement = self._agreement(point, model, variant, job, last.outputs)
        if not agreement.passed:
            raise WorkerError(
                f"Spark outputs differ from single-process outputs: SQNR "
                f"{agreement.sqnr_db:.1f} dB < {agreement.threshold_db} dB"
            )
        items = self.items * len(walls)
        stats = summarize(latencies, items_per_call=point.batch)
        stats["throughput_ips"] = items / sum(walls)  # end to end, the whole dataset
        per_batch = [w * point.batch / self.items for w in walls]
        workers = {t.pid: records.SparkWorker(pid=t.pid, cpus=t.cpus, mems=t.mems) for t in tasks}
        return records.Measurement.model_validate({
            "interference": interference_record(windows, discarded) if local else None,
            "counters": None,
            "samples_s": latencies,
            "session_medians_s": per_batch,  # end-to-end seconds per batch, one per pass
            "stats": stats,
            "protocol": {"runs": len(walls), "items": items, "window_s": sum(walls)},
            "settings": {**(tasks[0].settings if tasks else {}), **self._spark_settings(point)},
            "binding": {"workers": [workers[pid] for pid in sorted(workers)]},
            "setup_s": cold_s,
            "isolation": "spark",
            "spark": {
                "master": self.spark.sparkContext.master,
                **point.spark.model_dump(),  # pattern, slots, cpus_per_task
                "items": self.items,
                "spark_session_start_s": self.start_s,
                "cold_pass_s": cold_s,
                "pass_s": walls,
                "session_build_s": [t.build_s for t in cold.tasks if t.build_s],
                "partition_s": [t.elapsed_s for t in last.tasks],
                "agreement": agreement,
            },
            "model": model_info(model, variant).model_copy(update={"variant_mb": None}),
        })  # fmt: skip

    def _spark_settings(self, point) -> dict:
        conf = self.spark.sparkContext.getConf()
        return {
            "spark.master": conf.get("spark.master"),
            "spark.task.cpus": conf.get("spark.task.cpus") or "1",  # Spark's default
            "spark.executorEnv.OMP_NUM_THREADS": conf.get("spark.executorEnv.OMP_NUM_THREADS"),
            "spark.python.worker.reuse": conf.get("spark.python.worker.reuse"),
            "spark.sql.execution.arrow.maxRecordsPerBatch": point.batch,
            "spark.pyspark.python": self.spark.sparkContext.pythonExec,
        }

    def _agreement(self, point, model, variant, job, outputs: dict) -> records.SparkAgreement:
        """The first ``REFERENCE_ITEMS`` outputs against the same variant run in this process
        (same decode, same batch): the accuracy gate's metric and threshold."""
        n = min(REFERENCE_ITEMS, self.items)
        x = decode([b for _, b in self._rows(model)[:n]], model.image[1])
        ref = accuracy.run_batches(
            point.framework, variant.path, job.options, {model.image[0]: x}, point.batch
        )
        ref = ref.reshape(n, -1).astype(np.float32)
        got = np.stack([np.frombuffer(outputs[i], np.float32) for i in range(n)])
        threshold = accuracy.THRESHOLDS.get(model.name, accuracy.THRESHOLDS["default"])
        sqnr = accuracy.centred_sqnr_db(ref, got)
        identical = bool(np.array_equal(ref, got))  # SQNR is +inf then, which JSON cannot hold
        return records.SparkAgreement(
            items=n,
            metric="centred_sqnr_db",
            sqnr_db=None if identical else sqnr,
            identical=identical,
            threshold_db=threshold,
            top1_agreement=float(np.mean(ref.argmax(1) == got.argmax(1))),
            max_abs_diff=float(np.max(np.abs(ref - got))),
            passed=identical or bool(sqnr >= threshold),
        )


def _cause(exc: Exception) -> str:
    """One line: the Python worker's own exception when Spark wraps one (PythonException
    carries the worker's traceback), else the first line of Spark's message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b", line)]
    return raised[-1] if raised else f"{exc.__class__.__name__}: {lines[0] if lines else ''}"


def _check_binding(node: int | None, tasks: list[records.SparkTask]) -> None:
    """A bound point's workers must have run on the node's CPUs and memory (verified, as
    the single-process runner verifies its own binding)."""
    if node is None:
        return

    want = set(placement.node(read_topology("/"), node).cpus)
    for t in tasks:
        if not set(t.cpus) <= want or t.mems != str(node):
            raise WorkerError(
                f"Spark worker pid {t.pid} ran on CPUs {t.cpus} memory nodes {t.mems}, "
                f"not NUMA node {node} (CPUs {sorted(want)})"
            )


@dataclass
class Pass:
    """One pass over the dataset as the driver collected it."""

    outputs: dict[int, bytes]  # item -> its logits
    latencies: list[float]  # one per inference call
    tasks: list[records.SparkTask]  # the tasks' own reports


def _parse(rows) -> Pass:
    rows = list(rows)
    return Pass(
        outputs={idx: out for idx, out, _, _ in rows if idx >= 0},
        latencies=[lat for idx, _, lat, _ in rows if idx >= 0 and lat is not None],
        tasks=[records.SparkTask.model_validate_json(meta) for *_, meta in rows if meta],
    )
