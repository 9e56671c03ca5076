"""What a store offers, as protocols a second implementation can follow, and the records its
reads return. ``Store`` is what a sweep needs (any URL: run directories or a database);
the history protocols are what the results history offers its readers and writers, one per
need, so a caller asks for the part it uses (``store.open_queries`` and so on) and a second
history (another database, a service) implements only those parts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from perfsuite import records
from perfsuite.store.baseline import Saved


class BaselineStore(Protocol):
    """Baselines by hardware class and profile: a file per pair, or a row per pair."""

    def baseline_location(self, hardware_class: str, profile: str) -> str: ...

    def load_baseline(self, hardware_class: str, profile: str) -> records.Baseline | None: ...

    def save_baseline(
        self, fingerprint: dict, profile: str, results: list[records.Result], **how
    ) -> Saved:
        """Add ``results`` under ``how`` (update, add_run, instructions): ``baseline.merged``."""


class Store(BaselineStore, Protocol):
    safe_url: str  # the URL without its password: what may be printed

    def add_run(self, run: records.Run) -> bool:
        """Keep a finished run, from memory; False when the store has it already."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class Imported:
    kind: str  # run | baseline | qualification
    source: str
    added: bool  # False: already in the store


@dataclass(frozen=True)
class SeriesPoint:
    run_id: int
    run_key: str
    started_at: dt.datetime
    value: float
    low: float  # spread band: quartiles of the run's (thinned) samples
    high: float
    commit: str | None = None
    samples_s: tuple[float, ...] = ()  # thinned, as stored
    headline: records.Headline | None = None  # the run's gated rate (server/offline points)


@dataclass(frozen=True)
class StoredRun:
    """A run's line in the history (``runs``), with its host's class and its point count."""

    id: int
    run_key: str
    kind: str  # run | baseline
    host_id: int
    started_at: dt.datetime
    profile: str
    perfsuite_version: str | None
    software: dict
    commit: str | None
    source: str | None
    excluded: bool
    excluded_reason: str | None
    branch: str | None
    dirty: bool | None
    repository: str | None
    hardware_class: str
    points: int


@dataclass(frozen=True)
class Annotation:
    id: int
    benchmarks: str  # an fnmatch glob of point ids
    hardware_class: str | None  # None: every class
    run_id: int  # from this run on
    accepted: bool  # an accepted change starts the series anew
    text: str
    created_at: dt.datetime
    run_key: str
    started_at: dt.datetime


@dataclass(frozen=True)
class StoredQualification:
    host_id: int
    recorded_at: dt.datetime
    report: records.QualificationReport


class HistoryImporter(Protocol):
    """Runs, baselines and qualification reports into the history; importing one twice adds
    nothing."""

    safe_url: str

    def add_run(self, run: records.Run, *, commit: str | None = None) -> bool: ...

    def import_path(self, path: Path, *, commit: str | None = None) -> Imported:
        """A run directory (or its summary.json), a baseline file or a qualification.json."""

    def import_qualification(self, path: Path, data: dict) -> Imported: ...

    def close(self) -> None: ...


@runtime_checkable  # sweep.finish draws trend charts only from a store that has series
class HistoryQueries(Protocol):
    """Reading the history: runs, series, annotations, qualifications, exports. Its one write
    is the change points found in its series (``history.changes.detect``), which the reads
    imply."""

    safe_url: str

    def runs(self, *, limit: int | None = None) -> list[StoredRun]:
        """Newest first."""

    def run(self, ref: str | None = None) -> StoredRun:
        """By id or key prefix; None: the newest measured run."""

    def load_run(self, ref: str | None = None) -> records.Run: ...

    def fingerprint_of(self, run: StoredRun) -> records.Fingerprint: ...

    def benchmark_names(self, pattern: str = "*") -> dict[str, int]: ...

    def series(
        self, pattern: str = "*", *, metric: str = ..., hardware_class: str | None = None
    ) -> dict[tuple[str, str], list[SeriesPoint]]:
        """Per (benchmark, hardware class): one value per run, oldest first."""

    def annotations(self, pattern: str = "*") -> list[Annotation]: ...

    def qualifications(self, hardware_class: str | None = None) -> list[StoredQualification]:
        """The newest report of each host."""

    def export(self, run_ref: str | None = None) -> list[dict]:
        """Runs with their results as plain JSON."""

    def save_change_points(
        self, examined: list[tuple[int, str, str]], found: list[dict]
    ) -> None: ...

    def close(self) -> None: ...


class HistoryAnnotations(Protocol):
    """What people add to the history after the fact: notes, accepted changes, exclusions."""

    safe_url: str

    def annotate(
        self,
        benchmarks: str,
        run_ref: str,
        text: str,
        *,
        accepted: bool,
        hardware_class: str | None = None,
    ) -> int: ...

    def exclude(self, run_ref: str, reason: str) -> int: ...

    def close(self) -> None: ...
