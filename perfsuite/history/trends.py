"""Trend pages: one chart per benchmark from the results history -- the per-run median with
the quartile band of its samples, one line per hardware class, change points and annotations
marked. A static, self-contained HTML file (charts are inline SVG; no script, no network)."""

from __future__ import annotations

import html
import io
from collections import defaultdict
from fnmatch import fnmatchcase

from perfsuite.history.changes import Change, detect
from perfsuite.store.protocols import Annotation, HistoryQueries
from perfsuite.text import plot_label

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
MARKED_RUNS = 200  # a longer line is drawn without a marker per run
CHANGE_COLOUR = "#d62728"
ANNOTATION_COLOUR = "#7f7f7f"
UNITS = {
    "latency_median_ms": "median latency (ms)",
    "throughput_ips": "throughput (items/s)",
    "latency_p90_ms": "p90 latency (ms)",
    "latency_p99_ms": "p99 latency (ms)",
    "headline": "headline (a scenario's rate or latency, a decode point's tokens/s)",
}


def _chart(
    name: str, by_class: dict, changes: list[Change], notes: list[Annotation], metric: str
) -> str:
    from matplotlib.figure import Figure  # the OO API: no pyplot state, no backend to choose

    fig = Figure(figsize=(9, 3.2))
    ax = fig.subplots()
    times = {}
    for i, (hw, series) in enumerate(sorted(by_class.items())):
        colour = COLOURS[i % len(COLOURS)]
        x = [p.started_at for p in series]
        times.update({p.run_id: p.started_at for p in series})
        low, high = [p.low for p in series], [p.high for p in series]
        ax.fill_between(x, low, high, color=colour, alpha=0.2, linewidth=0)
        marker = "." if len(x) <= MARKED_RUNS else None  # each marker is an SVG element
        ax.plot(x, [p.value for p in series], marker=marker, color=colour, label=plot_label(hw))
    for c in changes:
        ax.axvline(c.started_at, color=CHANGE_COLOUR, linestyle="--", linewidth=1.2)
        ax.annotate(
            f"{c.change:+.1%}",
            (c.started_at, 1),
            xycoords=("data", "axes fraction"),
            color=CHANGE_COLOUR,
            fontsize=8,
            ha="left",
            va="top",
        )
    for a in notes:
        if a.run_id in times:
            ax.axvline(times[a.run_id], color=ANNOTATION_COLOUR, linestyle=":", linewidth=1)
    ax.set_ylabel(UNITS.get(metric, metric))
    ax.set_title(plot_label(name), fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]  # drop the XML prolog: the SVG is inline


STYLE = (
    "<style>body{font-family:sans-serif;margin:1.5em}figure{margin:1em 0}"
    "figcaption{font-size:.85em;color:#444}.none{color:#888}</style>"
)


def figures(
    store: HistoryQueries,
    benchmarks: str | list[str] = "*",
    *,
    metric: str = "latency_median_ms",
    last: int | None = None,
) -> str:
    """One <figure class='trend'> per benchmark (a glob, or a list of ids) with history; of
    its last ``last`` runs when given."""
    pattern = benchmarks if isinstance(benchmarks, str) else "*"
    wanted = None if isinstance(benchmarks, str) else set(benchmarks)
    series = store.series(pattern, metric=metric)
    if last:
        series = {k: v[-last:] for k, v in series.items()}
    shown = {p.run_id for s in series.values() for p in s}
    changes = [c for c in detect(store, pattern, metric=metric, save=False) if c.run_id in shown]
    notes = store.annotations(pattern)
    by_bench: dict[str, dict] = defaultdict(dict)
    for (name, hw), s in series.items():
        if wanted is None or name in wanted:
            by_bench[name][hw] = s
    parts = [
        f"<p>{len(by_bench)} benchmarks; line: per-run {html.escape(UNITS.get(metric, metric))}"
        ", band: quartiles of the run's samples; dashed red: change point; dotted grey: "
        "annotation.</p>"
    ]
    if not by_bench:
        parts.append("<p class='none'>no history for these benchmarks yet</p>")
    for name in sorted(by_bench):
        mine = [c for c in changes if c.benchmark == name]
        notes_here = [a for a in notes if fnmatchcase(name, a.benchmarks)]
        caption = (
            "; ".join(
                f"{c.hardware_class}: {c.change:+.1%} at run {c.index} "
                f"({c.started_at:%Y-%m-%d %H:%M}, p={c.p_value:.1e})"
                for c in mine
            )
            or "no change point"
        )
        caption += "".join(f"; note at run {a.run_id}: {a.text}" for a in notes_here)
        parts.append(
            f"<figure class='trend' id='trend-{html.escape(name)}'>"
            + _chart(name, by_bench[name], mine, notes_here, metric)
            + f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def render(
    store: HistoryQueries,
    pattern: str = "*",
    *,
    metric: str = "latency_median_ms",
    title: str = "perfsuite trends",
    last: int | None = None,
) -> str:
    """A whole trend page for the benchmarks matching ``pattern``."""
    t = html.escape(title)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{t}</title>{STYLE}</head>"
        f"<body><h1>{t}</h1>\n{figures(store, pattern, metric=metric, last=last)}\n</body></html>"
    )
