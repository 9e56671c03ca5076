"""The machine-speed probes around each window and the run's summary line of them."""

from types import SimpleNamespace

from perfsuite import records
from perfsuite.execute import calibration
from perfsuite.sweep.report import speed_lines


def _session(fma0, fma1, bw0=10.0, bw1=10.0):
    return {
        "before": {"fma_gflops": fma0, "triad_gbs": bw0, "seconds": 0.01},
        "after": {"fma_gflops": fma1, "triad_gbs": bw1, "seconds": 0.01},
    }


def test_probe_measures_clock_and_bandwidth():
    s = calibration.probe()
    assert s.fma_gflops > 1 and s.triad_gbs > 0.5 and 0 < s.seconds < 1


def test_the_run_line_gives_the_range_of_every_probe():
    def rec(*sessions):
        probes = records.Calibration(sessions=sessions) if sessions else None
        return SimpleNamespace(calibration=probes)

    old = rec()  # records from before the probes existed
    recs = [rec(_session(40.0, 41.0), _session(30.0, 39.0)), rec(_session(40, 40, 9.5, 12)), old]
    (line,) = speed_lines(recs)
    assert line == (
        "machine speed (calibration probes, 1 thread): FMA 30.0-41.0 GFLOP/s, "
        "triad 9.5-12.0 GB/s over 6 probes"
    )
    assert speed_lines([old]) == []
