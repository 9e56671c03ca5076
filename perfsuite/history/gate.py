"""The nightly gate over the results history: each point of the newest run against the same
point's previous runs on its hardware class (since the newest accepted annotation), judged by
``gate.judge`` with those runs as the baseline (their pooled samples, and their medians as
the runs' range); plus change points (``gate.changepoints``) in the last runs of each series,
which catch a step that one night's comparison let pass. A point with too little history
falls back to a stored baseline when one is given, and says how many runs it still needs.

Why history rather than a committed baseline: a class with no baseline starts gating after
its first nights, and an accepted change (``perfsuite db annotate --accept``) restarts the
series instead of needing a new file in a pull request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from perfsuite import records
from perfsuite.gate.config import GateConfig
from perfsuite.gate.judge import Comparison, Side, judge
from perfsuite.history.changes import Change, detect, reset_index
from perfsuite.store import find_baseline
from perfsuite.store.protocols import HistoryQueries, SeriesPoint, StoredRun
from perfsuite.text import md_cell, md_code

MIN_RUNS = 2  # previous runs a point needs before the history gates it
LAST_RUNS = 10  # previous runs pooled as its baseline
RECENT = 5  # change points this many runs back (or fewer) fail the gate
# Runs in a row a point must regress in, each against the same runs before them, to fail:
# single nights on a shared VM wander by +19% and +40% with nothing changed
# (docs/measurements/2026-12-06-zen4-nightly-aa.md); a real step stays.
CONFIRM_RUNS = 2


@dataclass(frozen=True)
class Suspect:
    """A failing point and the commits between which it changed."""

    id: str
    why: str  # "regressed +7.1% ..." or "step +6.0% at run ..."
    good: str | None  # the newest commit before the change
    bad: str | None  # the first commit after it

    @property
    def commits(self) -> str:
        return f"{(self.good or '?')[:12]}..{(self.bad or '?')[:12]}"


@dataclass(frozen=True)
class HistoryGate:
    run: StoredRun
    history: Comparison | None  # the newest run's points with enough history, against it
    gathering: dict[str, int]  # point -> previous runs it has (fewer than ``needs``)
    fallback: Comparison | None  # the gathering points against the stored baseline
    fallback_note: str
    steps: list[Change] = field(default_factory=list)  # recent regressing change points
    failing: list[Suspect] = field(default_factory=list)
    pending: list[Suspect] = field(default_factory=list)  # regressed, not yet in a row
    needs: int = MIN_RUNS  # previous runs a point needs before the history gates it


def _side(fp: records.Fingerprint, runs: dict[str, list[SeriesPoint]], source: str) -> Side:
    heads = {k: h for k, v in runs.items() if (h := _headline(v)) is not None}
    return Side(
        fp,
        {k: np.asarray([s for p in v for s in p.samples_s], float) for k, v in runs.items()},
        source,
        runs={k: [float(np.median(p.samples_s)) for p in v] for k, v in runs.items()},
        headlines=heads,
        headline_runs={
            k: [p.headline.value for p in v if p.headline is not None and p.headline.name == h.name]
            for k, v in runs.items()
            if (h := heads.get(k)) is not None
        },
    )


def _headline(points: list[SeriesPoint]) -> records.Headline | None:
    """The runs' headline: the newest one's, with the median value of the runs that have the
    same headline (name and unit); None when the newest run has none. A gated one (a server or
    offline rate) is what the gate then judges, not the samples (latencies at other loads)."""
    newest = points[-1].headline if points else None
    if newest is None:
        return None
    values = [
        p.headline.value
        for p in points
        if p.headline is not None
        and (p.headline.name, p.headline.unit) == (newest.name, newest.unit)
    ]
    return newest.model_copy(update={"value": float(np.median(values))})


def gate_history(
    store: HistoryQueries,
    *,
    run: str | None = None,
    config: GateConfig | None = None,
    min_runs: int = MIN_RUNS,
    last: int = LAST_RUNS,
    recent: int = RECENT,
    baseline: str | None = None,
    confirm: int = CONFIRM_RUNS,
) -> HistoryGate:
    """Gate run ``run`` (a run key prefix or id; default: the newest) on the history: each
    point's last ``confirm`` runs against the (at most ``last``) runs before them."""
    cfg = config or GateConfig()
    target = store.run(run)
    fp = store.fingerprint_of(target)
    hw = target.hardware_class
    notes = store.annotations()
    base_runs: dict[str, list[SeriesPoint]] = {}
    nights: dict[str, list[SeriesPoint]] = {}  # point -> its last ``confirm`` runs
    gathering: dict[str, int] = {}
    every = store.series(hardware_class=hw)  # read once: the steps below use it too
    for (name, _), series in every.items():
        upto = [p for p in series if p.started_at <= target.started_at]
        if not upto or upto[-1].run_id != target.id:
            continue  # not measured in this run
        upto = upto[reset_index(name, hw, upto, notes) :]
        nights[name] = upto[-confirm:]
        if len(upto) - confirm < min_runs:
            gathering[name] = len(upto) - 1
        else:
            base_runs[name] = upto[:-confirm][-last:]
    where = f"{store.safe_url} (run {target.run_key[:10]})"
    base = _side(fp, base_runs, f"its previous runs in {store.safe_url}")
    in_a_row = [
        judge(base, _side(fp, {k: [nights[k][i]] for k in base_runs}, where), cfg)
        for i in range(confirm)
    ] if base_runs else []  # fmt: skip
    current = {k: nights[k][-1:] for k in gathering}
    fallback, note = _fallback(fp, current, gathering, target, baseline, cfg, where)
    gate = HistoryGate(target, in_a_row[-1] if in_a_row else None, gathering, fallback, note,
                       needs=min_runs + confirm - 1)  # fmt: skip
    return _suspects(gate, store, every, base_runs, nights, in_a_row, cfg, recent)


