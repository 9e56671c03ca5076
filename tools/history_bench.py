"""Benchmark of the results history: import N runs x P points into a fresh SQLite store and
run change detection over all of them; prints the times and the database size.

    python tools/history_bench.py [--runs 1000] [--points 24] [--store URL]

The runs are synthetic run directories (tests/history_data.py: valid records, 20 samples
each, one point stepping 15% at 60% of the history); writing them is not timed."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from history_data import step_history  # noqa: E402

from perfsuite.history.changes import detect  # noqa: E402
from perfsuite.store.database import HistoryStore  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--points", type=int, default=24)
    ap.add_argument("--store", default=None, help="default: a new SQLite file in a temp dir")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        runs = step_history(
            tmp / "runs", args.runs, args.points, step_point=3, step_at=int(args.runs * 0.6)
        )
        print(f"wrote {len(runs)} run directories in {time.perf_counter() - t0:.1f} s (untimed)")
        db = tmp / "history.sqlite"
        store = HistoryStore(args.store or f"sqlite:///{db}")
        t0 = time.perf_counter()
        for r in runs:
            store.import_path(r)
        t_import = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in runs[:50]:
            store.import_path(r)
        t_again = time.perf_counter() - t0
        t0 = time.perf_counter()
        found = detect(store)
        t_changes = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in tmp.glob("history.sqlite*"))
        print(
            f"import {args.runs} runs x {args.points} points: {t_import:.1f} s "
            f"({args.runs / t_import:.0f} runs/s); re-import of 50: {t_again:.2f} s"
        )
        print(
            f"changes over {args.points} series: {t_changes:.1f} s, found "
            + ", ".join(f"{c.benchmark} {c.change:+.1%} at run {c.index}" for c in found)
        )
        if not args.store:
            print(f"database size: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
