import shutil
import subprocess

import pytest
from paths import REPO


def test_actionlint_passes_on_workflows():
    exe = shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not installed (pip install -e '.[test]' brings it)")
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert workflows, "no workflow files found"
    r = subprocess.run(
        [exe, "-no-color", *map(str, workflows)], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_ci_script_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci
    test_line = next(
        line
        for line in readme.splitlines()
        if "pip install" in line and "&& pytest" in line and "--benchmark-only" not in line
    )
    assert test_line.strip() in ci


def test_import_layers_hold():
    """faces -> fleet -> qualify -> sweep -> history -> gate -> store/execute -> prepare/host ->
    kernels/records/files, the gate pure, and no cycles inside a subpackage ([tool.importlinter]
    in pyproject.toml)."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]' brings it)")
    r = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 kept, 0 broken" in r.stdout and "the gate is pure KEPT" in r.stdout
