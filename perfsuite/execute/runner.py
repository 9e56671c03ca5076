"""One benchmark point, start to finish: place -> prepare -> measure. ``run_point`` is
module-level and returns plain data, so it runs the same in-process or in a worker process
(``perfsuite.execute.isolation``) that is bound to a NUMA node before any framework allocates.

``threads`` means the same everywhere: ONNX Runtime intra-op threads, OpenVINO
INFERENCE_NUM_THREADS, and the BLAS pool (threadpoolctl) of the process.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from perfsuite import records
from perfsuite.dispersion import cv
from perfsuite.execute import calibration, decoding, serving
from perfsuite.execute.counters import PerfAttach
from perfsuite.execute.faults import inject_fault, slowed
from perfsuite.execute.interference import Sampler
from perfsuite.execute.measure import measure_latency, summarize, warm_up
from perfsuite.host import numa
from perfsuite.host import placement as pl
from perfsuite.host.topology import read_topology
from perfsuite.prepare import models, quantize
from perfsuite.prepare.backends import BACKENDS, BackendError, RunConfig, get_backend
from perfsuite.prepare.quantize import QUANTIZERS
from perfsuite.records import MeasureProtocol, Point, mode_kind


def place(numa_node: int | None) -> tuple[dict, tuple[int, ...] | None]:
    """Bind to the node's CPUs and memory (verified), or record the unbound state."""
    if numa_node is None:
        return numa.current_binding("none"), None
    p = pl.node(read_topology("/"), numa_node)
    return numa.bind(list(p.cpus), list(p.mem_nodes)), p.cpus


def runtime_extensions() -> list[tuple[str, str | None]]:
    """Modules that registered a backend or a precision in this process at run time, not
    through an entry point (a conftest defining a ``Backend`` subclass, a
    ``register_precision`` call), with their files. A spawned worker finds every entry point
    itself; these it must import first, or it would not know the point's framework or
    precision or model. Empty unless a test's conftest registers something."""
    defined = [type(b) for b in BACKENDS.runtime_only().values()]
    defined += [q.build for q in QUANTIZERS.runtime_only().values() if q.build is not None]
    # models defined in Python at run time (declared files travel in the protocol instead)
    defined += [m.builder for m in models.MODELS.runtime_only().values()
                if isinstance(m, models.PythonModel)]  # fmt: skip
    modules = {obj.__module__ for obj in defined} - {"perfsuite.prepare.models.zoo"}
    return sorted((m, getattr(sys.modules.get(m), "__file__", None)) for m in modules)


def load_extensions(modules: list[tuple[str, str | None]]) -> None:
    """Import ``runtime_extensions()`` of the parent: by name, or from the parent's file when
    the name finds another one (every conftest is called 'conftest')."""
    for name, file in modules:
        try:
            mod = importlib.import_module(name)
            same = file is None or Path(getattr(mod, "__file__", "")) == Path(file)
        except ImportError:
            if file is None:
                raise
            same = False
        if not same:
            spec = importlib.util.spec_from_file_location(name, file)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)


def run_point_in_worker(extensions: list[tuple[str, str | None]], point, protocol):
    load_extensions(extensions)
    return run_point(point, protocol)


def run_point(point: Point | dict, protocol: MeasureProtocol | dict) -> dict:
    """Measure ``point`` with ``protocol`` (each typed, or its JSON from another process)
    here; the serialised ``Measurement``: the worker contract, read the same by any perfsuite
    on the other side."""
    point = Point.model_validate(point)
    protocol = MeasureProtocol.model_validate(protocol)
    t_setup = time.perf_counter()
    binding, cpus = place(point.numa_node)
    inject_fault()
    return records.dump(measure_point(point, protocol, binding, cpus, t_setup))


def measure_in_place(point: Point | dict, protocol: MeasureProtocol | dict) -> dict:
    """measure_point in a process someone else already bound (numactl, bound.run_bound)."""
    point = Point.model_validate(point)
    protocol = MeasureProtocol.model_validate(protocol)
    binding = numa.current_binding("external")
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    return records.dump(measure_point(point, protocol, binding, cpus, time.perf_counter()))


