"""The regression gate: comparability first (hardware class, must-match fingerprint fields),
then the per-point statistics of ``perfsuite.gate.statistics``. Works on a live session's records or
offline on files (``perfsuite compare BASELINE CURRENT``)."""

from __future__ import annotations

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
from perfsuite.store import baseline as store
from perfsuite.store.files import is_baseline_file, read_run


@dataclass
class ResultSet:
    """Samples per benchmark id, plus the fingerprint they were measured on."""

    fingerprint: dict
    samples: dict[str, np.ndarray]
    errors: dict[str, str]
    source: str
    stats: dict[str, dict]
    runs: dict[str, list[float]] | None = None  # baseline: medians of the stored runs
    contaminated: dict[str, str] | None = None  # id -> what disturbed its measurement


def from_records(records: list[dict], fingerprint: dict, source: str = "this run") -> ResultSet:
    samples, errors, st, dirty = {}, {}, {}, {}
    for r in records:
        if r.get("status") == "ok":
            samples[r["id"]] = np.asarray(r["samples_s"], float)
            st[r["id"]] = r["stats"]
            inter = r.get("interference") or {}
            if inter.get("contaminated"):
                w = inter["sessions"][-1]
                dirty[r["id"]] = (
                    f"other processes used {w['foreign_share']:.0%} of the CPUs, "
                    f"steal {w['steal_share']:.0%}"
                )
        else:
            errors[r["id"]] = r.get("error") or "error"
    return ResultSet(fingerprint, samples, errors, source, st, contaminated=dirty)


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
    summary.json; validated on the way in."""
    if is_baseline_file(path):
        return from_baseline(store.load(path), str(path))
    fp, records, run_dir = read_run(path)
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
    for v in verdicts:  # a disturbed measurement can say nothing either way
        why = (cur.contaminated or {}).get(v.id)
        if why and v.verdict in ("regressed", "improved"):
            v.verdict, v.confirmed = "unstable", None
            v.add_reason(f"contaminated while measured ({why})", first=True)
        elif why:
            v.add_reason(f"contaminated while measured ({why})")
    shifted = any(v.shift is not None for v in verdicts)
    return Comparison(verdicts, True, must, notes, software, _shift(verdicts) if shifted else None)


def _shift(verdicts: list[PointVerdict]) -> float:
    changes = [v.change for v in verdicts if v.change is not None]
    return float(np.median(changes)) if changes else 0.0
