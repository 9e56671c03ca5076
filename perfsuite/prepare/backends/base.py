"""One small interface for inference frameworks: prepare once (not timed), then a callable the
measurement layer times. A framework that is missing or cannot load a model raises
``BackendUnavailable`` / ``BackendError`` with the reason; the planner turns the first into a
skip, the runner the second into an error for that point, never a crashed run.

A framework is one ``Backend`` subclass that says all the rest of perfsuite needs, so no code
elsewhere branches on its name (docs/design/architecture.md). Defining the class also
registers it in this process, so a conftest's backend is known to the sweep and its workers
(``perfsuite.execute.runner.runtime_extensions``)."""

from __future__ import annotations

import importlib.metadata
import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite.prepare.extensions import BACKENDS as GROUP
from perfsuite.prepare.extensions import Registry
from perfsuite.records import Point


class BackendUnavailable(RuntimeError):
    """The framework is not installed or cannot run here (a reason to skip)."""


class BackendError(RuntimeError):
    """The framework is there but failed on this model or setting (an error for the point)."""


@dataclass(frozen=True)
class RunConfig:
    threads: int = 1
    batch: int = 1
    mode: str = "latency"  # latency: one request at a time; throughput: framework parallelism
    cpus: tuple[int, ...] | None = None  # pin framework threads here when binding is requested
    options: dict = field(default_factory=dict)  # framework-specific knobs (see each backend)
    # input name -> the shape it is fed at (a framework that compiles for static shapes
    # reshapes to them); empty: the batch on the first axis of dynamic-batch inputs
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self):
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if self.batch < 1:
            raise ValueError(f"batch must be >= 1, got {self.batch}")
        if self.mode not in ("latency", "throughput"):
            raise ValueError(f"mode must be 'latency' or 'throughput', got {self.mode!r}")

    @classmethod
    def for_point(
        cls,
        point: Point,
        cpus=None,
        options: dict | None = None,
        *,
        threads: int | None = None,
        inputs: dict | None = None,
    ) -> RunConfig:
        """A point's session settings: its threads (``threads``: one LoadGen stream's share),
        batch and mode (the framework's parallelism for a throughput window and LoadGen's
        offline scenario), pinned to ``cpus`` when given, for ``inputs``' shapes."""
        return cls(
            threads=point.threads if threads is None else threads,
            batch=point.batch,
            mode="throughput" if point.mode in ("throughput", "offline") else "latency",
            cpus=cpus,
            options=dict(options or {}),
            shapes={k: tuple(v.shape) for k, v in (inputs or {}).items()},
        )


@dataclass
class ThroughputRun:
    items: int
    seconds: float
    latencies_s: list[float]

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


class Session(ABC):
    framework: str = ""
    settings: dict  # effective settings as the framework reports them

    @abstractmethod
    def infer(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One synchronous inference; returns the outputs."""

    def callable(self, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        """Zero-argument call of one inference on fixed inputs: what gets timed."""
        return lambda: self.infer(inputs)

    def run_throughput(self, inputs: dict[str, np.ndarray], seconds: float) -> ThroughputRun:
        """Default throughput mode: back-to-back batches (the batch is the parallelism)."""
        batch = next(iter(inputs.values())).shape[0]
        lat, t0 = [], time.perf_counter()
        while True:
            s = time.perf_counter()
            self.infer(inputs)
            e = time.perf_counter()
            lat.append(e - s)
            if e - t0 >= seconds:
                return ThroughputRun(items=batch * len(lat), seconds=e - t0, latencies_s=lat)

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _installed(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# name -> Backend: the perfsuite.backends entry points and the subclasses defined at run time
REGISTRY: Registry = Registry(GROUP, lambda obj: obj() if isinstance(obj, type) else obj)


class Backend(ABC):
    name: str = ""  # the framework's name in point ids, profiles and options
    distribution: str = ""  # PyPI distribution that must be installed (default: name)
    precisions: tuple[str, ...] = ("fp32",)  # see perfsuite.prepare.quantize.PRECISIONS
    no_path: dict[str, str] = {}  # precision -> why this framework cannot run it
    formats: tuple[str, ...] = ("onnx",)  # model files it loads (records.ModelFormat)
    distributions: tuple[str, ...] = ()  # versions recorded as software.<dist> (default: dist.)
    # options for a session that waits between short turns beside another (perfsuite ab)
    turn_options: dict = {}
    # options for a session whose process shares its cores with other processes running the
    # same model (Spark tasks on one executor): no spinning, no pinning of its own
    shared_core_options: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name and not inspect.isabstract(cls):
            REGISTRY[cls.name] = cls()

    def version(self) -> str | None:
        """Installed version, or None when the framework is not installed."""
        return _installed(self.distribution or self.name)

    def require(self) -> None:
        if self.version() is None:
            raise BackendUnavailable(
                f"{self.name} is not installed (pip install perfsuite[frameworks])"
            )

    def unavailable(self) -> str | None:
        """Why this framework cannot run here, or None."""
        try:
            self.require()
        except BackendUnavailable as exc:
            return str(exc)
        return None

    def why_not(self, precision: str) -> str | None:
        """Why this framework has no path for ``precision``, or None when it has one."""
        missing = self.no_path.get(precision, f"{precision} has no {self.name} path")
        return None if precision in self.precisions else missing

    def software(self) -> dict[str, str | None]:
        """Fingerprint fields: software.<distribution> -> version (None: not installed)."""
        dists = self.distributions or (self.distribution or self.name,)
        return {f"software.{dist}": _installed(dist) for dist in dists}

    @abstractmethod
    def prepare(self, model: Path, config: RunConfig) -> Session:
        """Load and compile the model (setup: never timed)."""
