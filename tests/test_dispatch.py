import os
import subprocess
import sys

import numpy as np
import pytest

from perfsuite import kernels


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_generic_always_runnable():
    assert kernels.runnable_isas()[0] == "generic"
    assert kernels.isa() in kernels.runnable_isas()


def test_best_isa_matches_cpu_features():
    f = kernels.cpu_features()
    expect_avx2 = f["avx2"] and f["fma"] and f["os_avx"]
    assert ("avx2" in kernels.runnable_isas()) == expect_avx2
    if not os.environ.get(kernels.FORCE_ENV):
        assert kernels.isa() == ("avx2" if expect_avx2 else "generic")


@pytest.mark.parametrize("isa", kernels.runnable_isas())
@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000])
def test_dot_every_variant(isa, n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal((2, n), dtype=np.float32)
    assert kernels.dot_f32(x, y, isa=isa) == pytest.approx(
        float(x.astype(np.float64) @ y), rel=1e-5, abs=1e-4
    )


def test_forced_generic_in_subprocess():
    r = run_python(
        "import numpy as np; from perfsuite import kernels as k; x = np.ones(17, np.float32);"
        "a = np.arange(35, dtype=np.float32).reshape(5, 7);"
        "ok = np.allclose(k.gemm_f32(a, a.T.copy()), a @ a.T);"
        "print(k.isa(), k.dot_f32(x, x), ok)",
        PERFSUITE_FORCE_ISA="generic",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["generic", "17.0", "True"]


def test_forced_isa_is_recorded_in_fingerprint():
    r = run_python(
        "from perfsuite.fingerprint import collect_kernels;print(collect_kernels()['kernels.isa'])",
        PERFSUITE_FORCE_ISA="generic",
    )
    assert r.stdout.strip() == "generic", r.stderr


def test_unknown_forced_isa_is_a_clear_error():
    r = run_python("from perfsuite import kernels as k; k.isa()", PERFSUITE_FORCE_ISA="avx9000")
    assert r.returncode != 0
    assert "PERFSUITE_FORCE_ISA='avx9000' is not a known ISA variant" in r.stderr
    assert "generic" in r.stderr


def test_bad_input_is_rejected():
    with pytest.raises(TypeError, match="float32"):
        kernels.dot_f32(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="differ in length"):
        kernels.dot_f32(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="unknown isa"):
        kernels.dot_f32(np.ones(3, np.float32), np.ones(3, np.float32), isa="sse9")


def test_build_without_compiler_says_so(tmp_path):
    repo = __import__("pathlib").Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "build_ext",
            "--build-temp",
            str(tmp_path / "t"),
            "--build-lib",
            str(tmp_path / "l"),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CC": "/nonexistent/gcc"},
    )
    assert r.returncode != 0
    assert "no C compiler found" in r.stderr + r.stdout