def _fallback(fp, current, gathering, target, baseline, cfg, where):
    if not gathering:
        return None, ""
    if baseline is None:
        return None, "no stored baseline given: measured, not gated"
    found, where_base = find_baseline(baseline, target.hardware_class, target.profile)
    if found is None:
        return None, f"no baseline at {where_base}"
    base = Side.of_baseline(found, where_base)
    mine = {k: v for k, v in base.samples.items() if k in gathering}
    base = replace(base, samples=mine, runs={k: v for k, v in base.runs.items() if k in mine})
    cur = _side(fp, {k: current[k] for k in gathering}, where)
    return judge(base, cur, cfg), f"against {base.source}"


def _suspects(gate: HistoryGate, store, series, base_runs, nights, in_a_row, cfg, recent: int):
    failing: list[Suspect] = []
    pending: list[Suspect] = []
    # a run counts when its own change is past the practical threshold, not only its interval
    regressed = [
        {v.id: v.change for v in c.failing("regression") if v.change >= cfg.threshold_for(v.id)}
        for c in in_a_row
    ]
    for pid, change in (regressed[-1] if regressed else {}).items():
        changes = [r.get(pid) for r in regressed]
        why = f"regressed {change:+.1%} against its {len(base_runs[pid])} runs before"
        if None in changes:  # the commits around this run alone
            newest = nights[pid][-2:]
            why = f"{why} (not yet {len(changes)} runs in a row)"
            pending.append(Suspect(pid, why, newest[0].commit, newest[-1].commit))
        else:  # from the last good run to the first slow one
            why = f"{why}, {len(changes)} runs in a row ({', '.join(f'{c:+.1%}' for c in changes)})"
            failing.append(Suspect(pid, why, base_runs[pid][-1].commit, nights[pid][0].commit))
    if gate.fallback is not None:
        for v in gate.fallback.failing("regression"):
            why = f"regressed {v.change:+.1%} against the stored baseline"
            failing.append(Suspect(v.id, why, None, gate.run.commit))
    steps = _recent_steps(gate, store, series, cfg, recent)
    named = {s.id for s in failing}
    for c, good, bad in steps:
        if c.benchmark not in named:
            why = f"step {c.change:+.1%} at run {c.run_key[:10]} (p={c.p_value:.1e})"
            failing.append(Suspect(c.benchmark, why, good, bad))
            named.add(c.benchmark)
    return replace(gate, steps=[c for c, _, _ in steps], failing=failing, pending=pending)


