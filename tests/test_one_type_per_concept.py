"""One type per concept: a class defined in ``perfsuite.records`` is not defined again, and no
class name is defined in two modules of the package (a second definition drifts from the first and
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


def test_no_class_name_is_defined_in_two_modules():
    """Twins under one name (two ``Side``, two ``Unsupported``) are one concept copied, or two
    concepts that a reader mistakes for one: either way one of them gets a better name."""
    where: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for name in _classes(path):
            where.setdefault(name, []).append(str(path.relative_to(PACKAGE.parent)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


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
