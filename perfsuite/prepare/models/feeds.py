"""What a model is fed: a batch to measure, batch-1 calibration feeds for static INT8, and an
evaluation set (with labels when there are any) for the accuracy gate. A model's inputs
are ``records.ModelInput``s: every one gets data, or the model is refused before anything
is measured (``FeedError``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from perfsuite.records import InputRule, ModelInput

CALIBRATION_SEED = 1234
CALIBRATION_ROWS = 128  # of a user's calibration data: quantize_static and NNCF take them all
EVALUATION_SEED = 99


class FeedError(ValueError):
    """An input that cannot get data (one line naming the model and the input)."""


@dataclass(frozen=True)
class Evaluation:
    inputs: dict[str, np.ndarray]  # first axis: samples
    labels: np.ndarray | None  # class indices, one per sample; None: judged against fp32
    batch: int  # run in batches of this size (one static batch for OpenVINO)


def is_batch(d: int | str, axis: int, batch_dim: str | None) -> bool:
    """Whether dimension ``d`` at ``axis`` is the batch: the one named ``batch_dim``, else a
    symbolic first axis (``batch``, ``batch_size``, ``N``, unnamed: exporters differ)."""
    if not isinstance(d, str):
        return False
    return d == batch_dim if batch_dim is not None else axis == 0


def shape_of(
    inp: ModelInput, batch: int, dims: Mapping[str, int], batch_dim: str | None = None
) -> tuple:
    """The concrete shape of ``inp`` at ``batch``; a symbolic dimension with no value is a
    FeedError, never 1, and so is a batch a fixed first axis cannot take."""
    out = []
    for axis, d in enumerate(inp.shape):
        if isinstance(d, int):
            if axis == 0 and batch_dim is None and batch > 1 and d != batch:
                raise FeedError(
                    f"input {inp.name!r} has a fixed first dimension of {d}: batch {batch} "
                    "cannot run (export the model with a dynamic batch)"
                )
            out.append(d)
        elif is_batch(d, axis, batch_dim):
            out.append(batch)
        elif d in dims:
            out.append(dims[d])
        else:
            raise FeedError(
                f"input {inp.name!r} has symbolic dimension {d!r} with no value: set "
                f'dims = {{"{d}" = N}} (or --perf-dims {d}=N)'
            )
    return tuple(out)


@dataclass(frozen=True)
class Synthetic:
    """Seeded data from each input's rule: floats normal(0, 1), integers from their declared
    range (a guessed range would crash a Gather or measure another path)."""

    model: str
    inputs: tuple[ModelInput, ...]
    rules: Mapping[str, InputRule] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)
    batch_dim: str | None = None
    samples: int = 32  # calibration and evaluation samples
    calibration_data: Mapping[str, np.ndarray] | None = None  # given: calibrate on these

    def __post_init__(self):
        for inp in self.inputs:
            rule = self.rules.get(inp.name)
            if rule is None and not np.issubdtype(np.dtype(inp.dtype), np.floating):
                raise FeedError(
                    f"model {self.model!r}: integer input {inp.name!r} ({inp.dtype}) has no "
                    f"data rule: declare inputs.{inp.name} = {{low = 0, high = N}} (token ids: "
                    "N = the vocabulary size), {value = 1} or {arange = true}, or give data"
                )
        if unknown := sorted(set(self.rules) - {i.name for i in self.inputs}):
            names = ", ".join(i.name for i in self.inputs)
            raise FeedError(
                f"model {self.model!r} has no input {unknown[0]!r}; its inputs: {names}"
            )

    def batch(self, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {inp.name: self._one(inp, batch, rng) for inp in self.inputs}

    def _one(self, inp: ModelInput, batch: int, rng) -> np.ndarray:
        try:
            shape = shape_of(inp, batch, self.dims, self.batch_dim)
        except FeedError as exc:
            raise FeedError(f"model {self.model!r}: {exc}") from None
        dtype = np.dtype(inp.dtype)
        rule = self.rules.get(inp.name)
        if rule is None:
            return rng.standard_normal(shape).astype(dtype)
        if rule.value is not None:
            return np.full(shape, rule.value, dtype)
        if rule.arange:
            return np.ascontiguousarray(np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape))
        if np.issubdtype(dtype, np.integer):
            return rng.integers(int(rule.low), int(rule.high), size=shape, dtype=dtype)
        return rng.uniform(rule.low, rule.high, size=shape).astype(dtype)

    def calibration(self) -> list[dict[str, np.ndarray]]:
        if self.calibration_data is not None:
            return _rows({k: v[:CALIBRATION_ROWS] for k, v in self.calibration_data.items()})
        return _rows(self.batch(self.samples, CALIBRATION_SEED))

    def evaluation(self) -> Evaluation:
        return Evaluation(self.batch(self.samples, EVALUATION_SEED), None, 1)


@dataclass(frozen=True)
class Arrays:
    """Samples given as arrays (a user's ``data``/``calibration`` .npz, the digits split): a
    batch draws rows; calibration takes the calibration rows one by one; evaluation runs
    every data row in one static batch, against ``labels`` when there are labels."""

    data: Mapping[str, np.ndarray]
    labels: np.ndarray | None = None
    calibration_data: Mapping[str, np.ndarray] | None = None
    calibration_count: int = CALIBRATION_ROWS

    def batch(self, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
        n = len(next(iter(self.data.values())))
        idx = np.random.default_rng(seed).choice(n, size=batch)
        return {k: np.ascontiguousarray(v[idx]) for k, v in self.data.items()}

    def calibration(self) -> list[dict[str, np.ndarray]]:
        rows = self.calibration_data if self.calibration_data is not None else self.data
        return _rows({k: v[: self.calibration_count] for k, v in rows.items()})

    def evaluation(self) -> Evaluation:
        n = len(next(iter(self.data.values())))
        return Evaluation(dict(self.data), self.labels, n)


def _rows(arrays: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    n = len(next(iter(arrays.values())))
    return [{k: v[i : i + 1] for k, v in arrays.items()} for i in range(n)]
