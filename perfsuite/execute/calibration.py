"""The machine's speed around a measurement window: a fixed FMA-bound loop (the clock) and a
bandwidth-bound STREAM triad (memory and L3 neighbours), a few ms each, run right before a
session's warm-up and right after its window, never inside it.

Recorded, not divided out: normalising by either probe did not cut the between-run spread
(docs/measurements/between-run-cv.md), so the gate judges raw times. Both run on one thread:
after a 2-thread window the framework's pool still spins (ORT), and a 2-thread probe read 0.1x.
"""

from __future__ import annotations

import functools
import time

from perfsuite import kernels
from perfsuite.records import Speed

FMA_SECONDS = 0.005
TRIAD_FLOATS = 1 << 21  # 8 MiB per array, 24 MiB moved: beyond the L3 of the VMs (8-32 MiB)
TRIAD_REPEATS = 3


@functools.lru_cache(maxsize=1)
def _triad_arrays():
    # allocated once per process: fresh pages would time the page faults, not the memory
    return kernels.triad_arrays(TRIAD_FLOATS)


def probe() -> Speed:
    t0 = time.perf_counter()
    fma = kernels.compute_peak(threads=1, seconds=FMA_SECONDS)["gflops"]
    bw = kernels.triad_gbs(TRIAD_FLOATS, 1, TRIAD_REPEATS, arrays=_triad_arrays())
    return Speed(  # one thread each; triad: the median of TRIAD_REPEATS
        fma_gflops=float(fma), triad_gbs=bw, seconds=time.perf_counter() - t0
    )
