"""Benchmarks run under ``pytest --benchmark-only``; plain ``pytest`` deselects them (it
reports them as deselected) so the test run stays quick. At the end of a benchmark run the
kernel ratios (ours vs numpy, vs the article's seed kernel, threads, INT8 vs FP32) are printed
from the medians measured in this run."""

from __future__ import annotations

import pytest

RESULTS = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[RESULTS] = {}


def pytest_collection_modifyitems(config, items):
    if config.getoption("benchmark_only", False):
        return
    here = str(config.rootpath / "tests" / "benchmarks")
    keep = [i for i in items if not str(i.path).startswith(here)]
    dropped = [i for i in items if str(i.path).startswith(here)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def kernel_results(request):
    """Rates measured in this run: (kind, threads, n) for kernels, ("infer", framework,
    precision, threads) for inference, ("gate", ...) for accuracy results."""
    return request.config.stash[RESULTS]


def _ratio(r, num, den):
    return f"{r[num] / r[den]:.2f}x" if num in r and den in r and r[den] else "n/a"


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash.get(RESULTS, {})
    points = {k[1:]: v for k, v in results.items() if isinstance(k, tuple) and k[0] == "infer"}
    if points:
        from perfsuite.report import inference_table

        model = results["infer_model"]
        terminalreporter.section(
            f"perfsuite inference ({model}, batch 1, latency mode, medians of this run)"
        )
        gates = {k[1:]: v for k, v in results.items() if isinstance(k, tuple) and k[0] == "gate"}
        variants = {k[1:]: v for k, v in results.items()
                    if isinstance(k, tuple) and k[0] == "variant"}
        inference_table(terminalreporter.write_line, points, gates, variants)
    kernel_summary(
        terminalreporter, {k: v for k, v in results.items() if isinstance(k, tuple) and len(k) == 3}
    )


def kernel_summary(tr, r: dict) -> None:
    if not r:
        return
    tr.section("perfsuite kernel ratios (medians of this run)")
    threads = sorted({t for (kind, t, _n) in r if kind == "gemm_f32"})
    sizes = sorted({n for (kind, _t, n) in r if kind == "gemm_f32"})
    for t in sorted({t for (kind, t, _n) in r if kind == "peak"}):
        tr.write_line(f"measured FMA peak, {t} thread(s): {r[('peak', t, 0)]:.1f} GFLOP/s")
    tr.write_line(
        f"{'n':>6} {'thr':>4} {'gemm GF/s':>10} {'numpy GF/s':>11} {'gemm/numpy':>11} "
        f"{'gemm/seed':>10} {'gemm/peak':>10} {'int8/f32':>9} {'int8x/f32':>10} {'2t/1t':>6}"
    )
    for n in sizes:
        for t in threads:
            g = ("gemm_f32", t, n)
            peak = r.get(("peak", t, 0))
            tr.write_line(
                f"{n:>6} {t:>4} {r.get(g, float('nan')):>10.1f} "
                f"{r.get(('numpy', t, n), float('nan')):>11.1f} "
                f"{_ratio(r, g, ('numpy', t, n)):>11} {_ratio(r, g, ('matmul_seed', 1, n)):>10} "
                f"{(r[g] / peak if g in r and peak else float('nan')):>10.2f} "
                f"{_ratio(r, ('gemm_u8s8', t, n), g):>9} "
                f"{_ratio(r, ('gemm_u8s8_exact', t, n), g):>10} "
                f"{_ratio(r, g, ('gemm_f32', 1, n)) if t > 1 else '':>6}"
            )
    for (kind, t, _n), v in sorted(r.items()):
        if kind == "triad":
            tr.write_line(f"STREAM triad, {t} thread(s): {v:.1f} GB/s")
        if kind == "false_sharing":
            tr.write_line(f"false sharing, {t} threads: packed/padded time = {v:.2f}x")
