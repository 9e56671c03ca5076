"""Run-wide state of a sweep: the profile and plan (at configure), the accuracy gates (once
per model/framework/precision), the result records (``perfsuite.records.Result``, validated
before it is written, one JSON per point under ``<out>/points/``), and the end-of-run
report. The pytest plugin (``perfsuite.plugin``) only wires this into hooks and fixtures.
"""

from __future__ import annotations

import time
from pathlib import Path

from perfsuite import llm, records
from perfsuite.execute import serving
from perfsuite.execute.executors import DEFAULT, get_executor
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.shards import run_sharded
from perfsuite.execute.spark import java_problem
from perfsuite.host.fingerprint import fingerprint as host_fingerprint
from perfsuite.host.provenance import provenance
from perfsuite.host.topology import read_topology
from perfsuite.kernels import cpu_features
from perfsuite.prepare import accuracy, cache, models, quantize
from perfsuite.prepare.backends import BACKENDS, software_versions
from perfsuite.records import Fingerprint, mode_kind
from perfsuite.store import Store, open_store
from perfsuite.store.files import RunDir
from perfsuite.sweep.plan import Point, Profile, article_threads, expand, l3_mb_of, require_points


class PerfSession:
    def __init__(
        self,
        profile: Profile,
        out_dir: Path,
        topo=None,  # None: this host's, as is the fingerprint
        fingerprint: Fingerprint | None = None,
        executor: str | None = None,  # None: executors.DEFAULT
        baselines: Path | None = None,
        spark_master: str | None = None,
        source: records.Provenance | None = None,  # None: from git / GitHub Actions
        counters: bool = False,  # perf stat around each measurement window (--perf-counters)
    ):
        self.profile = profile
        self.baselines: Store = open_store(str(baselines or "baselines"))
        self.run_handle = RunDir(Path(out_dir), profile.name)
        self.executor = get_executor(
            executor or DEFAULT,
            timeout=profile.timeout,
            spark_master=spark_master,
            spark_items=profile.spark_items,
        )
        self.topo = read_topology("/") if topo is None else topo
        if fingerprint is None:
            fingerprint = host_fingerprint("/", frameworks=software_versions())
        self.fingerprint = fingerprint
        self.source = provenance() if source is None else source
        self.records: list[records.Result] = []
        self.kernels: list[records.KernelResult] = []  # kernel benchmarks, kept in the summary
        self.counters = counters
        self.gates: dict = {}
        self._points: list[Point] | None = None

    def points(self) -> list[Point]:
        if self._points is None:
            unavailable = {n: b.unavailable() for n, b in BACKENDS.items()}
            unavailable.update(llm.genai_missing())
            if any(spec != "none" for spec in self.profile.spark):
                unavailable["spark"] = java_problem()
            unavailable["loadgen"] = serving.loadgen_missing()
            planned = expand(
                self.profile,
                self.topo,
                model_mb=self._model_mb,
                bf16=bool(cpu_features().get("avx512_bf16")),
                unavailable=unavailable,
            )
            self._points = require_points(self.profile, planned)
        return self._points

    @staticmethod
    def _model_mb(name: str) -> float:
        if name in llm.MODELS:  # fp32 weights, as for the zoo's models
            return llm.variants.param_count(llm.MODELS[name]) * 4 / 2**20
        return models.get(name).weight_bytes / 2**20

    def formula_threads(self, model: str) -> int:
        cores = self.topo.physical_cores or 1
        return article_threads(cores, self._model_mb(model), l3_mb_of(self.topo))

    def gate(self, point: Point):
        """Accuracy of an INT8/bf16 variant vs FP32, computed once per (model, fw, prec)."""
        if point.precision == "fp32":
            return None
        key = (point.model, point.framework, point.precision)
        if isinstance(self.gates.get(key), Exception):  # failed once: not again per point
            raise self.gates[key]
        if key not in self.gates and point.model in llm.MODELS:
            self.gates[key] = llm_accuracy(*key)
        if key not in self.gates:
            try:
                model = models.get(point.model)
                variant = quantize.prepare(model, point.precision, point.framework)
                self.gates[key] = accuracy.evaluate(model, variant, point.framework)
            except Exception as exc:
                self.gates[key] = exc
                raise
        return self.gates[key]

    def run(self, point: Point, *, keep: bool = True) -> records.Result:
        """Measure one point with the run's executor (``perfsuite.execute.executors``).
        keep=False (confirmation re-measures) writes the record but leaves it out of this
        run's results."""
        software = {
            k: v
            for k, v in self.fingerprint.fields.items()
            if k.startswith("software.") or k == "kernels.isa"
        }
        marks = {} if keep else {"remeasure": True}
        try:
            gate = self.gate(point)
        except Exception as exc:  # quantizing or checking the model, not measuring it
            why = f"{exc.__class__.__name__}: {exc}".splitlines()[0]
            gate, marks = None, marks | {"status": "error", "error": why}
        head = records.ResultHead(
            schema=records.RESULT, id=point.id, point=point, software=software, status="ok",
            hardware_class=self.fingerprint.hardware_class, timestamp=time.time(), error=None,
            accuracy=gate,
            **({"source": self.source} if self.source != records.Provenance() else {}),
        )  # fmt: skip
        try:
            if "error" in marks:
                raise WorkerError(marks["error"])
            if point.shards:  # one bound worker per shard, whatever the executor
                measured = run_sharded(
                    point, self.protocol(point, keep), timeout=self.profile.timeout
                )
            else:
                measured = self.executor.run(point, self.protocol(point, keep))
        except WorkerError as exc:
            first = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
            failed = {"status": "error", "error": first, "error_detail": str(exc)}
            measured = records.Measurement()
            marks |= failed
        try:
            result = records.Result.of(head, measured, **marks)
        except records.RecordError as exc:  # never store (or gate on) an invalid measurement
            failed = {"status": "error", "error": str(exc), "samples_s": [], "stats": None}
            try:  # keep what else was measured when that part is valid
                result = records.Result.of(head, measured, **marks, **failed, session_medians_s=[])
            except records.RecordError:
                result = records.Result.of(head, **marks, **failed)
        self.run_handle.write_result(result)
        if keep:
            self.records.append(result)
        return result

    def protocol(self, point: Point, keep: bool = True) -> records.MeasureProtocol:
        """What the point's measurement needs: the profile's protocol, a LoadGen point's
        settings and log directory, and a declared model's spec."""
        one_run = mode_kind(point.mode) != "window"  # a LoadGen run or search, a decode run
        runs = self.profile.server_searches if point.mode == "server" else 1
        protocol = self.profile.protocol(counters=self.counters, sessions=runs if one_run else None)
        spec = models.declared(point.model)
        if spec is not None:
            protocol = protocol.model_copy(update={"model": spec})
        if mode_kind(point.mode) == "loadgen":
            where = self.run_dir / "loadgen" / point.id
            if not keep:  # a confirmation re-measure must not overwrite the run's logs
                where = where / f"remeasure-{time.time_ns()}"
            loadgen = self.profile.loadgen(point.model)
            protocol = protocol.model_copy(update={"loadgen": loadgen, "log_dir": str(where)})
        if point.model in llm.FOLDERS:
            protocol = protocol.model_copy(update={"llm_folder": str(llm.FOLDERS[point.model])})
        if point.mode == records.LLM_SERVER:
            protocol = protocol.model_copy(update={"llm_serving": self.profile.llm_serving()})
        return protocol

    def close(self) -> None:
        """Stop what the sweep started (the SparkSession of Spark points)."""
        self.executor.close()

    @property
    def run_dir(self) -> Path:
        return self.run_handle.path

    def summary(self) -> records.RunSummary:
        summary = run_summary(self.profile.as_dict(), self.fingerprint, self.records, self.source)
        return summary.model_copy(update={"kernels": self.kernels}) if self.kernels else summary

    def write_summary(self) -> Path | None:
        return self.run_handle.write_summary(self.summary()) if self.records else None


