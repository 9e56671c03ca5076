"""Weight-only quantized matrices for LLM decode and their GEMV kernels (``kernels/gemv_q.h``):
``quantize_q8``/``quantize_q4`` pack W (K, N), the layout of ``x @ W``, into one typed
``Packed`` matrix; ``gemv_q8``/``gemv_q4`` compute ``x @ W`` for x of M = 1...16 rows (decode
and small batches) through the dispatch table's row. Re-exported by ``perfsuite.kernels``.

Blocks of 32 weights along K share one fp32 scale (llama.cpp's Q8_0, Q4_0, Q4_1): q8 keeps
int8 values, q4 unsigned nibbles two per byte, symmetric (w = d (q - 8)) or asymmetric with
the block's minimum (w = d q + min). A K that is not a multiple of 32 is padded with zero
weights; x is padded to match in the call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import numpy as np

from perfsuite import _kernels
from perfsuite.arrays import _array, _out, _threads
from perfsuite.dispatch import _isa_code

BLOCK = 32
MAX_ROWS = 16  # decode and small batches; beyond, a GEMM on dequantized weights is the tool

Format = Literal["q8", "q4_sym", "q4_asym"]


@dataclass(frozen=True)
class Packed:
    """W (K, N) as N rows of K/32 blocks: ``qs`` (N, Kp) int8 for q8 or (N, Kp/2) uint8
    nibbles for q4, ``scales`` (N, Kp/32), and for asymmetric q4 ``offsets`` (N, Kp/32),
    each block's minimum (symmetric q4's offset, -8 d, is not stored, so not read)."""

    format: Format
    k: int  # W's rows before padding
    n: int
    qs: np.ndarray
    scales: np.ndarray
    offsets: np.ndarray | None = None

    @property
    def blocks(self) -> int:
        return self.scales.shape[1]

    @property
    def nbytes(self) -> int:
        """Bytes a GEMV reads of the matrix: the packed weights and their block constants."""
        extra = 0 if self.offsets is None else self.offsets.nbytes
        return self.qs.nbytes + self.scales.nbytes + extra

    def dequantize(self) -> np.ndarray:
        """W (K, N) as float32, exactly what the kernels multiply by."""
        if self.format == "q8":
            q = self.qs.astype(np.float32).reshape(self.n, self.blocks, BLOCK)
            w = q * self.scales[:, :, None]
        else:
            lo = (self.qs & 15).reshape(self.n, self.blocks, BLOCK // 2)
            hi = (self.qs >> 4).reshape(self.n, self.blocks, BLOCK // 2)
            q = np.concatenate([lo, hi], axis=2).astype(np.float32)
            c = -8.0 * self.scales if self.offsets is None else self.offsets
            w = q * self.scales[:, :, None] + c[:, :, None]
        return np.ascontiguousarray(w.reshape(self.n, -1)[:, : self.k].T)


def _weights(w) -> tuple[np.ndarray, int, int]:
    """W (K, N) as (N, Kp) float32 rows padded with zeros to a multiple of the block."""
    w = _array("w", w, np.float32, 2)
    if not np.all(np.isfinite(w)):
        raise ValueError("w has NaN or infinite values; they have no quantized form")
    k, n = w.shape
    kp = -(-k // BLOCK) * BLOCK
    rows = np.zeros((n, kp), np.float32)
    rows[:, :k] = w.T
    return rows.reshape(n, kp // BLOCK, BLOCK), k, n


def _block(block: int) -> None:
    if block != BLOCK:
        raise ValueError(f"block must be {BLOCK} (the kernels' block), got {block}")


def quantize_q8(w, block: int = BLOCK) -> Packed:
    """W (K, N) float32 as q8: int8 in [-127, 127] with d = max|w| / 127 per block."""
    _block(block)
    b, k, n = _weights(w)
    d = np.abs(b).max(axis=2) / 127.0
    q = np.rint(b / np.where(d > 0, d, 1.0)[:, :, None]).clip(-127, 127).astype(np.int8)
    return Packed("q8", k, n, q.reshape(n, -1), d.astype(np.float32))


def quantize_q4(w, block: int = BLOCK, symmetric: bool = True) -> Packed:
    """W (K, N) float32 as q4. Symmetric (Q4_0): d = -v / 8 for the block's value v of
    largest magnitude, which maps to q - 8 = -8 exactly; q - 8 in [-8, 7]. Asymmetric
    (Q4_1): q in [0, 15], d = (max - min) / 15, the block's min as its offset."""
    _block(block)
    b, k, n = _weights(w)
    if symmetric:
        idx = np.abs(b).argmax(axis=2)[:, :, None]
        d = -np.take_along_axis(b, idx, axis=2)[:, :, 0] / 8.0
        safe = np.where(d != 0, d, 1.0)[:, :, None]
        q = (np.rint(b / safe) + 8).clip(0, 15)
        offsets = None
    else:
        lo, hi = b.min(axis=2), b.max(axis=2)
        d = (hi - lo) / 15.0
        safe = np.where(d > 0, d, 1.0)[:, :, None]
        q = np.rint((b - lo[:, :, None]) / safe).clip(0, 15)
        offsets = lo
    q = q.astype(np.uint8)
    packed = q[:, :, : BLOCK // 2] | (q[:, :, BLOCK // 2 :] << 4)
    fmt: Format = "q4_sym" if symmetric else "q4_asym"
    c = None if offsets is None else offsets.astype(np.float32)
    return Packed(fmt, k, n, packed.reshape(n, -1), d.astype(np.float32), c)


def read_buffer(nbytes: int) -> np.ndarray:
    """A buffer for ``read_gbs``, its pages written once (touched) before any timing."""
    return np.ones(nbytes, np.uint8)


def read_gbs(buf: np.ndarray, threads: int = 1, repeats: int = 5) -> float:
    """Read-only memory bandwidth (GB/s, best of ``repeats``) over ``buf`` (``read_buffer``):
    what a GEMV that reads each weight byte once per call can reach at most."""
    buf = _array("buf", buf, np.uint8, 1)
    t = _threads(threads)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        _kernels.read_bytes(buf, t)
        best = min(best, time.perf_counter() - t0)
    return buf.nbytes / best / 1e9


def _activations(x, packed: Packed) -> tuple[np.ndarray, np.ndarray, bool]:
    """x as (M, Kp) rows padded with zeros, its block sums, and whether x was 1-D."""
    if not isinstance(packed, Packed):
        raise TypeError(f"packed must be a Packed matrix, got {type(packed).__name__}")
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a numpy array, got {type(x).__name__}")
    vector = x.ndim == 1
    x2 = _array("x", x.reshape(1, -1) if vector else x, np.float32, 2)
    m, k = x2.shape
    if k != packed.k:
        raise ValueError(f"x has {k} columns but W has {packed.k} rows")
    if m > MAX_ROWS:
        raise ValueError(f"x has {m} rows; these kernels take 1 to {MAX_ROWS} (decode)")
    xp = np.zeros((m, packed.blocks * BLOCK), np.float32)
    xp[:, :k] = x2
    return xp, xp.reshape(m, packed.blocks, BLOCK).sum(axis=2, dtype=np.float32), vector


def _gemv(fmt: tuple[str, ...], x, packed: Packed, threads, isa, out) -> np.ndarray:
    if isinstance(packed, Packed) and packed.format not in fmt:
        raise ValueError(f"packed holds {packed.format}; this kernel takes {', '.join(fmt)}")
    xp, xs, vector = _activations(x, packed)
    y = _out(out, (xp.shape[0], packed.n) if not vector else (packed.n,), np.float32, [("x", x)])
    y2 = y.reshape(xp.shape[0], packed.n)
    code, t = _isa_code(isa), _threads(threads)
    if packed.format == "q8":
        _kernels.gemv_q8_into(xp, xs, packed.qs, packed.scales, y2, code, t)
    else:
        _kernels.gemv_q4_into(xp, xs, packed.qs, packed.scales, packed.offsets, y2, code, t)
    return y


def gemv_q8(x, packed: Packed, threads: int = 1, *, isa: str | None = None, out=None):
    """x @ W for x (K,) or (M, K) float32, M <= 16, and W from ``quantize_q8``."""
    return _gemv(("q8",), x, packed, threads, isa, out)


def gemv_q4(x, packed: Packed, threads: int = 1, *, isa: str | None = None, out=None):
    """x @ W for x (K,) or (M, K) float32, M <= 16, and W from ``quantize_q4``."""
    return _gemv(("q4_sym", "q4_asym"), x, packed, threads, isa, out)
