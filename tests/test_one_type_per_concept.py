"""One type per concept: a class defined in ``perfsuite.records`` is not defined again, under
the same name, anywhere else in the package (a second definition drifts from the first and
is copied field by field; issue 43)."""

import ast
from pathlib import Path

import perfsuite
from perfsuite import records

PACKAGE = Path(perfsuite.__file__).parent


def _classes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def test_no_records_type_is_defined_twice():
    ours = _classes(PACKAGE / "records.py")
    twins = sorted(
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "records.py" or path.parent != PACKAGE
        for name in _classes(path) & ours
    )
    assert not twins, twins
    assert {"Headline", "LoadGenRun", "ModelInfo", "MeasureProtocol"} <= ours  # it looks


def test_scenario_and_decode_names_are_defined_once():
    defined = [
        path.relative_to(PACKAGE.parent)
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id in ("SCENARIOS", "DECODE_TEST")
    ]
    assert sorted(map(str, defined)) == ["perfsuite/records.py", "perfsuite/records.py"]
    assert records.SCENARIOS and records.DECODE_TEST.match("tg128")
