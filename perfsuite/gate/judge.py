"""The regression gate, in one place: ``judge(baseline, current, config) -> Comparison``
decides every point's verdict, and ``confirm(comparison, ...) -> Comparison`` settles the
regressions it found once they have been measured again. Both are pure: samples in,
verdicts out; measuring, files and hosts belong to the callers (sweep.finish, cli compare).

First comparability (else every point is ``incomparable``) and presence (``error``, ``new``,
``missing``); then the rules of ``RULES``, in order: ``FewSamples`` and ``Spread`` (too few
samples or too noisy: ``unstable``), ``PracticalChange`` (Holm-adjusted Mann-Whitney, the
bootstrap interval of the ratio of medians against the point's practical threshold, outside
the baseline runs' range), ``MachineShift`` (a thread group that moved as one explains a
change away, never makes one), ``SingleRun``, and ``Contamination`` last (a contaminated
change is ``unstable``). ``confirm`` keeps a regression only when its re-measure repeats at
the practical size and its control point stayed put. What each rule decides and why:
docs/design/gate.md.

Instruction counts are exact and need no statistics: ``judge_counts``. A headline rate that
is one number per run (a LoadGen server search's rate, an offline rate) has no samples to
test either: ``judge_headline`` compares it against ``GateConfig.rate_threshold``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

from perfsuite import plugins, records
from perfsuite.dispersion import cv, robust_cv
from perfsuite.gate.statistics import (
    FOLLOWED_SHIFT,
    LAGGED_SHIFT,
    SINGLE_RUN_HINT,
    GateConfig,
    compare_fingerprints,
    excusing_factor,
    holm,
    lagged_shift,
    machine_shifts,
    point_threshold,
    ratio_ci,
    regression_runs,
    slowdown_threshold,
    thread_group,
)

Verdict = records.Verdict


@dataclass(frozen=True)
class Side:
    """One side of a comparison: samples (seconds per call) per point id, and what the gate
    needs to know about them."""

    fingerprint: records.Fingerprint
    samples: Mapping[str, np.ndarray]
    source: str
    errors: Mapping[str, str] = field(default_factory=dict)
    stats: Mapping[str, records.Stats] = field(default_factory=dict)
    runs: Mapping[str, list[float]] = field(default_factory=dict)  # baseline: run medians
    contaminated: Mapping[str, str] = field(default_factory=dict)  # id -> what disturbed it
    headlines: Mapping[str, records.Headline] = field(default_factory=dict)
    headline_runs: Mapping[str, list[float]] = field(default_factory=dict)  # baseline: per run

    @classmethod
    def of_results(cls, fingerprint, results, source: str = "this run") -> Side:
        ok = [r for r in results if r.ok]
        return cls(
            fingerprint,
            {r.id: np.asarray(r.samples_s, float) for r in ok},
            source,
            errors={r.id: r.error or "error" for r in results if not r.ok},
            stats={r.id: r.stats for r in ok},
            contaminated={r.id: r.contaminated for r in ok if r.contaminated},
            headlines={r.id: r.headline for r in ok if r.headline is not None},
        )

    @classmethod
    def of_baseline(cls, baseline: records.Baseline, source: str) -> Side:
        fp = baseline.fingerprint.model_copy(update={"hardware_class": baseline.hardware_class})
        entries = baseline.entries
        return cls(
            fp,
            {k: np.asarray(e.samples_s, float) for k, e in entries.items()},
            source,
            stats={k: e.stats for k, e in entries.items()},
            runs={k: list(e.runs) for k, e in entries.items()},
            headlines={k: e.headline for k, e in entries.items() if e.headline is not None},
            headline_runs={k: list(e.headline_runs) for k, e in entries.items()},
        )


@dataclass(frozen=True)
class Comparison:
    verdicts: tuple[Verdict, ...]
    comparable: bool
    differences: dict  # must-match field -> (baseline, current)
    tolerance_notes: tuple[str, ...] = ()
    software_changes: dict = field(default_factory=dict)  # field -> (baseline, current)
    machine_shift: float | None = None  # median change of the shifted points

    def counts(self) -> dict:
        return {k: sum(v.verdict == k for v in self.verdicts) for k in records.VERDICTS}

    def failing(self, fail_on: str) -> list[Verdict]:
        """Points that fail the gate under --fail-on."""
        if fail_on == "never":
            return []
        bad = [v for v in self.verdicts if v.verdict == "regressed" and v.confirmed is not False]
        if fail_on == "unstable":
            bad += [v for v in self.verdicts if v.verdict in ("unstable", "incomparable", "error")]
        return bad


# -- what the rules see of one point -----------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    id: str
    base: np.ndarray
    current: np.ndarray  # as measured
    judged: np.ndarray  # divided by the machine factor that explains it (1 if none)
    ratio: float  # current/baseline median, as measured
    shift: float | None  # its group's machine-wide shift (a ratio), when there was one
    factor: float
    p_value: float  # Holm-adjusted, on ``judged``
    runs: np.ndarray  # medians of the baseline's runs
    contaminated: str | None
    config: GateConfig


def _reason(v: Verdict, text: str, *, first: bool = False) -> Verdict:
    parts = (text, v.reason) if first else (v.reason, text)
    return v.model_copy(update={"reason": "; ".join(x for x in parts if x)})


def _set(v: Verdict, **changes) -> Verdict:
    return v.model_copy(update=changes)


# -- the rules, in order -----------------------------------------------------------------------
# Each takes the evidence and the verdict so far and returns the verdict after it.


class FewSamples:
    name = "few-samples"

    def __call__(self, e: Evidence, v: Verdict) -> Verdict:
        if e.base.size < 2 or e.judged.size < 2:
            return _set(v, verdict="unstable", reason="fewer than 2 samples on one side")
        lo, hi = ratio_ci(e.base, e.judged, e.config)
        return _set(v, ci=(lo - 1, hi - 1))


class Spread:
    name = "spread"

    def __call__(self, e: Evidence, v: Verdict) -> Verdict:
        cv_b, cv_c = robust_cv(e.base), robust_cv(e.current)
        if max(cv_b, cv_c) <= e.config.cv_limit:
            return v
        why = f"spread too high to judge (robust CV {cv_b:.1%} baseline, {cv_c:.1%} current)"
        return _set(v, verdict="unstable", reason=why)


class HiccupRun:
    """One slow hiccup run of the baseline is set aside for the slow side (``regression_runs``)."""

    def slow_side(self, e: Evidence) -> np.ndarray:
        return regression_runs(e.runs, e.config.threshold_for(e.id))

    def reason(self, e: Evidence) -> str:
        if e.runs.size < 2:
            return ""
        kept = self.slow_side(e)
        text = f"{e.runs.size} baseline runs, between-run CV {cv(e.runs):.1%}"
        if kept.size < e.runs.size:
            text += (
                f" ({cv(kept):.1%} without a slow hiccup run of "
                f"{e.runs.max() * 1e3:.3g} ms, set aside for the regression side)"
            )
        return text


class PracticalChange:
    """Significant, past the practical threshold, and outside the baseline runs' range."""

    name = "practical-change"

    def __call__(self, e: Evidence, v: Verdict) -> Verdict:
        cfg, (lo, hi) = e.config, (1 + v.ci[0], 1 + v.ci[1])
        t_slow = slowdown_threshold(cfg, e.id, e.runs)
        t_fast = point_threshold(cfg, e.id, e.runs)
        med = float(np.median(e.judged))
        outside_hi = outside_lo = True
        if e.runs.size >= 2:
            outside_hi, outside_lo = med > _HICCUP.slow_side(e).max(), med < e.runs.min()
        significant = e.p_value < cfg.alpha
        if significant and lo > 1 and hi >= 1 + t_slow and outside_hi:
            return _set(v, verdict="regressed")
        if significant and hi < 1 and lo <= 1 - t_fast and outside_lo:
            return _set(v, verdict="improved")
        if significant and e.shift is None:
            t = t_slow if med > np.median(e.base) else t_fast
            return _reason(
                v, f"significant but below the {t:.0%} threshold or inside the baseline runs' range"
            )
        return v


