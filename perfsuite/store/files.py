"""The file store: run directories and baseline files on disk. The only module that knows
the layout (pytest-benchmark's ``file://`` storage, chosen by URL the same way):

    <results>/<YYYYmmdd-HHMMSS>-<profile>[-N]/points/<id>.json     one result record each
                                             /remeasured/<id>.remeasure.json
                                             /summary.json, report.html, gate.*
    <baselines>/<hardware-class>/<profile>.json                  (perfsuite.store.baseline)

A run directory is claimed with an exclusive mkdir when its first file is written, so two
runs started in the same second get two directories (``-2``), never one shared one.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from perfsuite import records
from perfsuite.files import atomic_write_text, json_default
from perfsuite.store import baseline as baseline_file
from perfsuite.store.baseline import BaselineError

SUMMARY = "summary.json"


class RunDir:
    """One run's folder; named when the run first writes."""

    def __init__(self, results: Path, profile: str):
        self._results, self._profile = Path(results), profile
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = self._claim()
        return self._path

    def _claim(self) -> Path:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self._results.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = self._results / (f"{stamp}-{self._profile}" + (f"-{n}" if n > 1 else ""))
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
        raise OSError(f"cannot claim a run directory under {self._results}")

    def write_result(self, record: dict, *, remeasure: bool = False) -> Path:
        folder, suffix = ("remeasured", ".remeasure") if remeasure else ("points", "")
        path = self.path / folder / f"{record['id']}{suffix}.json"
        atomic_write_text(path, json.dumps(record, indent=1, default=json_default))
        return path

    def write_summary(self, summary: dict) -> Path:
        path = self.path / SUMMARY
        atomic_write_text(path, json.dumps(summary, indent=1, default=json_default))
        return path


def read_run(path: Path) -> tuple[dict, list[dict], Path]:
    """(fingerprint, validated records, run directory) of a run directory or its summary.json.
    Raises BaselineError naming the file and field of anything invalid."""
    path = Path(path)
    run_dir = path.parent if path.name == SUMMARY else path
    summary = run_dir / SUMMARY
    points = sorted((run_dir / "points").glob("*.json"))
    if not summary.is_file() or not points:
        raise BaselineError(
            f"{path} is neither a baseline file nor a perfsuite run "
            f"directory ({SUMMARY} + points/*.json)"
        )
    try:
        head = json.loads(summary.read_text())
        raw = [json.loads(p.read_text()) for p in points]
    except (OSError, ValueError) as exc:
        raise BaselineError(f"run directory {run_dir} is unreadable: {exc}") from None
    try:  # every reader validates: a NaN sample must not become "unchanged +nan%"
        fp = records.load_run_summary(head, str(summary)).fingerprint.model_dump()
        recs = [
            records.dump(records.load_result(r, f"record {p}"))
            for r, p in zip(raw, points, strict=True)
        ]
    except records.RecordError as exc:
        raise BaselineError(str(exc)) from None
    return fp, recs, run_dir


def is_baseline_file(path: Path) -> bool:
    path = Path(path)
    return path.is_file() and path.name != SUMMARY


class FileStore:
    scheme = "file"

    def __init__(self, results: Path, baselines: Path):
        self.results, self.baselines = Path(results), Path(baselines)

    def new_run(self, profile: str) -> RunDir:
        return RunDir(self.results, profile)

    def runs(self) -> list[Path]:
        """Run directories, oldest first."""
        if not self.results.is_dir():
            return []
        return sorted(p for p in self.results.iterdir() if (p / SUMMARY).is_file())

    def baseline_path(self, hardware_class: str, profile: str) -> Path:
        return baseline_file.path_for(self.baselines, hardware_class, profile)

    def load_baseline(self, hardware_class: str, profile: str) -> dict | None:
        path = self.baseline_path(hardware_class, profile)
        return baseline_file.load(path) if path.exists() else None

    def save_baseline(self, fingerprint: dict, profile: str, recs: list[dict], **how):
        return baseline_file.save(self.baselines, fingerprint, profile, recs, **how)


def _path(url: str | Path) -> Path:
    text = str(url)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise ValueError(
            f"result store {text!r}: unknown scheme {scheme!r} (this build has file://)"
        )
    return Path(text)


def open_store(results: str | Path, baselines: str | Path) -> FileStore:
    """The store for ``results`` and ``baselines`` locations: plain paths or file:// URLs."""
    return FileStore(_path(results), _path(baselines))
