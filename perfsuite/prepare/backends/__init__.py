"""Inference frameworks behind one interface (see ``base``), found through the
``perfsuite.backends`` entry points (``perfsuite.prepare.extensions``)."""

from perfsuite.prepare.backends.base import REGISTRY as BACKENDS
from perfsuite.prepare.backends.base import (
    Backend,
    BackendError,
    BackendUnavailable,
    RunConfig,
    Session,
    ThroughputRun,
)


def get_backend(name: str) -> Backend:
    return BACKENDS.named(name, "framework")


def software_versions() -> dict[str, str | None]:
    """software.<distribution> fields of every registered framework, for the fingerprint."""
    return {k: v for backend in BACKENDS.values() for k, v in backend.software().items()}


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
