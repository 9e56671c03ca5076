"""Change points over the results history: one series per (benchmark, hardware class) of a
metric's per-run value, judged by gate.changepoints. An accepted annotation starts a series
anew at its run (the change was wanted; later runs are compared with the new level)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase

from perfsuite.gate.changepoints import MAX_PVALUE, WINDOW, change_points
from perfsuite.store.database import Annotation, HistoryStore, SeriesPoint

# What the change_points table keeps of a Change (besides the benchmark's id).
STORED = ("hardware_class", "metric", "run_id", "before", "after", "change", "p_value")


@dataclass(frozen=True)
class Change:
    benchmark: str
    hardware_class: str
    metric: str
    index: int  # in the benchmark's whole series, oldest run = 0
    run_id: int  # the first run after the change
    run_key: str
    started_at: dt.datetime
    before: float
    after: float
    change: float  # after / before - 1
    p_value: float

    def as_dict(self) -> dict:
        d = asdict(self)
        d["started_at"] = self.started_at.isoformat()
        return d


def reset_index(
    name: str, hw: str, series: list[SeriesPoint], annotations: list[Annotation]
) -> int:
    """Where the series starts for detection: at the newest accepted annotation's run."""
    start = 0
    for a in annotations:
        if not a.accepted or not fnmatchcase(name, a.benchmarks):
            continue
        if a.hardware_class not in (None, hw):
            continue
        for i, p in enumerate(series):
            if p.run_id == a.run_id:
                start = max(start, i)
    return start


def detect(
    store: HistoryStore,
    pattern: str = "*",
    *,
    metric: str = "latency_median_ms",
    hardware_class: str | None = None,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    min_magnitude: float | None = None,
    save: bool = True,
) -> list[Change]:
    """Change points of every matching series; stored in the change_points table unless
    ``save`` is False."""
    all_series = store.series(pattern, metric=metric, hardware_class=hardware_class)
    annotations = store.annotations()
    ids = store.benchmark_names(pattern)
    found: list[Change] = []
    saved: list[dict] = []
    examined: list[tuple[int, str, str]] = []
    for (name, hw), series in sorted(all_series.items()):
        start = reset_index(name, hw, series, annotations)
        examined.append((ids[name], hw, metric))
        values = [p.value for p in series[start:]]
        if len(values) < 6:  # changepoints.MIN_SIDE on each side
            continue
        for cp in change_points(
            values, window=window, max_pvalue=max_pvalue, min_magnitude=min_magnitude
        ):
            at = series[start + cp.index]
            change = Change(
                name,
                hw,
                metric,
                start + cp.index,
                at.run_id,
                at.run_key,
                at.started_at,
                cp.before,
                cp.after,
                cp.change,
                cp.pvalue,
            )
            found.append(change)
            saved.append({"benchmark_id": ids[name], **{k: getattr(change, k) for k in STORED}})
    if save:
        store.save_change_points(examined, saved)
    return found
