"""The file store: run directories and baseline files on disk, the one module that knows
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
from contextlib import suppress
from functools import cached_property
from pathlib import Path

from perfsuite import records
from perfsuite.store import baseline as baseline_file
from perfsuite.store.baseline import BaselineError, Saved
from perfsuite.writing import write_json

SUMMARY = "summary.json"


class RunDir:
    """One run's folder; named when the run first writes."""

    def __init__(self, results: Path, profile: str):
        self._results, self._profile = Path(results), profile

    @cached_property
    def path(self) -> Path:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self._results.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = self._results / (f"{stamp}-{self._profile}" + (f"-{n}" if n > 1 else ""))
            with suppress(FileExistsError):
                path.mkdir()
                return path
        raise OSError(f"cannot claim a run directory under {self._results}")

    def write_result(self, result: records.Result) -> Path:
        folder, suffix = ("remeasured", ".remeasure") if result.remeasure else ("points", "")
        return write_json(self.path / folder / f"{result.id}{suffix}.json", records.dump(result))

    def write_summary(self, summary: records.RunSummary) -> Path:
        return write_json(self.path / SUMMARY, records.dump(summary))

    def write(self, run: records.Run) -> Path:
        for result in run.results:
            self.write_result(result)
        return self.write_summary(run.summary)


def _read_json(path: Path):
    """One file of a run directory; a truncated or unreadable one is named."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BaselineError(f"{path} is unreadable (truncated or not JSON?): {exc}") from None


def read_run(path: Path) -> records.Run:
    """The run in a run directory (or its summary.json), validated. Raises BaselineError
    naming the file and field of anything invalid."""
    path = Path(path)
    run_dir = path.parent if path.name == SUMMARY else path
    summary = run_dir / SUMMARY
    points = sorted((run_dir / "points").glob("*.json"))
    if not summary.is_file() or not points:
        raise BaselineError(
            f"{path} is neither a baseline file nor a perfsuite run "
            f"directory ({SUMMARY} + points/*.json)"
        )
    gate_file = run_dir / "gate.json"
    head = _read_json(summary)
    raw = [_read_json(p) for p in points]
    gate = _read_json(gate_file) if gate_file.is_file() else None
    try:  # every reader validates: a NaN sample must not become "unchanged +nan%"
        return records.Run(
            summary=records.load_run_summary(head, str(summary)),
            results=[records.load_result(r, f"record {p}")
                     for r, p in zip(raw, points, strict=True)],
            gate=None if gate is None else records.load_gate_report(gate, str(gate_file)),
            source=str(run_dir),
        )  # fmt: skip
    except records.RecordError as exc:
        raise BaselineError(str(exc)) from None


def is_baseline_file(path: Path) -> bool:
    path = Path(path)
    return path.is_file() and path.name != SUMMARY


class FileStore:
    """Run directories under ``root`` and baselines under ``root/<class>/<profile>.json``
    (the baselines folder of a repository is such a root)."""

    schemes = ("file",)

    def __init__(self, url: str | Path):
        self.root = Path(str(url).removeprefix("file://"))
        self.safe_url = str(self.root)

    def new_run(self, profile: str) -> RunDir:
        return RunDir(self.root, profile)

    def add_run(self, run: records.Run) -> bool:
        """Keep ``run`` as a run directory here; False when it is one already."""
        if run.source and Path(run.source).parent.resolve() == self.root.resolve():
            return False
        RunDir(self.root, run.summary.profile_name or "run").write(run)
        return True

    def runs(self) -> list[Path]:
        """Run directories, oldest first."""
        found = self.root.iterdir() if self.root.is_dir() else ()
        return sorted(p for p in found if (p / SUMMARY).is_file())

    def baseline_location(self, hardware_class: str, profile: str) -> str:
        return str(baseline_file.path_for(self.root, hardware_class, profile))

    def load_baseline(self, hardware_class: str, profile: str) -> records.Baseline | None:
        path = baseline_file.path_for(self.root, hardware_class, profile)
        return baseline_file.load(path) if path.exists() else None

    def save_baseline(
        self, fingerprint: dict, profile: str, results: list[records.Result], **how
    ) -> Saved:
        return baseline_file.save(self.root, fingerprint, profile, results, **how)

    def close(self) -> None:
        pass
