"""The HTML page of a relative run (``<run>/ab.html``): per point the verdict, B/A with its
interval, the look that decided it, and every round's ratio against the threshold band.
Self-contained (the plot is an embedded PNG), like the gate's report."""

from __future__ import annotations

import html
from pathlib import Path

from matplotlib.figure import Figure  # the OO API: no pyplot state, no backend to choose
from matplotlib.ticker import PercentFormatter

from perfsuite.gate.report import png
from perfsuite.text import md_cell, md_code, plot_label
from perfsuite.writing import atomic_write_text


def _plot(verdicts) -> str | None:
    judged = [v for v in verdicts if v.ratios]
    if not judged:
        return None
    fig = Figure(figsize=(8, max(2.0, 0.45 * len(judged))))
    ax = fig.subplots()
    for y, v in enumerate(judged):
        ax.scatter([r - 1 for r in v.ratios], [y] * len(v.ratios), s=10, color="0.5")
        ax.plot(v.ci, [y, y], color="C3" if v.verdict == "regressed" else "C0", lw=3)
        ax.plot([v.change], [y], marker="|", color="k", ms=14)
    t = judged[0].threshold or 0.0
    ax.axvspan(-t, t, color="C2", alpha=0.12, label=f"+/- threshold ({t:.0%})")
    ax.axvline(0, color="k", lw=0.5)
    ax.set_yticks(range(len(judged)), [plot_label(v.id) for v in judged], fontsize=7)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("B / A - 1: each round (dots), the estimate (bar) and its 95% interval")
    ax.legend(fontsize=7, loc="lower right")
    return png(fig)


COLUMNS = ("verdict", "B/A-1", "95% interval", "p (Holm)", "alpha", "rounds", "point")


def _cells(v) -> list[str]:
    if v.change is None:  # not judged: the reason goes with the point
        return [v.verdict, *[""] * 4, str(v.rounds), v.id + (f": {v.reason}" if v.reason else "")]
    return [
        v.verdict, f"{v.change:+.2%}", f"[{v.ci[0]:+.2%}, {v.ci[1]:+.2%}]",
        f"{v.p_value:.2g}", f"{v.alpha:.2g} (look {v.look})", str(v.rounds), v.id,
    ]  # fmt: skip


def markdown(verdicts, a_desc: str, b_desc: str, hardware_class: str) -> str:
    """The verdict table as GitHub Markdown (a PR comment, a job summary), regressions first."""
    order = {"regressed": 0, "error": 1}
    rows = sorted(verdicts, key=lambda v: order.get(v.verdict, 2))
    bad = sum(v.verdict in order for v in verdicts)
    lines = [
        f"**{bad} of {len(verdicts)} point(s) regressed or failed** on {md_cell(hardware_class)}"
        f" (A {md_code(a_desc)}, B {md_code(b_desc)})",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + " --- |" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(md_cell(c) for c in _cells(v)) + " |" for v in rows]
    return "\n".join(lines) + "\n"


def html_page(verdicts, a_desc: str, b_desc: str, hardware_class: str) -> str:
    esc = html.escape
    rows = [
        f"<tr class='{esc(v.verdict)}'>" + "".join(f"<td>{esc(c)}</td>" for c in _cells(v))
        for v in verdicts
    ]
    head = "".join(f"<th>{h}</th>" for h in COLUMNS)
    img = _plot(verdicts)
    plot = f"<h2>Rounds</h2><img id='rounds' src='{img}' alt='per-round ratios'>" if img else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>perfsuite ab</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 8px;text-align:left}}
tr.regressed{{background:#fdd}}tr.improved{{background:#dfd}}tr.error{{background:#fec}}
</style></head><body><h1>Relative run on {esc(hardware_class)}</h1>
<p>A: <code>{esc(a_desc)}</code><br>B: <code>{esc(b_desc)}</code></p>
<table id="verdicts"><tr>{head}</tr>{"".join(rows)}</table>{plot}</body></html>"""


def write(run_dir: Path, verdicts, a_desc: str, b_desc: str, hardware_class: str) -> Path:
    """``ab.html`` and ``ab.md`` (the table a pull request's comment carries)."""
    path = Path(run_dir) / "ab.html"
    atomic_write_text(path, html_page(verdicts, a_desc, b_desc, hardware_class))
    atomic_write_text(path.with_suffix(".md"), markdown(verdicts, a_desc, b_desc, hardware_class))
    return path
