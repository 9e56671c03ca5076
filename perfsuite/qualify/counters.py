"""The qualification's counters check: ``perf stat`` around a GEMM and a triad in this process
(IPC, cache misses per 1k instructions), as the tuning article advises. Where the PMU counts
nothing (most VMs), one WARN line says why (perf's own reason, ``perf_event_paranoid``, the
hypervisor) and valgrind's instruction counts of the same kernels stand in: they do not move
with the clock or the neighbours, so they still say whether the code changed."""

from __future__ import annotations

import os

import numpy as np

from perfsuite import _kernels, kernels, records
from perfsuite.execute import instructions
from perfsuite.execute.counters import PerfAttach, pmu_available
from perfsuite.text import terminal_line

GEMM_IPC_MIN = 1.0  # a blocked GEMM retiring under one instruction per cycle is stalling
STAND_INS = ("gemm_f32-n128", "triad-n1048576")
PARANOID = "/proc/sys/kernel/perf_event_paranoid"


def _probes() -> dict:
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    out = np.empty_like(a)
    tri = kernels.triad_arrays(1 << 24)
    return {
        "gemm_f32 n=1024": lambda: [kernels.gemm_f32(a, a, out) for _ in range(3)],
        "triad 3x64 MiB": lambda: [kernels.stream_triad(*tri, 3.0) for _ in range(3)],
    }


def why_unsupported(perf_reason: str, paranoid_file: str = PARANOID) -> str:
    """One line: perf's reason, the paranoid level and whether this is a guest."""
    try:
        with open(paranoid_file) as f:
            paranoid = f"perf_event_paranoid={f.read().strip()}"
    except OSError:
        paranoid = "perf_event_paranoid unreadable"
    vendor = _kernels.hypervisor_vendor()
    where = f"a {vendor} guest: its hypervisor exposes no PMU" if vendor else "no PMU exposed"
    return f"perf says {perf_reason!r}; {paranoid}; {where}"


def measure_counters(*, quick: bool = False) -> records.CounterProbes:
    ok, reason = pmu_available()
    if ok:
        perf = {}
        for name, run in _probes().items():
            with PerfAttach(os.getpid()) as attached:
                run()
            perf[name] = attached.result
        return records.CounterProbes(perf=perf)
    probes = records.CounterProbes(unsupported=why_unsupported(reason))
    if quick:
        return probes.model_copy(update={"instructions_skipped": "--quick: valgrind not run"})
    if why := instructions.unavailable():
        return probes.model_copy(update={"instructions_skipped": why})
    points = [p for p in instructions.POINTS if p.id in STAND_INS]
    return probes.model_copy(update={"instructions": instructions.count_all(points)})


def check_counters(probes: records.CounterProbes | None) -> list[records.Check]:
    """One line per probe with a PMU (GEMM IPC judged), one WARN line without."""
    if probes is None:
        return []  # a report from before this check
    if probes.unsupported is not None:
        counted = ", ".join(f"{k} {v:,}" for k, v in probes.instructions.items())
        stand_in = (
            f"instruction counts instead (valgrind, {instructions.ISA} rows): {counted}"
            if counted
            else f"no instruction counts: {probes.instructions_skipped}"
        )
        detail = terminal_line(f"hardware counters unsupported: {probes.unsupported}; {stand_in}")
        check = records.Check(
            group="counters", name="perf stat (IPC, cache misses)", status="WARN",
            measured=probes.instructions or None, expected="cycles and instructions counted",
            detail=detail,
        )  # fmt: skip
        return [check]
    out = []
    for probe, c in probes.perf.items():
        ipc = c.derived.get("ipc")
        misses = c.derived.get("cache-misses_per_1k_instructions")
        gemm = probe.startswith("gemm")
        status = "PASS" if not gemm or (ipc is not None and ipc >= GEMM_IPC_MIN) else "WARN"
        text = f"IPC {ipc:.2f}" if ipc is not None else "IPC not counted"
        text += f", {misses:.2f} cache misses per 1k instructions" if misses is not None else ""
        if c.unsupported:
            text += f"; not counted: {', '.join(sorted(c.unsupported))}"
        out.append(records.Check(
            group="counters", name=f"perf stat: {probe}", status=status,
            measured={"ipc": ipc, "cache_misses_per_1k": misses},
            expected=f"IPC >= {GEMM_IPC_MIN}" if gemm else None, detail=text,
        ))  # fmt: skip
    return out
