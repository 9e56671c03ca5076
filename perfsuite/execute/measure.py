"""The measurement protocol: warm up until stable, then a window with a minimum duration and
a minimum sample count; raw samples are kept and every statistic derives from them.

Latency mode (like MLPerf SingleStream): one call at a time, per-call latency.
Throughput mode (like MLPerf Offline): the framework's own parallelism (batches, OpenVINO
streams and in-flight requests); items/s over the window plus request latencies.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from perfsuite import records
from perfsuite.dispersion import cv
from perfsuite.records import MeasureProtocol, RunProtocol, Warmup

P99_MIN_SAMPLES = 100  # below this, p99 is the max of a handful of calls: flagged


def warm_up(
    call: Callable[[], object],
    p: MeasureProtocol,
    *,
    calls: int | None = None,
    times: list[float] | None = None,
) -> Warmup:
    """Call until ``p``'s minimums are met and the last calls agree (or ``max_warmup_time``
    passed). ``calls``: exactly that many, without waiting for agreement (a LoadGen session,
    a throughput run); ``times``, when given, receives each call's seconds."""
    if calls is not None:
        p = p.model_copy(update={"warmup_calls": calls, "warmup_time": 0, "max_warmup_time": 0})
    seen: list[float] = []
    t0 = time.perf_counter()
    while True:
        s = time.perf_counter()
        call()
        seen.append(time.perf_counter() - s)
        elapsed = time.perf_counter() - t0
        if len(seen) < p.warmup_calls or elapsed < p.warmup_time:
            continue
        if len(seen) >= 10:
            last, prev = np.median(seen[-5:]), np.median(seen[-10:-5])
            stable = bool(abs(last - prev) <= p.stable_within * prev)
        else:  # slow calls: ten of them would take long; accept after the minimums
            stable = seen[-1] > 0.2
        if stable or elapsed >= p.max_warmup_time:
            if times is not None:
                times.extend(seen)
            return Warmup(calls=len(seen), seconds=elapsed, stable=stable)


def measure_latency(
    call: Callable[[], object], p: MeasureProtocol, warm: Warmup | None = None
) -> tuple[list[float], RunProtocol]:
    """Warm up (unless ``warm`` says it was done), then time calls for the window."""
    warm = warm if warm is not None else warm_up(call, p)
    samples: list[float] = []
    t0 = time.perf_counter()
    while True:
        s = time.perf_counter()
        call()
        e = time.perf_counter()
        samples.append(e - s)
        if (e - t0 >= p.min_time and len(samples) >= p.min_samples) or e - t0 >= p.max_time:
            return samples, RunProtocol(warmup=warm, window_s=e - t0)


def summarize(samples, items_per_call: int = 1, window_s: float | None = None) -> dict:
    """Statistics of per-call (or per-request) latencies in seconds."""
    a = np.asarray(samples, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no samples")
    q1, p50, q3, p90, p99 = np.percentile(a, [25, 50, 75, 90, 99])
    out = {
        "n": int(a.size),
        "latency_p50_ms": p50 * 1e3,
        "latency_p90_ms": p90 * 1e3,
        "latency_p99_ms": p99 * 1e3,
        "latency_mean_ms": float(a.mean()) * 1e3,
        "latency_stdev_ms": float(a.std(ddof=1)) * 1e3 if a.size > 1 else 0.0,
        "latency_min_ms": float(a.min()) * 1e3,
        "latency_max_ms": float(a.max()) * 1e3,
        "cv": cv(a),
        "iqr_ms": (q3 - q1) * 1e3,
        "p99_reliable": bool(a.size >= P99_MIN_SAMPLES),
    }
    # throughput mode: items over the window; latency mode: one call's items per median call
    out["throughput_ips"] = a.size * items_per_call / window_s if window_s else items_per_call / p50
    return out


def one_window(
    samples: list[float],
    items_per_call: int,
    window,
    speed,
    window_s: float | None = None,
    **fields,
) -> records.Measurement:
    """The measurement of a point measured in one window by its own driver (LoadGen, a decode
    test): its samples and their statistics, the window's interference (``window``, a
    ``records.InterferenceWindow``) and the speed probes around it; ``fields`` the rest.
    With ``window_s`` (the driver's run), throughput is the samples' items over it."""
    return records.Measurement(
        interference=records.Interference(
            contaminated=window.contaminated, retries=0, sessions=[window]
        ),
        calibration=records.Calibration(sessions=[speed]),
        samples_s=samples,
        session_medians_s=[float(np.median(samples))],
        stats=summarize(samples, items_per_call=items_per_call, window_s=window_s),
        **fields,
    )
