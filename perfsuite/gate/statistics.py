"""The regression gate's engine: compare current results with a baseline.

Per point (latency samples, lower is better):
- a Mann-Whitney U test on the raw samples (two-sided), p-values adjusted across the sweep
  with Holm's method (family-wise error rate <= alpha per sweep);
- a bootstrap confidence interval (scipy.stats.bootstrap, percentile) of the ratio of medians
  current/baseline;
- ``regressed`` when the adjusted p < alpha, the whole interval lies above 1, and it reaches
  the practical threshold (a slowdown of at least ``threshold`` is plausible). A significant
  change that cannot reach the threshold is ``unchanged`` (the report still shows it).
  ``improved`` mirrors it.
- ``unstable`` when either side is too noisy to judge (robust CV, MAD/median, above
  ``cv_limit``), or when the point moved with a machine-wide shift (below).

Machine-wide shift: when most points moved the same way by more than ``burst_threshold``
(median ratio), the whole machine was slower or faster (a noisy neighbour, thermal or frequency
change), not 40 separate regressions. Points are then judged after dividing by the shift: those
that only followed it are ``unstable`` (re-run), those that moved beyond it are still judged on
the residual. A shift only ever explains a change away (``excusing_factor``): a point is
divided by it only when that brings it nearer its baseline without crossing it, so under a
faster machine a point that gained less than the others is ``unstable``, not ``regressed``. The
shift is taken per group of points that run as many threads (ids ``...-t<N>-...``, at least 3
points; else the whole sweep), because a neighbour takes more from points that need every core:
in a real A/A run on the 2-core Zen 4 VM, against a baseline from quieter hours, all nine
2-thread points read slower (median +8.9%, up to +32%) while the 1-thread ones moved +2-9%, and
one 2-thread point at +12.2% failed the gate as a confirmed regression under the old
sweep-wide, 10% rule.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from perfsuite.dispersion import cv, robust_cv

VERDICTS = (
    "improved",
    "unchanged",
    "regressed",
    "unstable",
    "new",
    "missing",
    "incomparable",
    "error",
)


# The reason of a point that only followed its group's machine-wide shift (verdict unstable):
# it is no suspect, so a re-measure may use it as the control (sweep.finish).
FOLLOWED_SHIFT = "moved with a machine-wide shift"

# The reason of a point whose group shifted while it stayed near its baseline: it is judged
# unshifted (``excusing_factor``) and is unstable, neither a suspect nor a good control.
LAGGED_SHIFT = "did not follow a machine-wide shift"

SINGLE_RUN_HINT = (
    "baseline has one run: its run-to-run spread is unknown (add runs with --perf-add-baseline-run)"
)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class GateConfig:
    alpha: float = 0.01  # family-wise, per sweep (Holm)
    threshold: float = 0.05  # practical: relative change that matters
    cv_limit: float = 0.15  # above this spread a point cannot be judged
    # a group median shift that marks a machine-level event: as large as the practical
    # threshold, since a point moved that far would otherwise be judged a regression
    burst_threshold: float = 0.05
    burst_fraction: float = 0.8  # share of points that must move the same way
    bootstrap_resamples: int = 2000
    thresholds: dict = field(default_factory=dict)  # benchmark-id glob -> threshold
    seed: int = 0

    def __post_init__(self):
        # Every field bounds a comparison: NaN compares false and would switch the gate off.
        def bad(name: str, value, ok: str) -> ValueError:
            return ValueError(f"gate {name} = {value!r}: must be {ok}")

        for name in ("alpha", "burst_fraction"):
            v = getattr(self, name)
            if not _finite(v) or not 0 < v < 1:
                raise bad(name, v, "a number between 0 and 1 (exclusive)")
        for name in ("threshold", "cv_limit", "burst_threshold"):
            v = getattr(self, name)
            if not _finite(v) or v <= 0:
                raise bad(name, v, "a finite number > 0")
        if not isinstance(self.bootstrap_resamples, int) or self.bootstrap_resamples < 100:
            raise bad("bootstrap_resamples", self.bootstrap_resamples, "a whole number >= 100")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise bad("seed", self.seed, "a whole number")
        if not isinstance(self.thresholds, dict):
            raise bad("thresholds", self.thresholds, "a table of id glob = threshold")
        for pattern, v in self.thresholds.items():
            if not _finite(v) or v <= 0:
                raise bad(f"thresholds[{pattern!r}]", v, "a finite number > 0")

    def threshold_for(self, point_id: str) -> float:
        for pattern, value in self.thresholds.items():
            if fnmatch.fnmatchcase(point_id, pattern):
                return float(value)
        return self.threshold


@dataclass
class PointVerdict:
    id: str
    verdict: str
    change: float | None = None  # current/baseline median ratio - 1 (latency: + is slower)
    ci: tuple[float, float] | None = None  # of the ratio - 1
    p_value: float | None = None  # Holm-adjusted
    baseline_median_ms: float | None = None
    current_median_ms: float | None = None
    reason: str = ""
    confirmed: bool | None = None  # for regressions re-measured in the session
    shift: float | None = None  # its group's machine-wide shift (ratio - 1), when there was one

    def as_dict(self) -> dict:
        return asdict(self)

    def add_reason(self, text: str, *, first: bool = False) -> None:
        parts = (text, self.reason) if first else (self.reason, text)
        self.reason = "; ".join(x for x in parts if x)


@dataclass
class Comparison:
    verdicts: list[PointVerdict]
    comparable: bool
    differences: dict  # must-match field -> (baseline, current)
    tolerance_notes: list[str]
    software_changes: dict  # field -> (baseline, current)
    machine_shift: float | None  # sweep median ratio - 1, when a machine-wide shift was found

    def counts(self) -> dict:
        out = dict.fromkeys(VERDICTS, 0)
        for v in self.verdicts:
            out[v.verdict] += 1
        return out

    def failing(self, fail_on: str) -> list[PointVerdict]:
        """Points that fail the gate under --perf-fail-on."""
        if fail_on == "never":
            return []
        bad = [v for v in self.verdicts if v.verdict == "regressed" and v.confirmed is not False]
        if fail_on == "unstable":
            bad += [v for v in self.verdicts if v.verdict in ("unstable", "incomparable", "error")]
        return bad


def _ratio_ci(base: np.ndarray, cur: np.ndarray, cfg: GateConfig) -> tuple[float, float]:
    def ratio(b, c, axis=-1):
        return np.median(c, axis=axis) / np.median(b, axis=axis)

    res = stats.bootstrap(
        (base, cur),
        ratio,
        n_resamples=cfg.bootstrap_resamples,
        confidence_level=1 - cfg.alpha,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(cfg.seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1)."""
    m = len(p_values)
    order = np.argsort(p_values)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p_values[i])
        adjusted[i] = min(1.0, running)
    return adjusted.tolist()


