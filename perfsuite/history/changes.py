"""Change points over the results history: one series per (benchmark, hardware class) of a
metric's per-run value, judged by gate.changepoints; a server or offline point's series is its
gated headline (a rate per run) whatever the metric asked for. An accepted annotation starts a
series anew at its run (the change was wanted; later runs are compared with the new level)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase

from perfsuite.gate.changepoints import MAX_PVALUE, WINDOW, change_points
from perfsuite.store.protocols import Annotation, HistoryQueries, SeriesPoint
from perfsuite.store.queries import DECODE_METRICS

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
        return asdict(self) | {"started_at": self.started_at.isoformat()}


def reset_index(
    name: str, hw: str, series: list[SeriesPoint], annotations: list[Annotation]
) -> int:
    """Where the series starts for detection: at the newest accepted annotation's run."""
    runs = {
        a.run_id
        for a in annotations
        if a.accepted and fnmatchcase(name, a.benchmarks) and a.hardware_class in (None, hw)
    }
    return max((i for i, p in enumerate(series) if p.run_id in runs), default=0)


def detect(
    store: HistoryQueries,
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
    metrics = dict.fromkeys(all_series, metric)
    if metric not in ("headline", *DECODE_METRICS):
        # A server or offline point's latencies sit at a load that moves with its rate: its
        # line is its gated headline (a VALID rate per run), as the history gate reads it.
        for key, series in store.series(
            pattern, metric="headline", hardware_class=hardware_class
        ).items():
            newest = series[-1].headline if series else None
            if key in all_series and newest is not None and newest.gated:
                all_series[key], metrics[key] = series, "headline"
    annotations = store.annotations()
    found: list[Change] = []
    for (name, hw), series in sorted(all_series.items()):
        start = reset_index(name, hw, series, annotations)
        values = [p.value for p in series[start:]]
        if len(values) < 6:  # changepoints.MIN_SIDE on each side
            continue
        for cp in change_points(
            values, window=window, max_pvalue=max_pvalue, min_magnitude=min_magnitude
        ):
            i = start + cp.index
            at = series[i]
            kind = metrics[name, hw]
            found.append(Change(name, hw, kind, i, at.run_id, at.run_key, at.started_at,
                                cp.before, cp.after, cp.change, cp.pvalue))  # fmt: skip
    if save:
        ids = store.benchmark_names(pattern)
        examined = [(ids[name], hw, metrics[name, hw]) for name, hw in all_series]
        rows = [
            {"benchmark_id": ids[c.benchmark]} | {k: getattr(c, k) for k in STORED} for c in found
        ]
        store.save_change_points(examined, rows)
    return found