class MachineShift:
    name = "machine-shift"

    def __call__(self, e: Evidence, v: Verdict) -> Verdict:
        shift = e.shift
        if shift is None:
            return v
        group = thread_group(e.id)
        size = f"{shift - 1:+.1%}" + (f" ({group}-thread points)" if group else "")
        if v.verdict in ("regressed", "improved"):
            if e.factor == shift:  # judged beyond the shift
                return _set(v, reason=f"beyond the machine-wide shift of {size}")
            way = "slower" if v.verdict == "regressed" else "faster"
            why = f"{way} than the baseline even unshifted (machine-wide shift of {size})"
            return _set(v, reason=why)
        if not lagged_shift(e.ratio, shift):
            why = f"{FOLLOWED_SHIFT} of {size}; re-run on a quiet machine"
        else:
            why = (
                f"{LAGGED_SHIFT} of {size} (moved {e.ratio / shift - 1:+.1%} "
                f"beyond it, {e.ratio - 1:+.1%} unshifted): uneven scaling or a change the shift "
                "hides; re-run on a baseline-speed machine"
            )
        return _set(v, verdict="unstable", reason=why)


class SingleRun:
    name = "single-run"

    def __call__(self, e: Evidence, v: Verdict) -> Verdict:
        # Whole runs shift (docs/measurements/2026-12-05-zen4-process-spread.md); one run
        # cannot show how far, so say so beside the verdict.
        if e.runs.size < 2 and v.verdict in ("regressed", "improved"):
            return _reason(v, SINGLE_RUN_HINT)
        return v


