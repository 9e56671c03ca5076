"""Invariants of the pure gate (perfsuite.gate.judge), checked by Hypothesis on generated
sweeps rather than on a few hand-picked ones; and a rule another package adds."""

import numpy as np
from fake_dist import install
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfsuite.gate.judge import Side, Verdict, default_rules, judge
from perfsuite.gate.statistics import GateConfig
from perfsuite.records import Fingerprint

CFG = GateConfig(bootstrap_resamples=200)
FP = Fingerprint(fields={}, classes={}, hardware_class="h")
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def sweeps(draw, min_points=3):
    """A baseline and a current run from the same distributions: points of one thread group
    (so a machine-wide shift is detected per group), lognormal samples, some noisy."""
    n_points = draw(st.integers(min_points, 8))
    n = draw(st.integers(8, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base, cur = {}, {}
    for i in range(n_points):
        level = draw(st.floats(1e-4, 0.1))
        cv = draw(st.sampled_from([0.002, 0.01, 0.03, 0.08]))
        pid = f"m{i}-fw-fp32-t{1 + i % 2}-unbound-b1"
        base[pid] = level * rng.lognormal(0, cv, n)
        cur[pid] = level * rng.lognormal(0, cv, n)
    return base, cur


def _verdicts(base, cur, cfg=CFG, **kw) -> dict[str, Verdict]:
    c = judge(Side(FP, base, "b", **kw), Side(FP, cur, "c"), cfg)
    return {v.id: v for v in c.verdicts}


@SETTINGS
@given(sweeps(), st.floats(1.06, 2.0) | st.floats(0.5, 0.94))
def test_a_machine_wide_shift_never_creates_a_regression(sweep, factor):
    """Every point of a group slower (or faster) by the same factor, beyond the burst
    threshold: explained away, never a regression."""
    base, _ = sweep
    shifted = {pid: s * factor for pid, s in base.items()}
    verdicts = _verdicts(base, shifted)
    assert not [v for v in verdicts.values() if v.verdict == "regressed"], verdicts


@SETTINGS
@given(sweeps(), st.floats(0.01, 100.0))
def test_the_unit_of_the_samples_changes_no_verdict(sweep, unit):
    """Scaling every sample of both sides by the same factor (seconds or milliseconds, a
    faster or slower model): the same verdicts."""
    base, cur = sweep
    before = _verdicts(base, cur)
    after = _verdicts({k: v * unit for k, v in base.items()}, {k: v * unit for k, v in cur.items()})
    assert {k: v.verdict for k, v in before.items()} == {k: v.verdict for k, v in after.items()}


@SETTINGS
@given(sweeps(min_points=1), st.floats(1.0, 1 + CFG.threshold / 3))
def test_a_uniform_slowdown_well_under_the_threshold_is_no_regression(sweep, factor):
    """The current run's samples are the baseline's, every one slower by a factor within a
    third of the practical threshold: no regression (the threshold is the practical size)."""
    base, _ = sweep
    verdicts = _verdicts(base, {pid: s * factor for pid, s in base.items()})
    assert not [v for v in verdicts.values() if v.verdict == "regressed"], verdicts


@SETTINGS
@given(sweeps(), st.randoms(use_true_random=False))
def test_the_order_of_points_changes_no_verdict(sweep, random):
    base, cur = sweep
    ids = list(base)
    random.shuffle(ids)
    before = _verdicts(base, cur)
    after = _verdicts({i: base[i] for i in ids}, {i: cur[i] for i in reversed(ids)})
    assert before == after


@SETTINGS
@given(sweeps(), st.floats(1.3, 3.0))
def test_a_contaminated_point_is_never_a_verdict_either_way(sweep, slower):
    base, cur = sweep
    pid = next(iter(base))
    cur = {**cur, pid: base[pid] * slower}
    c = judge(Side(FP, base, "b"), Side(FP, cur, "c", contaminated={pid: "steal 40%"}), CFG)
    (v,) = [v for v in c.verdicts if v.id == pid]
    assert v.verdict not in ("regressed", "improved")
    assert "contaminated while measured (steal 40%)" in v.reason


RULE = '''
class NeverAtNight:
    """A team's own rule: points of a model named 'night' are always unstable."""

    name = "never-at-night"

    def __call__(self, evidence, verdict):
        if evidence.id.startswith("night-"):
            return verdict.model_copy(update={"verdict": "unstable", "reason": "night"})
        return verdict
'''


def test_a_rule_from_another_package_runs_after_the_built_in_ones(tmp_path, monkeypatch):
    entry_points = "[perfsuite.rules]\nnight = teamrules:NeverAtNight\n"
    install(tmp_path, monkeypatch, "teamrules", "teamrules", RULE, entry_points)
    default_rules.cache_clear()
    try:
        assert [r.name for r in default_rules()][-1] == "never-at-night"
        rng = np.random.default_rng(3)
        same = {p: 0.01 * rng.lognormal(0, 0.01, 30) for p in ("night-a", "day-a")}
        verdicts = _verdicts(same, {k: v.copy() for k, v in same.items()})
        assert verdicts["night-a"].verdict == "unstable" and verdicts["night-a"].reason == "night"
        assert verdicts["day-a"].verdict == "unchanged"
    finally:
        default_rules.cache_clear()
