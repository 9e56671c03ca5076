"""Between-run CV of each point over several run directories (issue 12's "between-session CV"
and item 3's question: does dividing by the calibration probes cut it?).

    python tools/between_run_cv.py perf-results/2026*-default [--ids 'resnet50-*']

Per point: the CV across runs of its throughput (1 / median latency), of the same divided by
the point's own FMA probe and triad probe (mean of its before/after probes), and of two other
estimators from the same samples: the 10th percentile of latency and the lower of the session
medians. The last lines give the median CV per thread count.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
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
        "p10": batch / float(np.percentile(rec["samples_s"], 10)),
        "best_session": batch / min(rec["session_medians_s"] or [1 / ips * batch]),
    }
    for name, key in (("per_fma", "fma_gflops"), ("per_triad", "triad_gbs")):
        p = _probe(rec, key)
        out[name] = ips / p if p else None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--ids", default="*", help="glob of point ids (default: all)")
    a = ap.parse_args(argv)
    by_id: dict[str, list[dict]] = {}
    for run in a.runs:
        for path in sorted(run.glob("points/*.json")):
            rec = json.loads(path.read_text())
            if rec.get("status") == "ok" and fnmatch.fnmatch(rec["id"], a.ids):
                by_id.setdefault(rec["id"], []).append(figures(rec))
    if not by_id:
        print("between_run_cv: no ok point records in those run directories", file=sys.stderr)
        return 2
    cols = ("raw", "per_fma", "per_triad", "p10", "best_session")
    print(f"{'point':<52} {'runs':>4} " + " ".join(f"{c:>12}" for c in cols))
    groups: dict[str, dict[str, list[float]]] = {}
    for pid, rows in sorted(by_id.items()):
        cvs = {}
        for c in cols:
            vals = [r[c] for r in rows if r[c] is not None]
            cvs[c] = cv(vals) if len(vals) == len(rows) else float("nan")
        print(f"{pid:<52} {len(rows):>4} " + " ".join(f"{cvs[c]:>11.1%} " for c in cols))
        t = re.search(r"-t(\d+)-", pid)
        g = groups.setdefault(f"t{t.group(1)}" if t else "other", {c: [] for c in cols})
        for c in cols:
            g[c].append(cvs[c])
    for name, g in sorted(groups.items()):
        med = " ".join(f"{np.nanmedian(g[c]):>11.1%} " for c in cols)
        label = f"median CV {name} ({len(g['raw'])} points)"
        print(f"{label:<57} " + med)
    return 0


if __name__ == "__main__":
    sys.exit(main())