class Contamination:
    name = "contamination"

    def __call__(self, e: Evidence | None, v: Verdict, why: str | None = None) -> Verdict:
        why = why if e is None else e.contaminated
        if not why:
            return v
        changed = v.verdict in ("regressed", "improved")  # a contaminated change is unstable
        v = _set(v, verdict="unstable", confirmed=None) if changed else v
        return _reason(v, f"contaminated while measured ({why})", first=changed)


Rule = Callable[[Evidence, Verdict], Verdict]
_HICCUP = HiccupRun()
# The order is the documentation above; a rule after a decided ``unstable`` does not run.
RULES: tuple[Rule, ...] = (
    FewSamples(),
    Spread(),
    PracticalChange(),
    MachineShift(),
    SingleRun(),
)
CONTAMINATION = Contamination()


@functools.cache
def default_rules() -> tuple[Rule, ...]:
    """The rules above, then those other packages register under the ``perfsuite.rules``
    entry-point group (each a Rule class, applied in name order, before contamination)."""
    extra = plugins.load("perfsuite.rules", make=lambda rule_class: rule_class())
    return RULES + tuple(rule for _, rule in sorted(extra.items()))


def _evidence(base: Side, cur: Side, ids: list[str], cfg: GateConfig) -> dict[str, Evidence]:
    ratios = {i: float(np.median(cur.samples[i]) / np.median(base.samples[i])) for i in ids}
    shifts = machine_shifts(ratios, cfg)
    factors = {i: excusing_factor(ratios[i], shifts[i]) for i in ids}
    judged = {i: np.asarray(cur.samples[i], float) / factors[i] for i in ids}
    raw_p = [
        float(stats.mannwhitneyu(base.samples[i], judged[i], alternative="two-sided").pvalue)
        if len(base.samples[i]) >= 2 and judged[i].size >= 2
        else 1.0
        for i in ids
    ]
    adjusted = holm(raw_p)
    return {
        i: Evidence(
            i,
            np.asarray(base.samples[i], float),
            np.asarray(cur.samples[i], float),
            judged[i],
            ratios[i],
            shifts[i],
            factors[i],
            p,
            np.asarray(base.runs.get(i, []), float),
            cur.contaminated.get(i),
            cfg,
        )
        for i, p in zip(ids, adjusted, strict=True)
    }


