"""A LoadGen run's per-query timeline: when LoadGen scheduled each query, how late its issue
thread was, how long the query waited for a worker, how long the worker took, on which worker
and CPU, and how many queries were in the system when it arrived.

LoadGen's trace (``enable_trace``) has, per query, the scheduled time and the issue delay; the
SUT records when a worker started and finished it and where it ran. The trace is large (about
2 KB a query) and is dropped once read; ``timeline.csv`` keeps the joined table beside the
LoadGen logs, and ``TimelineSummary`` the figures the record carries.
"""

from __future__ import annotations

import csv
import ctypes
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite.records import TimelineSummary
from perfsuite.writing import atomic_write_text

TIMELINE_FILE = "timeline.csv"
COLUMNS = (
    "query", "scheduled_ms", "issue_delay_ms", "wait_ms", "service_ms", "latency_ms",
    "worker", "cpu", "in_system",
)  # fmt: skip

try:
    _sched_getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
except (OSError, AttributeError):  # not glibc: the CPU column stays -1
    _sched_getcpu = None


def current_cpu() -> int:
    """The CPU this thread runs on now (glibc's sched_getcpu, a vDSO call), or -1."""
    return int(_sched_getcpu()) if _sched_getcpu is not None else -1


@dataclass(frozen=True)
class Served:
    """What the SUT saw of one query, on its own clock (time.perf_counter, seconds)."""

    issued: float  # LoadGen's issue callback
    started: float  # a worker took it
    finished: float
    worker: int
    cpu: int


def read_trace(path: Path) -> list[tuple[float, float, float]]:
    """(scheduled s since the test start, issue delay s, LoadGen's latency s) per query, in
    issue order, from LoadGen's trace. The file is a JSON object with one event per line;
    only the queries' begin events are read, line by line (a run cut short leaves no
    closing bracket)."""
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"name":"Sample"' not in line or '"ph":"b"' not in line:
                continue
            try:
                event = json.loads(line.strip().rstrip(","))
            except json.JSONDecodeError:
                continue
            args = event.get("args", {})
            rows.append(
                (
                    int(args.get("query_seq", len(rows))),
                    float(event["ts"]) / 1e6,
                    float(args.get("issue_start_ns", 0)) / 1e9,
                    float(args.get("complete_ns", 0)) / 1e9,
                )
            )
    rows.sort()
    return [r[1:] for r in rows]


def build(served: list[Served], trace: list[tuple[float, float, float]]) -> list[dict]:
    """The joined table, one row per query in issue order. Without a trace (or with a count
    that does not match) the SUT's own clock places the queries: scheduled = issued, delay
    unknown (NaN)."""
    served = sorted(served, key=lambda s: s.issued)
    if not served:
        return []
    joined = len(trace) == len(served)
    t0 = served[0].issued
    rows = []
    for k, s in enumerate(served):
        if joined:
            scheduled, delay, latency = trace[k]
        else:
            scheduled, delay, latency = s.issued - t0, float("nan"), s.finished - s.issued
        rows.append(
            {
                "query": k,
                "scheduled_ms": scheduled * 1e3,
                "issue_delay_ms": delay * 1e3,
                "wait_ms": (s.started - s.issued) * 1e3,
                "service_ms": (s.finished - s.started) * 1e3,
                "latency_ms": latency * 1e3,
                "worker": s.worker,
                "cpu": s.cpu,
            }
        )
    arrive = np.array([r["scheduled_ms"] for r in rows])
    leave = arrive + np.array([r["latency_ms"] for r in rows])
    order = np.sort(leave)
    for k, r in enumerate(rows):  # arrived before it and not yet done, itself included
        r["in_system"] = int(k + 1 - np.searchsorted(order, arrive[k], side="right"))
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    atomic_write_text(path, out.getvalue())


def read_csv(path: Path) -> dict[str, np.ndarray]:
    """``timeline.csv`` as columns of floats."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {c: np.array([float(r[c]) for r in rows]) for c in COLUMNS}


def summarize(rows: list[dict], file: str | None) -> TimelineSummary | None:
    """p50/p99 of each part of a query's latency, the deepest queue and the CPUs used."""
    if not rows:
        return None

    def pct(col: str) -> tuple[float | None, float | None]:
        v = np.array([r[col] for r in rows], float)
        v = v[np.isfinite(v)]
        if not v.size:
            return None, None
        return float(np.percentile(v, 50)), float(np.percentile(v, 99))

    cpus: dict[str, int] = {}
    for r in rows:
        cpus[str(r["cpu"])] = cpus.get(str(r["cpu"]), 0) + 1
    parts = {c: pct(f"{c}_ms") for c in ("issue_delay", "wait", "service", "latency")}
    return TimelineSummary(
        queries=len(rows),
        **{f"{c}_p50_ms": v[0] for c, v in parts.items()},
        **{f"{c}_p99_ms": v[1] for c, v in parts.items()},
        max_in_system=max(r["in_system"] for r in rows),
        cpus=cpus,
        file=file,
    )