MIN_SHIFT_GROUP = 3


def point_threshold(cfg: GateConfig, point_id: str, runs) -> float:
    """The practical threshold for a point: the configured one, and with two or more baseline
    runs at least 3x their between-run CV."""
    runs = np.asarray(runs, float)
    t = cfg.threshold_for(point_id)
    return max(t, 3 * cv(runs)) if runs.size >= 2 else t


MIN_RUNS_FOR_A_HICCUP = 5


def regression_runs(runs, at_least: float = 0.05) -> np.ndarray:
    """The baseline runs a slowdown is judged against: all of them, but for one slow hiccup.

    With five or more runs, the slowest is set aside when it lies more than 3 robust standard
    deviations (1.4826 MAD) of the others above their median and at least ``at_least`` (the
    point's practical threshold) above the next slowest: five runs within 1% make a tiny MAD,
    and a run 2% slower is no hiccup. One such run made a point blind: on Zen 4, OpenVINO
    fp32 t2 had runs of 40.1-43.3 ms and one of 73.9, so its threshold (3x the between-run
    CV) was 87% and a slowdown had to pass 73.9 ms. Only the slow side:
    interference only adds time, so a fast run shows how fast the point can be and stays in the
    improvement side's range; the re-measure still stands between a first reading and a failed
    gate."""
    runs = np.asarray(runs, float)
    if runs.size < MIN_RUNS_FOR_A_HICCUP:
        return runs
    i = int(np.argmax(runs))
    rest = np.delete(runs, i)
    med = float(np.median(rest))
    spread = 1.4826 * float(np.median(np.abs(rest - med)))
    alone = runs[i] > rest.max() * (1 + at_least)  # two slow runs are a state, not a hiccup
    return rest if spread > 0 and runs[i] > med + 3 * spread and alone else runs


def slowdown_threshold(cfg: GateConfig, point_id: str, runs) -> float:
    """``point_threshold`` over the runs a slowdown is judged against (``regression_runs``):
    the first reading and its re-measure both use it."""
    return point_threshold(cfg, point_id, regression_runs(runs, cfg.threshold_for(point_id)))


