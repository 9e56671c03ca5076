"""Between-run CV of each point over several run directories (issue 12's "between-session CV"
and item 3's question: does dividing by the calibration probes cut it?).

    python tools/between_run_cv.py perf-results/2026*-default [--ids 'resnet50-*']

Per point: the CV across runs of its throughput (1 / median latency), of the same divided by
the point's own FMA probe and triad probe (mean of its before/after probes), of three other
estimators from the same samples (1 / mean latency, the 10th percentile of latency, the lower
of the session medians), and ``per_run``: the throughput divided by its run's machine factor,
the median over the run's points with the same thread count of their throughput relative to
their own mean over the runs. ``per_run`` is the spread left once a run-wide speed change is
taken out, which is what the gate judges after a machine-wide shift. The last lines give the
median CV per thread count.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

import numpy as np


def cv(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.std(x, ddof=1) / np.mean(x)) if len(x) > 1 else float("nan")


def _probe(rec: dict, key: str) -> float | None:
    values = [
        s[side][key] for s in (rec.get("calibration") or {}).get("sessions", [])
        for side in ("before", "after")
    ]  # fmt: skip
    return float(np.mean(values)) if values else None


def figures(rec: dict) -> dict:
    ips = rec["stats"]["throughput_ips"]
    batch = rec["point"]["batch"]
    out = {
        "raw": ips,
        "mean": batch / float(np.mean(rec["samples_s"])),
        "p10": batch / float(np.percentile(rec["samples_s"], 10)),
        "best_session": batch / min(rec["session_medians_s"] or [1 / ips * batch]),
    }
    for name, key in (("per_fma", "fma_gflops"), ("per_triad", "triad_gbs")):
        p = _probe(rec, key)
        out[name] = ips / p if p else None
    return out


def thread_group(pid: str) -> str:
    """The gate's thread-count group of ``pid``, as a label."""
    from perfsuite.gate.statistics import thread_group as group

    return f"t{group(pid)}" if group(pid) else "other"


def add_per_run(runs: list[dict[str, dict]]) -> None:
    """``per_run`` for every point of every run: raw over the run's machine factor."""
    rel: dict[str, float] = {}
    for pid in {pid for run in runs for pid in run}:
        raw = [run[pid]["raw"] for run in runs if pid in run]
        rel[pid] = float(np.exp(np.mean(np.log(raw))))  # geometric mean over the runs
    for run in runs:
        by_group: dict[str, list[float]] = {}
        for pid, f in run.items():
            by_group.setdefault(thread_group(pid), []).append(f["raw"] / rel[pid])
        for pid, f in run.items():
            f["per_run"] = f["raw"] / float(np.median(by_group[thread_group(pid)]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--ids", default="*", help="glob of point ids (default: all)")
    a = ap.parse_args(argv)
    runs: list[dict[str, dict]] = []
    for run in a.runs:
        got = {}
        for path in sorted(run.glob("points/*.json")):
            rec = json.loads(path.read_text())
            if rec.get("status") == "ok" and fnmatch.fnmatch(rec["id"], a.ids):
                got[rec["id"]] = figures(rec)
        if got:
            runs.append(got)
    if not runs:
        print("between_run_cv: no ok point records in those run directories", file=sys.stderr)
        return 2
    add_per_run(runs)
    by_id: dict[str, list[dict]] = {}
    for run in runs:
        for pid, f in run.items():
            by_id.setdefault(pid, []).append(f)
    cols = ("raw", "per_fma", "per_triad", "mean", "p10", "best_session", "per_run")
    print(f"{'point':<52} {'runs':>4} " + " ".join(f"{c:>12}" for c in cols))
    groups: dict[str, dict[str, list[float]]] = {}
    for pid, rows in sorted(by_id.items()):
        cvs = {}
        for c in cols:
            vals = [r[c] for r in rows if r[c] is not None]
            cvs[c] = cv(vals) if len(vals) == len(rows) else float("nan")
        print(f"{pid:<52} {len(rows):>4} " + " ".join(f"{cvs[c]:>11.1%} " for c in cols))
        g = groups.setdefault(thread_group(pid), {c: [] for c in cols})
        for c in cols:
            g[c].append(cvs[c])
    for name, g in sorted(groups.items()):
        med = " ".join(f"{np.nanmedian(g[c]):>11.1%} " for c in cols)
        label = f"median CV {name} ({len(g['raw'])} points)"
        print(f"{label:<57} " + med)
    return 0


if __name__ == "__main__":
    sys.exit(main())
