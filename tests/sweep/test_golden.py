"""A recorded run replayed through the current code gives the same outputs as when it was
recorded: its records read and written back unchanged, and the offline gate's gate.json,
gate.md, gate-junit.xml and gate.html, and the run's report.html, byte for byte (embedded
PNG charts aside: their bytes follow matplotlib's version, their presence is checked).

The run in tests/data/golden/ is a real smoke sweep (small_cnn, ONNX Runtime and OpenVINO,
fp32/int8_static, 1 and 2 threads, Zen 4 VM, 2026-12-06) with its samples thinned to 40 per
point so it stays small; the expected files were written by the code before the typed-model
restructuring (issue 28). Regenerate only for an intended output change:
``python tests/sweep/test_golden.py``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from perfsuite import records
from perfsuite.cli import main as cli_main
from perfsuite.store.files import read_run
from perfsuite.sweep import run_report

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"  # also run as a script
EXPECTED = GOLDEN / "expected"
GATE_FILES = ("gate.json", "gate.md", "gate-junit.xml", "gate.html")
PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def _normalise(text: str) -> str:
    return PNG.sub("data:image/png;base64,PNG", text.replace(str(GOLDEN), "GOLDEN"))


def replay(out: Path) -> dict[str, str]:
    """Every output of the golden run, as the current code writes it."""
    code = cli_main(
        ["compare", str(GOLDEN / "baseline.json"), str(GOLDEN / "run"), "--report", str(out)]
    )
    assert code == 1  # the run holds one (unconfirmed) regression: the offline gate fails
    texts = {name: (out / name).read_text() for name in GATE_FILES}
    run = read_run(GOLDEN / "run")
    fingerprint, recs = run.summary.fingerprint, run.results
    slow = run_report.slow_int8(recs, fingerprint)
    lines = run_report.report_lines(recs, fingerprint, None, slow)
    page = run_report.html_page(recs, fingerprint, lines, slow, "verdicts: golden", "gate.html")
    texts["report.html"] = page
    return {name: _normalise(text) for name, text in texts.items()}


def _golden_files() -> list[Path]:
    run = GOLDEN / "run"
    return [run / "summary.json", GOLDEN / "baseline.json", *sorted(run.glob("*/*.json"))]


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: p.name)
def test_a_recorded_file_reads_and_writes_back_unchanged(path):
    data = json.loads(path.read_text())
    kind = "result" if "points" in path.parts or "remeasured" in path.parts else None
    kind = kind or ("run" if path.name == "summary.json" else "baseline")
    assert records.dump(records.load(kind, data, str(path))) == data


def test_the_gate_and_report_outputs_are_unchanged(tmp_path):
    got = replay(tmp_path)
    for name, text in got.items():
        want = (EXPECTED / name).read_text()
        assert text == want, f"{name} differs from tests/data/golden/expected/{name}"
    assert got["gate.html"].count("data:image/png;base64,PNG") >= 1
    assert got["report.html"].count("data:image/png;base64,PNG") >= 1


if __name__ == "__main__":  # regenerate the expected files (an intended output change only)
    import tempfile

    EXPECTED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in replay(Path(tmp)).items():
            (EXPECTED / name).write_text(text)
            print(EXPECTED / name, file=sys.stderr)