def excusing_factor(ratio: float, shift: float | None) -> float:
    """The machine factor a point's current/baseline ratio is judged after: its group's shift
    (a ratio) when dividing by it brings the point nearer its baseline without crossing it,
    the ratio itself when the point lies between its baseline and the shift, else 1.

    Points do not follow a host's speed evenly (compute-bound and memory-bound kernels gain
    differently from a faster host), so dividing by a speed-up would manufacture regressions
    out of points that gained less than the rest. Measured: on 2026-12-05 a Zen 4 VM ran
    every sweep 7-11% faster than on the baseline's days, and OpenVINO int8_static_rr read
    -4.7..+3.5% against its baseline, 6-13% behind its group: 11 of the 12 confirmed
    regressions of a nineteen-run A/A (the 12th: a 4-thread point on 2 cores, raw -0.1%).
    Re-gated offline with this rule, none of the nineteen runs confirms one."""
    if shift is None or ratio <= 0:
        return 1.0
    if (ratio - 1) * (ratio / shift - 1) <= 0:
        # between its baseline and the shift: part of the shift explains all of it; dividing
        # by the whole shift would turn a point 6% faster under a 10% speed-up into a "4% slower"
        return ratio
    return shift if abs(math.log(ratio / shift)) < abs(math.log(ratio)) else 1.0


def lagged_shift(ratio: float, shift: float | None) -> bool:
    """Whether a point stayed nearer its baseline than its group's shift (it did not follow)."""
    return shift is not None and abs(math.log(ratio)) < abs(math.log(ratio / shift))


def thread_group(point_id: str) -> str:
    m = re.search(r"-t(\d+)-", point_id)
    return m.group(1) if m else ""


def _moved_as_one(ratios: list[float], cfg: GateConfig) -> float | None:
    if len(ratios) < MIN_SHIFT_GROUP:
        return None
    med = float(np.median(ratios))
    same_way = np.mean([(r > 1) == (med > 1) for r in ratios])
    if abs(med - 1) > cfg.burst_threshold and same_way >= cfg.burst_fraction:
        return med
    return None


def machine_shifts(ratios: dict[str, float], cfg: GateConfig) -> dict[str, float | None]:
    """Per point, the median ratio of its thread-count group when the group moved as one
    (``_moved_as_one``); groups smaller than MIN_SHIFT_GROUP take the whole sweep's."""
    groups: dict[str, list[str]] = {}
    for pid in ratios:
        groups.setdefault(thread_group(pid), []).append(pid)
    sweep = _moved_as_one(list(ratios.values()), cfg)
    out = {}
    for pids in groups.values():
        own = len(pids) >= MIN_SHIFT_GROUP
        shift = _moved_as_one([ratios[p] for p in pids], cfg) if own else sweep
        out.update(dict.fromkeys(pids, shift))
    return out


