"""End of a sweep: write the summary and the run report, save the baseline when asked, and
gate against the stored baseline. Regressed points are measured again before they can fail
the run, each followed by a re-measure of an unchanged control point: a regression that does
not repeat is 'not confirmed'; one whose control moved too is 'unstable' (the machine, not the
code)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.execute import instructions as ic
from perfsuite.gate.judge import (
    COUNT_THRESHOLD,
    Comparison,
    Remeasure,
    Side,
    confirm,
    control_for,
    judge,
    judge_counts,
)
from perfsuite.gate.report import as_json, render, terminal
from perfsuite.gate.statistics import GateConfig
from perfsuite.history.trends import figures
from perfsuite.store import BaselineError, HistoryQueries, StoreError, open_store
from perfsuite.sweep import run_report
from perfsuite.sweep.gate_files import write_reports
from perfsuite.urls import hide_secrets
from perfsuite.writing import atomic_write_text


@dataclass(frozen=True)
class FinishOptions:
    """What the face (the plugin) decided: the gate's configuration and the baseline actions."""

    gate: GateConfig
    fail_on: str  # regression | unstable | never
    save_baseline: bool = False
    update_baseline: bool = False
    add_run: bool = False
    history: str | None = None  # results history URL: record the run there


@dataclass
class Outcome:
    lines: list[str] = field(default_factory=list)  # the gate's section
    fail: bool = False
    comparison: Comparison | None = None
    report_lines: list[str] = field(default_factory=list)  # the sweep's section
    report: Path | None = None  # report.html
    internal_error: bool = False  # a bug, not a verdict: pytest exits 3 (INTERNAL_ERROR)
    instructions: records.InstructionCounts | None = None  # when the profile asked for them
    icount_lines: list[str] = field(default_factory=list)  # for the HTML report
    gate_report: records.GateReport | None = None  # gate.json's content, for the history


def failures(results: Iterable[records.Result], outcome: Outcome | None = None) -> list[str]:
    """Why a run fails, one line each; none: it passes. The one place this is decided (the
    pytest plugin's exit status, ``qualify --inference``, ``perfsuite sweep``): a point that
    errored, an INT8/bf16 variant that failed its accuracy gate, and what ``finish`` found
    (the regression gate per ``--perf-fail-on``, a baseline that could not be saved, a bug)."""
    why = []
    for r in results:
        if not r.ok:
            why.append(f"{r.id}: {r.error}")
        elif r.accuracy and not r.accuracy.passed:
            why.append(f"{r.id}: accuracy gate failed")
    if outcome is not None and outcome.fail:
        why.append("the gate failed" if outcome.comparison else "the run's finish failed")
    return why


def _remeasure(session, comparison: Comparison) -> dict[str, Remeasure]:
    """Each regressed point measured again, then the control point the gate picks for it."""
    points = {p.id: p for p in session.points()}
    out = {}
    for v in comparison.verdicts:
        if v.verdict != "regressed" or v.id not in points:
            continue
        again = session.run(points[v.id], keep=False)
        control = control_for(comparison, v.id, points)
        ctrl = session.run(points[control], keep=False) if control else None
        out[v.id] = Remeasure(
            _samples(again),
            again.error,
            control,
            _samples(ctrl),
            again.headline if again.ok else None,
        )
    return out


def _samples(result: records.Result | None) -> np.ndarray | None:
    return np.asarray(result.samples_s, float) if result is not None and result.ok else None


def finish(session, opts: FinishOptions) -> Outcome:
    out = Outcome()
    recs, fp = session.records, session.fingerprint
    session.write_summary()
    if session.profile.icount:
        out.instructions = _count_instructions(session, out)
    try:
        _gate(session, opts, out)
    except Exception as exc:  # a broken gate must say so, not take the sweep's report down
        out.lines.append(f"gate internal error: {exc.__class__.__name__}: {exc}")
        out.fail = out.internal_error = True
    slow = run_report.slow_int8(recs, fp)
    out.report_lines = run_report.report_lines(recs, fp, session.formula_threads, slow)
    if out.comparison is not None:
        note = "verdicts: " + ", ".join(f"{n} {k}" for k, n in out.comparison.counts().items() if n)
        if out.fail:
            note += " (GATE FAILED)"
        page = "gate.html"
    else:
        note, page = (out.lines[0] if out.lines else "not run"), None
    trends = _record_history(session, opts, out) if opts.history else None
    html = run_report.html_page(
        recs, fp, out.report_lines, slow, note, page, trends, out.icount_lines, session.run_dir
    )
    out.report = Path(session.run_dir) / "report.html"
    atomic_write_text(out.report, html)
    if opts.save_baseline:
        _save(session, opts, out)
    return out


def _count_instructions(session, out: Outcome) -> records.InstructionCounts | None:
    """The kernel points' instruction counts (valgrind), written beside the records."""
    why = ic.unavailable()
    if why:
        out.lines.append(f"instruction counts: not measured ({why})")
        return None
    try:
        counts = ic.count_all()
    except (RuntimeError, OSError) as exc:
        out.lines.append(f"instruction counts: failed: {str(exc).splitlines()[-1]}")
        out.fail = True
        return None
    atomic_write_text(session.run_dir / "instructions.json", ic.dump(counts))
    out.icount_lines = [f"{ic.ISA}, no baseline compared", f"{'count':>16}  point"]
    out.icount_lines += [f"{n:>16,d}  {pid}" for pid, n in sorted(counts.items())]
    return records.InstructionCounts(
        isa=ic.ISA, counts=counts, recorded=dt.datetime.now(dt.UTC).isoformat()
    )


