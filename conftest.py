"""Repo-local pytest configuration. The perfsuite plugin itself lives in perfsuite/ and is
registered through the pytest11 entry point; shared test fixtures are in tests/conftest.py."""

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The test suite runs on xdist workers (addopts: -n); the sweep never does: under xdist
    pytest-benchmark disables itself, and parallel points would measure each other."""
    if config.getoption("benchmark_only", False) or config.getoption("perf_plan", False):
        config.option.numprocesses = None
        config.option.dist = "no"
