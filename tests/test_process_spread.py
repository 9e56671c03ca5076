"""tools/process_spread.py: sessions within a process against processes."""

from __future__ import annotations

import json

import pytest
from tools_by_path import load_tool

pytest.importorskip("onnxruntime")


def test_spread_within_and_across():
    within, across = load_tool("process_spread").spread([[1.0, 1.0], [2.0, 2.0], [1.0, 1.0]])
    assert within == 0.0 and across == pytest.approx(0.433, abs=1e-3)


def test_a_real_point_in_fresh_processes(tmp_path, capsys):
    point = {"model": "small_cnn", "framework": "onnxruntime", "precision": "fp32",
             "threads": 1, "numa_node": None, "batch": 1, "mode": "latency"}  # fmt: skip
    (tmp_path / "points").mkdir()
    rec = {"id": "small_cnn-onnxruntime-fp32-t1-unbound-b1", "status": "ok", "point": point}
    (tmp_path / "points" / "p.json").write_text(json.dumps(rec))
    tool = load_tool("process_spread")
    assert tool.main([str(tmp_path), "--processes", "2", "--min-time", "0.05"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(rec["id"]) and "within a process" in line
    assert line.count(",") == 1  # two process means


def test_nothing_to_measure_is_an_input_error(tmp_path, capsys):
    assert load_tool("process_spread").main([str(tmp_path)]) == 2
    assert "need ok point records" in capsys.readouterr().err
