"""Kernel benchmarks run when the active perfsuite profile asks for kernels (default,
nightly, qualification); otherwise they are deselected (reported as deselected), so plain
`pytest` (smoke profile) stays quick. At the end of a run that measured kernels, their ratios
(ours vs numpy, vs the seed kernel, threads, INT8 vs FP32) are printed from this run's medians."""

from __future__ import annotations

import time

import pytest

from perfsuite import records
from perfsuite.plugin import SESSION

UNITS = {"gflops": "GFLOP/s", "gops": "GOP/s", "bandwidth_gbs": "GB/s"}

RESULTS = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[RESULTS] = {}


KERNEL_FILES = ("test_kernels_bench.py", "test_kernels_decode_bench.py")


def pytest_collection_modifyitems(config, items):
    for item in items:  # pytest-benchmark's groups: one operation (and size) per table
        if item.path.name == "test_kernels_decode_bench.py":
            params = getattr(item, "callspec", None) and item.callspec.params
            label = params.get("shape") or f"m={params.get('m')}"
            item.add_marker(pytest.mark.benchmark(group=f"kernels decode {label}"))
        elif item.path.name == "test_kernels_bench.py":
            op = (
                "gemm"
                if "gemm" in item.originalname or "matmul" in item.originalname
                else (item.originalname.removeprefix("test_"))
            )
            n = getattr(item, "callspec", None) and item.callspec.params.get("n")
            item.add_marker(pytest.mark.benchmark(group=f"kernels {op}" + (f" n={n}" if n else "")))
    if config.stash[SESSION].profile.kernels:
        return
    dropped = [i for i in items if i.path.name in KERNEL_FILES]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i.path.name not in KERNEL_FILES]


@pytest.fixture(scope="session")
def kernel_results(request):
    """(kind, threads, n) -> rate, filled by the kernel benchmarks."""
    return request.config.stash[RESULTS]


@pytest.fixture
def save_kernel(request, benchmark):
    """save_kernel(rate, unit): this benchmark's rate kept in the run (summary.json's
    ``kernels``), so the exports carry the kernels beside the inference points."""

    def save(rate: float, unit: str) -> None:
        figure = records.Headline(
            name=UNITS[unit], value=rate, unit=UNITS[unit], higher_is_better=True
        )
        request.config.stash[SESSION].get().kernels.append(
            records.KernelResult(
                id=benchmark.name,
                group=benchmark.group or "kernels",
                figure=figure,
                samples_s=[x for x in benchmark.stats.stats.data if x > 0],
                timestamp=time.time(),
            )
        )

    return save


def _ratio(r, num, den):
    return f"{r[num] / r[den]:.2f}x" if num in r and den in r and r[den] else "n/a"


def pytest_terminal_summary(terminalreporter, config):
    r = config.stash.get(RESULTS, {})
    if not r:
        return
    tr = terminalreporter
    tr.section("perfsuite kernel ratios (medians of this run)")
    threads = sorted({t for (kind, t, _n) in r if kind == "gemm_f32"})
    sizes = sorted({n for (kind, _t, n) in r if kind == "gemm_f32"})
    from perfsuite import kernels

    tr.write_line(
        f"kernel variant: {kernels.isa()} (runnable: {', '.join(kernels.runnable_isas())})"
    )
    for t in sorted({t for (kind, t, _n) in r if kind == "peak"}):
        tr.write_line(f"measured FMA peak, {t} thread(s): {r[('peak', t, 0)]:.1f} GFLOP/s")
    tr.write_line(
        f"{'n':>6} {'thr':>4} {'gemm GF/s':>10} {'numpy GF/s':>11} {'gemm/numpy':>11} "
        f"{'gemm/seed':>10} {'gemm/peak':>10} {'int8/f32':>9} {'int8x/f32':>10} "
        f"{'bf16/f32':>9} {'2t/1t':>6}"
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
                f"{_ratio(r, ('gemm_bf16', t, n), g):>9} "
                f"{_ratio(r, g, ('gemm_f32', 1, n)) if t > 1 else '':>6}"
            )
    for (kind, t, n), v in sorted(r.items()):
        if kind == "paired":
            ratios = "; ".join(
                f"{k} {m:.2f} [{lo:.2f}-{hi:.2f}]" for k, (m, lo, hi) in v["ratios"].items()
            )
            tr.write_line(
                f"interleaved rounds, n={n}, {t} thread(s), median of per-round ratios "
                f"[min-max]: {ratios}"
            )
    for (_kind, t, shape), v in sorted((k, v) for k, v in r.items() if k[0] == "decode"):
        gbs = v["gbs"]
        ratios = "; ".join(
            f"{k} {m:.2f} [{lo:.2f}-{hi:.2f}]" for k, (m, lo, hi) in v["ratios"].items()
        )
        tr.write_line(
            f"decode {shape} ({v['weights_mb']:.0f} MB of q4), {t} thread(s): gemv_q4 "
            f"{gbs['gemv_q4']:.1f} GB/s, gemv_q8 {gbs['gemv_q8']:.1f}, read {gbs['read']:.1f}, "
            f"MatMulNBits acc4 {gbs['MatMulNBits q4 acc4']:.1f} (q8 "
            f"{gbs['MatMulNBits q8 acc4']:.1f}), OpenVINO "
            f"{gbs['OpenVINO q4']:.1f}; median per-round ratios "
            f"[min-max]: {ratios}"
        )
    for (_kind, t, m), v in sorted((k, v) for k, v in r.items() if k[0] == "decode_batch"):
        tr.write_line(
            f"decode batch m={m}, {t} thread(s): gemv_q4 {v['gemv_q4']:.1f} GFLOP/s, SGEMM on "
            f"dequantized weights {v['gemm_f32']:.1f} GFLOP/s"
        )
    for (kind, t, _n), v in sorted(
        (k, v) for k, v in r.items() if k[0] not in ("decode", "decode_batch")
    ):
        if kind == "triad":
            tr.write_line(f"STREAM triad, {t} thread(s): {v:.1f} GB/s")
        if kind == "false_sharing":
            tr.write_line(f"false sharing, {t} threads: packed/padded time = {v:.2f}x")
