"""The sweep: one test per point of the active profile (see `pytest --perf-plan`)."""


def test_sweep(perf_point, perf_run):
    result = perf_run(perf_point)
    assert result.stats.n >= 1 and result.stats.throughput_ips > 0