def warmed(session, inputs, point: Point, p: MeasureProtocol):
    """Warm ``session`` up (``p``'s warm-up); returns ``window(w)``: the samples and protocol of
    one measurement window of ``w``'s length (latency: also its sample count and max_time)."""
    if point.mode == "latency":
        call = slowed(session.callable(inputs), point.id)
        warm = warm_up(call, p)
        return lambda w: measure_latency(call, w, warm)
    # one framework-parallel run of warmup_time, discarded
    warm_up(lambda: session.run_throughput(inputs, seconds=p.warmup_time), p, calls=1)

    def window(w: MeasureProtocol):
        run = session.run_throughput(inputs, seconds=w.min_time)
        return run.latencies_s, records.RunProtocol(window_s=run.seconds, items=run.items)

    return window


# A window that other processes disturbed is measured again, at most this many times.
CONTAMINATED_RETRIES = 2


def _measure_session(backend, variant, cfg, inputs, point: Point, p: MeasureProtocol, count: bool):
    """Open one framework session, warm it up, measure its window (perf stat, when asked and
    ``count``, on the window only), with interference accounting: a contaminated window is
    measured again (``CONTAMINATED_RETRIES``); the machine's speed is probed before the
    warm-up and after the window (``perfsuite.execute.calibration``). Returns (samples, info,
    settings, counters, prepare_s, interference of each window tried, speed)."""
    t0 = time.perf_counter()
    windows = []
    with backend.prepare(variant.path, cfg) as session:
        prepare_s = time.perf_counter() - t0
        if p.model is not None:
            check_outputs(session, inputs, point.model)
        before = calibration.probe()
        window = warmed(session, inputs, point, p)
        wait_for_shards(p.barrier)
        c = PerfAttach(os.getpid()) if p.counters and count else None  # the first window only
        # a shard's window runs beside the other shards': no retry could run beside them again
        retries = 0 if p.barrier else CONTAMINATED_RETRIES
        for attempt in range(1 + retries):
            with c if c and attempt == 0 else nullcontext(), Sampler() as sampler:
                samples, info = window(p)
            windows.append(sampler.result)
            if not sampler.result.contaminated:
                break
        speed = records.SpeedAround(before=before, after=calibration.probe())
        return samples, info, dict(session.settings), c, prepare_s, windows, speed


SHARD_WAIT_S = 60.0


def wait_for_shards(barrier: str | None, timeout_s: float = SHARD_WAIT_S) -> None:
    """Hold a shard's window until every shard of its point is warmed up: each leaves a file
    in the barrier's folder, and all start when N are there. A shard that died never
    arrives: the others give up after ``timeout_s`` with one line."""
    if not barrier:
        return
    folder, _, n = barrier.rpartition(":")
    Path(folder, str(os.getpid())).touch()
    deadline = time.monotonic() + timeout_s
    while (ready := len(os.listdir(folder))) < int(n):
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {ready} of {n} shards warmed up within {timeout_s:g} s")
        time.sleep(0.001)


def open_point(point: Point, cpus, spec: records.ModelSpec | None = None):
    """The model, its variant for the point's precision and framework, the run settings, the
    backend and the inputs: everything a session of the point is opened from. ``spec``: the
    point's model when it is a declared file (the protocol brings it to this process)."""
    if spec is not None:
        models.declare(spec)
    model = models.get(point.model)
    variant = quantize.prepare(model, point.precision, point.framework)
    inputs = model.inputs(point.batch)
    options = {
        **(spec.options.get(point.framework, {}) if spec else {}),
        **variant.framework_options,
    }
    cfg = RunConfig.for_point(point, cpus, options, inputs=inputs)
    return model, variant, cfg, get_backend(point.framework), inputs


def check_outputs(session, inputs, model_name: str) -> None:
    """A declared model must give finite outputs on its inputs (an input range outside what
    it was trained on, an embedding index past its table): NaN is not measured."""
    for i, out in enumerate(session.infer(inputs)):
        if not np.all(np.isfinite(np.asarray(out, dtype=np.float64))):
            raise BackendError(
                f"model {model_name!r}: output {i} is not finite (NaN or inf) on its inputs; "
                "check the inputs' ranges (inputs.NAME) or data"
            )


