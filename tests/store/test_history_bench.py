"""tools/history_bench.py: the results-history benchmark runs end to end on a small history,
times every `perfsuite db` step and explains the queries they sent."""

from __future__ import annotations

from tools_by_path import load_tool

STEPS = ["re-import of 50", "db changes", "db history ONE", "db history '*'", "db runs",
         "db trends", "db fleet"]  # fmt: skip


def test_a_small_history_is_timed_step_by_step_with_its_query_plans(capsys):
    tool = load_tool("history_bench")
    assert tool.main(["--runs", "6", "--points", "2", "--hosts", "3"]) == 0
    out = capsys.readouterr().out
    assert "import 6 runs x 2 points" in out
    for step in STEPS:
        assert step in out, step
    assert "peak RSS growth (MiB)" in out and "page " in out and "database size:" in out
    assert "query plans (sqlite)" in out
    assert "SEARCH results USING" in out  # the series read uses an index of results
    assert "distinct SELECTs explained; 0 flagged" in out