def llm_accuracy(model: str, framework: str, precision: str) -> records.Accuracy:
    """An LLM variant's logits against fp32's over a fixed sequence (``llm.accuracy``)."""
    got = llm.accuracy(model, precision, framework, cache.cache_dir())
    if got.mean_cosine is None:  # no logits exposed: the teacher-forced top-1 tokens
        return records.Accuracy(
            metric="top1_agreement", value=got.top1_agreement, threshold=got.min_top1,
            passed=got.passed, detail={"tokens": got.tokens},
        )  # fmt: skip
    return records.Accuracy(
        metric="logits_cosine",
        value=got.mean_cosine,
        threshold=got.min_cosine,
        passed=got.passed,
        detail={
            "top1_agreement": got.top1_agreement,
            "min_top1": got.min_top1,
            "tokens": got.tokens,
        },
    )


def run_summary(
    profile: dict,
    fingerprint: records.Fingerprint,
    results: list[records.Result],
    source: records.Provenance | None = None,
):
    """A run directory's summary (``perfsuite.run/1``)."""
    summary = records.RunSummary.model_validate(
        {
            "schema": records.RUN,
            "profile": profile,
            "fingerprint": fingerprint,
            "points": [
                {"id": r.id, "status": r.status, "error": r.error, "stats": r.stats,
                 "accuracy": r.accuracy, **({"figures": r.figures} if r.figures else {})}
                for r in results
            ],
        }
    )  # fmt: skip
    if source is None or source == records.Provenance():
        return summary
    return summary.model_copy(update={"source": source})