def _judge_point(e: Evidence, rules: Sequence[Rule]) -> Verdict:
    b_med, c_med = float(np.median(e.base)), float(np.median(e.current))
    v = Verdict(
        id=e.id,
        verdict="unchanged",
        p_value=e.p_value,
        baseline_median_ms=b_med * 1e3,
        current_median_ms=c_med * 1e3,
        change=c_med / b_med - 1,
        shift=None if e.shift is None else e.shift - 1,
        reason=_HICCUP.reason(e),
    )
    for rule in rules:
        v = rule(e, v)
        if v.verdict == "unstable":
            break
    return CONTAMINATION(e, v)


def judge(
    base: Side, cur: Side, cfg: GateConfig | None = None, rules: Sequence[Rule] | None = None
) -> Comparison:
    """Every point's verdict; the rules are ``default_rules()`` unless given."""
    cfg = cfg or GateConfig()
    rules = default_rules() if rules is None else rules
    must, notes, software = compare_fingerprints(base.fingerprint, cur.fingerprint)
    hw_b, hw_c = base.fingerprint.hardware_class, cur.fingerprint.hardware_class
    if hw_b != hw_c:
        must.setdefault("hardware_class", (hw_b, hw_c))
    ids = sorted(set(base.samples) | set(cur.samples) | set(cur.errors))
    if must:
        named = ", ".join(f"{k} ({a} -> {b})" for k, (a, b) in must.items())
        why = f"different hardware: {named}"
        verdicts = tuple(Verdict(id=i, verdict="incomparable", reason=why) for i in ids)
        return Comparison(verdicts, False, must, tuple(notes), software, None)
    both = [i for i in ids if i not in cur.errors and i in base.samples and i in cur.samples]
    by_rate = {i for i in both if _rate_judged(base, cur, i)}
    evidence = _evidence(base, cur, [i for i in both if i not in by_rate], cfg)
    out = []
    for i in ids:
        if i in by_rate:
            runs = base.headline_runs.get(i, [])
            v = judge_headline(i, base.headlines[i], cur.headlines[i], cfg, runs)
            out.append(CONTAMINATION(None, v, cur.contaminated.get(i)))
            continue
        if i in cur.errors:
            v = Verdict(id=i, verdict="error", reason=cur.errors[i])
        elif i not in base.samples:
            v = Verdict(id=i, verdict="new", reason="no baseline entry")
        elif i not in cur.samples:
            v = Verdict(id=i, verdict="missing", reason="in the baseline, not measured")
        else:
            out.append(_judge_point(evidence[i], rules))
            continue
        out.append(CONTAMINATION(None, v, cur.contaminated.get(i)))
    changes = [v.change for v in out if v.change is not None]
    shifted = any(v.shift is not None for v in out)
    shift = (float(np.median(changes)) if changes else 0.0) if shifted else None
    return Comparison(tuple(out), True, must, tuple(notes), software, shift)


def _rate_judged(base: Side, cur: Side, i: str) -> bool:
    b, c = base.headlines.get(i), cur.headlines.get(i)
    return b is not None and c is not None and b.gated and c.gated


