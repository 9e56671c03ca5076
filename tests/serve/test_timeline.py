"""The per-query timeline: LoadGen's trace read line by line, joined with what the SUT saw,
and written beside the logs by a real LoadGen run."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from perfsuite.serve import ScenarioSettings, run_scenario
from perfsuite.serve.timeline import (
    TIMELINE_FILE,
    Served,
    build,
    read_csv,
    read_trace,
    summarize,
)


def trace_line(seq: int, ts_us: float, delay_ns: int, complete_ns: int) -> str:
    args = {"sample_seq": seq, "query_seq": seq, "sample_idx": 3, "issue_start_ns": delay_ns,
            "complete_ns": complete_ns}  # fmt: skip
    return json.dumps(
        {"name": "Sample", "cat": "default", "ph": "b", "pid": 1, "id": seq, "ts": ts_us,
         "args": args}, separators=(",", ":"),
    ) + ","  # fmt: skip


def test_the_trace_is_read_per_query_in_issue_order_even_cut_short(tmp_path):
    lines = [
        '{"traceEvents":[',
        '{"name":"IssueQuery","ph":"X","pid":1,"tid":1,"ts":175.7,"dur":141.8,"args":{}},',
        trace_line(1, 5000.0, 2_000, 9_000_000),
        trace_line(0, 175.5, 150, 2_216_160),
        '{"name":"Sample","cat":"default","ph":"e", "pid":1,"id":0,"ts":2391.6},',
        '{"name":"Sample","ph":"b", "broken',  # a run cut short: no closing bracket
    ]
    path = tmp_path / "mlperf_log_trace.json"
    path.write_text("\n".join(lines))
    (first, second) = read_trace(path)
    assert first == pytest.approx((175.5e-6, 150e-9, 2.21616e-3))
    assert second == pytest.approx((5e-3, 2e-6, 9e-3))


def test_the_joined_table_counts_the_queries_in_the_system():
    """Three queries: the second arrives while the first is served and waits; the third
    arrives after both left."""
    served = [Served(10.000, 10.000, 10.010, 0, 1), Served(10.004, 10.010, 10.020, 0, 1),
              Served(10.100, 10.100, 10.110, 0, 0)]  # fmt: skip
    trace = [(0.000, 1e-4, 0.010), (0.004, 1e-4, 0.016), (0.100, 1e-4, 0.010)]
    rows = build(served, trace)
    assert [r["in_system"] for r in rows] == [1, 2, 1]
    assert rows[1]["wait_ms"] == pytest.approx(6.0) and rows[1]["service_ms"] == pytest.approx(10.0)
    assert rows[1]["latency_ms"] == pytest.approx(16.0)  # LoadGen's, from the trace
    summary = summarize(rows, TIMELINE_FILE)
    assert summary.queries == 3 and summary.max_in_system == 2
    assert summary.cpus == {"1": 2, "0": 1} and summary.issue_delay_p50_ms == pytest.approx(0.1)


def test_without_a_matching_trace_the_sut_clock_places_the_queries():
    served = [Served(1.0, 1.0, 1.005, 0, 0), Served(1.002, 1.005, 1.010, 0, 0)]
    rows = build(served, trace=[(0.0, 0.0, 0.005)])  # one trace row for two queries
    assert [r["scheduled_ms"] for r in rows] == pytest.approx([0.0, 2.0])
    assert all(math.isnan(r["issue_delay_ms"]) for r in rows)
    assert rows[1]["latency_ms"] == pytest.approx(8.0)
    assert summarize(rows, None).issue_delay_p99_ms is None


def test_a_server_run_writes_its_timeline_and_drops_the_trace(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    settings = ScenarioSettings(
        "server", latency_bound_ms=50.0, target_qps=200.0, min_duration_s=0.5,
        min_query_count=100, max_duration_s=10.0, timeline=True,
    )  # fmt: skip
    run = run_scenario(settings, [lambda idx: time.sleep(0.001 * len(idx))], 16, tmp_path)
    assert not (tmp_path / "mlperf_log_trace.json").exists()
    table = read_csv(tmp_path / TIMELINE_FILE)
    t = run.timeline
    assert t is not None and t.queries == table["query"].size == len(run.latencies_s)
    assert np.all(np.diff(table["scheduled_ms"]) >= 0)  # issue order
    assert np.all(table["service_ms"] >= 0.9)  # the 1 ms worker
    assert np.all(table["latency_ms"] >= table["service_ms"] - 0.05)
    assert t.issue_delay_p99_ms is not None and t.service_p50_ms >= 0.9
