"""tools/between_run_cv.py: between-run CV per point, raw and per calibration probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tools_by_path import TOOLS, load_tool

TOOL = TOOLS / "between_run_cv.py"


def _tool():
    return load_tool("between_run_cv")


def _run(folder: Path, pid: str, latency_s: float, fma: float) -> Path:
    rec = {
        "id": pid, "status": "ok", "point": {"batch": 1},
        "stats": {"throughput_ips": 1 / latency_s},
        "samples_s": [latency_s * f for f in (0.9, 1.0, 1.0, 1.1)],
        "session_medians_s": [latency_s, latency_s * 1.05],
        "calibration": {"sessions": [{"before": {"fma_gflops": fma, "triad_gbs": 10.0},
                                      "after": {"fma_gflops": fma, "triad_gbs": 10.0}}]},
    }  # fmt: skip
    (folder / "points").mkdir(parents=True)
    (folder / "points" / f"{pid}.json").write_text(json.dumps(rec))
    return folder


def test_a_clock_that_explains_the_spread_is_divided_out(tmp_path, capsys):
    # throughput follows the FMA probe exactly: raw CV 20%, per-FMA CV 0
    runs = [
        _run(tmp_path / f"r{i}", "m-ort-fp32-t1-unbound-b1", 0.010 / s, 40.0 * s)
        for i, s in enumerate((0.8, 1.0, 1.2))
    ]
    assert _tool().main([str(r) for r in runs]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("m-ort-fp32-t1"))
    raw, per_fma, per_triad = row.split()[2:5]
    assert raw == "20.0%" and per_fma == "0.0%" and per_triad == "20.0%"
    assert out[-1].startswith("median CV t1 (1 points)")


def test_no_records_is_an_input_error(tmp_path, capsys):
    assert _tool().main([str(tmp_path)]) == 2
    assert "no ok point records" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _tool().main([])
