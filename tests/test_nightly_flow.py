"""The nightly workflow as shipped, run step by step here (tools/run_workflow.py reads
.github/workflows/nightly.yml's ``run:`` steps and executes them in order with the
``GITHUB_*`` variables, ``GITHUB_ENV`` and ``GITHUB_STEP_SUMMARY``), on two MLP points
and a throwaway PostgreSQL database, over simulated nights:

1-2. the history fills, both nights pass (no committed baseline for the class is needed);
3.   one point made twice as slow (PERFSUITE_FAULT=slow:1.0@ID: a step no shared-VM noise
     reaches, so the test cannot flake; the 5% detection rate is measured separately, in
     docs/measurements/): the job fails at the gate step, naming the point and the commits;
4.   after ``perfsuite db annotate --accept`` on night 3, the same slowdown passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tools_by_path import load_tool

from perfsuite.store.database import HistoryStore

REPO = Path(__file__).resolve().parents[1]
NIGHTLY = REPO / ".github" / "workflows" / "nightly.yml"
SLOW = "mlp8mb-onnxruntime-fp32-t1-unbound-b1"
GATE_STEP = "Gate on the history"


# Two MLP points (calls of a fraction of a millisecond: the smoke model's 50 us calls switch
# between two speeds from one process to the next on a shared VM, which the gate rightly
# calls unstable).
PROFILE = """
[nightly-test]
models = ["mlp8mb", "mlp16mb"]
frameworks = ["onnxruntime"]
precisions = ["fp32"]
threads = ["1"]
numa_nodes = ["none"]
batch = [1]
mode = ["latency"]
min_time = 0.5
min_samples = 50
warmup_time = 0.1
warmup_calls = 5
timeout = 300
kernels = false
sessions = 1
"""


def _night(run_workflow, i: int, store: str, out: Path, fault: str = ""):
    profiles = out / "profiles.toml"
    profiles.write_text(PROFILE)
    return run_workflow.run_job(
        NIGHTLY,
        "gate",
        cwd=REPO,
        env={
            "PROFILE": "nightly-test",
            "PERF_ARGS": f"--perf-config={profiles}",
            "PERF_OUT": str(out / f"night{i}"),
            "PERFSUITE_FAULT": fault,
            "PERFSUITE_STORE": store,
        },
        github={
            "sha": str(i) * 40,
            "ref_name": "main",
            "repository": "example/perfsuite",
            "event_name": "schedule",
            "run_id": str(1000 + i),
        },
        skip=("Build and install",),
        timeout=900,
    )


def test_three_nights_then_an_accepted_change(postgres_url, tmp_path):
    run_workflow = load_tool("run_workflow")
    nights = {}
    for i in (1, 2):
        nights[i] = job = _night(run_workflow, i, postgres_url, tmp_path)
        assert job.passed, [(s.name, s.output[-2000:]) for s in job.steps if s.status == "failed"]
        assert "history gate: passed" in job.step(GATE_STEP).output
    assert "gathering history" in nights[1].summary
    assert "Trends of the last 30 nights" in nights[2].summary
    assert (tmp_path / "night2" / "trends.html").is_file()

    nights[3] = job = _night(run_workflow, 3, postgres_url, tmp_path, f"slow:1.0@{SLOW}")
    assert not job.passed and job.step(GATE_STEP).status == "failed"
    gate_log = job.step(GATE_STEP).output
    assert f"REGRESSION {SLOW}" in gate_log, gate_log
    commits = "2" * 12 + ".." + "3" * 12
    assert commits in gate_log and commits in job.summary and SLOW in job.summary
    assert job.step("Trend pages").status == "passed"  # if: always()
    others = [line for line in gate_log.splitlines() if line.startswith("REGRESSION")]
    assert len(others) == 1, others  # the other points did not move

    store = HistoryStore(postgres_url)
    assert [r.commit for r in store.runs()] == [str(i) * 40 for i in (3, 2, 1)]
    third = store.run().run_key[:12]
    annotate = [sys.executable, "-m", "perfsuite.cli", "db", "--store", postgres_url]
    annotate += [
        "annotate",
        SLOW,
        "--run",
        third,
        "--text",
        "slower kernel: intended",
        "--accept",
    ]
    r = subprocess.run(annotate, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr

    nights[4] = job = _night(run_workflow, 4, postgres_url, tmp_path, f"slow:1.0@{SLOW}")
    assert job.passed, job.step(GATE_STEP).output
    assert "history gate: passed" in job.step(GATE_STEP).output


def test_the_runner_refuses_what_it_cannot_evaluate(tmp_path):
    run_workflow = load_tool("run_workflow")
    flow = tmp_path / "w.yml"
    flow.write_text(
        "jobs:\n  j:\n    env:\n      X: ${{ fromJSON('1') }}\n    steps:\n      - run: 'true'\n"
    )
    with pytest.raises(run_workflow.WorkflowError, match="not supported"):
        run_workflow.run_job(flow, "j", cwd=tmp_path)
    with pytest.raises(run_workflow.WorkflowError, match="no job 'k'"):
        run_workflow.run_job(flow, "k", cwd=tmp_path)