def judge_headline(
    i: str,
    base: records.Headline,
    cur: records.Headline,
    cfg: GateConfig,
    runs: Sequence[float] = (),
) -> Verdict:
    """A headline that is one number per run, against ``cfg.rate_threshold`` (or the point's
    threshold when that is wider) from the median of the baseline's runs, and, with two runs
    or more, outside their range: a server search's rate moves far between runs of the same
    code (docs/measurements/2026-12-07-zen4-serving-decode.md). A headline that is the median
    of several fresh searches (``Headline.runs``) brings its own noise: every search must sit
    outside the baseline's range, and a median past the threshold whose searches overlap it
    is ``unstable`` (the spread is wider than the change it would have to show). ``change``
    is the slowdown, as for sampled points: +25% means the rate fell to 1/1.25 of the
    baseline's."""
    if base.name != cur.name or base.unit != cur.unit:
        why = f"headline changed: {base.name} ({base.unit}) -> {cur.name} ({cur.unit})"
        return Verdict(id=i, verdict="incomparable", reason=why)
    runs = [float(r) for r in runs] or [float(r) for r in base.runs] or [base.value]
    ref = float(np.median(runs))
    worse = ref / cur.value if cur.higher_is_better else cur.value / ref
    t = max(cfg.rate_threshold, cfg.threshold_for(i))
    mine = [float(r) for r in cur.runs] or [cur.value]
    spread = (
        f" ({len(runs)} baseline runs, {min(runs):.4g}-{max(runs):.4g})" if len(runs) > 1 else ""
    )
    searches = ""
    if len(mine) > 1:
        searches = f" (median of {len(mine)} searches, {min(mine):.4g}-{max(mine):.4g})"
    reason = (
        f"{cur.name} {ref:.4g}{spread} -> {cur.value:.4g}{searches} {cur.unit} "
        f"({cur.value / ref - 1:+.1%}); one value per run, judged against the {t:.0%} rate "
        "threshold"
    )
    below, above = max(mine) < min(runs), min(mine) > max(runs)
    slower, faster = (below, above) if cur.higher_is_better else (above, below)
    verdict = (
        "regressed" if worse - 1 >= t and slower
        else "improved" if 1 / worse - 1 >= t and faster
        else "unchanged"
    )  # fmt: skip
    moved = worse - 1 >= t or 1 / worse - 1 >= t
    if verdict == "unchanged" and moved and len(mine) > 1:
        # the median moved past the threshold but the searches overlap the baseline's runs:
        # their spread is wider than the change the gate would have to tell
        reason += f", but its searches (spread {cur.spread:.0%}) overlap the baseline's runs"
        return Verdict(id=i, verdict="unstable", change=worse - 1, reason=reason)
    if verdict == "unchanged" and moved and len(runs) > 1:
        reason += " but inside the baseline runs' range"
    return Verdict(id=i, verdict=verdict, change=worse - 1, reason=reason)


def compare_samples(
    baseline: Mapping[str, np.ndarray],
    current: Mapping[str, np.ndarray],
    cfg: GateConfig | None = None,
    errors: Mapping[str, str] | None = None,
    baseline_runs: Mapping[str, list[float]] | None = None,
) -> list[Verdict]:
    """``judge`` on bare samples (one host, no fingerprint): the verdicts only."""
    fp = records.Fingerprint(fields={}, classes={})
    base = Side(fp, dict(baseline), "baseline", runs=dict(baseline_runs or {}))
    cur = Side(fp, dict(current), "current", errors=dict(errors or {}))
    return list(judge(base, cur, cfg).verdicts)


# -- confirmation ------------------------------------------------------------------------------


def control_for(comparison: Comparison, suspect: str, points: Mapping) -> str | None:
    """The settled point most like ``suspect`` to re-measure beside it: same framework and
    threads first, then same threads, then the least moved beyond its shift. Under a
    machine-wide shift no point is 'unchanged', and those that only followed it are no
    suspects either. Host noise is not uniform across frameworks (docs/design/gate.md).
    ``points`` maps ids to records.Point."""
    me = points[suspect]
    settled = [
        v
        for v in comparison.verdicts
        if v.id in points
        and points[v.id].mode != "server"  # its samples are latencies at a load that moves
        and (v.verdict == "unchanged" or v.reason.startswith(FOLLOWED_SHIFT))
    ]

    def unlike(v: Verdict):
        p = points[v.id]
        moved = (1 + (v.change or 0.0)) / (1 + (v.shift or 0.0)) - 1
        return (p.framework != me.framework, p.threads != me.threads, abs(moved))

    return min(settled, key=unlike).id if settled else None


