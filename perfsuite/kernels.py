"""Public facade of the compiled kernels: input validation and ISA dispatch.

The variant is chosen once per process: the best one the CPU can run (cpuid + xgetbv), or
the one named by ``PERFSUITE_FORCE_ISA``. Each kernel also takes ``isa=`` so tests can run
every variant the CPU supports.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np

from perfsuite import _kernels

FORCE_ENV = "PERFSUITE_FORCE_ISA"
KNOWN_ISAS = ("generic", "avx2")
_CODES = {"generic": _kernels.ISA_GENERIC, "avx2": _kernels.ISA_AVX2}


def cpu_features() -> dict[str, bool]:
    """What cpuid/xgetbv report (CPU support and OS-enabled register state)."""
    return _kernels.cpu_features()


def runnable_isas() -> list[str]:
    """Variants compiled in this build that this CPU can execute, best last."""
    return list(_kernels.runnable_isas())


@cache
def isa() -> str:
    """The variant in use: forced by PERFSUITE_FORCE_ISA, else the best runnable one."""
    forced = os.environ.get(FORCE_ENV, "").strip().lower()
    runnable = runnable_isas()
    if not forced:
        return runnable[-1]
    if forced not in KNOWN_ISAS:
        raise ValueError(
            f"{FORCE_ENV}={forced!r} is not a known ISA variant; "
            f"choose one of {', '.join(KNOWN_ISAS)}"
        )
    if forced not in runnable:
        raise ValueError(
            f"{FORCE_ENV}={forced!r} cannot run on this CPU (runnable: {', '.join(runnable)})"
        )
    return forced


def _isa_code(requested: str | None) -> int:
    name = isa() if requested is None else requested
    if name not in KNOWN_ISAS:
        raise ValueError(f"unknown isa {name!r}; choose one of {', '.join(KNOWN_ISAS)}")
    if name not in runnable_isas():
        raise ValueError(f"isa {name!r} cannot run on this CPU (runnable: {runnable_isas()})")
    return _CODES[name]


def _as_vector_f32(name: str, x) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return arr


def dot_f32(x, y, *, isa: str | None = None) -> float:
    """dot := sum_i x[i] * y[i]"""
    x = _as_vector_f32("x", x)
    y = _as_vector_f32("y", y)
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.shape[0]} vs {y.shape[0]}")
    if x.size == 0:
        return 0.0
    return float(_kernels.dot_f32(x, y, _isa_code(isa)))
