"""One benchmark point, start to finish: place -> prepare -> measure. ``run_point`` is
module-level and returns plain data, so it runs the same in-process or in a worker process
(``perfsuite.execute.isolation``) that is bound to a NUMA node before any framework allocates.

``threads`` means the same everywhere: ONNX Runtime intra-op threads, OpenVINO
INFERENCE_NUM_THREADS, and the BLAS pool (threadpoolctl) of the process.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np

from perfsuite.dispersion import cv
from perfsuite.execute.measure import Protocol, measure_latency, summarize, warm_up


def _counted(p: Protocol):
    """perf stat attached to this process for the measurement window, when asked."""
    if not p.counters:
        return nullcontext(None)
    import os

    from perfsuite.execute.counters import PerfAttach

    return PerfAttach(os.getpid())


def place(numa_node: int | None) -> tuple[dict, tuple[int, ...] | None]:
    """Bind to the node's CPUs and memory (verified), or record the unbound state."""
    from perfsuite.host import numa
    from perfsuite.host import placement as pl
    from perfsuite.host.topology import read_topology

    if numa_node is None:
        return numa.current_binding("none").as_dict(), None
    p = pl.node(read_topology("/"), numa_node)
    return numa.bind(list(p.cpus), list(p.mem_nodes)).as_dict(), p.cpus


# Fault injection, for testing isolation and the gate: crash | hang | raise (worker points
# only), slow:<fraction> (every timed call takes that much longer: a known slowdown).
FAULT_ENV = "PERFSUITE_FAULT"


def slowed(call):
    import os

    fault = os.environ.get(FAULT_ENV, "")
    if not fault.startswith("slow:"):
        return call
    extra = float(fault.split(":", 1)[1])

    def slow_call():
        t0 = time.perf_counter()
        out = call()
        end = time.perf_counter() + (time.perf_counter() - t0) * extra
        while time.perf_counter() < end:  # busy-wait: sleep granularity is too coarse
            pass
        return out

    return slow_call


def _inject_fault() -> None:
    """Only in worker processes: an in-process fault would take the whole run down."""
    import multiprocessing
    import os
    import signal

    if multiprocessing.parent_process() is None:
        return
    fault = os.environ.get(FAULT_ENV, "")
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "hang":
        time.sleep(3600)
    elif fault == "raise":
        raise RuntimeError("injected failure")


def run_point(point: dict, protocol: dict) -> dict:
    t_setup = time.perf_counter()
    binding, cpus = place(point["numa_node"])
    _inject_fault()
    return measure_point(point, protocol, binding, cpus, t_setup)


def measure_in_place(point: dict, protocol: dict) -> dict:
    """measure_point in a process someone else already bound (numactl, bound.run_bound)."""
    import os

    from perfsuite.host import numa

    return measure_point(
        point,
        protocol,
        numa.current_binding("external").as_dict(),
        tuple(sorted(os.sched_getaffinity(0))),
        time.perf_counter(),
    )


# A window that other processes disturbed is measured again, at most this many times.
CONTAMINATED_RETRIES = 2


def _measure_session(backend, variant, cfg, inputs, point: dict, p: Protocol, count: bool):
    """Open one framework session, warm it up, measure its window (perf stat, when asked and
    ``count``, on the window only), with interference accounting: a contaminated window is
    measured again (``CONTAMINATED_RETRIES``); the machine's speed is probed before the
    warm-up and after the window (``perfsuite.execute.calibration``). Returns (samples, info,
    settings, counters, prepare_s, interference of each window tried, speed)."""
    from perfsuite.execute import calibration
    from perfsuite.execute.interference import Sampler

    t0 = time.perf_counter()
    windows, c = [], None
    with backend.prepare(variant.path, cfg) as session:
        prepare_s = time.perf_counter() - t0
        before = calibration.probe()
        if point["mode"] == "latency":
            call = slowed(session.callable(inputs))
            warm = warm_up(call, p)
        else:
            session.run_throughput(inputs, seconds=p.warmup_time)  # warm-up, discarded
        for attempt in range(1 + CONTAMINATED_RETRIES):
            counted = _counted(p) if count and attempt == 0 else nullcontext(None)
            with counted as c_try, Sampler() as sampler:
                if point["mode"] == "latency":
                    samples, info = measure_latency(call, p, warm)
                else:
                    run = session.run_throughput(inputs, seconds=p.min_time)
                    samples = run.latencies_s
                    info = {"window_s": run.seconds, "items": run.items}
            if attempt == 0:
                c = c_try  # perf stat counts the first window only
            windows.append(sampler.result.as_dict())
            if not sampler.result.contaminated:
                break
        speed = {"before": before.as_dict(), "after": calibration.probe().as_dict()}
        return samples, info, dict(session.settings), c, prepare_s, windows, speed


