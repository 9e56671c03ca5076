"""A server point's per-query timeline as a figure for the run report: each query's latency
against its scheduled time, with the queries in the system, and the distributions that say
how much of the p99 is queueing (the service time unloaded, under load, the wait, the whole
latency)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # the OO API: no pyplot state, no backend to choose

from perfsuite.gate.report import png
from perfsuite.records import Result
from perfsuite.serve.timeline import TIMELINE_FILE, read_csv
from perfsuite.text import plot_label


def _table(run_dir: Path, log_dir: str | None) -> dict[str, np.ndarray] | None:
    path = run_dir / (log_dir or "") / TIMELINE_FILE
    try:
        table = read_csv(path)
    except (OSError, ValueError, KeyError):  # a run without one, or a damaged file
        return None
    return table if table["query"].size else None


def timeline_plots(records: list[Result], run_dir: Path) -> list[tuple[str, str]]:
    """``[(title, data URI)]``: one figure per server point whose reported run kept its
    timeline."""
    out = []
    for r in sorted((r for r in records if r.ok and r.loadgen), key=lambda r: r.id):
        lg = r.loadgen
        if lg.scenario != "server" or lg.best is None:
            continue
        run = lg.runs[lg.best]
        t = _table(run_dir, run.log_dir)
        if t is None:
            continue
        alone = _table(run_dir, lg.unloaded.log_dir) if lg.unloaded else None
        out.append((f"Server timeline: {r.id}", png(_figure(r.id, run, t, alone, lg))))
    return out


def _figure(pid: str, run, t: dict, alone: dict | None, lg) -> Figure:
    fig = Figure(figsize=(9, 6.5))
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 2])
    seconds = t["scheduled_ms"] / 1e3
    top.scatter(seconds, t["latency_ms"], s=4, label="latency", color="C0")
    top.scatter(seconds, t["service_ms"], s=2, label="service (worker)", color="C2")
    bound = lg.latency_bound_ms
    if bound:
        top.axhline(bound, color="C3", lw=0.8, ls="--", label=f"bound {bound:g} ms")
    top.set_yscale("log")
    top.set_ylabel("ms (log)")
    top.set_xlabel("scheduled time, s")
    depth = top.twinx()
    depth.step(seconds, t["in_system"], where="post", color="0.6", lw=0.6)
    depth.set_ylabel("queries in the system")
    top.legend(fontsize=7, loc="upper left")
    qps = f"{run.target_qps:.4g} queries/s" if run.target_qps else ""
    top.set_title(plot_label(f"{pid}: {qps}, {t['query'].size} queries"), fontsize=8)
    parts = [("latency", t["latency_ms"]), ("wait", t["wait_ms"]),
             ("service under load", t["service_ms"])]  # fmt: skip
    if alone is not None:
        parts.append(("service unloaded (SingleStream)", alone["service_ms"]))
    data = [np.maximum(v[np.isfinite(v)], 1e-3) for _, v in parts]
    bottom.boxplot(data, orientation="horizontal", whis=(1, 99), showfliers=False)
    bottom.set_yticks(range(1, len(parts) + 1), [name for name, _ in parts], fontsize=7)
    bottom.set_xscale("log")
    bottom.set_xlabel("ms (log); box: p25-p75, whiskers: p1-p99")
    fig.tight_layout()
    return fig
