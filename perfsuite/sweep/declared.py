"""The models a user declares for a run: ``[models.NAME]`` tables of the ``--perf-config``
file and of ``[tool.perfsuite.models]`` in pyproject.toml, and ``--perf-model`` files (which
replace the profile's models). Each is registered by name (``prepare.models.declare``)."""

from __future__ import annotations

from pathlib import Path

from perfsuite.prepare import models
from perfsuite.prepare.models import files
from perfsuite.prepare.models.files import ModelError, spec_from_path, spec_from_table
from perfsuite.records import ModelSpec
from perfsuite.sweep.plan import read_toml


def _tables(path: Path | None, pyproject: bool) -> dict:
    if path is None or not Path(path).is_file():
        return {}
    data = read_toml(path)  # a bad file: the PlanError the profiles would give
    tables = data.get("tool", {}).get("perfsuite", {}) if pyproject else data
    found = tables.get("models", {})
    if not isinstance(found, dict):
        raise ModelError(f"{path}: models must be a table of [models.NAME] tables")
    return found


def load_models(pyproject: Path | None, user_file: Path | None) -> list[ModelSpec]:
    """The declared models, the user file's over pyproject.toml's of the same name."""
    specs: dict[str, ModelSpec] = {}
    for path, is_pyproject in ((pyproject, True), (user_file, False)):
        for name, table in _tables(path, is_pyproject).items():
            specs[name] = spec_from_table(name, table, Path(path).resolve().parent)
    return list(specs.values())


def declare_for_run(
    pyproject: Path | None,
    user_file: Path | None,
    paths: list[str] | None,
    dims: dict[str, int] | None,
    overrides: dict,
) -> dict:
    """Register the run's declared models; the profile overrides with ``--perf-model``'s
    names as its models."""
    if dims and not paths:
        raise ModelError("--perf-dims sets the dimensions of --perf-model files; none is given")
    specs = load_models(pyproject, user_file)
    given = [spec_from_path(p, dims or {}) for p in paths or ()]
    names = [s.name for s in given]
    if len(set(names)) < len(names):
        raise ModelError(f"--perf-model: two files are named {names[0]!r} (their stem)")
    for spec in (*specs, *given):
        models.declare(spec)
    return {**overrides, "models": names} if given else overrides


def check_declared(names) -> None:
    """Read each declared model of the run and check that every input gets data: a bad
    file, dimension or data set is one ModelError before anything is measured."""
    for name in names:
        spec = models.declared(name)
        if spec is not None:
            files.build(spec)
