"""Argument checks of the kernel facades (``perfsuite.kernels``, ``perfsuite.weight_only``):
bad input raises TypeError/ValueError naming the problem before anything reaches C code."""

from __future__ import annotations

import numpy as np


def _array(name: str, x, dtype, ndim: int) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{name} must be {np.dtype(dtype)}, got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray)")
    if x.size == 0:
        raise ValueError(f"{name} is empty (shape {x.shape}); every dimension must be >= 1")
    return x


def _threads(threads) -> int:
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be an int, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return int(threads)


def _out(out, shape, dtype, inputs) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype)
    _array("out", out, dtype, len(shape))
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    for name, x in inputs:
        if np.shares_memory(out, x):
            raise ValueError(f"out overlaps input {name}; pass a separate buffer")
    return out
