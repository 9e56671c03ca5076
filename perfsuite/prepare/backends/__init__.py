"""Inference frameworks behind one interface (see ``base``), found through the
``perfsuite.backends`` entry points (``perfsuite.prepare.extensions``)."""

from perfsuite.prepare.backends.base import (
    REGISTRY,
    Backend,
    BackendError,
    BackendUnavailable,
    RunConfig,
    Session,
    ThroughputRun,
)
from perfsuite.prepare.extensions import STALE

# name -> Backend: the entry points, and subclasses defined at run time (see ``base``).
BACKENDS = REGISTRY


def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        known = ", ".join(BACKENDS) or STALE.format(group=BACKENDS.group)
        raise ValueError(f"unknown framework {name!r}; choose one of {known}")
    return BACKENDS[name]


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
