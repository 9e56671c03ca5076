"""Change-point detection (E-divisive means + Welch t-test) validated on synthetic series of
100 runs with known noise and known steps (the README's table comes from the same setup with
200 series per cell)."""

import numpy as np
import pytest

from perfsuite.gate.changepoints import change_points, noise_cv

RNG = np.random.default_rng(20261203)
N, AT, TRIALS = 100, 60, 100


def series(cv, step=0.0, at=AT, n=N):
    x = 1 + cv * RNG.standard_normal(n)
    x[at:] *= 1 + step
    return x


@pytest.mark.parametrize("cv", [0.01, 0.03, 0.10])
def test_aa_series_raise_almost_no_change_points(cv):
    false = sum(bool(change_points(series(cv))) for _ in range(TRIALS))
    assert false <= 2, f"{false} of {TRIALS} A/A series at CV {cv:.0%} had a change point"


@pytest.mark.parametrize("cv, step", [(0.01, 0.05), (0.01, 0.10), (0.03, 0.10), (0.03, 0.20)])
def test_steps_of_three_times_the_noise_are_found_where_they_are(cv, step):
    hits = 0
    for _ in range(TRIALS):
        cps = change_points(series(cv, step))
        hits += any(abs(c.index - AT) <= 1 and abs(c.change - step) < step / 2 for c in cps)
    assert hits >= 95, f"found {hits} of {TRIALS} steps of {step:.0%} at CV {cv:.0%}"


def test_steps_below_twice_the_noise_are_not_reported():
    """A 2% step in 3% noise may be significant over many runs, but it is not news."""
    assert sum(bool(change_points(series(0.03, 0.02))) for _ in range(50)) <= 2


def test_two_steps_and_an_improvement():
    x = series(0.01, n=150)
    x[50:] *= 1.10
    x[110:] *= 0.85
    cps = change_points(x)
    assert [c.index for c in cps] in ([50, 110], [49, 110], [50, 109], [51, 110], [50, 111])
    assert cps[0].change > 0.05 and cps[1].change < -0.10 and all(c.pvalue < 1e-3 for c in cps)


def test_noise_estimate_ignores_the_step_and_bad_input_is_refused():
    x = series(0.02, 0.5)
    assert 0.015 < noise_cv(x) < 0.03
    for bad in ([1.0, np.nan, 1.0] * 5, [1.0, -1.0] * 5, [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="finite numbers > 0"):
            change_points(bad)
