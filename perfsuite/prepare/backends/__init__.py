"""Inference frameworks behind one interface (see ``base``)."""

from perfsuite.prepare.backends import onnxruntime_backend, openvino_backend  # noqa: F401 (register)
from perfsuite.prepare.backends.base import (
    REGISTRY,
    Backend,
    BackendError,
    BackendUnavailable,
    RunConfig,
    Session,
    ThroughputRun,
)

# Every Backend subclass registers itself by name on definition (see ``base``).
BACKENDS: dict[str, Backend] = REGISTRY


def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"unknown framework {name!r}; choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name]


def software_versions() -> dict[str, str | None]:
    """software.<distribution> fields of every registered framework, for the fingerprint."""
    out: dict[str, str | None] = {}
    for backend in BACKENDS.values():
        out.update(backend.software())
    return out


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "RunConfig",
    "Session",
    "ThroughputRun",
    "get_backend",
    "software_versions",
]
