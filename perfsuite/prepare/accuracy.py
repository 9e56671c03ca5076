"""Accuracy gate for INT8 variants against their FP32 model (docs/guide/inference.md).

A model with labelled data (the digits classifier, a declared model's ``labels``): INT8 may
lose at most ``MAX_TOP1_DROP_POINTS`` of top-1 accuracy. Otherwise (random-weight models,
whose outputs are dominated by an input-independent component, and unlabelled files) the
signal-to-quantization-noise ratio of *centred* outputs (each minus its batch mean,
``centred_sqnr_db``) is judged against ``THRESHOLDS``.
"""

from __future__ import annotations

import numpy as np

from perfsuite.prepare.backends import RunConfig, get_backend
from perfsuite.prepare.models import BuiltModel
from perfsuite.prepare.quantize import Prepared
from perfsuite.records import Accuracy

# dB floors per model, chosen from measurements: healthy INT8 variants sit well above them, a
# wrong scale falls far below.
THRESHOLDS = {"default": 10.0}
MAX_TOP1_DROP_POINTS = 1.0


# An error below float32's rounding (2**-24 relative) is not noise: identical outputs read
# as this many dB, not infinity, which no JSON reader accepts.
SQNR_LIMIT_DB = -20.0 * np.log10(2.0**-24)  # 144.5 dB


def centred_sqnr_db(reference: np.ndarray, test: np.ndarray) -> float:
    """The centred SQNR in dB, within +-SQNR_LIMIT_DB (a constant reference: 0 dB when the
    test matches it, else the lower limit)."""
    ref = reference.reshape(reference.shape[0], -1).astype(np.float64)
    out = test.reshape(test.shape[0], -1).astype(np.float64)
    signal = ref - ref.mean(axis=0)
    noise = (out - ref) - (out - ref).mean(axis=0)
    s, n = float((signal**2).sum()), float((noise**2).sum())
    if s == 0.0:
        return 0.0 if n == 0.0 else -SQNR_LIMIT_DB
    floor = s * 10.0 ** (-SQNR_LIMIT_DB / 10.0)
    return float(max(10.0 * np.log10(s / max(n, floor)), -SQNR_LIMIT_DB))


def run_batches(
    framework: str, path, options: dict, inputs: dict[str, np.ndarray], batch: int
) -> np.ndarray:
    """The first output of every sample of ``inputs``, run ``batch`` samples at a time."""
    n = len(next(iter(inputs.values())))
    shapes = {k: (batch, *v.shape[1:]) for k, v in inputs.items()}
    cfg = RunConfig(threads=1, batch=batch, options=options, shapes=shapes)
    with get_backend(framework).prepare(path, cfg) as sess:
        outs = [
            sess.infer({k: v[i : i + batch] for k, v in inputs.items()})[0]
            for i in range(0, n, batch)
        ]
    return np.concatenate(outs)


def evaluate(model: BuiltModel, variant: Prepared, framework: str) -> Accuracy:
    """Compare ``variant`` with the FP32 model on the same framework."""
    ev = model.feeds.evaluation()
    ref = run_batches(framework, model.path, {}, ev.inputs, ev.batch)
    out = run_batches(framework, variant.path, variant.framework_options, ev.inputs, ev.batch)
    if ev.labels is not None:
        acc_fp32 = float((ref.argmax(1) == ev.labels).mean() * 100)
        acc_q = float((out.argmax(1) == ev.labels).mean() * 100)
        drop = acc_fp32 - acc_q
        return Accuracy(
            metric="top1_drop_points",
            value=drop,
            threshold=MAX_TOP1_DROP_POINTS,
            passed=bool(drop <= MAX_TOP1_DROP_POINTS),
            detail={"top1_fp32": acc_fp32, "top1_variant": acc_q, "samples": int(len(ev.labels))},
        )
    floor = THRESHOLDS.get(model.name, THRESHOLDS["default"])
    db = centred_sqnr_db(ref, out)
    raw_cos = float(
        np.dot(ref.ravel(), out.ravel()) / (np.linalg.norm(ref) * np.linalg.norm(out) + 1e-30)
    )
    return Accuracy(
        metric="centred_sqnr_db",
        value=float(db),
        threshold=float(floor),
        passed=bool(db >= floor),
        detail={"samples": len(ref), "raw_cosine": raw_cos},
    )
