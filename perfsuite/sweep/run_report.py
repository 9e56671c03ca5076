"""The report of one sweep, for every run, baseline or not: the sweep table and ratios
(``perfsuite.sweep.report``), the slow-INT8 diagnosis of every INT8 point slower than its FP32
point, and the page of ``report.html`` (finish writes it) with its plots (self-contained: PNGs
as data URIs), which links the gate's page when a baseline was compared and says so when not."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.gate.report import latency_boxes, throughput_vs_threads
from perfsuite.prepare import models, quantize
from perfsuite.prepare.diagnose import diagnose
from perfsuite.records import ArticleClaim, Fingerprint, Point, Result
from perfsuite.sweep import claims
from perfsuite.sweep.report import speed_lines, sweep_table, table_key
from perfsuite.sweep.timeline_plot import timeline_plots
from perfsuite.text import terminal_line


@dataclass
class SlowInt8:
    id: str
    fp32_id: str
    ratio: float  # INT8 / FP32 throughput
    reasons: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        head = f"slow INT8: {self.id} runs at {self.ratio:.2f}x its FP32 point ({self.fp32_id})"
        if not self.reasons:
            return [head + ": no known cause found in the model"]
        return [head + ":"] + [f"  - {r}" for r in self.reasons]


def _reasons(point: Point, flags: dict, flops_per_item: float | None = None) -> list[str]:
    """The diagnosis of the variant that was measured (cached, so no rebuild here)."""
    prec = point.precision
    try:
        variant = quantize.prepare(models.get(point.model), prec, point.framework)
        static = prec in ("int8_static", "int8_static_rr")
        return diagnose(
            variant.path,
            flags,
            reduce_range=(prec == "int8_static_rr") if static else None,
            preprocessed=True if static else None,
            flops_per_item=flops_per_item,
        )
    except Exception as exc:  # a report must not fail on a diagnosis
        return [f"diagnosis unavailable: {exc.__class__.__name__}: {exc}"]


def slow_int8(records: list[Result], fingerprint: Fingerprint, diagnose=_reasons) -> list[SlowInt8]:
    """Every INT8 point measured slower than its FP32 point, with the causes found (single
    processes: a shards point's FP32 counterpart is not its key's)."""
    ok = [r for r in records if r.ok and not r.point.shards]
    fp32 = {table_key(r.point): r for r in ok if r.point.precision == "fp32"}
    fields = fingerprint.fields
    flags = {k[4:]: v for k, v in fields.items() if k.startswith("isa.")}
    out = []
    for r in sorted(ok, key=lambda r: r.id):
        p = r.point
        base = fp32.get(table_key(p, "fp32"))
        if not p.precision.startswith("int8") or base is None:
            continue
        ratio = r.stats.throughput_ips / base.stats.throughput_ips
        if ratio < 1:
            flops = r.model.flops_per_item if r.model else None
            out.append(SlowInt8(r.id, base.id, ratio, diagnose(p, flags, flops)))
    return out


def judge_claims(records, fingerprint: Fingerprint, formula_threads=None) -> list[ArticleClaim]:
    """The article's claims from these results on the host the fingerprint describes."""
    f = fingerprint.fields
    flags = (f.get("isa.avx512_vnni"), f.get("isa.avx_vnni"))
    l3 = f.get("cache.l3_bytes")
    return claims.judge(
        records,
        fingerprint.hardware_class,
        numa_nodes=f.get("numa.node_count") or 1,
        l3_mb=l3 / 2**20 if l3 else None,
        vnni=None if flags == (None, None) else any(flags),
        cores=f.get("cpu.physical_cores"),
        formula_threads=formula_threads,
    )


def report_lines(records, fingerprint: Fingerprint, formula_threads=None, slow=()) -> list[str]:
    """The terminal report of a sweep: table, ratios, claim, thread formula, diagnoses."""
    lines: list[str] = []
    sweep_table(lines.append, records, formula_threads)
    lines += claims.table(judge_claims(records, fingerprint, formula_threads))
    for s in slow:
        lines += s.lines()
    return [terminal_line(line) for line in lines]  # ids and diagnoses are data: not obeyed


def _plots(records: list[Result]) -> list[tuple[str, str]]:
    ok = sorted((r for r in records if r.ok), key=lambda r: r.id)
    samples = [[s * 1e3 for s in r.samples_s] for r in ok]
    ids = [r.id for r in ok]
    figs = latency_boxes("Latency", "latency distributions", samples, ids, 0.3 * len(ok))
    groups: dict = {}
    for r in ok:
        p = r.point
        label = f"{p.model} {p.framework} {p.precision}"
        groups.setdefault(label, []).append((p.threads, r.stats.throughput_ips))
    return figs + throughput_vs_threads(groups)


def _listed(title: str, list_id: str, items: list[str]) -> str:
    """A heading and a list of HTML items; nothing without items."""
    lis = "".join(f"<li>{i}</li>" for i in items)
    return f"<h2>{title}</h2><ul id='{list_id}'>{lis}</ul>" if items else ""


def html_page(
    records: list[Result],
    fingerprint: Fingerprint,
    lines: list[str],
    slow: list[SlowInt8],
    gate_note: str,
    gate_page: str | None,
    trends: str | None = None,
    icount: list[str] | None = None,
    run_dir: Path | None = None,
) -> str:
    esc = html.escape
    plots = _plots(records) + (timeline_plots(records, run_dir) if run_dir else [])
    imgs = "".join(f"<h2>{esc(t)}</h2><img src='{src}' alt='{esc(t)}'>" for t, src in plots)
    slow_items = [
        f"<code>{esc(s.id)}</code>: {s.ratio:.2f}x its FP32 point<ul>"
        + "".join(f"<li>{esc(r)}</li>" for r in s.reasons or ["no known cause found"])
        + "</ul>"
        for s in slow
    ]
    diag = _listed("Slow INT8 diagnosis", "slow-int8", slow_items) or (
        "<h2>Slow INT8 diagnosis</h2><p>No INT8 point is slower than its FP32 point.</p>"
    )
    dirty = [
        f"<code>{esc(r.id)}</code>: other processes used "
        f"{r.interference.sessions[-1].foreign_share:.0%} of the CPUs"
        for r in records
        if r.contaminated
    ]
    diag += _listed("Contaminated measurements", "contaminated", dirty)
    diag += _listed("Machine speed", "speed", [esc(line) for line in speed_lines(records)])
    if icount:
        counts = esc("\n".join(icount))
        diag += f"<h2>Instruction counts (valgrind)</h2><pre id='icount'>{counts}</pre>"
    link = f" (<a href='{esc(gate_page)}'>gate report</a>)" if gate_page else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>perfsuite run</title>
<style>body{{font-family:sans-serif;margin:2em}}pre{{font-size:12px}}</style></head><body>
<h1>perfsuite run on {esc(str(fingerprint.hardware_class))}</h1>
<p id="gate">Regression gate: {esc(gate_note)}{link}</p>
<h2>Sweep</h2><pre>{esc(chr(10).join(lines))}</pre>{diag}{imgs}
{"<h2>Trends (results history)</h2>" + trends if trends else ""}</body></html>"""
