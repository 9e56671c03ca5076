"""Instruction counts of the kernels: deterministic where wall-clock time is not. Each
kernel point runs once under valgrind's callgrind with collection limited to the kernel call
(``--toggle-collect``), 1 thread, and reports the instructions executed (``Ir``). Counts do
not move with the clock, neighbours or steal, so they are gated with a tight threshold
(CodSpeed's design for noisy runners).

Valgrind has no AVX-512, so the counts are those of the AVX2 variants
(``PERFSUITE_FORCE_ISA=avx2``); the blocking still follows the host's caches, so compare
counts within a hardware class. What the kernel's scratch allocations cost follows the heap's
history, so the counted process gets a fixed, minimal environment, working directory and hash
seed, and glibc's allocator calls are taken out of the count: then counts repeat exactly run
to run (docs/measurements/instruction-counts.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from perfsuite.execute.counters import callgrind, callgrind_totals, valgrind_missing

ISA = "avx2"
unavailable = valgrind_missing  # why nothing can be counted here, or None


@dataclass(frozen=True)
class KernelPoint:
    id: str
    call: str  # Python source run once, inside collection; a, b, out are prepared
    setup: str
    collect: str  # callgrind --toggle-collect pattern: the Cython entry point


_GEMM = """
import numpy as np
from perfsuite import kernels
rng = np.random.default_rng(0)
n = {n}
{arrays}
blk = kernels.blocking("{op}")
{block}
"""

_F32 = (
    "a = rng.standard_normal((n, n), dtype=np.float32)\n"
    "b = rng.standard_normal((n, n), dtype=np.float32)\n"
    "out = np.empty((n, n), np.float32)"
)
_U8S8 = (
    "a = rng.integers(0, 256, (n, n), dtype=np.uint8)\n"
    "b = rng.integers(-128, 128, (n, n), dtype=np.int8)\n"
    "out = np.empty((n, n), np.int32)"
)


def _gemm(kernel: str, op: str, n: int, arrays: str) -> KernelPoint:
    setup = _GEMM.format(n=n, op=op, block="{block}", arrays=arrays)
    call = f"kernels.{kernel}(a, b, out, threads=1, block=blk)"
    return KernelPoint(f"{kernel}-n{n}", call, setup, f"*{kernel}_into*")


_GEMV = """
import numpy as np
from perfsuite import kernels
rng = np.random.default_rng(0)
w = rng.standard_normal((1024, 256), dtype=np.float32)
x = rng.standard_normal((1, 1024), dtype=np.float32)
packed = kernels.quantize_{fmt}(w)
out = np.empty((1, 256), np.float32)
{{block}}
"""


def _gemv(fmt: str) -> KernelPoint:
    call = f"kernels.gemv_{fmt}(x, packed, threads=1, out=out)"
    return KernelPoint(f"gemv_{fmt}-k1024-n256", call, _GEMV.format(fmt=fmt), f"*gemv_{fmt}_into*")


POINTS = [
    *(_gemm("gemm_f32", "f32", n, _F32) for n in (128, 256)),
    _gemv("q8"),
    _gemv("q4"),
    _gemm("gemm_u8s8_s32", "u8s8", 256, _U8S8),
    KernelPoint(
        "triad-n1048576",
        "kernels.stream_triad(a, b, c, 3.0, threads=1)",
        "import numpy as np\nfrom perfsuite import kernels\nn = 1 << 20\n"
        "a, b, c = (np.ones(n, np.float32) for _ in range(3))\n{block}",
        "*triad*",
    ),
]


def _fixed_env() -> dict:
    """The counted process's environment: its size and the hash seed shape the heap."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": "/"}
    env.update(PERFSUITE_FORCE_ISA=ISA, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def count(point: KernelPoint, *, block: str = "", timeout: float = 900) -> int:
    """Instructions executed inside ``point``'s kernel call (callgrind ``Ir``). ``block`` is
    Python run after the default blocking is made (e.g. a changed ``blk``)."""
    script = point.setup.format(block=block) + "\n" + point.call + "\n"
    # the working directory is on sys.path and in the heap's history too
    run = {"env": _fixed_env(), "cwd": "/"}
    # One plain run first writes the bytecode caches: a counted run that compiles them
    # itself (the first after a fresh checkout) read 6 instructions more than the next.
    subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=timeout, **run)
    with callgrind(script, point.collect, timeout=timeout, **run) as (proc, out):
        if out is None:
            raise RuntimeError(f"{point.id}: valgrind failed: {proc.stderr.strip()[-300:]}")
        total = callgrind_totals(out).get("Ir")
        if total is None:
            raise RuntimeError(f"{point.id}: callgrind wrote no totals")
        return total - _allocator_cost(out)


# glibc's allocator entry points: what a call costs depends on the heap's state (and ASLR)
_ALLOCATOR = re.compile(
    r"^\s*([\d,]+) \([^)]*\)\s+\S*malloc\.c:(malloc|free|calloc|realloc|memalign"
    r"|aligned_alloc|posix_memalign)\b"
)


def _allocator_cost(out: str) -> int:
    """Instructions spent inside the allocator's entry points during collection."""
    annotate = shutil.which("callgrind_annotate")
    if annotate is None:
        return 0
    cmd = [annotate, "--inclusive=yes", "--threshold=100", "--auto=no", out]
    text = subprocess.run(cmd, capture_output=True, text=True).stdout
    table = text.split("file:function", 1)[-1].split("-- Auto-annotated source", 1)[0]
    return sum(
        int(m.group(1).replace(",", "")) for m in map(_ALLOCATOR.match, table.splitlines()) if m
    )


def count_all(points=None, *, block: str = "") -> dict[str, int]:
    return {p.id: count(p, block=block) for p in (POINTS if points is None else points)}


def table(rows: list) -> list[str]:
    """``gate.judge.judge_counts``' rows as aligned lines, a header first."""
    lines = [f"{'verdict':<10} {'change':>9} {'base':>16} {'current':>16}  point"]
    for pid, b, c, change, verdict in rows:
        ch = f"{change:+.3%}" if change is not None else "-"
        lines.append(f"{verdict:<10} {ch:>9} {b or 0:>16,d} {c or 0:>16,d}  {pid}")
    return lines


def dump(counts: dict[str, int]) -> str:
    return json.dumps({"schema": "perfsuite.icount/1", "isa": ISA, "counts": counts}, indent=1)
