"""tools/between_run_cv.py: between-run CV per point, raw and per calibration probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tools_by_path import TOOLS, load_tool

TOOL = TOOLS / "between_run_cv.py"


def _tool():
    return load_tool("between_run_cv")


def _run(folder: Path, pid: str, latency_s: float, fma: float = 40.0) -> Path:
    rec = {
        "id": pid, "status": "ok", "point": {"batch": 1},
        "stats": {"throughput_ips": 1 / latency_s},
        "samples_s": [latency_s * f for f in (0.9, 1.0, 1.0, 1.1)],
        "session_medians_s": [latency_s, latency_s * 1.05],
        "calibration": {"sessions": [{"before": {"fma_gflops": fma, "triad_gbs": 10.0},
                                      "after": {"fma_gflops": fma, "triad_gbs": 10.0}}]},
    }  # fmt: skip
    (folder / "points").mkdir(parents=True, exist_ok=True)
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


def _row(out: list[str], pid: str) -> dict[str, str]:
    head = out[0].split()[2:]
    row = next(line for line in out if line.startswith(pid))
    return dict(zip(head, row.split()[2:], strict=True))


def test_a_run_wide_speed_change_is_taken_out_per_thread_group(tmp_path, capsys):
    # three 1-thread points follow the run's speed (0.8, 1.0, 1.2); one of them also has its
    # own +-10% on top; the 2-thread point is alone in its group, so its factor is itself
    ids = ("m-a-t1-unbound-b1", "m-b-t1-unbound-b1", "m-c-t1-unbound-b1", "m-d-t2-unbound-b1")
    runs = []
    for i, (speed, own) in enumerate(((0.8, 1.0), (1.0, 1.1), (1.2, 0.9))):
        for pid in ids:
            extra = own if pid.startswith("m-c") else 1.0
            _run(tmp_path / f"r{i}", pid, 0.010 / (speed * extra))
        runs.append(tmp_path / f"r{i}")
    assert _tool().main([str(r) for r in runs]) == 0
    out = capsys.readouterr().out.splitlines()
    a, c, d = (_row(out, pid) for pid in (ids[0], ids[2], ids[3]))
    assert a["raw"] == "20.0%" and a["per_run"] == "0.0%"
    assert c["per_run"] == "10.0%"  # its own change survives the run's factor
    assert d["raw"] == "20.0%" and d["per_run"] == "0.0%"
    assert a["mean"] == a["raw"]  # samples scale with the speed, so the mean does too
