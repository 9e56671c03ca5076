"""Kernel benchmarks: our kernels against numpy in the same process."""

import numpy as np
import pytest

from perfsuite import kernels


@pytest.mark.parametrize("isa", kernels.runnable_isas())
def test_dot_f32(benchmark, isa):
    x = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32)
    benchmark.extra_info.update({"isa": isa, "n": x.size, "bytes": 2 * x.nbytes})
    result = benchmark(kernels.dot_f32, x, x, isa=isa)
    assert result == pytest.approx(float(x.astype(np.float64) @ x), rel=1e-4)


def test_dot_f32_numpy(benchmark):
    x = np.random.default_rng(0).standard_normal(1 << 20, dtype=np.float32)
    benchmark.extra_info.update({"impl": "numpy", "n": x.size})
    benchmark(np.dot, x, x)