@dataclass(frozen=True)
class Remeasure:
    """A suspect measured again, with its control: samples, or the error that stopped it."""

    samples: np.ndarray | None
    error: str | None = None
    control: str | None = None
    control_samples: np.ndarray | None = None
    headline: records.Headline | None = None


def _judged_again(v: Verdict, samples: np.ndarray, base: Side, cfg: GateConfig):
    """A re-measure against the baseline, after its group's shift when that explains it
    away, as for the first reading: during a noisy stretch the re-measure is as shifted."""
    shift = None if v.shift is None else 1 + v.shift
    ratio = float(np.median(samples) / np.median(base.samples[v.id]))
    factor = excusing_factor(ratio, shift)
    one = replace(base, samples={v.id: base.samples[v.id]}, runs={v.id: base.runs.get(v.id, [])})
    cur = Side(base.fingerprint, {v.id: samples / factor}, "re-measure")
    return judge(one, cur, cfg).verdicts[0], shift is not None and factor == shift


def confirm(
    comparison: Comparison, base: Side, remeasured: Mapping[str, Remeasure], cfg: GateConfig
) -> Comparison:
    """Settle each re-measured regression: confirmed only if the slowdown repeats at the
    point's practical threshold, as for the first reading (docs/design/gate.md), not merely
    significantly; ``unstable`` when its control moved too."""
    by_id = {v.id: v for v in comparison.verdicts}
    out = []
    for v in comparison.verdicts:
        again = remeasured.get(v.id)
        if v.verdict != "regressed" or again is None:
            out.append(v)
            continue
        if again.samples is None:
            out.append(_set(v, confirmed=False, reason=f"re-measure failed: {again.error}"))
            continue
        if again.control is not None and again.control_samples is not None:
            ctrl = _judged_again(by_id[again.control], again.control_samples, base, cfg)[0]
            if ctrl.verdict in ("regressed", "improved"):
                reason = f"control point {again.control} moved too on re-measure: machine noise"
                out.append(_set(v, verdict="unstable", confirmed=None, reason=reason))
                continue
        if v.id in base.headlines and again.headline is not None and again.headline.gated:
            runs = base.headline_runs.get(v.id, [])
            re = judge_headline(v.id, base.headlines[v.id], again.headline, cfg, runs)
            v = _set(v, confirmed=re.verdict == "regressed")
            again_txt = f"re-measured {re.change:+.1%}" if re.change is not None else re.reason
            out.append(_reason(v, again_txt, first=True))
            continue
        re, excused = _judged_again(v, again.samples, base, cfg)
        threshold = slowdown_threshold(cfg, v.id, base.runs.get(v.id, []))
        repeated = re.verdict == "regressed" and re.change is not None and re.change >= threshold
        v = _set(v, confirmed=bool(repeated))
        if re.change is not None:
            beyond = " beyond the shift" if excused else ""
            v = _reason(v, f"re-measured {re.change:+.1%}{beyond}", first=True)
        out.append(v)
    return replace(comparison, verdicts=tuple(out))


# -- instruction counts ------------------------------------------------------------------------

COUNT_THRESHOLD = 0.01  # counts are exact: 1% more instructions is a code change


def judge_counts(
    base: Mapping[str, int], cur: Mapping[str, int], threshold: float = COUNT_THRESHOLD
) -> list[tuple[str, int | None, int | None, float | None, str]]:
    """(id, baseline, current, change, verdict) per kernel point; exact, so no statistics."""
    rows = []
    for key in sorted(set(base) | set(cur)):
        b, c = base.get(key), cur.get(key)
        if b is None or c is None:
            rows.append((key, b, c, None, "new" if b is None else "missing"))
            continue
        change = c / b - 1
        verdict = (
            "regressed" if change > threshold else "improved" if change < -threshold
            else "unchanged"
        )  # fmt: skip
        rows.append((key, b, c, change, verdict))
    return rows
