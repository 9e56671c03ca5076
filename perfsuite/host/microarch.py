"""Microarchitecture names from CPUID family/model (exact for AMD) or ISA flags (archspec).

Flags alone mislead for AMD: a Zen 4 guest with AVX-512 masked by the hypervisor looks like
Zen 3 to a flags-based detector, so AMD parts are named from family/model ranges (AMD's
published family 17h/19h/1Ah model assignments); other vendors use archspec's flag matching.
"""

from __future__ import annotations

# (family, first model, last model, name). Ranges follow the kernel/AMD PPR assignments.
AMD_MODEL_RANGES = (
    (0x17, 0x00, 0x2F, "zen"),  # Naples, Summit/Pinnacle Ridge, Raven (0x08/0x18: Zen+)
    (0x17, 0x30, 0xFF, "zen2"),  # Rome 0x31, Renoir 0x60, Matisse 0x71, Van Gogh 0x90
    (0x19, 0x00, 0x0F, "zen3"),  # Milan 0x01
    (0x19, 0x10, 0x1F, "zen4"),  # Genoa 0x11
    (0x19, 0x20, 0x5F, "zen3"),  # Vermeer 0x21, Rembrandt 0x44, Cezanne 0x50
    (0x19, 0x60, 0xAF, "zen4"),  # Raphael 0x61, Phoenix 0x74, Bergamo/Siena 0xA0
    (0x1A, 0x00, 0xFF, "zen5"),  # Turin 0x02/0x11, Granite Ridge 0x44
)


def amd_microarchitecture(family: int | None, model: int | None) -> str | None:
    if family is None or model is None:
        return None
    names = (name for fam, lo, hi, name in AMD_MODEL_RANGES if family == fam and lo <= model <= hi)
    return next(names, None)


def microarchitecture_by_flags(vendor: str | None, flags) -> str | None:
    """archspec's best x86-64 target for these /proc/cpuinfo flags."""
    if not flags or not vendor:
        return None
    try:
        from archspec.cpu import TARGETS
        from archspec.cpu.detect import compatibility_check_for_x86_64, partial_uarch
    except ImportError:
        return None
    features = set(flags)
    if "pni" in features:  # /proc/cpuinfo calls SSE3 'pni'; archspec's targets say 'sse3'
        features.add("sse3")
    info = partial_uarch(vendor=vendor, features=features)
    candidates = [t for t in TARGETS.values() if compatibility_check_for_x86_64(info, t)]
    best = max(candidates, key=lambda t: (len(t.ancestors), len(t.features)), default=None)
    return best.name if best else None


def microarchitecture(vendor, family, model, flags) -> tuple[str | None, str | None]:
    """(name used for matching, archspec's flag-based name for reference)."""
    by_flags = microarchitecture_by_flags(vendor, flags)
    amd = amd_microarchitecture(family, model) if vendor == "AuthenticAMD" else None
    return amd or by_flags, by_flags
