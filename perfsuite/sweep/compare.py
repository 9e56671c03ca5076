"""Either side of an offline comparison (``perfsuite compare BASELINE CURRENT``, qualify's
inference check): a baseline file, a run directory or its summary.json, or a store URL
(``sqlite:///...``, ``postgresql+psycopg://...``, ``file://DIR``), whose baseline for the
current run's hardware class and profile is taken."""

from __future__ import annotations

from pathlib import Path

from perfsuite.gate.judge import Side
from perfsuite.store import BaselineError, find_baseline, scheme_of
from perfsuite.store import baseline as baseline_file
from perfsuite.store.files import is_baseline_file, read_run


def load_side(path: str | Path) -> Side:
    """A baseline file or a run directory (or its summary.json), validated on the way in."""
    return _load(Path(path))[0]


def _load(path: Path) -> tuple[Side, str]:
    """The side at ``path`` and the name of its profile."""
    if is_baseline_file(path):
        baseline = baseline_file.load(path)
        return Side.of_baseline(baseline, str(path)), baseline.profile
    run = read_run(path)
    side = Side.of_results(run.summary.fingerprint, run.results, run.source)
    return side, run.summary.profile_name or ""


def _is_store(text: str) -> bool:
    """A database URL, or a folder of baselines (``baselines/``), not a run directory."""
    if scheme_of(text) != "file":
        return True
    path = Path(text.removeprefix("file://"))
    return path.is_dir() and not (path / "summary.json").is_file()


def load_sides(baseline: str | Path, current: str | Path) -> tuple[Side, Side]:
    cur, profile = _load(Path(current))
    text = str(baseline)
    if not _is_store(text):
        return load_side(text.removeprefix("file://")), cur
    found, where = find_baseline(text, cur.fingerprint.hardware_class, profile)
    if found is None:
        raise BaselineError(f"no baseline at {where}")
    return Side.of_baseline(found, where), cur
