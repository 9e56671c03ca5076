"""Reports of a gate comparison: terminal lines, Markdown (also to $GITHUB_STEP_SUMMARY),
JUnit XML (one testcase per benchmark point) and a self-contained HTML page with plots
(matplotlib PNGs embedded as data URIs: it opens in a browser with no network). Rendered
here, written by the layer above (sweep.gate_files): the gate touches no files."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from matplotlib.figure import Figure  # the OO API: no pyplot state, no backend to choose

from perfsuite.gate.judge import Comparison, Side, Verdict
from perfsuite.gate.statistics import thread_group
from perfsuite.records import load_gate_report
from perfsuite.text import finite_json, json_default, md_cell, md_code, plot_label, terminal_line


def _confirm(v: Verdict) -> str:
    if v.verdict != "regressed":
        return ""
    return {True: "confirmed", False: "not confirmed", None: "unconfirmed"}[v.confirmed]


def _row(v: Verdict) -> tuple[str, ...]:
    """A verdict's change, CI, p, baseline ms, current ms and note, as the reports print them."""
    change = "" if v.change is None else f"{v.change * 100:+.1f}%"
    ci = "" if v.ci is None else f"[{v.ci[0] * 100:+.1f}%, {v.ci[1] * 100:+.1f}%]"
    p = "" if v.p_value is None else f"{v.p_value:.2g}"
    base = "" if v.baseline_median_ms is None else f"{v.baseline_median_ms:.3f}"
    cur = "" if v.current_median_ms is None else f"{v.current_median_ms:.3f}"
    note = " ".join(x for x in (_confirm(v), v.reason) if x)
    return change, ci, p, base, cur, note


def header_lines(c: Comparison, base_src: str, cur_src: str) -> list[str]:
    lines = [f"baseline: {base_src}", f"current:  {cur_src}"]
    lines.append("verdicts: " + ", ".join(f"{n} {k}" for k, n in c.counts().items() if n))
    if not c.comparable:
        lines.append(
            "INCOMPARABLE: must-match fingerprint fields differ: "
            + ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in c.differences.items())
        )
    if c.machine_shift is not None:
        groups = sorted({(thread_group(v.id), v.shift) for v in c.verdicts if v.shift is not None})
        by_group = ", ".join(f"{g}-thread points {s * 100:+.1f}%" if g else f"{s * 100:+.1f}%"
                             for g, s in groups)  # fmt: skip
        lines.append(
            f"machine-wide shift ({by_group}; sweep median {c.machine_shift * 100:+.1f}%): "
            "noisy neighbour, clock or thermal change? Points that only followed it are "
            "'unstable', not regressions, and so are those that did not follow it but stayed "
            "near their baseline; a change that slows every point alike needs "
            "`perfsuite ab` to tell it from the host"
        )
    lines += [f"note (tolerance field changed): {note}" for note in c.tolerance_notes]
    if c.software_changes:
        lines.append(
            "software changed: "
            + ", ".join(f"{k[9:]} {a} -> {b}" for k, (a, b) in c.software_changes.items())
        )
    return lines


def terminal(write, c: Comparison, base_src: str, cur_src: str) -> None:
    def write_line(line: str) -> None:  # ids, reasons and sources are data: never obeyed
        write(terminal_line(line))

    for line in header_lines(c, base_src, cur_src):
        write_line(line)
    row = "{:<12} {:>8} {:>18} {:>9} {:>9} {:>9}  {}".format  # the head's layout is the rows'
    write_line(
        row("verdict", "change", "CI (ratio-1)", "p (Holm)", "base ms", "curr ms", "benchmark")
    )
    for v in sorted(c.verdicts, key=lambda v: (v.verdict != "regressed", v.id)):
        *cells, extra = _row(v)
        write_line(row(v.verdict, *cells, v.id + (f"  ({extra})" if extra else "")))


