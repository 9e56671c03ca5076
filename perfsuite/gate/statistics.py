"""The gate's statistics: the configuration, Holm's adjustment, the bootstrap interval of
the ratio of medians, practical thresholds from a baseline's runs (and the one slow hiccup
run set aside), machine-wide shifts per thread group and the factor that excuses a change.
The rules that use them, and the order, are in ``perfsuite.gate.judge``.

Machine-wide shift: when most points of a thread group moved the same way by more than
``burst_threshold`` (median ratio), the machine was slower or faster (a noisy neighbour, a
clock or thermal change), not 40 separate regressions. The shift is taken per group of points
that run as many threads (ids ``...-t<N>-...``, at least 3 points; else the whole sweep),
because a neighbour takes more from points that need every core (docs/design/gate.md).
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from perfsuite.dispersion import cv
from perfsuite.records import Fingerprint

# The reason of a point that only followed its group's machine-wide shift (verdict unstable):
# it is no suspect, so a re-measure may use it as the control (sweep.finish).
FOLLOWED_SHIFT = "moved with a machine-wide shift"

# The reason of a point whose group shifted while it stayed near its baseline: it is judged
# unshifted (``excusing_factor``) and is unstable, neither a suspect nor a good control.
LAGGED_SHIFT = "did not follow a machine-wide shift"

SINGLE_RUN_HINT = (
    "baseline has one run: its run-to-run spread is unknown (add runs with --perf-add-baseline-run)"
)

MIN_SHIFT_GROUP = 3  # points in a thread group for a shift of its own (else the sweep's)
MIN_RUNS_FOR_A_HICCUP = 5  # baseline runs before the slowest may be set aside (regression_runs)


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
    # A server rate (one search per run) or an offline rate has no samples to test: it is
    # judged against this change alone, wider than the rerun spread of a search
    # (docs/measurements/2026-12-07-zen4-serving-decode.md).
    rate_threshold: float = 0.20

    def __post_init__(self):
        # Every field bounds a comparison: NaN compares false and would switch the gate off.
        def bad(name: str, value, ok: str) -> ValueError:
            return ValueError(f"gate {name} = {value!r}: must be {ok}")

        for name in ("alpha", "burst_fraction"):
            v = getattr(self, name)
            if not _finite(v) or not 0 < v < 1:
                raise bad(name, v, "a number between 0 and 1 (exclusive)")
        for name in ("threshold", "cv_limit", "burst_threshold", "rate_threshold"):
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


def ratio_ci(base: np.ndarray, cur: np.ndarray, cfg: GateConfig) -> tuple[float, float]:
    res = stats.bootstrap(
        (base, cur),
        lambda b, c, axis=-1: np.median(c, axis=axis) / np.median(b, axis=axis),
        n_resamples=cfg.bootstrap_resamples,
        confidence_level=1 - cfg.alpha,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(cfg.seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(p_values, float)
    order = np.argsort(p)
    steps = np.maximum.accumulate((p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty(p.size)
    adjusted[order] = np.minimum(1.0, steps)
    return adjusted.tolist()


def point_threshold(cfg: GateConfig, point_id: str, runs) -> float:
    """The practical threshold for a point: the configured one, and with two or more baseline
    runs at least 3x their between-run CV."""
    return max(cfg.threshold_for(point_id), 3 * cv(runs))  # cv: 0 for fewer than two runs


def regression_runs(runs, at_least: float = 0.05) -> np.ndarray:
    """The baseline runs a slowdown is judged against: all of them, but for one slow hiccup.

    With five or more runs, the slowest is set aside when it lies more than 3 robust standard
    deviations (1.4826 MAD) of the others above their median and at least ``at_least`` (the
    point's practical threshold) above the next slowest: five runs within 1% make a tiny MAD,
    and a run 2% slower is no hiccup. One such run can make a point blind through the "3x the
    between-run CV" floor (docs/design/gate.md). Only the slow side: interference only adds
    time, so a fast run shows how fast the point can be and stays in the improvement side's
    range; the re-measure still stands between a first reading and a failed gate."""
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
    out of points that gained less than the rest
    (docs/measurements/2026-12-05-zen4-gate-aa.md)."""
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
    return med if abs(med - 1) > cfg.burst_threshold and same_way >= cfg.burst_fraction else None


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


def compare_fingerprints(base: Fingerprint, cur: Fingerprint) -> tuple[dict, list[str], dict]:
    """(must-match differences, tolerance notes, software changes) of two fingerprints."""
    bf, cf = base.fields, cur.fields
    classes = {**base.classes, **cur.classes}
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
