"""Another package, installed for one test: a module and its ``*.dist-info`` (METADATA and
entry_points.txt) in a folder put on sys.path, as pip would leave them. It is how the tests
add a framework, a precision, an executor, a rule or a store without touching perfsuite."""

from __future__ import annotations

from pathlib import Path


def install(site: Path, monkeypatch, name: str, module: str, source: str, entry_points: str):
    """``module`` (``source``) as distribution ``name`` with ``entry_points`` (INI text)."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    (site / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(site))
    return site
