"""The sweep: one test per point of the active profile (see `pytest --perf-plan`)."""


def test_sweep(perf_point, perf_run):
    record = perf_run(perf_point)
    assert record["stats"]["n"] >= 1 and record["stats"]["throughput_ips"] > 0