def _gate_instructions(baseline: records.Baseline | None, out: Outcome, fail_on: str) -> None:
    """Counts are exact: a count past the threshold is a regression without statistics or a
    re-measure."""
    if out.instructions is None:
        return
    stored = baseline.instructions if baseline is not None else None
    if not stored:
        out.lines.append(
            "instruction counts: the baseline has none; save them with --perf-save-baseline "
            "(into an existing baseline: add --perf-add-baseline-run)"
        )
        return
    if stored.isa != out.instructions.isa:
        out.lines.append(
            f"instruction counts: baseline counted {stored.isa}, this run "
            f"{out.instructions.isa}: not compared"
        )
        return
    rows = judge_counts(stored.counts, out.instructions.counts)
    out.lines += ic.table(rows)
    head = f"{ic.ISA}, against the baseline (threshold {COUNT_THRESHOLD:.0%})"
    out.icount_lines = [head, *ic.table(rows)]
    regressed = [r[0] for r in rows if r[4] == "regressed"]
    if regressed and fail_on != "never":
        out.fail = True
        out.lines.append(
            f"GATE FAILED: instruction counts grew past {COUNT_THRESHOLD:.0%}: "
            + ", ".join(regressed)
        )


def _gate(session, opts: FinishOptions, out: Outcome) -> None:
    cfg, fail_on = opts.gate, opts.fail_on
    fp, profile = session.fingerprint, session.profile.name
    where = session.baselines.baseline_location(fp.hardware_class, profile)
    try:
        baseline = session.baselines.load_baseline(fp.hardware_class, profile)
    except BaselineError as exc:
        out.lines.append(f"baseline unusable: {exc}")
        out.fail = fail_on != "never"
        return
    _gate_instructions(baseline, out, fail_on)
    if baseline is None:
        out.lines.append(
            f"no baseline for hardware class {fp.hardware_class}, profile {profile} at {where}: "
            f"nothing to compare. Create one with `pytest --benchmark-only --perf-profile "
            f"{profile} --perf-save-baseline` and commit it."
        )
        return
    base = Side.of_baseline(baseline, where)
    cur = Side.of_results(fp, session.records)
    comparison = judge(base, cur, cfg)
    if comparison.comparable:
        comparison = confirm(comparison, base, _remeasure(session, comparison), cfg)
    out.comparison = comparison
    terminal(out.lines.append, comparison, base.source, cur.source)
    paths = write_reports(session.run_dir, render(comparison, base, cur, fail_on))
    out.lines.append("reports: " + ", ".join(str(p) for p in paths.values()))
    out.gate_report = records.load_gate_report(as_json(comparison, fail_on))
    failing = comparison.failing(fail_on)
    if failing:
        out.fail = True
        out.lines.append(
            f"GATE FAILED (--perf-fail-on={fail_on}): "
            + ", ".join(f"{v.id} {v.verdict}" for v in failing)
        )


def _record_history(session, opts: FinishOptions, out: Outcome) -> str | None:
    """Add the finished run to the results history, from memory; the report's trend charts
    for this run's points come back (database stores). A store that fails loses nothing:
    the run directory is written already, and the line says how to add it later."""
    try:
        store = open_store(opts.history)
        run = records.Run(
            summary=session.summary(),
            results=session.records,
            gate=out.gate_report,
            source=str(session.run_dir),
        )
        added = store.add_run(run)
    except StoreError as exc:
        url = hide_secrets(opts.history)
        out.lines.append(
            f"history NOT written: {exc}; the run is kept in {session.run_dir}; add it later "
            f"with `perfsuite db import {session.run_dir} --store {url}`"
            + (" (your password where *** stands)" if url != opts.history else "")
        )
        out.fail = True
        return None
    out.lines.append(f"history: run {'recorded' if added else 'already'} in {store.safe_url}")
    if not isinstance(store, HistoryQueries):  # a history, not run directories
        return None
    try:
        return figures(store, sorted({r.id for r in session.records}))
    except StoreError as exc:  # recorded; only its trend charts could not be read back
        out.lines.append(f"history: no trend charts: {exc}")
        return None


def _save(session, opts: FinishOptions, out: Outcome) -> None:
    try:
        saved = session.baselines.save_baseline(
            session.fingerprint,
            session.profile.name,
            session.records,
            update=opts.update_baseline,
            add_run=opts.add_run,
            instructions=out.instructions,
        )
        kept = "given another run)" if opts.add_run else "replaced)"
        out.lines.append(
            f"baseline saved: {saved.location} ({len(saved.added)} added, "
            f"{len(saved.updated)} " + kept
        )
        if saved.waited_s >= 0.5:
            out.lines.append(
                f"(waited {saved.waited_s:.1f} s for another run's save to {saved.location})"
            )
    except (BaselineError, StoreError) as exc:
        out.lines.append(f"baseline NOT saved: {exc}")
        out.fail = True
