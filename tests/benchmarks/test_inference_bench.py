"""The article's table: ResNet-50, batch 1, ONNX Runtime and OpenVINO x FP32 and the INT8
variants x 1 thread and all cores. Latency mode: one request at a time, per-call samples.

Every INT8 point first passes the accuracy gate against its FP32 model (a failing gate fails
the point with the numbers); at the end the INT8/FP32 ratios are printed, with the diagnosis
of any INT8 variant that ran slower than FP32.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from perfsuite import accuracy, models, quantize
from perfsuite.backends import BACKENDS, BackendUnavailable, RunConfig, get_backend

MODEL = os.environ.get("PERFSUITE_BENCH_MODEL", "resnet50")
THREADS = sorted({1, len(os.sched_getaffinity(0))})
POINTS = [(fw, p) for fw in BACKENDS for p in quantize.SUPPORTED[fw]]
GATES: dict = {}


@pytest.fixture(scope="module")
def model():
    return models.get(MODEL)


def _gate(model, variant, framework):
    key = (framework, variant.precision)
    if key not in GATES:
        GATES[key] = accuracy.evaluate(model, variant, framework)
    return GATES[key]


@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"t{t}")
@pytest.mark.parametrize("framework, precision", POINTS, ids=lambda v: str(v))
def test_inference_latency(benchmark, kernel_results, model, framework, precision, threads):
    backend = get_backend(framework)
    try:
        backend.require()
        variant = quantize.prepare(model, precision, framework)
    except (BackendUnavailable, quantize.Unsupported) as exc:
        pytest.skip(str(exc))
    gate = None
    if precision != "fp32":
        gate = _gate(model, variant, framework)
        benchmark.extra_info["accuracy"] = gate.as_dict()
        assert gate.passed, f"{framework} {precision} fails the accuracy gate: {gate}"
    cfg = RunConfig(threads=threads, batch=1, options=variant.framework_options)
    x = model.inputs(1)
    with threadpool_limits(1), backend.prepare(variant.path, cfg) as session:
        call = session.callable(x)
        for _ in range(3):  # warm-up: first calls allocate and pick kernels
            call()
        rounds = 30 if model.flops_per_item > 1e9 else 200
        benchmark.pedantic(call, rounds=rounds, iterations=1)
        settings = session.settings
    samples = np.asarray(benchmark.stats.stats.data)
    p50, p90, p99 = np.percentile(samples, [50, 90, 99]) * 1e3
    ips = 1.0 / float(np.median(samples))
    kernel_results[("infer", framework, precision, threads)] = ips
    kernel_results["infer_model"] = model.name
    kernel_results[("variant", framework, precision)] = variant.path
    benchmark.extra_info.update(
        {
            "model": model.name,
            "framework": framework,
            "precision": precision,
            "threads": threads,
            "batch": 1,
            "throughput_ips": ips,
            "latency_p50_ms": p50,
            "latency_p90_ms": p90,
            "latency_p99_ms": p99,
            "samples": len(samples),
            "settings": settings,
            "cv": float(samples.std() / samples.mean()),
            "variant_path": str(variant.path),
        }
    )
    if gate is not None:
        kernel_results[("gate", framework, precision, threads)] = gate
