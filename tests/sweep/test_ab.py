"""Relative runs: the paired verdicts on synthetic rounds, and `perfsuite ab` for real with a
known slowdown injected into side B."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from perfsuite.gate.paired import judge, looks
from perfsuite.gate.statistics import GateConfig
from perfsuite.records import Measurement, MeasureProtocol
from perfsuite.sweep.ab import Arm, run_sequential


def _rounds(rng, n, drift_cv, noise_cv, change=0.0):
    """Per-round medians of A and B: a host drift shared by both sides of a round, plus
    independent noise on each side."""
    drift = np.exp(rng.normal(0, drift_cv, n))
    a = 10e-3 * drift * np.exp(rng.normal(0, noise_cv, n))
    b = 10e-3 * (1 + change) * drift * np.exp(rng.normal(0, noise_cv, n))
    return a.tolist(), b.tolist()


def test_paired_rounds_see_through_host_drift():
    """18% round-to-round drift (this VM's back-to-back spread) and 1% noise within a round:
    a 5% slowdown is found in every trial, an A/A never."""
    rng = np.random.default_rng(0)
    cfg = GateConfig(threshold=0.02, alpha=0.01)
    found = alarms = 0
    for _ in range(100):
        a, b = _rounds(rng, 7, 0.18, 0.01, change=0.05)
        found += judge({"p": a}, {"p": b}, cfg)[0].verdict == "regressed"
        a, b = _rounds(rng, 7, 0.18, 0.01)
        alarms += judge({"p": a}, {"p": b}, cfg)[0].verdict in ("regressed", "improved")
    assert found >= 95 and alarms <= 1


def test_paired_verdict_fields_and_edge_cases():
    cfg = GateConfig(threshold=0.02, alpha=0.01)
    v = judge({"p": [1.0, 1.0, 1.0]}, {"p": [0.9, 0.9, 0.9]}, cfg)[0]
    assert v.verdict == "improved" and v.change == pytest.approx(-0.1) and v.rounds == 3
    (short,) = judge({"p": [1.0, 1.0]}, {"p": [1.2, 1.2]}, cfg)
    assert short.verdict == "unstable" and "at least 3" in short.reason
    (err,) = judge({}, {}, cfg, errors={"p": "side b: boom"})
    assert err.verdict == "error" and err.reason == "side b: boom"
    # a small change inside the threshold is unchanged however certain it is
    (tiny,) = judge({"p": [1.0] * 5}, {"p": [1.01] * 5}, cfg)
    assert tiny.verdict == "unchanged"
    # +69%, interval +5% to +172%: not shown at alpha 0.01 (p 0.02), not ruled out either
    (wide,) = judge({"p": [1.0] * 4}, {"p": [1.3, 2.6, 1.5, 1.6]}, cfg)
    assert wide.verdict == "unstable" and "undecided after 4 rounds" in wide.reason
    assert wide.p_value > cfg.alpha and wide.ci[0] > cfg.threshold


def test_looks_spend_alpha_and_the_fixed_design_is_one_look():
    plan = looks(5, 20, 0.01)
    assert plan.rounds == (5, 10, 15, 20)
    assert sum(plan.alphas) == pytest.approx(0.01) and all(a > 0 for a in plan.alphas)
    # Pocock-type: more than a quarter of alpha at the first of four looks
    assert plan.alphas[0] == pytest.approx(0.01 * np.log(1 + (np.e - 1) / 4))
    assert looks(12, 12, 0.01).alphas == (0.01,) and looks(12, 30, 0.01).rounds[-1] == 30


def _measured(samples):
    from perfsuite.sweep.ab import Measured

    return Measured(Measurement(samples_s=samples), {})


def _sequential(a_rounds, b_rounds, plan, cfg):
    """``run_sequential`` itself on precomputed rounds: each measurement returns the next
    round's value for its side and point."""
    import perfsuite.sweep.ab as ab

    done: dict = {}

    def fake(side, point, protocol, timeout):
        key = (side.name, point.id)
        r = done[key] = done.get(key, -1) + 1
        return _measured([(a_rounds if side.name == "a" else b_rounds)[point.id][r]])

    real, ab.measure = ab.measure, fake
    try:
        points = [SimpleNamespace(id=pid, model="m") for pid in a_rounds]
        return run_sequential(points, MeasureProtocol(), Arm("a", "py"), Arm("b", "py"), plan, cfg,
                              timeout=1.0)[1]  # fmt: skip
    finally:
        ab.measure = real


def test_sequential_rounds_keep_false_alarms_under_alpha_and_find_more():
    """Looks after 5, 10, 15 and 20 rounds: on A/A the family-wise rate of false regressions
    stays under alpha (600 trials of 2 points; false improvements are the same test the
    other way); a 5% slowdown at 2.5% noise per side, which five rounds at the full alpha
    mostly miss, is found in nearly every trial."""
    rng = np.random.default_rng(1)
    cfg = GateConfig(threshold=0.02, alpha=0.01)
    plan, fixed = looks(5, 20, 0.01), looks(5, 5, 0.01)
    alarms = {"regressed": 0, "improved": 0}
    for _ in range(600):
        a, b = {}, {}
        for pid in ("p", "q"):
            a[pid], b[pid] = _rounds(rng, 20, 0.18, 0.025)
        got = {v.verdict for v in _sequential(a, b, plan, cfg)}
        for kind in alarms:
            alarms[kind] += kind in got
    assert max(alarms.values()) <= 600 * 0.01 * 1.5, alarms  # binomial slack around alpha
    found = {"sequential": 0, "fixed": 0}
    for _ in range(200):
        a, b = _rounds(rng, 20, 0.18, 0.025, change=0.05)
        for name, design in (("sequential", plan), ("fixed", fixed)):
            found[name] += _sequential({"p": a}, {"p": b}, design, cfg)[0].verdict == "regressed"
    assert found["sequential"] >= 190 and found["fixed"] < 100, found  # measured 198, 73


def test_a_point_stops_once_decided_and_the_rest_go_on():
    cfg = GateConfig(threshold=0.02, alpha=0.01)
    rng = np.random.default_rng(2)
    clear_a, clear_b = _rounds(rng, 20, 0.1, 0.005, change=0.20)
    same_a, same_b = _rounds(rng, 20, 0.1, 0.002)
    near_a, near_b = _rounds(rng, 20, 0.1, 0.03, change=0.025)
    v = {x.id: x for x in _sequential({"clear": clear_a, "same": same_a, "near": near_a},
                                      {"clear": clear_b, "same": same_b, "near": near_b},
                                      looks(5, 20, 0.01), cfg)}  # fmt: skip
    assert v["clear"].verdict == "regressed" and (v["clear"].look, v["clear"].rounds) == (1, 5)
    assert v["same"].verdict == "unchanged" and v["same"].look == 1  # inside +/- 2%
    assert v["near"].rounds > 5 and v["near"].verdict != "pending"
    assert v["clear"].alpha == pytest.approx(looks(5, 20, 0.01).alphas[0])


def test_a_round_in_turns_pairs_turns_not_pooled_calls():
    """The host switches speed part way through a round: both sides' turns move together.
    Pooled, B's median lands in the slow cluster and A's in the fast one (B/A 1.2); paired
    turn by turn, B/A is 1."""
    from perfsuite.sweep.ab import round_ratio

    fast, slow = [0.055] * 5, [0.066] * 5
    a = Measurement(samples_s=fast + slow[:4], protocol={"turn_medians_s": fast + slow[:4]})
    b = Measurement(samples_s=fast[:4] + slow, protocol={"turn_medians_s": fast[:4] + slow})
    assert round_ratio(a, b) == pytest.approx(1.0)
    pooled = {k: Measurement(samples_s=v.samples_s) for k, v in (("a", a), ("b", b))}
    assert round_ratio(pooled["a"], pooled["b"]) == pytest.approx(1.2)


def test_run_sequential_measures_only_the_points_still_open(monkeypatch):
    """The driver: a decided point is not measured again, and the order within a round
    alternates."""
    from perfsuite.sweep import ab

    calls = []

    def fake(side, point, protocol, timeout):
        calls.append((point.id, side.name))
        slow = 1.5 if side.name == "b" and point.id == "clear" else 1.0
        jitter = 1 + 0.01 * ((len(calls) * 7919) % 13) / 13
        return _measured([0.01 * slow * jitter])

    monkeypatch.setattr(ab, "measure", fake)
    points = [
        SimpleNamespace(id="clear", batch=1, model="m"),
        SimpleNamespace(id="noisy", batch=1, model="m"),
    ]
    out, verdicts = run_sequential(
        points, MeasureProtocol(), Arm("a", "py"), Arm("b", "py"), looks(3, 9, 0.01),
        GateConfig(threshold=0.02, alpha=0.01), timeout=1.0,
    )  # fmt: skip
    per = {pid: sum(c[0] == pid for c in calls) // 2 for pid in ("clear", "noisy")}
    assert per["clear"] == 3 and verdicts[0].verdict == "regressed"
    assert per["noisy"] in (3, 6, 9)
    firsts = [c[1] for c in calls if c[0] == "clear"][::2]
    assert firsts == ["a", "b", "a"]


def _ab(tmp_path, *extra):
    py = sys.executable
    cmd = [py, "-m", "perfsuite.cli", "ab", "--a", py, "--b", py, "--profile", "smoke",
           "--numa-nodes", "none", "--precisions", "fp32", "--rounds", "6", "--max-rounds", "6",
           "--min-time", "0.1", "--out", str(tmp_path), *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.serial
def test_ab_finds_a_slowdown_injected_into_side_b(tmp_path):
    pytest.importorskip("onnxruntime")
    # x2: far past the sub-ms CNN's session-to-session spread, which a busy CI host widens
    # (x1.5 over 3 rounds read +34% [+6%, +70%], p = 0.017: not past alpha = 0.01)
    r = _ab(tmp_path, "--b-env", "PERFSUITE_FAULT=slow:1.0", "--turns", "0")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "regressed" in r.stdout and "small_cnn-onnxruntime-fp32-t1-unbound-b1" in r.stdout
    (run,) = tmp_path.glob("*-ab")
    verdicts = json.loads((run / "ab.json").read_text())["verdicts"]
    assert verdicts[0]["verdict"] == "regressed" and verdicts[0]["change"] > 0.5
    for side in ("a", "b"):
        (rec,) = (run / side / "points").glob("*.json")
        data = json.loads(rec.read_text())
        assert len(data["session_medians_s"]) == 6 and data["software"]["software.onnxruntime"]


@pytest.mark.slow
@pytest.mark.serial
def test_ab_in_turns_finds_a_slowdown_and_names_a_broken_side(tmp_path):
    """Call-interleaved rounds (the default): both sides' workers open at once and take
    turns. B slowed 4x is found in 4 rounds: each round has fresh sessions, and the sub-ms
    CNN's sessions differ by up to 1.8x, so a round's B/A spreads by that factor (a 2x
    slowdown read +17% to +175% in one run of 4 rounds, p 0.011: undecided). A side that
    cannot start is an error for the point, in one line, and exit 1."""
    pytest.importorskip("onnxruntime")
    r = _ab(tmp_path, "--b-env", "PERFSUITE_FAULT=slow:3.0", "--rounds", "4", "--max-rounds",
            "4", "--turns", "3", "--turn-time", "0.05")  # fmt: skip
    assert r.returncode == 1 and "regressed" in r.stdout, r.stdout + r.stderr
    (run,) = tmp_path.glob("*-ab")
    (v,) = json.loads((run / "ab.json").read_text())["verdicts"]
    assert v["rounds"] == 4 and 1.0 < v["change"] < 8.0
    comment = (run / "ab.md").read_text()  # the PR comment's table
    assert "**1 of 1 point(s) regressed or failed**" in comment
    assert f"| regressed | {v['change']:+.2%} |" in comment and v["id"] in comment
    page = (run / "ab.html").read_text()
    assert "<tr class='regressed'><td>regressed</td>" in page and "id='rounds'" in page
    for side in ("a", "b"):
        (rec,) = (run / side / "points").glob("*.json")
        data = json.loads(rec.read_text())
        proto = data["protocol"]  # the last round's
        assert (proto["turns"], proto["turn_s"], len(proto["turn_medians_s"])) == (3, 0.05, 3)
        assert len(data["session_medians_s"]) == 4 and data["settings"]["intra_op_threads"] == 1
        assert data["settings"]["spin_stop"] is True  # a waiting worker does not spin
    r = _ab(tmp_path / "broken", "--b", "false", "--turns", "2")
    assert r.returncode == 1 and "error" in r.stdout, r.stdout + r.stderr
    assert "side b: small_cnn-onnxruntime-fp32-t1-unbound-b1: no output" in r.stdout


def test_ab_bad_input_is_one_line(tmp_path):
    r = _ab(tmp_path, "--a-env", "NOEQUALS")
    assert r.returncode == 2 and r.stderr.strip() == (
        "perfsuite ab: --a-env 'NOEQUALS': use KEY=VALUE"
    )
    r = subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", "ab", "--a", "/no/such/python", "--b",
         sys.executable], capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2 and "no such interpreter" in r.stderr
    r = _ab(tmp_path, "--turns", "-1")
    assert r.returncode == 2 and r.stderr.strip().startswith("perfsuite ab: --turns -1")
    r = _ab(tmp_path, "--rounds", "5", "--max-rounds", "4")
    assert r.returncode == 2 and "fewer than --rounds 5" in r.stderr


def test_the_pr_comment_table_puts_regressions_first_and_keeps_its_columns():
    from perfsuite.records import Verdict
    from perfsuite.sweep.ab_report import markdown

    ok = Verdict(id="m-ok", verdict="unchanged", change=0.001, ci=(-0.01, 0.012), p_value=0.5,
                 rounds=5, alpha=0.01, look=1)  # fmt: skip
    bad = Verdict(id="m|x\nbad", verdict="regressed", change=0.05, ci=(0.03, 0.07), p_value=0.001,
                  rounds=5, alpha=0.01, look=1)  # fmt: skip
    gone = Verdict(id="m-err", verdict="error", rounds=0, reason="B: no | module")
    text = markdown([ok, bad, gone], "a/bin/python", "b/bin/python", "amd-zen4-2c-1n")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert "**2 of 3 point(s) regressed or failed**" in text
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| regressed", "| error", "| unchanged"]
    # an id or reason with "|" or a newline stays in its cell: every row has 7 cells
    assert all(r.replace("\\|", "").count("|") == 8 for r in rows)
