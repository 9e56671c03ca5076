"""The pull-request workflow as shipped (.github/workflows/pr.yml), its ``run:`` steps executed
here in order by tools/run_workflow.py, on a throwaway git repository whose last commit
touches a backend: the scope step picks the inference points (not the kernels) and the
profile from the PR's label, ``perfsuite ab`` runs head against base, and the comment body
names the regressed point. Both sides are this interpreter (the step that builds two
environments needs the network and minutes); B is slowed by ``PERFSUITE_FAULT``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO
from tools_by_path import load_tool

PR = REPO / ".github" / "workflows" / "pr.yml"
POINT = "small_cnn-onnxruntime-fp32-t1-unbound-b1"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def _pull_request(tmp_path: Path, label: str) -> tuple[Path, str, Path]:
    """A repository whose head commit changes a backend, its base sha and the event file."""
    repo = tmp_path / "repo"
    (repo / "perfsuite" / "prepare" / "backends").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
         "-m", "base")  # fmt: skip
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "perfsuite" / "prepare" / "backends" / "fast.py").write_text("# faster\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "head")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"labels": [{"name": label}]}}))
    return repo, base, event


def _sides(tmp_path: Path) -> Path:
    """$RUNNER_TEMP with a/ and b/ environments that are this interpreter: a script that
    execs it, not a symlink (a link to a venv's python, outside the venv, starts the base
    interpreter without the venv's packages)."""
    temp = tmp_path / "runner"
    for side in ("a", "b"):
        (temp / side / "bin").mkdir(parents=True)
        python = temp / side / "bin" / "python"
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
    return temp


@pytest.mark.slow
@pytest.mark.serial
def test_the_pr_job_measures_what_the_change_touches_and_comments_the_regression(tmp_path):
    pytest.importorskip("onnxruntime")
    run_workflow = load_tool("run_workflow")
    repo, base, event = _pull_request(tmp_path, "perf-profile:smoke")
    ab_args = ("--numa-nodes none --precisions fp32 --rounds 4 --max-rounds 4 --turns 0 "
               "--min-time 0.1 --b-env PERFSUITE_FAULT=slow:1.0")  # fmt: skip
    result = run_workflow.run_job(
        PR,
        "relative",
        cwd=repo,
        env={"BASE_REF": base, "RUNNER_TEMP": str(_sides(tmp_path)), "AB_ARGS": ab_args,
             "GITHUB_EVENT_PATH": str(event)},
        github={"event_name": "pull_request", "run_id": "7"},
        skip=("Two environments, A (base) and B (head)",),
        timeout=900,
    )  # fmt: skip
    scope = result.step("What the change can touch, and the profile")
    assert scope.status == "passed", scope.output
    assert "kernels=0 inference=1 profile=smoke" in scope.output
    kernels = result.step("Kernel instruction counts, head against base")
    assert "kernels unchanged: not counted" in kernels.output
    measured = result.step("Inference points, head (B) against base (A), interleaved")
    assert measured.status == "passed", measured.output
    assert result.env["AB_STATUS"] == "1" and "regressed" in measured.output, measured.output
    comment = (repo / "perf-results" / "comment.md").read_text()
    assert comment.startswith("<!-- perfsuite-pr-performance -->")
    assert "| regressed |" in comment and POINT in comment, comment
    assert comment in result.summary
    assert result.step("Post or update the PR comment").status == "skipped"  # needs GitHub
    verdict = result.step("Verdict")
    assert verdict.status == "failed" and "perfsuite ab exit: 1" in verdict.output
