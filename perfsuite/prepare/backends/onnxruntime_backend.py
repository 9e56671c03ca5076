"""ONNX Runtime CPU backend.

Options (``RunConfig.options``): ``spinning`` (bool, default True: ORT's intra-op threads spin
between ops), ``spin_stop`` (bool, default False: the threads stop spinning as soon as a call
returns, ORT's ``session.force_spinning_stop``; calls themselves still spin),
``execution_mode`` ('sequential' | 'parallel'), ``inter_op_threads`` (int),
``graph_optimization`` ('disable' | 'basic' | 'extended' | 'all'). ``threads`` is the intra-op
pool size (the calling thread counts as one); ``cpus`` pins the pool's extra threads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perfsuite.prepare.backends.base import Backend, BackendError, RunConfig, Session

_OPT_LEVELS = ("disable", "basic", "extended", "all")
_SPIN_STOP = "session.force_spinning_stop"


def _options(cfg: RunConfig):
    import onnxruntime as ort  # heavy, optional: imported when a session is opened

    o = cfg.options
    known = {"spinning", "spin_stop", "execution_mode", "inter_op_threads", "graph_optimization"}
    if unknown := set(o) - known:
        raise ValueError(f"unknown onnxruntime options: {sorted(unknown)}")
    so = ort.SessionOptions()
    so.intra_op_num_threads = cfg.threads
    so.inter_op_num_threads = int(o.get("inter_op_threads", 1))
    mode = o.get("execution_mode", "sequential")
    if mode not in ("sequential", "parallel"):
        raise ValueError(f"execution_mode must be 'sequential' or 'parallel', got {mode!r}")
    so.execution_mode = getattr(ort.ExecutionMode, f"ORT_{mode.upper()}")
    level = o.get("graph_optimization", "all")
    if level not in _OPT_LEVELS:
        raise ValueError(f"graph_optimization must be one of {_OPT_LEVELS}, got {level!r}")
    member = "ORT_DISABLE_ALL" if level == "disable" else f"ORT_ENABLE_{level.upper()}"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, member)
    spinning = bool(o.get("spinning", True))
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    so.add_session_config_entry(_SPIN_STOP, "1" if o.get("spin_stop") else "0")
    affinity = None
    if cfg.cpus:
        # ORT pins the pool's threads 1..N-1 (thread 0 is the caller, pinned by the binding).
        affinity = ";".join(str(cfg.cpus[i % len(cfg.cpus)] + 1) for i in range(1, cfg.threads))
        if affinity:  # ORT numbers logical processors from 1 in this setting
            so.add_session_config_entry("session.intra_op_thread_affinities", affinity)
    settings = {
        "intra_op_threads": cfg.threads,
        "inter_op_threads": so.inter_op_num_threads,
        "execution_mode": mode,
        "graph_optimization": level,
        "spinning": spinning,
        "thread_affinities": affinity,
    }
    return so, settings


class OrtSession(Session):
    framework = "onnxruntime"

    def __init__(self, model: Path, cfg: RunConfig):
        import onnxruntime as ort  # heavy, optional: imported when a session is opened

        so, self.settings = _options(cfg)
        try:
            self._sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own Fail/InvalidGraph/... types
            raise BackendError(f"onnxruntime cannot load {model.name}: {exc}") from exc
        self._outputs = [o.name for o in self._sess.get_outputs()]
        self.settings["providers"] = self._sess.get_providers()
        opts = self._sess.get_session_options()  # what ORT took, not what was asked
        self.settings["spin_stop"] = opts.get_session_config_entry(_SPIN_STOP) == "1"
        self.settings["version"] = ort.__version__

    def infer(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self._sess.run(self._outputs, inputs)

    def callable(self, inputs):
        run, outs = self._sess.run, self._outputs
        return lambda: run(outs, inputs)

    def close(self) -> None:
        self._sess = None


class OnnxRuntimeBackend(Backend):
    name = "onnxruntime"
    precisions = ("fp32", "int8_dynamic", "int8_static", "int8_static_rr")
    no_path = {
        "bf16": "onnxruntime has no bf16 CPU path (its CPU provider runs bf16 graphs in fp32)",
        "int8_nncf": "int8_nncf is an OpenVINO IR (NNCF); onnxruntime cannot read it",
    }
    distributions = ("onnxruntime", "onnx")
    # A worker waiting for its next turn kept its pool spinning into the other side's turn
    # (docs/measurements/2026-12-03-zen3-ab.md).
    turn_options = {"spin_stop": True}
    # Spark tasks share the cores: a spinning pool would steal the CPU another task is using
    # (ORT ignores OMP_NUM_THREADS)
    shared_core_options = {"spinning": False}

    def prepare(self, model: Path, config: RunConfig) -> Session:
        self.require()
        return OrtSession(Path(model), config)