def compare_samples(
    baseline: dict[str, np.ndarray],
    current: dict[str, np.ndarray],
    cfg: GateConfig = GateConfig(),
    errors: dict[str, str] | None = None,
    baseline_runs: dict[str, list[float]] | None = None,
) -> list[PointVerdict]:
    """Verdicts for every id in either side (samples in seconds per call).

    baseline_runs: per id, the medians of several baseline runs. Samples within one run are
    not independent draws of the run-to-run variation (on a shared host, whole runs of one
    point shift by several percent), so with two or more runs the threshold for that point
    becomes at least 3x the between-run CV, and a regression must also leave the range of the
    baseline runs."""
    errors = errors or {}
    baseline_runs = baseline_runs or {}
    ids = sorted(set(baseline) | set(current) | set(errors))
    verdicts: dict[str, PointVerdict] = {}
    both = []
    for pid in ids:
        if pid in errors:
            verdicts[pid] = PointVerdict(pid, "error", reason=errors[pid])
        elif pid not in baseline:
            verdicts[pid] = PointVerdict(pid, "new", reason="no baseline entry")
        elif pid not in current:
            verdicts[pid] = PointVerdict(pid, "missing", reason="in the baseline, not measured")
        else:
            both.append(pid)
    # machine-wide shifts, per thread-count group, from the medians of the compared points
    ratios = {pid: float(np.median(current[pid]) / np.median(baseline[pid])) for pid in both}
    shifts = machine_shifts(ratios, cfg)
    factors = {pid: excusing_factor(ratios[pid], shifts[pid]) for pid in both}
    raw_p = []
    for pid in both:
        b = np.asarray(baseline[pid], float)
        c = np.asarray(current[pid], float) / factors[pid]
        raw_p.append(
            float(stats.mannwhitneyu(b, c, alternative="two-sided").pvalue)
            if b.size >= 2 and c.size >= 2
            else 1.0
        )
    adjusted = holm(raw_p) if raw_p else []
    for pid, p in zip(both, adjusted, strict=True):
        shift = shifts[pid]
        where = f" ({thread_group(pid)}-thread points)" if thread_group(pid) else ""
        b = np.asarray(baseline[pid], float)
        c_raw = np.asarray(current[pid], float)
        excused = factors[pid] == shift  # judged beyond the shift
        lagged = lagged_shift(ratios[pid], shift)
        c = c_raw / factors[pid]
        v = PointVerdict(
            pid,
            "unchanged",
            p_value=p,
            baseline_median_ms=float(np.median(b)) * 1e3,
            current_median_ms=float(np.median(c_raw)) * 1e3,
            change=float(np.median(c_raw) / np.median(b) - 1),
            shift=None if shift is None else shift - 1,
        )
        if b.size < 2 or c.size < 2:
            v.verdict, v.reason = "unstable", "fewer than 2 samples on one side"
            verdicts[pid] = v
            continue
        lo, hi = _ratio_ci(b, c, cfg)
        v.ci = (lo - 1, hi - 1)
        runs = np.asarray(baseline_runs.get(pid, []), float)
        slow_side = regression_runs(runs, cfg.threshold_for(pid))
        t_slow, t_fast = slowdown_threshold(cfg, pid, runs), point_threshold(cfg, pid, runs)
        cur_med = float(np.median(c))
        outside_hi = outside_lo = True
        if runs.size >= 2:
            between = cv(runs)
            outside_hi, outside_lo = cur_med > slow_side.max(), cur_med < runs.min()
            v.reason = f"{runs.size} baseline runs, between-run CV {between:.1%}"
            if slow_side.size < runs.size:
                v.reason += (
                    f" ({cv(slow_side):.1%} without a slow hiccup run of "
                    f"{runs.max() * 1e3:.3g} ms, set aside for the regression side)"
                )
        cv_b, cv_c = robust_cv(b), robust_cv(c_raw)
        if max(cv_b, cv_c) > cfg.cv_limit:
            v.verdict = "unstable"
            v.reason = (
                f"spread too high to judge (robust CV {cv_b:.1%} baseline, {cv_c:.1%} current)"
            )
        elif p < cfg.alpha and lo > 1 and hi >= 1 + t_slow and outside_hi:
            v.verdict = "regressed"
        elif p < cfg.alpha and hi < 1 and lo <= 1 - t_fast and outside_lo:
            v.verdict = "improved"
        elif shift is not None and not lagged:
            v.verdict = "unstable"
            v.reason = f"{FOLLOWED_SHIFT} of {shift - 1:+.1%}{where}; re-run on a quiet machine"
        elif shift is not None:
            v.verdict = "unstable"
            v.reason = (
                f"{LAGGED_SHIFT} of {shift - 1:+.1%}{where} (moved "
                f"{ratios[pid] / shift - 1:+.1%} beyond it, {ratios[pid] - 1:+.1%} unshifted): "
                "uneven scaling or a change the shift hides; re-run on a baseline-speed machine"
            )
        elif p < cfg.alpha:
            v.add_reason(
                f"significant but below the {t_slow if cur_med > np.median(b) else t_fast:.0%} "
                "threshold or inside the baseline runs' range"
            )
        if shift is not None and v.verdict in ("regressed", "improved"):
            v.reason = (
                f"beyond the machine-wide shift of {shift - 1:+.1%}{where}"
                if excused
                else f"{'slower' if v.verdict == 'regressed' else 'faster'} than the baseline "
                f"even unshifted (machine-wide shift of {shift - 1:+.1%}{where})"
            )
        if runs.size < 2 and v.verdict in ("regressed", "improved"):
            # Whole runs can shift (sub-ms ORT calls: up to 1.8x from one session to the
            # next on this VM); one run cannot show how far, so say so beside the verdict.
            v.add_reason(SINGLE_RUN_HINT)
        verdicts[pid] = v
    return [verdicts[pid] for pid in ids]


def compare_fingerprints(base: dict, cur: dict) -> tuple[dict, list[str], dict]:
    """(must-match differences, tolerance notes, software changes)."""
    bf, cf = base.get("fields", {}), cur.get("fields", {})
    classes = {**base.get("classes", {}), **cur.get("classes", {})}
    must, notes, software = {}, [], {}
    for key in sorted(set(bf) | set(cf)):
        a, b = bf.get(key), cf.get(key)
        if a == b:
            continue
        if key.startswith("software."):
            software[key] = (a, b)
        elif classes.get(key) == "must_match":
            must[key] = (a, b)
        elif classes.get(key) == "tolerance":
            notes.append(f"{key}: {a} -> {b}")
    return must, notes, software
