"""tools/reference_harness.py: the independent check of perfsuite's figures still runs."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from tools_by_path import TOOLS, load_tool

TOOL = TOOLS / "reference_harness.py"


def _tool():
    return load_tool("reference_harness")


POINT = {
    "model": "small_cnn", "framework": "onnxruntime", "precision": "fp32", "threads": 1,
    "numa_node": None, "batch": 1, "mode": "latency", "threads_spec": "1", "skip": None,
    "id": "small_cnn-onnxruntime-fp32-t1-unbound-b1",
}  # fmt: skip


def test_the_plain_loop_serves_turns():
    """``--serve`` speaks perfsuite.execute.turns' protocol: ready, one answer per turn with
    at least one call, and it ends on anything else."""
    pytest.importorskip("onnxruntime")
    cmd = [sys.executable, str(TOOL), "--serve", "--model", "small_cnn", "--warmup", "0.05"]
    out = subprocess.run(cmd, input="turn 0\nturn 0.02\nstop\n", capture_output=True,
                         text=True, timeout=300).stdout.splitlines()  # fmt: skip
    ready, first, second, end = (json.loads(x) for x in out)
    assert ready == {"ready": True} and end == {}
    assert len(first["samples_s"]) == 1 and len(second["samples_s"]) >= 1
    assert all(0 < s < 1 for s in first["samples_s"] + second["samples_s"])


@pytest.mark.slow
@pytest.mark.serial
def test_a_round_in_turns_pairs_the_harness_with_perfsuites_timed_path():
    """Both orders of opening give a finite ratio of perfsuite's throughput to the plain
    loop's (its size is the host's business: the sub-ms CNN's sessions differ by up to 1.8x)."""
    pytest.importorskip("onnxruntime")
    tool = _tool()
    for r in (0, 1):
        ratio = tool._turn_round(POINT, r, 3, 0.01)
        assert math.isfinite(ratio) and 0.2 < ratio < 5
