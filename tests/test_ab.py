"""Relative runs: the paired verdicts on synthetic rounds, and `perfsuite ab` for real with a
known slowdown injected into side B."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from perfsuite.gate.paired import judge
from perfsuite.gate.statistics import GateConfig


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
        alarms += judge({"p": a}, {"p": b}, cfg)[0].verdict != "unchanged"
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


def _ab(tmp_path, *extra):
    py = sys.executable
    cmd = [py, "-m", "perfsuite.cli", "ab", "--a", py, "--b", py, "--profile", "smoke",
           "--numa-nodes", "none", "--precisions", "fp32", "--rounds", "6",
           "--min-time", "0.1", "--out", str(tmp_path), *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_ab_finds_a_slowdown_injected_into_side_b(tmp_path):
    pytest.importorskip("onnxruntime")
    # x2: far past the sub-ms CNN's session-to-session spread, which a busy CI host widens
    # (x1.5 over 3 rounds read +34% [+6%, +70%], p = 0.017: not past alpha = 0.01)
    r = _ab(tmp_path, "--b-env", "PERFSUITE_FAULT=slow:1.0")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "regressed" in r.stdout and "small_cnn-onnxruntime-fp32-t1-unbound-b1" in r.stdout
    (run,) = tmp_path.glob("*-ab")
    verdicts = json.loads((run / "ab.json").read_text())["verdicts"]
    assert verdicts[0]["verdict"] == "regressed" and verdicts[0]["change"] > 0.5
    for side in ("a", "b"):
        (rec,) = (run / side / "points").glob("*.json")
        data = json.loads(rec.read_text())
        assert len(data["session_medians_s"]) == 6 and data["software"]["software.onnxruntime"]


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
