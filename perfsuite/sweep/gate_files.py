"""The gate's reports on disk: each rendered report (gate.report.render) in its file,
written atomically, and the Markdown appended to $GITHUB_STEP_SUMMARY when CI gives one.
The gate renders; this layer writes, so the gate stays pure."""

from __future__ import annotations

import os
from pathlib import Path

from perfsuite.gate.report import Reports
from perfsuite.writing import append_text, atomic_write_text


def write_reports(out_dir: Path, reports: Reports) -> dict[str, Path]:
    """The reports under ``out_dir``: {kind: path}."""
    paths = {}
    for kind, (name, text) in reports.files().items():
        paths[kind] = Path(out_dir) / name
        atomic_write_text(paths[kind], text)
    if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
        append_text(summary, reports.markdown)
    return paths
