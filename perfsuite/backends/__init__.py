"""Inference frameworks behind one interface (see ``base``)."""

from perfsuite.backends.base import (
    Backend,
    BackendError,
    BackendUnavailable,
    RunConfig,
    Session,
    ThroughputRun,
)
from perfsuite.backends.onnxruntime_backend import OnnxRuntimeBackend
from perfsuite.backends.openvino_backend import OpenVinoBackend

BACKENDS: dict[str, Backend] = {"onnxruntime": OnnxRuntimeBackend(), "openvino": OpenVinoBackend()}


def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"unknown framework {name!r}; choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name]


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "RunConfig",
    "Session",
    "ThroughputRun",
    "get_backend",
]
