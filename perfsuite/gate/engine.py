"""The regression gate: comparability first (hardware class, must-match fingerprint fields),
then the per-point statistics of ``perfsuite.gate.statistics``. Works on a live session's records or
offline on files (``perfsuite compare BASELINE CURRENT``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite.gate.statistics import (
    Comparison,
    GateConfig,
    PointVerdict,
    compare_fingerprints,
    compare_samples,
)
from perfsuite.records import RecordError, dump, load_result
from perfsuite.store import baseline as store


@dataclass
class ResultSet:
    """Samples per benchmark id, plus the fingerprint they were measured on."""

    fingerprint: dict
    samples: dict[str, np.ndarray]
    errors: dict[str, str]
    source: str
    stats: dict[str, dict]
    runs: dict[str, list[float]] | None = None  # baseline: medians of the stored runs


def from_records(records: list[dict], fingerprint: dict, source: str = "this run") -> ResultSet:
    samples, errors, st = {}, {}, {}
    for r in records:
        if r.get("status") == "ok":
            samples[r["id"]] = np.asarray(r["samples_s"], float)
            st[r["id"]] = r["stats"]
        else:
            errors[r["id"]] = r.get("error") or "error"
    return ResultSet(fingerprint, samples, errors, source, st)


def from_baseline(data: dict, source: str) -> ResultSet:
    fp = {
        "fields": data["fingerprint"]["fields"],
        "classes": data["fingerprint"]["classes"],
        "hardware_class": data["hardware_class"],
    }
    return ResultSet(
        fp,
        {k: np.asarray(e["samples_s"], float) for k, e in data["entries"].items()},
        {},
        source,
        {k: e["stats"] for k, e in data["entries"].items()},
        {k: e.get("runs", []) for k, e in data["entries"].items()},
    )


def load_results(path: Path) -> ResultSet:
    """A baseline file, a run directory (with points/*.json and summary.json), or a run's
    summary.json."""
    path = Path(path)
    if path.is_file() and path.name != "summary.json":
        return from_baseline(store.load(path), str(path))
    run_dir = path.parent if path.name == "summary.json" else path
    summary = run_dir / "summary.json"
    points = sorted((run_dir / "points").glob("*.json"))
    if not summary.is_file() or not points:
        raise store.BaselineError(
            f"{path} is neither a baseline file nor a perfsuite run "
            "directory (summary.json + points/*.json)"
        )
    try:
        fp = json.loads(summary.read_text())["fingerprint"]
        records = [json.loads(p.read_text()) for p in points]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise store.BaselineError(f"run directory {run_dir} is unreadable: {exc}") from None
    try:  # every reader validates: a NaN sample must not become "unchanged +nan%"
        records = [
            dump(load_result(r, f"record {p}")) for r, p in zip(records, points, strict=True)
        ]
    except RecordError as exc:
        raise store.BaselineError(str(exc)) from None
    if not isinstance(fp, dict) or "fields" not in fp or "classes" not in fp:
        raise store.BaselineError(f"{summary} has no host fingerprint (fields, classes)")
    return from_records(records, fp, str(run_dir))


def evaluate(base: ResultSet, cur: ResultSet, cfg: GateConfig | None = None) -> Comparison:
    cfg = cfg or GateConfig()
    must, notes, software = compare_fingerprints(base.fingerprint, cur.fingerprint)
    hw_b = base.fingerprint.get("hardware_class")
    hw_c = cur.fingerprint.get("hardware_class")
    if hw_b != hw_c:
        must.setdefault("hardware_class", (hw_b, hw_c))
    if must:
        named = ", ".join(f"{k} ({a} -> {b})" for k, a_b in must.items() for a, b in [a_b])
        ids = sorted(set(base.samples) | set(cur.samples) | set(cur.errors))
        verdicts = [
            PointVerdict(i, "incomparable", reason=f"different hardware: {named}") for i in ids
        ]
        return Comparison(verdicts, False, must, notes, software, None)
    verdicts = compare_samples(base.samples, cur.samples, cfg, cur.errors, base.runs)
    shift = None
    for v in verdicts:
        if "machine-wide shift" in v.reason:
            shift = v.change
            break
    return Comparison(
        verdicts, True, must, notes, software, _shift(verdicts) if shift is not None else None
    )


def _shift(verdicts: list[PointVerdict]) -> float:
    changes = [v.change for v in verdicts if v.change is not None]
    return float(np.median(changes)) if changes else 0.0