def measure_point(
    point: Point, p: MeasureProtocol, binding: records.Binding, cpus, t_setup: float
) -> records.Measurement:
    """Measure ``p.sessions`` fresh framework sessions one after another and pool
    their samples (``pool_sessions``). A new session re-draws memory layout and thread
    start-up, so the per-session medians (kept in the record) show spread that one session
    cannot (docs/measurements/2026-12-05-zen4-process-spread.md); what a process draws once
    (``executors.FreshWorker``) they do not show."""
    kind = mode_kind(point.mode)
    if kind == "decode":
        return decoding.measure(point, p, binding, cpus, t_setup)
    if kind == "loadgen":  # a server point's rate searches one after another, here
        with threadpool_limits(point.threads // point.streams):
            opened = open_point(point, cpus, p.model)
            about = model_info(*opened[:2])
            parts = [
                serving.measure(point, one, opened, about, binding, cpus, t_setup)
                for one in serving.per_search(p)
            ]
            return pool_sessions(point, parts)
    parts = []
    with threadpool_limits(point.threads):
        model, variant, cfg, backend, inputs = open_point(point, cpus, p.model)
        setup_s = time.perf_counter() - t_setup  # binding, model, variant; + session opens
        about = model_info(model, variant)
        for i in range(p.sessions):
            got, info, settings, c, prepare_s, attempts, speed = _measure_session(
                backend, variant, cfg, inputs, point, p, count=i == 0
            )
            parts.append(
                records.Measurement(
                    interference=interference_record([attempts[-1]], attempts[:-1]),  # last kept
                    calibration=records.Calibration(sessions=[speed]),
                    counters=c.result if c else None,
                    samples_s=got,
                    session_medians_s=[float(np.median(got))],
                    protocol=info,
                    settings=settings,
                    binding=binding,
                    setup_s=(setup_s if i == 0 else 0.0) + prepare_s,
                    model=about,
                )
            )
    return pool_sessions(point, parts)


def pool_sessions(point: Point, parts: list[records.Measurement]) -> records.Measurement:
    """One measurement from one-session measurements (``measure_point``'s sessions, or one
    worker per session): samples pooled, statistics from the pooled samples, the CV of the
    session medians, per-session interference and calibration kept; perf stat covers the
    first session's window. LoadGen and decode points run one session, kept as measured."""
    if mode_kind(point.mode) != "window" and len(parts) == 1:
        return parts[0]
    seen = [part.interference for part in parts if part.interference is not None]
    pooled = {
        "interference": interference_record(
            [w for i in seen for w in i.sessions], [w for i in seen for w in i.discarded]
        ),
        "calibration": records.Calibration(
            sessions=[s for part in parts if part.calibration for s in part.calibration.sessions]
        ),
        "setup_s": sum(part.setup_s or 0.0 for part in parts),
    }
    if mode_kind(point.mode) == "loadgen":  # a server point's searches
        return serving.pool_searches(parts).model_copy(update=pooled)
    samples = [x for part in parts for x in part.samples_s]
    medians = [m for part in parts for m in part.session_medians_s]
    windows = [part.protocol for part in parts]
    info = windows[0] if len(parts) == 1 else records.RunProtocol(sessions=windows)
    if point.mode == "latency":
        stats = summarize(samples, items_per_call=point.batch)
    else:
        window = sum(w.window_s for w in windows)
        info = info.model_copy(update={"window_s": window, "items": sum(w.items for w in windows)})
        stats = summarize(samples, items_per_call=point.batch, window_s=window)
    if len(medians) > 1:
        stats["between_session_cv"] = cv(np.asarray(medians))
    return records.Measurement(
        counters=parts[0].counters,
        samples_s=samples,
        session_medians_s=medians,
        stats=stats,
        protocol=info,
        settings=parts[-1].settings,
        binding=parts[0].binding,
        model=parts[0].model,
        **pooled,
    )


def interference_record(kept: list, discarded: list) -> records.Interference:
    """The windows kept and those measured again; contaminated when a kept one is."""
    return records.Interference(
        contaminated=any(w.contaminated for w in kept),
        retries=len(discarded),
        sessions=kept,
        discarded=discarded,
    )


def model_info(model, variant) -> records.ModelInfo:
    variant_bytes = sum(
        f.stat().st_size for f in [variant.path, variant.path.with_suffix(".bin")] if f.exists()
    )
    return records.ModelInfo(
        params=model.params,
        flops_per_item=model.flops_per_item,
        weight_bytes=model.weight_bytes,
        variant_file=variant.path.name,
        variant_mb=variant_bytes / 2**20,
    )