def _recent_steps(gate: HistoryGate, store, series, cfg: GateConfig, recent: int) -> list:
    """Change points that made a point slower by more than its threshold, at one of the last
    ``recent`` runs up to the gated one, with the commits around each."""
    run = gate.run
    out = []
    for c in detect(store, hardware_class=run.hardware_class, save=False):
        points = [
            p for p in series[(c.benchmark, c.hardware_class)] if p.started_at <= run.started_at
        ]
        if points and points[-1].headline is not None and points[-1].headline.gated:
            continue  # judged on its rate: its latencies were measured at other loads
        ids = [p.run_id for p in points]
        if c.run_id not in ids or len(ids) - ids.index(c.run_id) > recent:
            continue
        if c.change <= cfg.threshold_for(c.benchmark):
            continue  # faster, or a step smaller than the practical threshold
        at = ids.index(c.run_id)
        out.append((c, points[at - 1].commit if at else None, points[at].commit))
    return out


def lines(gate: HistoryGate) -> list[str]:
    """What the terminal and the job log say."""
    run = gate.run
    out = [f"history gate of run {run.run_key[:10]} ({run.hardware_class}, {run.profile}, "
           f"commit {(run.commit or 'unknown')[:12]})"]  # fmt: skip
    if gate.history is not None:
        counts = gate.history.counts()
        out.append("against history: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    if gate.gathering:
        need = max(0, gate.needs - min(gate.gathering.values()))
        out.append(
            f"gathering history: {len(gate.gathering)} point(s) with fewer than {gate.needs} "
            f"previous runs (gated by the history after {need} more run(s)); "
            f"{gate.fallback_note}"
        )
    out += [f"watch {s.id}: {s.why}; fails if the next run confirms it" for s in gate.pending]
    out += [f"REGRESSION {s.id}: {s.why}; suspect commits {s.commits}" for s in gate.failing]
    out.append("history gate: " + ("FAILED" if gate.failing else "passed"))
    return out


def markdown(gate: HistoryGate) -> str:
    """The job summary: one table row per failing point, else one line."""
    head = "\n".join(f"- {md_cell(line)}" for line in lines(gate)[:-1])
    if not gate.failing:
        return f"### perfsuite history gate: passed\n\n{head}\n"
    rows = "\n".join(
        f"| {md_code(s.id)} | {md_cell(s.why)} | {md_code(s.commits)} |" for s in gate.failing
    )
    return (
        "### perfsuite history gate: FAILED\n\n"
        f"{head}\n\n| point | why | suspect commits |\n|---|---|---|\n{rows}\n"
    )


def as_json(gate: HistoryGate) -> dict:
    """The verdicts as JSON (the nightly's artefact)."""
    run = gate.run
    return {
        "run": {"key": run.run_key, "commit": run.commit, "hardware_class": run.hardware_class,
                "profile": run.profile, "started_at": run.started_at.isoformat()},
        "history": [records.dump(v) for v in gate.history.verdicts] if gate.history else [],
        "gathering": gate.gathering,
        "fallback": [records.dump(v) for v in gate.fallback.verdicts] if gate.fallback else [],
        "fallback_note": gate.fallback_note,
        "failing": [asdict(s) for s in gate.failing],
        "pending": [asdict(s) for s in gate.pending],
        "passed": not gate.failing,
    }  # fmt: skip
