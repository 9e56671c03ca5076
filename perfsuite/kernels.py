"""Public facade of the compiled kernels: input validation and ISA dispatch (the variants,
INT8 saturation without VNNI and the BF16 layout: docs/guide/kernels.md).

The variant, a row of the dispatch table in ``kernels/dispatch.h``, is chosen once per
process (``perfsuite.dispatch``): the best one the CPU can run, or the one named by
``PERFSUITE_FORCE_ISA``; each kernel also takes ``isa=``. Bad input raises
``TypeError``/``ValueError`` naming the problem (``perfsuite.arrays``); nothing reaches the C
code that could crash it. The weight-only decode kernels are ``perfsuite.weight_only``'s,
reached here too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from perfsuite import _kernels
from perfsuite.arrays import _array, _out, _threads
from perfsuite.dispatch import (  # noqa: F401  (the facade's public names)
    CPU_FLAGS,
    FINGERPRINT_FLAGS,
    FORCE_ENV,
    KNOWN_ISAS,
    OS_STATES,
    _isa_code,
    cpu_features,
    forced_isa_problem,
    isa,
    missing_flags,
    runnable_isas,
    variant_info,
)

_active_isa = isa  # blocking() takes a parameter named isa


def _matmul_shapes(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not align (A cols != B rows)")
    return a.shape[0], b.shape[1], a.shape[1]


# -- cache blocking -------------------------------------------------------------------------


MAX_BLOCK = 1 << 16  # far above any cache-sized block; keeps packing buffers allocatable


@dataclass(frozen=True)
class Blocking:
    """Block sizes, each named after the cache level it targets."""

    kc_l1: int  # k depth: an NR-wide B micro-panel fills L1d (AVX2) or 1/8 of L2 (zmm)
    mc_l2: int  # A block mc x kc fills a quarter of L2 (C tiles and B panels pass through)
    nc_l3: int  # B block kc x nc stays well inside L3

    def __post_init__(self):
        # A zero or negative block size made the driver loop forever (step 0) or misindex.
        for name in ("kc_l1", "mc_l2", "nc_l3"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"Blocking.{name} must be an int, got {type(v).__name__}")
            if not 1 <= v <= MAX_BLOCK:
                raise ValueError(f"Blocking.{name} = {v}: must be between 1 and {MAX_BLOCK}")


# A, B and C element types of each GEMM op.
_GEMM_DTYPES = {
    "f32": (np.float32, np.float32, np.float32),
    "u8s8": (np.uint8, np.int8, np.int32),
    "bf16": (np.uint16, np.uint16, np.float32),
}


def _cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Cache sizes of CPU 0 from sysfs ("L1d", "L2", "L3"). The kernels read them here, not
    through perfsuite.host (which sits above the kernels and records their variant)."""
    out = {}
    for d in Path(root).glob("index*"):
        try:
            level, kind, size = ((d / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        if kind == "Instruction" or not size[:-1].isdigit():
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
        out["L1d" if level == "1" else f"L{level}"] = int(size.rstrip("KM")) * scale
    return out


@cache
def blocking(op: str = "f32", isa: str | None = None) -> Blocking:
    """Block sizes for GEMM ``op`` (f32, u8s8, bf16) with variant ``isa``'s register tile,
    derived from this host's cache sizes (sysfs), Zen 3 sizes as fallback."""
    if op not in _GEMM_DTYPES:
        raise ValueError(f"unknown GEMM op {op!r}; choose one of {', '.join(_GEMM_DTYPES)}")
    elem_bytes = np.dtype(_GEMM_DTYPES[op][0]).itemsize
    MR, NR, _kstep = variant_info(isa or _active_isa())["tiles"][op]

    caches = {"L1d": 32 << 10, "L2": 512 << 10, "L3": 32 << 20} | _cache_bytes()
    l1, l2, l3 = caches["L1d"], caches["L2"], caches["L3"]
    # A deep kc halves the passes over C (each pass reads and writes all of C); for the
    # 16-wide AVX2 tile kc fills L1 with a B micro-panel. Measured: docs/measurements/kernels.md.
    kc = max(64, l1 // (16 * elem_bytes) // 4 * 4)
    if NR >= 32:
        # The 32-wide zmm tile streams its B micro-panel from L2 anyway: kc makes the panel
        # 1/8 of L2, one pass over C at n = 1024.
        kc = max(64, min(4096, l2 // (8 * NR * elem_bytes)) // 4 * 4)
    mc = max(MR, (l2 // 4) // (kc * elem_bytes) // MR * MR)
    nc = max(NR, min(4096, (l3 // 4) // (kc * elem_bytes)) // NR * NR)
    return Blocking(kc_l1=kc, mc_l2=mc, nc_l3=nc)


# -- kernels --------------------------------------------------------------------------------


def dot_f32(x, y, *, isa: str | None = None) -> float:
    """dot := sum_i x[i] * y[i]"""
    x = _array("x", x, np.float32, 1)
    y = _array("y", y, np.float32, 1)
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.shape[0]} vs {y.shape[0]}")
    return float(_kernels.dot_f32(x, y, _isa_code(isa)))


SEED_ALIGN = 32


def matmul_seed(a, b, out=None, *, isa: str | None = None) -> np.ndarray:
    """C := A @ B with the article's kernel (needs N % 8 == 0, B and C 32-byte aligned)."""
    a = _array("A", a, np.float32, 2)
    b = _array("B", b, np.float32, 2)
    m, n, _ = _matmul_shapes(a, b)
    if n % 8:
        raise ValueError(f"matmul_seed needs N % 8 == 0 (8 floats per AVX2 vector), got N={n}")
    if out is None:
        out = aligned_empty((m, n), np.float32, align=SEED_ALIGN)
    out = _out(out, (m, n), np.float32, [("A", a), ("B", b)])
    for name, arr in (("B", b), ("out", out)):
        if arr.ctypes.data % SEED_ALIGN:
            raise ValueError(
                f"matmul_seed needs {name} {SEED_ALIGN}-byte aligned (aligned loads/stores); "
                f"its address is {arr.ctypes.data % SEED_ALIGN} bytes past a boundary: "
                "allocate it with perfsuite.kernels.aligned_empty"
            )
    _kernels.matmul_seed(a, b, out, _isa_code(isa))
    return out


def _gemm(op: str, into, a, b, out, threads, isa, block, *extra) -> np.ndarray:
    """Validate the arguments and run ``into``, a ``_kernels.gemm_*_into`` (``extra``: its
    op-specific arguments after the isa code); returns C."""
    ta, tb, tc = _GEMM_DTYPES[op]
    a = _array("A", a, ta, 2)
    b = _array("B", b, tb, 2)
    threads = _threads(threads)
    m, n, _ = _matmul_shapes(a, b)
    out = _out(out, (m, n), tc, [("A", a), ("B", b)])
    code = _isa_code(isa)
    blk = blocking(op, KNOWN_ISAS[code]) if block is None else block
    if not isinstance(blk, Blocking):
        raise TypeError(f"block must be a Blocking, got {type(block).__name__}")
    into(a, b, out, code, *extra, blk.mc_l2, blk.kc_l1, blk.nc_l3, threads)
    return out


def gemm_f32(
    a, b, out=None, threads: int = 1, *, isa: str | None = None, block: Blocking | None = None
) -> np.ndarray:
    """C := A @ B (float32, any M, N, K >= 1, any alignment), blocked and packed."""
    return _gemm("f32", _kernels.gemm_f32_into, a, b, out, threads, isa, block)


def gemm_u8s8_s32(
    a,
    b,
    out=None,
    threads: int = 1,
    *,
    exact: bool = False,
    isa: str | None = None,
    block: Blocking | None = None,
) -> np.ndarray:
    """C := A @ B with A uint8, B int8, C int32 (saturation: docs/guide/kernels.md)."""
    into = _kernels.gemm_u8s8_s32_into
    return _gemm("u8s8", into, a, b, out, threads, isa, block, bool(exact))


def gemm_bf16(
    a, b, out=None, threads: int = 1, *, isa: str | None = None, block: Blocking | None = None
) -> np.ndarray:
    """C := A @ B with A, B bf16 (uint16 bit patterns, see ``to_bf16``) and C float32; each
    pair of products is added to the fp32 accumulator (vdpbf16ps semantics)."""
    return _gemm("bf16", _kernels.gemm_bf16_into, a, b, out, threads, isa, block)


def to_bf16(x, *, isa: str | None = None) -> np.ndarray:
    """float32 -> bf16 bit patterns (uint16): round to nearest even, NaN stays a quiet NaN,
    denormals become signed zero (the rules of vcvtne2ps2bf16, in every variant)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError("x must be a float32 numpy array")
    flat = np.ascontiguousarray(x).reshape(-1)
    y = np.empty(flat.shape, np.uint16)
    if flat.size:
        _kernels.f32_to_bf16_into(flat, y, _isa_code(isa))
    return y.reshape(x.shape)


def from_bf16(h) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32, exactly."""
    if not isinstance(h, np.ndarray) or h.dtype != np.uint16:
        raise TypeError("h must be a uint16 numpy array of bf16 bit patterns")
    return (h.astype(np.uint32) << 16).view(np.float32)


def saturation_free(a_max: int, b_absmax: int) -> bool:
    """True when u8 activations <= a_max and |s8 weights| <= b_absmax cannot saturate
    vpmaddubsw's int16 pair sums (a0*b0 + a1*b1)."""
    return 2 * a_max * b_absmax <= 32767


# -- quantization ---------------------------------------------------------------------------

_QRANGE = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def _quantized(into, x, out_dtype, scale, zero_point, axis, qdtype, isa) -> np.ndarray:
    """Check scale/zero_point against ``x`` and run ``into`` (the C kernel) on it; the output
    has ``out_dtype`` (None: the quantized dtype)."""
    qdtype = np.dtype(qdtype)
    if qdtype not in _QRANGE:
        raise TypeError(f"quantized dtype must be uint8 or int8, got {qdtype}")
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.asarray(0 if zero_point is None else zero_point)
    if zp.dtype.kind not in "iu":
        raise TypeError(f"zero_point must be integer, got {zp.dtype}")
    if scale.ndim > 1 or zp.ndim > 1:
        raise ValueError("scale and zero_point must be scalars or 1-D (per channel)")
    lo, hi = _QRANGE[qdtype]
    if np.any(zp < lo) or np.any(zp > hi):
        raise ValueError(f"zero_point outside the {qdtype} range [{lo}, {hi}]")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError("scale must be finite and > 0")
    if scale.ndim == 0 and zp.ndim == 0:
        outer, channels, inner = 1, 1, x.size
    else:
        ax = axis + x.ndim if axis < 0 else axis
        if not 0 <= ax < x.ndim:
            raise ValueError(f"axis {axis} out of range for {x.ndim}-D input")
        channels = x.shape[ax]
        scale = np.broadcast_to(scale, (channels,)) if scale.ndim == 0 else scale
        zp = np.broadcast_to(zp, (channels,)) if zp.ndim == 0 else zp
        if scale.shape[0] != channels or zp.shape[0] != channels:
            raise ValueError(
                f"per-channel scale/zero_point need {channels} entries (axis {axis}), got "
                f"{scale.shape[0]} and {zp.shape[0]}"
            )
        outer, inner = int(np.prod(x.shape[:ax])), int(np.prod(x.shape[ax + 1 :]))
    scale = np.ascontiguousarray(scale.reshape(-1), dtype=np.float32)
    zp = np.ascontiguousarray(np.asarray(zp).reshape(-1), dtype=np.int32)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, out_dtype or qdtype)
    into(flat, outer, channels, inner, scale, zp, out, _isa_code(isa))
    return out.reshape(x.shape)


def quantize_linear(
    x, scale, zero_point=None, *, axis: int = 1, dtype=np.uint8, isa: str | None = None
) -> np.ndarray:
    """ONNX QuantizeLinear: q := saturate(round_half_even(x / scale) + zero_point).
    Scalar scale/zero_point: per tensor; 1-D: per channel along ``axis``. The output dtype is
    ``dtype`` (uint8/int8), or the zero point's dtype when it is a uint8/int8 array."""
    if isinstance(zero_point, (np.ndarray, np.generic)) and zero_point.dtype in _QRANGE:
        dtype = zero_point.dtype
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError("x must be a float32 numpy array")
    if x.size == 0:
        raise ValueError("x is empty")
    return _quantized(_kernels.quantize_into, x, None, scale, zero_point, axis, dtype, isa)


def dequantize_linear(
    q, scale, zero_point=None, *, axis: int = 1, isa: str | None = None
) -> np.ndarray:
    """ONNX DequantizeLinear: x := (q - zero_point) * scale, per tensor or per channel."""
    if not isinstance(q, np.ndarray) or q.dtype not in _QRANGE:
        raise TypeError("q must be a uint8 or int8 numpy array")
    if q.size == 0:
        raise ValueError("q is empty")
    into = _kernels.dequantize_into
    return _quantized(into, q, np.float32, scale, zero_point, axis, q.dtype, isa)


# -- aligned buffers ------------------------------------------------------------------------


def aligned_empty(shape, dtype=np.float32, align: int = 64) -> np.ndarray:
    """Uninitialised C-contiguous array whose data pointer is a multiple of ``align`` bytes.
    The over-allocated base buffer stays alive as long as the returned array (its .base)."""
    if isinstance(align, bool) or not isinstance(align, int) or align < 8 or align & (align - 1):
        raise ValueError(f"align must be a power of two >= 8, got {align!r}")
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def aligned_zeros(shape, dtype=np.float32, align: int = 64) -> np.ndarray:
    out = aligned_empty(shape, dtype, align)
    out[...] = 0
    return out


# -- bandwidth and probes -------------------------------------------------------------------


def _stream(run, named: list, extra: tuple, threads, isa) -> dict:
    """Validate the arrays (the first is written, the others read), then time
    ``run(*arrays, *extra, threads, isa code)`` once: seconds and GB/s over all arrays."""
    arrays = [_array(n, x, np.float32, 1) for n, x in named]
    if len({x.shape for x in arrays}) != 1:
        raise ValueError(f"arrays differ in length: {[x.shape[0] for x in arrays]}")
    threads = _threads(threads)
    a, *read = arrays
    if not a.flags.writeable:
        raise ValueError("a is read-only")
    if any(np.shares_memory(a, x) for x in read):
        raise ValueError(f"a overlaps {' or '.join(n for n, _ in named[1:])}")
    code = _isa_code(isa)
    t0 = time.perf_counter()
    run(*arrays, *extra, threads, code)
    dt = time.perf_counter() - t0
    moved = len(arrays) * a.nbytes
    return {"seconds": dt, "bandwidth_gbs": moved / dt / 1e9, "bytes": moved}


def stream_triad(a, b, c, scalar: float, threads: int = 1, *, isa: str | None = None) -> dict:
    """a := b + scalar * c once; returns seconds and GB/s (3 arrays moved; the AVX2 variant
    uses non-temporal stores, so `a` is not read for ownership)."""
    return _stream(_kernels.triad, [("a", a), ("b", b), ("c", c)], (float(scalar),), threads, isa)


def stream_copy(a, b, threads: int = 1, *, isa: str | None = None) -> dict:
    """a := b once; returns seconds and GB/s (2 arrays moved)."""
    return _stream(_kernels.copy, [("a", a), ("b", b)], (), threads, isa)


def compute_peak(threads: int = 1, seconds: float = 0.2, *, isa: str | None = None) -> dict:
    """Measured FMA (or scalar multiply-add) throughput in GFLOP/s: the peak to report kernel
    efficiency against (nominal clocks lie: this VM says 2.445 GHz, its cores run faster)."""
    threads = _threads(threads)
    code = _isa_code(isa)
    iters = 1 << 16
    while True:
        t0 = time.perf_counter()
        flops = _kernels.compute_peak_flops(iters, threads, code)
        dt = time.perf_counter() - t0
        if dt >= seconds or iters >= 1 << 34:
            return dict(gflops=flops / dt / 1e9, seconds=dt, threads=threads, isa=KNOWN_ISAS[code])
        iters *= 2 if dt <= 0 else max(2, min(16, int(seconds / dt) + 1))


def false_sharing_probe(threads: int = 2, iters: int = 20_000_000) -> dict:
    """Per-thread counters in one cache line vs padded to 64 bytes: seconds for each and the
    slowdown ratio packed/padded (the article's alignment advice, measured)."""
    threads = _threads(threads)
    if iters < 1:
        raise ValueError("iters must be >= 1")
    packed, padded = (_kernels.false_sharing(threads, spacing, iters) for spacing in (1, 8))
    return dict(
        threads=threads, iters=iters, packed_s=packed, padded_s=padded, ratio=packed / padded
    )


def threads_granted(threads: int) -> int:
    """Threads an OpenMP region asking for ``threads`` really gets (dynamic teams are off)."""
    return int(_kernels.threads_granted(_threads(threads)))


def triad_arrays(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b, c of ``n`` floats for ``triad_gbs``, written here: first touch puts their pages
    on the calling process's node (in a bound worker, its own)."""
    return tuple(np.full(n, value, np.float32) for value in (0.0, 1.0, 2.0))


def triad_gbs(
    n: int,
    threads: int = 1,
    repeats: int = 3,
    *,
    best: bool = False,
    discard_first: bool = False,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> float:
    """STREAM triad GB/s at ``threads`` threads: the median (``best``: the maximum) of
    ``repeats`` runs over ``triad_arrays(n)``, or over ``arrays`` a caller keeps."""
    a, b, c = triad_arrays(n) if arrays is None else arrays
    if discard_first:
        # excluded: the first run after first touch also pays for cold TLBs and for OpenMP
        # starting its team at this thread count, which is not memory bandwidth
        stream_triad(a, b, c, 3.0, threads)
    runs = [stream_triad(a, b, c, 3.0, threads)["bandwidth_gbs"] for _ in range(repeats)]
    return float(max(runs) if best else np.median(runs))


# The weight-only decode kernels live in perfsuite.weight_only (which imports this module's
# validation); they are reached here, next to the other kernels, without an import cycle.
WEIGHT_ONLY = ("Packed", "quantize_q8", "quantize_q4", "gemv_q8", "gemv_q4")


def __getattr__(name: str):
    if name in WEIGHT_ONLY:
        from perfsuite import weight_only

        return getattr(weight_only, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
