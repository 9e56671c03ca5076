"""Does a process draw state that its sessions share? Per point, fresh processes one after
another (points interleaved), each measuring ``--sessions`` sessions with perfsuite's runner as
the sweep does; compares the spread of session medians within a process with the spread of
the process means.

    python tools/process_spread.py perf-results/<run> --ids 'resnet50-*-t2-*' [--processes 6]
    python tools/process_spread.py RUN --prefix 'setarch x86_64 -R'   # ASLR off

Measured on the Zen 4 VM (README, "Isolation"): within a process 0.3-0.6%, across processes
4-8% at 2 threads, which is why the default executor runs each session in a process of its own.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

CHILD = """
import json, sys
from perfsuite.execute.runner import run_point
point, protocol = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps(run_point(point, protocol)["session_medians_s"]))
"""


def spread(medians: list[list[float]]) -> tuple[float, float]:
    """(mean CV of the sessions within a process, CV of the process means)."""
    from perfsuite.dispersion import cv

    m = np.asarray(medians, float)  # processes x sessions
    return float(np.mean([cv(row) for row in m])), cv(m.mean(axis=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run directory: its points are measured again")
    ap.add_argument("--ids", default="*", help="glob of point ids (default: all)")
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--prefix", default="", help="command to run each process under")
    a = ap.parse_args(argv)
    points = {}
    for path in sorted(a.run.glob("points/*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") == "ok" and fnmatch.fnmatch(rec["id"], a.ids):
            points[rec["id"]] = rec["point"]
    if not points or a.processes < 2 or a.sessions < 2:
        print("process_spread: need ok point records, --processes >= 2, --sessions >= 2",
              file=sys.stderr)  # fmt: skip
        return 2
    protocol = {"min_time": a.min_time, "min_samples": 10, "warmup_time": 0.5,
                "warmup_calls": 3, "counters": False, "sessions": a.sessions}  # fmt: skip
    got: dict[str, list[list[float]]] = {pid: [] for pid in points}
    for i in range(a.processes):
        for pid in points if i % 2 == 0 else reversed(points):
            cmd = [*shlex.split(a.prefix), sys.executable, "-c", CHILD]
            out = subprocess.run([*cmd, json.dumps(points[pid]), json.dumps(protocol)],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            got[pid].append(json.loads(out.strip().splitlines()[-1]))
    for pid, medians in got.items():
        within, across = spread(medians)
        levels = ", ".join(f"{np.mean(m) * 1e3:.2f}" for m in medians)
        print(f"{pid:<50} within a process {within:6.2%}  across processes {across:6.2%}"
              f"  (process means ms: {levels})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
