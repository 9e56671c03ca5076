"""Benchmarks run under ``pytest --benchmark-only``; plain ``pytest`` deselects them (it
reports them as deselected) so the test run stays quick."""


def pytest_collection_modifyitems(config, items):
    if config.getoption("benchmark_only", False):
        return
    here = str(config.rootpath / "tests" / "benchmarks")
    keep = [i for i in items if not str(i.path).startswith(here)]
    dropped = [i for i in items if str(i.path).startswith(here)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
