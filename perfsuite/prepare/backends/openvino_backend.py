"""OpenVINO CPU backend.

Options (``RunConfig.options``): ``performance_hint`` ('LATENCY' | 'THROUGHPUT'; default from
the mode), ``num_streams`` (int or 'AUTO'), ``precision_hint`` ('f32' | 'bf16' | 'f16';
default 'f32' so an AMX/AVX-512 host does not silently run fp32 models in bf16),
``requests`` (in-flight requests for throughput mode; default: the compiled model's
OPTIMAL_NUMBER_OF_INFER_REQUESTS), ``cpu_pinning`` (bool; default OpenVINO's own, which pins
on Linux). ``threads`` sets INFERENCE_NUM_THREADS; ``cpus`` turns on CPU pinning (the worker
process is already bound to them).

Several processes sharing cores must turn pinning off: each pins its threads from the first
core of its mask, so two 1-thread processes on a 2-core host both ran on core 0
(docs/measurements/2026-12-03-spark-pinning.md).

Throughput mode keeps N infer requests in flight and restarts each as it completes, polling
the requests itself. It does not use ``AsyncInferQueue`` with a Python callback: tearing down a
compiled model after such a queue can deadlock (seen with OpenVINO 2026.4), and a benchmark
must never hang.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from perfsuite.prepare.backends.base import Backend, BackendError, RunConfig, Session, ThroughputRun
from perfsuite.text import plain_value

REPORTED = (
    "PERFORMANCE_HINT",
    "NUM_STREAMS",
    "INFERENCE_NUM_THREADS",
    "INFERENCE_PRECISION_HINT",
    "OPTIMAL_NUMBER_OF_INFER_REQUESTS",
    "ENABLE_CPU_PINNING",
)


def _config(cfg: RunConfig) -> dict:
    o = cfg.options
    known = {"performance_hint", "num_streams", "precision_hint", "requests", "cpu_pinning"}
    if unknown := set(o) - known:
        raise ValueError(f"unknown openvino options: {sorted(unknown)}")
    hint = o.get("performance_hint", "THROUGHPUT" if cfg.mode == "throughput" else "LATENCY")
    if hint not in ("LATENCY", "THROUGHPUT"):
        raise ValueError(f"performance_hint must be LATENCY or THROUGHPUT, got {hint!r}")
    config = {
        "PERFORMANCE_HINT": hint,
        "INFERENCE_NUM_THREADS": cfg.threads,
        "INFERENCE_PRECISION_HINT": o.get("precision_hint", "f32"),
    }
    if "num_streams" in o:
        config["NUM_STREAMS"] = str(o["num_streams"])
    if cfg.cpus or "cpu_pinning" in o:  # the option wins over the binding's default
        config["ENABLE_CPU_PINNING"] = bool(o.get("cpu_pinning", True))
    return config


class OvSession(Session):
    framework = "openvino"

    def __init__(self, model: Path, cfg: RunConfig):
        import openvino as ov  # heavy, optional: imported when a session is opened

        core = ov.Core()
        try:
            m = core.read_model(str(model))
            # Static shapes: OpenVINO's CPU plugin is slower on dynamic ones.
            shapes = {name: list(shape) for name, shape in cfg.shapes.items()}
            for inp in m.inputs if not shapes else ():
                ps = inp.get_partial_shape()
                if ps.rank.is_static and ps[0].is_dynamic:
                    dims = [cfg.batch] + [d.get_length() for d in list(ps)[1:]]
                    shapes[inp.get_any_name()] = dims
            if shapes:
                m.reshape(shapes)
            self._compiled = core.compile_model(m, "CPU", _config(cfg))
        except Exception as exc:
            raise BackendError(f"openvino cannot load {Path(model).name}: {exc}") from exc
        self._request = self._compiled.create_infer_request()
        self._requests_wanted = cfg.options.get("requests")
        self.settings = {"version": ov.__version__}
        for key in REPORTED:
            try:
                self.settings[key] = plain_value(self._compiled.get_property(key))
            except Exception as exc:  # a property this plugin version does not report
                self.settings[key] = f"unavailable ({exc.__class__.__name__})"

    def infer(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        self._request.infer(inputs)
        return [t.data.copy() for t in self._request.output_tensors]

    def callable(self, inputs):
        req = self._request
        return lambda: req.infer(inputs)

    def run_throughput(self, inputs: dict[str, np.ndarray], seconds: float) -> ThroughputRun:
        n = self._requests_wanted or self.settings.get("OPTIMAL_NUMBER_OF_INFER_REQUESTS", 1) or 1
        batch = next(iter(inputs.values())).shape[0]
        reqs = [self._compiled.create_infer_request() for _ in range(max(1, int(n)))]
        started = [0.0] * len(reqs)
        lat: list[float] = []
        t0 = time.perf_counter()
        for i, r in enumerate(reqs):
            started[i] = time.perf_counter()
            r.start_async(inputs)
        while any(s >= 0 for s in started):  # a finished request's start is set to -1
            progressed = False
            for i, r in enumerate(reqs):
                if started[i] >= 0 and r.wait_for(0):  # done: restart unless the window is over
                    now = time.perf_counter()
                    lat.append(now - started[i])
                    progressed = True
                    if now - t0 < seconds:
                        started[i] = now
                        r.start_async(inputs)
                    else:
                        started[i] = -1.0
            if not progressed:
                time.sleep(0)  # yield; completion latency is observed within a poll pass
        elapsed = time.perf_counter() - t0
        self.settings["requests_in_flight"] = len(reqs)
        return ThroughputRun(items=len(lat) * batch, seconds=elapsed, latencies_s=lat)

    def close(self) -> None:
        self._request = None
        self._compiled = None


class OpenVinoBackend(Backend):
    name = "openvino"
    precisions = ("fp32", "int8_static", "int8_static_rr", "int8_nncf", "bf16")
    no_path = {
        "int8_dynamic": "int8_dynamic (ConvInteger/MatMulInteger) has no openvino path",
    }
    distributions = ("openvino", "nncf")
    formats = ("onnx", "ir")
    # several processes on shared cores each pin from the first core of their mask (see above)
    shared_core_options = {"cpu_pinning": False}

    def prepare(self, model: Path, config: RunConfig) -> Session:
        self.require()
        return OvSession(Path(model), config)
