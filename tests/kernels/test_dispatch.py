import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from isa_params import isa_params
from paths import REPO

from perfsuite import kernels
from perfsuite.host import fingerprint
from perfsuite.host.topology import read_topology


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


def expected_runnable(f: dict) -> list[str]:
    """The dispatch rules written out from the CPU flags (independently of dispatch.h)."""
    avx2 = f["avx2"] and f["fma"] and f["os_avx"]
    avx512 = (
        avx2
        and f["os_avx512"]
        and all(f[x] for x in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))
    )
    vnni = avx512 and f["avx512_vnni"]
    bf16 = vnni and f["avx512_bf16"]
    flags = {
        "generic": True,
        "avx2": avx2,
        "avx512": avx512,
        "avx512_vnni": vnni,
        "avx512_bf16": bf16,
    }
    return [name for name, ok in flags.items() if ok]


def test_runnable_variants_follow_the_cpu_flags():
    f = kernels.cpu_features()
    assert kernels.runnable_isas() == expected_runnable(f)
    if not os.environ.get(kernels.FORCE_ENV):
        assert kernels.isa() == expected_runnable(f)[-1]


def test_table_rows_are_levels_best_last():
    assert kernels.KNOWN_ISAS == ("generic", "avx2", "avx512", "avx512_vnni", "avx512_bf16")
    needs = [set(kernels.variant_info(n)["requires"]) for n in kernels.KNOWN_ISAS]
    # each level needs everything the one before it needs
    assert all(a <= b for a, b in zip(needs[1:], needs[2:], strict=False))
    tiles = kernels.variant_info("avx512_bf16")["tiles"]
    assert tiles == {"f32": (12, 32, 1), "u8s8": (12, 32, 4), "bf16": (12, 32, 2)}
    assert kernels.variant_info("avx512_bf16")["bf16_native"]
    assert not kernels.variant_info("avx2")["bf16_native"]


def test_missing_flags_name_what_the_cpu_lacks():
    for name in kernels.KNOWN_ISAS:
        missing = kernels.missing_flags(name)
        assert (not missing) == (name in kernels.runnable_isas())
        have = kernels.cpu_features()
        assert all(not have.get(flag, False) for flag in missing if not flag.startswith("os_"))


@pytest.mark.parametrize("isa", isa_params())
def test_each_variant_can_be_forced_and_is_recorded(isa):
    r = run_python(
        "from perfsuite import kernels as k;"
        "from perfsuite.host.fingerprint import collect_kernels;"
        "import numpy as np; a = np.arange(35, dtype=np.float32).reshape(5, 7);"
        "ok = np.allclose(k.gemm_f32(a, a.T.copy()), a @ a.T);"
        "print(k.isa(), collect_kernels()['kernels.isa'], ok)",
        PERFSUITE_FORCE_ISA=isa,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [isa, isa, "True"]


def test_forcing_a_variant_this_cpu_cannot_run_names_it():
    missing = [n for n in kernels.KNOWN_ISAS if n not in kernels.runnable_isas()]
    if not missing:
        pytest.skip("this CPU runs every variant; nothing to refuse")
    r = run_python("from perfsuite import kernels as k; k.isa()", PERFSUITE_FORCE_ISA=missing[0])
    assert r.returncode != 0
    assert "cannot run on this CPU" in r.stderr


@pytest.mark.parametrize("isa", isa_params())
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
        "from perfsuite.host.fingerprint import collect_kernels;"
        "print(collect_kernels()['kernels.isa'])",
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
    repo = REPO
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


# -- the one list of CPU flags (kernels/cpu_features.h: PS_CPU_FLAGS, PS_OS_STATES) ----------


def test_every_consumer_reads_the_one_flag_list():
    """cpu_features(), the dispatch rows and the fingerprint's isa.* fields all come from
    kernels/cpu_features.h; none of them may know a flag the list does not."""
    assert list(kernels.cpu_features()) == [*kernels.CPU_FLAGS, *kernels.OS_STATES]
    for name in kernels.KNOWN_ISAS:
        info = kernels.variant_info(name)
        assert set(info["requires"]) <= set(kernels.CPU_FLAGS)
        assert set(info["os_state"]) <= set(kernels.OS_STATES)
    assert set(kernels.FINGERPRINT_FLAGS) <= set(kernels.CPU_FLAGS)
    isa_fields = [k for k in fingerprint.FIELD_CLASSES if k.startswith("isa.")]
    assert isa_fields == [f"isa.{flag}" for flag in kernels.FINGERPRINT_FLAGS]


@pytest.mark.parametrize(
    "path", sorted(REPO.glob("baselines/*/*.json")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_recorded_flags_are_the_stored_baselines_isa_fields(path):
    """isa.* fields are must-match: marking a flag recorded (or not) in PS_CPU_FLAGS would make
    every stored baseline incomparable, so the change must come with new baselines."""
    fields = json.loads(path.read_text())["fingerprint"]["fields"]
    stored = {k for k in fields if k.startswith("isa.")}
    assert stored == {f"isa.{flag}" for flag in kernels.FINGERPRINT_FLAGS}


def test_flag_names_are_proc_cpuinfo_spellings(host_tree):
    """The fingerprint looks the names up in /proc/cpuinfo: a Genoa's lists every flag but
    AVX-VNNI (VEX-encoded, Zen 5 and Intel) and AMX (Intel)."""
    genoa = read_topology(host_tree("epyc9654-1s-nps1")).cpu.flags
    elsewhere = {"avx_vnni", "amx_tile", "amx_int8", "amx_bf16"}
    assert set(kernels.CPU_FLAGS) - elsewhere <= genoa


def test_cpuid_bits_agree_with_proc_cpuinfo():
    """A wrong leaf, register or bit in PS_CPU_FLAGS shows as a flag cpuid and Linux disagree
    on (Linux hides AVX-512 flags when the OS does not save ZMM state: compare the rest)."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo")
    linux = read_topology("/").cpu.flags
    have = kernels.cpu_features()
    flags = [f for f in kernels.CPU_FLAGS if have["os_avx512"] or not f.startswith("avx512")]
    assert {f: have[f] for f in flags} == {f: f in linux for f in flags}
