"""tools/history_bench.py: the results-history benchmark runs end to end on a small history."""

from __future__ import annotations

from tools_by_path import load_tool


def test_a_small_history_imports_and_finds_its_step(capsys):
    assert load_tool("history_bench").main(["--runs", "12", "--points", "4"]) == 0
    out = capsys.readouterr().out
    assert "import 12 runs x 4 points" in out
    assert "re-import of 50" in out
    assert "database size:" in out
