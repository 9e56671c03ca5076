"""Which row of the dispatch table (``kernels/dispatch.h``) runs: the CPU flags the rows
need, the rows this CPU can run, and the one in use, the best runnable or the one named by
``PERFSUITE_FORCE_ISA``. Re-exported by ``perfsuite.kernels``."""

from __future__ import annotations

import os
from functools import cache

from perfsuite import _kernels

FORCE_ENV = "PERFSUITE_FORCE_ISA"

# The CPU flags of kernels/cpu_features.h (PS_CPU_FLAGS), the one list: /proc/cpuinfo spellings.
_FLAGS = _kernels.cpu_flags()
CPU_FLAGS = tuple(name for name, os_state, _ in _FLAGS if not os_state)
OS_STATES = tuple(name for name, os_state, _ in _FLAGS if os_state)  # XCR0: os_avx, os_avx512
# The flags the host fingerprint records as must-match isa.<name> fields.
FINGERPRINT_FLAGS = tuple(name for name, _, recorded in _FLAGS if recorded)

_VARIANTS = {v["name"]: v for v in _kernels.variants()}
KNOWN_ISAS = tuple(_VARIANTS)


def cpu_features() -> dict[str, bool]:
    """What cpuid/xgetbv report for each of CPU_FLAGS and OS_STATES (OS register state)."""
    return _kernels.cpu_features()


def runnable_isas() -> list[str]:
    """Variants compiled in this build that this CPU can execute, best last."""
    return [name for name, v in _VARIANTS.items() if v["runnable"]]


def variant_info(name: str) -> dict:
    """One dispatch-table row: required CPU flags and OS register state, runnable here, GEMM
    register tiles (mr, nr, kstep) per element type, INT8 saturation and native BF16."""
    if name not in _VARIANTS:
        raise ValueError(f"unknown isa {name!r}; choose one of {', '.join(KNOWN_ISAS)}")
    return dict(_VARIANTS[name])


def missing_flags(name: str) -> list[str]:
    """CPU flags variant ``name`` needs that this CPU (or OS register state) lacks; the
    reason a test of that variant skips."""
    have = cpu_features()
    info = variant_info(name)
    return [f for f in info["requires"] + info["os_state"] if not have[f]]


@cache
def forced_isa_problem() -> str | None:
    """Why PERFSUITE_FORCE_ISA cannot be used on this CPU, or None (unset or usable): the
    faces check it before anything runs, as a usage error."""
    try:
        isa()  # unset, it names the best runnable variant and cannot fail
    except ValueError as exc:
        return str(exc)
    return None


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
    if not variant_info(name)["runnable"]:
        raise ValueError(f"isa {name!r} cannot run on this CPU (runnable: {runnable_isas()})")
    return _VARIANTS[name]["code"]
