"""The machine-speed probes around each window: what they measure and what the report makes
of a window across which the speed moved."""

from perfsuite.execute import calibration
from perfsuite.sweep.report import speed_lines


def _session(fma0, fma1, bw0=10.0, bw1=10.0):
    return {
        "before": {"fma_gflops": fma0, "triad_gbs": bw0, "seconds": 0.01},
        "after": {"fma_gflops": fma1, "triad_gbs": bw1, "seconds": 0.01},
    }


def _record(pid, *sessions, threads=1):
    return {"id": pid, "point": {"threads": threads}, "calibration": {"sessions": list(sessions)}}


def test_probe_measures_clock_and_bandwidth():
    s = calibration.probe(threads=1)
    assert s.fma_gflops > 1 and s.triad_gbs > 0.5 and 0 < s.seconds < 1


def test_drift_is_after_over_before():
    d = calibration.drift(*_session(40.0, 30.0, 10.0, 11.0).values())
    assert d == {"fma_gflops": 0.75, "triad_gbs": 1.1}


def test_only_a_speed_change_past_the_limit_is_named():
    steady = _record("a", _session(40.0, 41.0), _session(40.0, 39.0))
    assert calibration.moved(steady["calibration"]) is None
    clock = _record("b", _session(40.0, 41.0), _session(40.0, 30.0, 10.0, 10.8))
    assert calibration.moved(clock["calibration"]) == {"probe": "fma_gflops", "ratio": 0.75}
    memory = _record("c", _session(40.0, 40.0, 10.0, 12.0))
    assert calibration.moved(memory["calibration"])["probe"] == "triad_gbs"
    assert calibration.moved(None) is None  # records from before the probes existed

    lines = speed_lines([steady, clock, memory, {"id": "old", "point": {"threads": 1}}])
    assert lines[0].startswith("machine speed (calibration probes, 1 thread): FMA 30.0-41.0")
    assert "over 10 probes" in lines[0]
    assert lines[1].startswith("~ b: the FMA probe read 0.75x") and lines[2].startswith("~ c:")
    assert len(lines) == 3
    assert speed_lines([{"id": "old", "point": {"threads": 1}}]) == []