def markdown(c: Comparison, base_src: str, cur_src: str) -> str:
    out = ["## perfsuite regression gate", ""]
    out += [f"- {md_cell(line)}" for line in header_lines(c, base_src, cur_src)]
    out += [
        "",
        "| verdict | benchmark | change | CI | p (Holm) | baseline ms | current ms | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in sorted(c.verdicts, key=lambda v: (v.verdict != "regressed", v.id)):
        change, ci, p, base, cur, note = _row(v)
        cells = (v.verdict, md_code(v.id), change, ci, p, base, cur, md_cell(note))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def junit(c: Comparison, fail_on: str) -> str:
    failing = {v.id for v in c.failing(fail_on)}
    suite = ET.Element(
        "testsuite", name="perfsuite-gate", tests=str(len(c.verdicts)), failures=str(len(failing))
    )
    for v in c.verdicts:
        case = ET.SubElement(suite, "testcase", classname="perfsuite", name=v.id)
        change, ci, p, *_ = _row(v)
        text = f"{v.verdict} {change} CI {ci} p={p} {v.reason}".strip()
        if v.id in failing:
            ET.SubElement(case, "failure", message=text, type=v.verdict).text = text
        elif v.verdict in ("new", "missing", "incomparable", "unstable", "error"):
            ET.SubElement(case, "skipped", message=text)
        ET.SubElement(case, "system-out").text = text
    return ET.tostring(suite, encoding="unicode")


def png(fig: Figure) -> str:
    """A figure as a data URI: pages that open with no network."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def latency_boxes(name: str, title: str, samples_ms: list, labels: list[str], height: float):
    """Latency distributions, a box per label: ``[(name, data URI)]``, or [] with none."""
    if not labels:
        return []
    ax = Figure(figsize=(9, max(2.5, height))).subplots()
    ax.boxplot(samples_ms, orientation="horizontal", showfliers=False)
    ax.set_yticks(range(1, len(labels) + 1), [plot_label(x) for x in labels], fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("latency per call, ms (log)")
    ax.set_title(title)
    return [(name, png(ax.figure))]


def throughput_vs_threads(groups: dict[str, list[tuple[int, float]]]):
    """A line per group of 2+ (threads, items/s): ``[(name, data URI)]``, or [] with none."""
    lines = {key: sorted(pts) for key, pts in sorted(groups.items()) if len(pts) > 1}
    if not lines:
        return []
    ax = Figure(figsize=(7, 4)).subplots()
    for key, pts in lines.items():
        ax.plot([t for t, _ in pts], [v for _, v in pts], marker="o", label=plot_label(key))
    ax.set_xlabel("threads")
    ax.set_ylabel("items/s")
    ax.legend(fontsize=6)
    ax.set_title("throughput vs threads")
    return [("Throughput vs threads", png(ax.figure))]


def html_report(c: Comparison, base: Side, cur: Side) -> str:
    ids = [v.id for v in c.verdicts if v.id in base.samples and v.id in cur.samples]
    data = [side.samples[i] * 1e3 for i in ids for side in (base, cur)]
    labels = [f"{i} ({side})" for i in ids for side in ("base", "curr")]
    title = "baseline vs current distributions"
    figs = latency_boxes("Distributions", title, data, labels, 0.35 * len(ids))
    groups: dict = {}
    ratios = {}
    for pid, s in cur.stats.items():
        parts = pid.split("-")
        if len(parts) >= 6 and parts[3].startswith("t"):
            groups.setdefault("-".join(parts[:3]), []).append((int(parts[3][1:]), s.throughput_ips))
        fp32_id = "-".join(parts[:2] + ["fp32"] + parts[3:])
        if len(parts) >= 3 and parts[2] != "fp32" and fp32_id in cur.stats:
            ratios[pid] = s.throughput_ips / cur.stats[fp32_id].throughput_ips
    figs += throughput_vs_threads(groups)
    if ratios:
        ax = Figure(figsize=(7, max(2.5, 0.3 * len(ratios)))).subplots()
        names = sorted(ratios)
        ax.barh([plot_label(n) for n in names], [ratios[n] for n in names])
        ax.axvline(1.0, color="k", lw=0.8)
        ax.tick_params(axis="y", labelsize=6)
        ax.set_xlabel("throughput relative to FP32")
        ax.set_title("INT8/FP32 ratios")
        figs.append(("INT8/FP32", png(ax.figure)))
    rows = ""
    for v in sorted(c.verdicts, key=lambda v: (v.verdict != "regressed", v.id)):
        change, ci, p, *_ = _row(v)
        rows += (
            f"<tr class='{html.escape(v.verdict)}'><td>{html.escape(v.verdict)}</td>"
            f"<td><code>{html.escape(v.id)}</code></td><td>{change}</td><td>{ci}</td><td>{p}"
            f"</td><td>{html.escape(_confirm(v) + ' ' + v.reason)}</td></tr>"
        )
    head = "".join(f"<li>{html.escape(x)}</li>" for x in header_lines(c, base.source, cur.source))
    imgs = "".join(
        f"<h2>{html.escape(t)}</h2><img src='{src}' alt='{html.escape(t)}'>" for t, src in figs
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>perfsuite gate</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 8px;font-size:13px}}
tr.regressed{{background:#fdd}}tr.improved{{background:#dfd}}tr.unstable{{background:#ffd}}
tr.incomparable,tr.error{{background:#eee}}</style></head><body>
<h1>perfsuite regression gate</h1><ul>{head}</ul>
<table><tr><th>verdict</th><th>benchmark</th><th>change</th><th>CI</th><th>p (Holm)</th>
<th>note</th></tr>{rows}</table>{imgs}</body></html>"""


def as_json(c: Comparison, fail_on: str) -> dict:
    """The verdicts as JSON data: what CI and the faces' identical-verdicts check read."""
    data = {
        "schema": "perfsuite.gate/1",
        "comparable": c.comparable,
        "differences": c.differences,
        "machine_shift": c.machine_shift,
        "fail_on": fail_on,
        "failing": [v.id for v in c.failing(fail_on)],
        "verdicts": [v.model_dump(mode="json") for v in c.verdicts],
    }
    return json.loads(json.dumps(data, default=json_default))


@dataclass(frozen=True)
class Reports:
    """A comparison's reports, rendered: what sweep.gate_files writes, one file each."""

    json: str  # as_json, validated like every record perfsuite writes
    markdown: str
    junit: str
    html: str

    def files(self) -> dict[str, tuple[str, str]]:
        """{kind: (file name, text)}."""
        return {
            "json": ("gate.json", self.json),
            "markdown": ("gate.md", self.markdown),
            "junit": ("gate-junit.xml", self.junit),
            "html": ("gate.html", self.html),
        }


def render(c: Comparison, base: Side, cur: Side, fail_on: str) -> Reports:
    data = as_json(c, fail_on)
    load_gate_report(data)
    return Reports(
        json=finite_json(data, indent=1),
        markdown=markdown(c, base.source, cur.source),
        junit=junit(c, fail_on),
        html=html_report(c, base, cur),
    )
