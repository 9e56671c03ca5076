"""Every face exits with a documented code: 0 pass, 1 regression/FAIL, 2 usage or input
error, 3 internal error (the CLI); pytest's own codes for the plugin (1 gate failed, 3
internal error, 4 usage error). Bad input gets one line, never a traceback; output locations
are checked before any measuring."""

import subprocess
import sys
import time

import pytest
from paths import REPO

from perfsuite import cli

CLI = [sys.executable, "-m", "perfsuite.cli"]
BASE = str(REPO / "baselines/amd-zen3-2c-1n/default.json")


def run(*args, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, **kw)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_info_codes(tmp_path, host_tree):
    assert run("info", "--root", str(host_tree("kvm-zen3-2vcpu"))).returncode == 0
    r = run("info", "--root", str(tmp_path / "missing"))
    assert r.returncode == 2 and "is not a directory" in one_line(r.stderr)
    r = run("info", "--root", str(tmp_path))
    assert r.returncode == 2 and "holds no host tree" in one_line(r.stderr)
    r = run("info", "--bogus")
    assert r.returncode == 2  # argparse


def test_compare_checks_its_report_location_first(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    base = BASE
    r = run("compare", base, base, "--report", str(blocker / "rep"))
    assert r.returncode == 2
    assert "--report" in one_line(r.stderr) and "is a file, not a directory" in r.stderr
    assert run("compare", base, base).returncode == 0


def test_qualify_checks_its_outputs_before_measuring(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    t0 = time.monotonic()
    r = run("qualify", "--quick", "--out", str(blocker))
    assert r.returncode == 2 and "--out" in one_line(r.stderr)
    assert time.monotonic() - t0 < 30 and "PASS" not in r.stdout  # nothing was measured
    r = run("qualify", "--save-reference", str(tmp_path))
    assert r.returncode == 2 and "is a directory" in one_line(r.stderr)


def test_an_internal_error_is_one_line_and_code_3(monkeypatch, capsys):
    from perfsuite.cli import compare

    def broken(*a, **k):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(compare, "judge", broken)
    base = BASE
    assert cli.main(["compare", base, base]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: simulated bug" in one_line(err)
    monkeypatch.setenv("PERFSUITE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="simulated bug"):
        cli.main(["compare", base, base])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"fma_gflops_per_core": {"expected": "nan", "warn_below": 0.8, "fail_below": 0.5}},
         "fma_gflops_per_core.expected: Input should be a finite number"),
        ({"gemm_efficiency_min": 2}, "gemm_efficiency_min: Input should be less than or equal"),
        ({"bandwidth_gbs_per_node": {"expected": 30, "warn_below": 0.5, "fail_below": 0.8}},
         "fail_below must not exceed warn_below"),
        ({"topolgy": {}}, "topolgy: Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_a_bad_reference_is_an_input_error(tmp_path, change, message):
    import json

    ref = json.loads((REPO / "perfsuite/references/amd-zen4-2c-1n.json").read_text())
    ref.update(change)
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(ref).replace('"nan"', "NaN"))
    r = run("qualify", "--quick", "--reference", str(path), "--out", str(tmp_path / "q"))
    assert r.returncode == 2 and message in one_line(r.stderr)


def test_an_unusable_forced_isa_is_a_usage_error():
    import os

    env = {**os.environ, "PERFSUITE_FORCE_ISA": "avx9000"}
    r = subprocess.run([*CLI, "info"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "PERFSUITE_FORCE_ISA='avx9000'" in one_line(r.stderr)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", "-k", "x"],
        capture_output=True, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == pytest.ExitCode.USAGE_ERROR and "avx9000" in r.stderr
