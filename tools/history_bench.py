"""Scale benchmark of the results history: import N runs x P points, then time the `perfsuite
db` commands over them and show the query plans of their reads.

    python tools/history_bench.py [--runs 1000] [--points 100] [--store URL] [--tracemalloc]

Every step is the CLI itself (perfsuite.cli.main(["db", "--store", URL, ...]), its output
discarded), so the figures are the user's: import (all runs), re-import of 50 (idempotent:
nothing added), changes, history of one benchmark and of all, trends (HTML page; its size
is shown) and fleet (over a few synthetic qualification reports of the same class).
Memory per step is the growth of the process's peak RSS (ru_maxrss: 0 when a step stays
under an earlier step's peak); with --tracemalloc it is the tracemalloc peak of the step's
Python allocations instead, and the times then include tracing overhead (about 4x).

The runs are synthetic run directories (tests/history_data.py: valid records, 20 samples
each, one point stepping 15% at 60% of the history); writing them is not timed. The SELECTs
the commands send are captured (a before_cursor_execute listener) and each distinct one is
explained on the engine in use (SQLite EXPLAIN QUERY PLAN, PostgreSQL EXPLAIN after ANALYZE);
a full scan of `results` is flagged. On PostgreSQL a flagged plan is explained again with
enable_seqscan off, to tell "no usable index" from "the planner prefers a scan at this size".
The default store is a new SQLite file in a temp dir (its size is shown); a --store database
should be empty, as the tool imports into it and leaves the data there."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import sqlalchemy as sa
from rich.console import Console
from rich.markup import escape
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from history_data import point_id, qualification, step_history  # noqa: E402

from perfsuite.cli import main as perfsuite  # noqa: E402
from perfsuite.store.database import HistoryStore  # noqa: E402

PARAM = r"(?:[?]|%\(\w+\)s|\$\d+)(?:::\w+)?"  # sqlite, psycopg (with a cast)
PARAMS = re.compile(f"{PARAM}(?:, {PARAM})+")


def _count(m: re.Match) -> str:
    return f"<{m[0].count(',') + 1} params>"


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class Capture:
    """The distinct SELECTs sent while active, with the steps that sent them."""

    def __init__(self):
        self.step = ""
        self.seen: dict[str, tuple[object, list[str]]] = {}  # statement -> params, steps

    def __call__(self, conn, cursor, statement, parameters, context, executemany):
        ours = "FROM" in statement.split() and "pg_catalog" not in statement  # not Alembic's
        if statement.lstrip().upper().startswith("SELECT") and ours:
            _, steps = self.seen.setdefault(statement, (parameters, []))
            if self.step not in steps:
                steps.append(self.step)


def run_step(name: str, argv: list[str], capture: Capture, rss: bool) -> tuple:
    capture.step = name
    before = _maxrss_mib()
    if not rss:
        tracemalloc.start()
    t0 = time.perf_counter()
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        rc = perfsuite(argv)
    wall = time.perf_counter() - t0
    if rss:
        mem = _maxrss_mib() - before
    else:
        mem = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return name, rc, wall, mem


def explain(engine: sa.Engine, statement: str, params) -> tuple[list[str], str]:
    """The plan's lines and a flag: '' or why it reads all of `results`."""
    pg = engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        if not pg:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            lines = [f"{'  ' * (r[1] > 0)}{r[3]}" for r in rows]  # (id, parent, -, detail)
            scans = [x for x in lines if x.strip().startswith("SCAN results")]
            bare = [x for x in scans if "INDEX" not in x]
            return lines, "FULL SCAN of results (no index)" if bare else ""
        lines = [r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params)]
        if not any("Seq Scan on results" in x for x in lines):
            return lines, ""
        conn.exec_driver_sql("SET enable_seqscan = off")
        forced = [r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params)]
        conn.rollback()
        if any("Seq Scan on results" in x for x in forced):
            return lines, "Seq Scan on results: no usable index"
        return lines, "Seq Scan on results (planner's choice; an index exists)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--hosts", type=int, default=8, help="qualification reports for fleet (8)")
    ap.add_argument("--store", default=None, help="default: a new SQLite file in a temp dir")
    ap.add_argument("--tracemalloc", action="store_true", help="memory as tracemalloc peaks")
    args = ap.parse_args(argv)
    out = Console(width=160, highlight=False)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        runs = step_history(
            tmp / "runs", args.runs, args.points, step_point=3, step_at=int(args.runs * 0.6)
        )
        quals = [qualification(tmp, f"h{i}", 30.0 + 0.2 * i) for i in range(args.hosts)]
        out.print(f"wrote {len(runs)} run directories in {time.perf_counter() - t0:.1f} s")
        url = args.store or f"sqlite:///{tmp / 'history.sqlite'}"
        HistoryStore(url).import_path(quals[0])  # the schema, and one report: not timed
        db = ["db", "--store", url]
        steps = [
            (f"import {args.runs} runs x {args.points} points", ["import", *map(str, runs)]),
            ("re-import of 50", ["import", *map(str, runs[:50])]),
            (f"import {len(quals) - 1} qualification reports", ["import", *map(str, quals[1:])]),
            ("db changes", ["changes"]),
            ("db history ONE", ["history", point_id(0)]),
            ("db history '*'", ["history", "*"]),
            ("db runs", ["runs"]),
            ("db trends", ["trends", "--out", str(tmp / "trends.html")]),
            ("db fleet", ["fleet"]),
        ]
        capture = Capture()
        sa.event.listen(sa.Engine, "before_cursor_execute", capture)
        try:
            done = [run_step(name, db + a, capture, not args.tracemalloc) for name, a in steps]
        finally:
            sa.event.remove(sa.Engine, "before_cursor_execute", capture)
        page = (tmp / "trends.html").stat().st_size if (tmp / "trends.html").exists() else 0
        mem_kind = "tracemalloc peak" if args.tracemalloc else "peak RSS growth"
        table = Table(title=f"{args.runs} runs x {args.points} points on {url.split(':')[0]}")
        for c in ["step", "exit", "wall (s)", f"{mem_kind} (MiB)", "note"]:
            table.add_column(c, justify="left" if c in ("step", "note") else "right")
        for name, rc, wall, mem in done:
            note = f"page {page:,} bytes" if name == "db trends" else ""
            table.add_row(name, str(rc), f"{wall:.2f}", f"{mem:.1f}", note)
        out.print(table)
        out.print(f"process peak RSS: {_maxrss_mib():.0f} MiB")
        if not args.store:
            size = sum(p.stat().st_size for p in tmp.glob("history.sqlite*"))
            out.print(f"database size: {size / 2**20:.1f} MiB")
        engine = HistoryStore(url).engine
        if engine.dialect.name == "postgresql":
            with engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
        out.rule(f"query plans ({engine.dialect.name})")
        flagged = 0
        for i, (statement, (params, used_by)) in enumerate(capture.seen.items(), 1):
            lines, flag = explain(engine, statement, params)
            flagged += bool(flag)
            one_line = re.sub(PARAMS, _count, " ".join(statement.split()))
            out.print(f"[bold]Q{i}[/] ({', '.join(used_by)}): {escape(one_line)}")
            for line in lines:
                out.print(f"    {line}", markup=False)
            if flag:
                out.print(f"    [red]!! {flag}[/]")
        out.print(f"{len(capture.seen)} distinct SELECTs explained; {flagged} flagged")
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