def open_point(point: dict, cpus):
    """The model, its variant for the point's precision and framework, the run settings, the
    backend and the inputs: everything a session of the point is opened from."""
    from perfsuite.prepare import models, quantize
    from perfsuite.prepare.backends import RunConfig, get_backend

    model = models.get(point["model"])
    variant = quantize.prepare(model, point["precision"], point["framework"])
    cfg = RunConfig(
        threads=point["threads"],
        batch=point["batch"],
        mode=point["mode"],
        cpus=cpus,
        options=dict(variant.framework_options),
    )
    return model, variant, cfg, get_backend(point["framework"]), model.inputs(point["batch"])


def measure_point(point: dict, protocol: dict, binding: dict, cpus, t_setup: float) -> dict:
    """Measure ``protocol["sessions"]`` fresh framework sessions one after another and pool
    their samples. A new session re-draws memory layout and thread start-up: sub-ms ORT calls
    move by up to 1.8x from one session to the next on a shared VM, so the per-session medians
    (kept in the record) show run-to-run spread that one session's samples cannot."""
    from threadpoolctl import threadpool_limits

    p = Protocol(**protocol)
    with threadpool_limits(point["threads"]):
        model, variant, cfg, backend, inputs = open_point(point, cpus)
        setup_s = time.perf_counter() - t_setup  # binding, model, variant; + session opens
        samples, windows, medians, counted, settings, tried = [], [], [], None, {}, []
        speeds = []
        for i in range(p.sessions):
            got, info, settings, c, prepare_s, attempts, speed = _measure_session(
                backend, variant, cfg, inputs, point, p, count=i == 0
            )
            tried.append(attempts)
            speeds.append(speed)
            setup_s += prepare_s
            counted = counted or c  # perf stat covers the first session's window
            samples += got
            windows.append(info)
            medians.append(float(np.median(got)))
    info = dict(windows[0]) if p.sessions == 1 else {"sessions": windows}
    if point["mode"] == "latency":
        stats = summarize(samples, items_per_call=point["batch"])
    else:
        window = sum(w["window_s"] for w in windows)
        info.update(window_s=window, items=sum(w["items"] for w in windows))
        stats = summarize(samples, items_per_call=point["batch"], window_s=window)
    if p.sessions > 1:
        m = np.asarray(medians)
        stats["between_session_cv"] = cv(m)
    return {
        "interference": {
            # the kept window of each session is its last attempt
            "contaminated": any(a[-1]["contaminated"] for a in tried),
            "retries": sum(len(a) - 1 for a in tried),
            "sessions": [a[-1] for a in tried],
            "discarded": [w for a in tried for w in a[:-1]],
        },
        "calibration": {"sessions": speeds},
        "counters": counted.result.as_dict() if counted and counted.result else None,
        "samples_s": samples,
        "session_medians_s": medians,
        "stats": stats,
        "protocol": info,
        "settings": settings,
        "binding": binding,
        "setup_s": setup_s,
        "model": model_info(model, variant),
    }


def model_info(model, variant) -> dict:
    variant_bytes = sum(
        f.stat().st_size for f in [variant.path, variant.path.with_suffix(".bin")] if f.exists()
    )
    return {
        "params": model.params,
        "flops_per_item": model.flops_per_item,
        "weight_bytes": model.weight_bytes,
        "variant_file": variant.path.name,
        "variant_mb": variant_bytes / 2**20,
    }
