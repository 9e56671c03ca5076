"""Interference accounting: what else ran during a measurement window, and what the gate
makes of a disturbed point."""

import multiprocessing
import time

import numpy as np
from history_data import record

from perfsuite import records
from perfsuite.execute import interference
from perfsuite.gate.judge import Side, judge
from perfsuite.gate.statistics import GateConfig


def _stat(root, busy, steal, idle):
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 {steal} 0 0\n")


def test_foreign_cpu_and_steal_from_proc_stat(tmp_path):
    tick = interference._TICK
    _stat(tmp_path, 0, 0, 0)
    with interference.Sampler(tmp_path) as s:
        _stat(tmp_path, tick, 0, tick)  # 1 s busy of 2 s total, not ours: half the machine
    r = s.result
    assert 0.45 < r.foreign_share <= 0.5 and r.contaminated
    _stat(tmp_path, 0, 0, 0)
    with interference.Sampler(tmp_path) as s:
        _stat(tmp_path, 0, 0, 20 * tick)
    assert s.result.foreign_share == 0 and not s.result.contaminated
    _stat(tmp_path, 0, 0, 0)
    with interference.Sampler(tmp_path) as s:
        _stat(tmp_path, 0, tick // 5, 2 * tick)  # ~9% steal
    assert s.result.steal_share > interference.STEAL_SHARE_MAX and s.result.contaminated


def _spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_a_busy_competitor_is_seen():
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(3.0,)) for _ in range(2)]
    for p in procs:
        p.start()
    time.sleep(0.5)  # let them start spinning
    with interference.Sampler() as s:
        time.sleep(0.5)
    for p in procs:
        p.join()
    assert s.result.contaminated and s.result.foreign_share > 0.5, s.result


def _record(pid, samples, dirty):
    w = {"foreign_share": 0.6 if dirty else 0.0, "steal_share": 0.0, "contaminated": dirty,
         "window_s": 1.0, "foreign_cpu_s": 1.2 if dirty else 0.0, "involuntary_switches": 0,
         "migrations": 0}  # fmt: skip
    data = record(pid, 0.01, 1.79e9, np.random.default_rng(0), n=len(samples))
    data["samples_s"] = list(samples)
    data["interference"] = {"contaminated": dirty, "retries": 2, "sessions": [w]}
    return records.load_result(data)


P = "p-fw-fp32-t1-unbound-b1"


def test_a_contaminated_point_cannot_be_a_regression():
    rng = np.random.default_rng(2)
    base = {P: rng.lognormal(0, 0.01, 200) * 0.01}
    fp = records.Fingerprint(fields={}, classes={}, hardware_class="h")
    slow = base[P] * 1.5
    cfg = GateConfig(bootstrap_resamples=200)
    b = Side(fp, base, "base")
    (v,) = judge(b, Side.of_results(fp, [_record(P, slow, True)]), cfg).verdicts
    assert v.verdict == "unstable" and "contaminated while measured" in v.reason
    assert "60% of the CPUs" in v.reason
    (v,) = judge(b, Side.of_results(fp, [_record(P, slow, False)]), cfg).verdicts
    assert v.verdict == "regressed"
