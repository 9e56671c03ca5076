"""Change points in a series of runs (one value per run, e.g. a point's median latency per
night): E-divisive means with a Student's t-test for significance, the method of Hunter /
Apache Otava, implemented here with numpy and scipy (the PyPI packages that ship it pin numpy
below what perfsuite uses).

- Candidate split of a segment: the index that maximises the energy-distance statistic
  (Matteson & James' E-divisive, alpha = 1) between the values before and after it.
- Significance: Welch's t-test of the two sides; kept when p < ``max_pvalue`` and the step
  between the sides' means is at least ``min_magnitude`` (default: twice the series' noise,
  robust CV of successive differences / sqrt 2) -- a significant but tiny step is not news.
- Repeated on the segments until no candidate passes (binary segmentation), within windows
  of ``window`` runs so that an old step does not hide a new one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from perfsuite.dispersion import robust_cv

WINDOW = 50
MAX_PVALUE = 0.001
MIN_SIDE = 3  # runs on each side of a change point, at least


@dataclass(frozen=True)
class ChangePoint:
    index: int  # first run after the change
    before: float  # mean of the segment before
    after: float  # mean of the segment after
    change: float  # after / before - 1
    pvalue: float


def noise_cv(values) -> float:
    """Run-to-run noise of a series that may contain steps: robust CV of successive
    differences / sqrt 2 (a step moves one difference, not the median of them)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 3:
        return 0.0
    diffs = np.diff(x)
    mad = float(np.median(np.abs(diffs - np.median(diffs)))) * 1.4826
    centre = float(np.median(x))
    return mad / math.sqrt(2) / centre if centre > 0 else robust_cv(x)


def _best_split(x: np.ndarray) -> int | None:
    """The split maximising the E-divisive statistic, from an O(n^2) table of pair
    distances and its 2-D prefix sums (every split's block sums at once)."""
    n = x.size
    if n < 2 * MIN_SIDE:
        return None
    d = np.abs(x[:, None] - x[None, :])
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    t = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    a, b = t, n - t
    between = (s[t, n] - s[t, t]) / (a * b)  # block [0, t) x [t, n)
    within_a = s[t, t] / (a * a)
    within_b = (s[n, n] - s[t, n] - s[n, t] + s[t, t]) / (b * b)
    q = a * b / n * (2 * between - within_a - within_b)
    return int(t[np.argmax(q)])


def _test(x: np.ndarray, t: int) -> tuple[float, float, float]:
    before, after = x[:t], x[t:]
    if np.all(before == before[0]) and np.all(after == after[0]):
        p = 0.0 if before[0] != after[0] else 1.0
    else:
        p = float(stats.ttest_ind(before, after, equal_var=False).pvalue)
    return float(before.mean()), float(after.mean()), p


def _segment(x, lo, hi, max_pvalue, min_magnitude) -> list[ChangePoint]:
    """Binary segmentation of x[lo:hi]."""
    seg = x[lo:hi]
    t = _best_split(seg)
    if t is None:
        return []
    before, after, p = _test(seg, t)
    change = after / before - 1 if before else math.inf
    if not (p < max_pvalue and abs(change) >= min_magnitude):
        return []
    left = _segment(x, lo, lo + t, max_pvalue, min_magnitude)
    right = _segment(x, lo + t, hi, max_pvalue, min_magnitude)
    return [*left, ChangePoint(lo + t, before, after, change, p), *right]


def change_points(
    values,
    *,
    window: int = WINDOW,
    max_pvalue: float = MAX_PVALUE,
    min_magnitude: float | None = None,
) -> list[ChangePoint]:
    """Change points of ``values`` (oldest first). Windows of ``window`` runs overlap by
    half, so each step is judged on at most ``window`` runs around it; a step found in two
    windows is reported once, with the smaller p-value."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("values must be a 1-D series of finite numbers > 0")
    if window < 2 * MIN_SIDE:
        raise ValueError(f"window must be at least {2 * MIN_SIDE} runs")
    magnitude = 2 * noise_cv(x) if min_magnitude is None else min_magnitude
    found: dict[int, ChangePoint] = {}
    step = max(1, window // 2)
    for lo in range(0, max(1, x.size - window + step), step):
        hi = min(x.size, lo + window)
        for cp in _segment(x, lo, hi, max_pvalue, magnitude):
            near = [i for i in found if abs(i - cp.index) <= 1]
            if near and found[near[0]].pvalue <= cp.pvalue:
                continue
            for i in near:
                del found[i]
            found[cp.index] = cp
    return [found[i] for i in sorted(found)]
