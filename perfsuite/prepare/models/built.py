"""A model ready to measure: its file on disk, what it is fed (``feeds``) and what is known
of its size. The zoo's models and declared files both become one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from perfsuite.prepare.models.feeds import Evaluation
from perfsuite.records import ModelFormat, ModelInput


class Feeds(Protocol):
    def batch(self, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]: ...
    def calibration(self) -> list[dict[str, np.ndarray]]: ...
    def evaluation(self) -> Evaluation: ...


@dataclass(frozen=True)
class BuiltModel:
    """A model on disk with what measuring it needs; a result records a summary of it as
    ``records.ModelInfo``."""

    name: str
    path: Path
    signature: tuple[ModelInput, ...]  # per input; shapes with the batch dimension
    feeds: Feeds
    params: int
    flops_per_item: int | None  # None: not known (a declared file)
    weight_bytes: int
    format: ModelFormat = "onnx"
    meta: dict = field(default_factory=dict)
    identity: dict = field(default_factory=dict)  # a declared file's: in its variants' keys

    def inputs(self, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
        return self.feeds.batch(batch, seed)

    @property
    def image(self) -> tuple[str, tuple[int, ...]] | None:
        """(name, per-item shape) of the one fixed-shape float input that Spark points feed
        from encoded rows; None for another kind of model."""
        if len(self.signature) != 1:
            return None
        (inp,) = self.signature
        rest = inp.shape[1:]
        if not inp.dtype.startswith("float") or not all(isinstance(d, int) for d in rest):
            return None
        return inp.name, tuple(rest)
