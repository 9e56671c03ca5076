"""The models a user declares for a run: ``[models.NAME]`` tables of the ``--perf-config``
file and of ``[tool.perfsuite.models]`` in pyproject.toml, and ``--perf-model`` files (which
replace the profile's models). Each is registered by name (``prepare.models.declare``)."""

from __future__ import annotations

from pathlib import Path

from perfsuite import llm
from perfsuite.prepare import models
from perfsuite.prepare.backends import BACKENDS
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
            if isinstance(table, dict) and table.get("kind") == "llm":
                _declare_llm(name, table, Path(path).resolve().parent)
                continue
            specs[name] = _options_checked(
                spec_from_table(name, table, Path(path).resolve().parent)
            )
    return list(specs.values())


def _declare_llm(name: str, table: dict, base: Path) -> None:
    """``[models.NAME] kind = "llm", path = FOLDER``: a Hugging Face folder the GenAI
    runtimes run (exported by their tools, docs/guide/llm.md)."""
    if unknown := sorted(set(table) - {"kind", "path"}):
        raise ModelError(f"models.{name}: unknown key {unknown[0]!r} for kind = \"llm\"; "
                         "valid: kind, path")  # fmt: skip
    if "path" not in table:
        raise ModelError(f"models.{name}: path is missing (a Hugging Face model folder)")
    if name in llm.MODELS and name not in llm.FOLDERS:
        raise ModelError(f"model {name!r}: a built-in model has that name; declare the folder "
                         "under another")  # fmt: skip
    try:
        llm.declare_folder(name, base / str(table["path"]))
    except ValueError as exc:
        raise ModelError(f"models.{name}: {exc}") from None


def _options_checked(spec: ModelSpec) -> ModelSpec:
    for fw, options in spec.options.items():
        if fw not in BACKENDS:
            raise ModelError(f"models.{spec.name}.options.{fw}: unknown framework; valid: "
                             f"{', '.join(BACKENDS)}")  # fmt: skip
        if "precision_hint" in options:
            raise ModelError(f"models.{spec.name}.options.{fw}.precision_hint: the precision is "
                             "the point's (precisions = [...]), not the model's")  # fmt: skip
    return spec


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
    given = [spec_from_path(p, {}) for p in paths or ()]
    names = [s.name for s in given]
    if twice := next((n for n in names if names.count(n) > 1), None):
        raise ModelError(f"--perf-model: two files are named {twice!r} (their stem)")
    given = [_own_dims(s, dims or {}) for s in given]
    if dims and (unused := set(dims) - {d for s in given for d in s.dims}):
        raise ModelError(
            f"--perf-dims {sorted(unused)[0]}: no --perf-model file has that symbolic "
            "dimension (perfsuite models inspect FILE shows them)"
        )
    for spec in (*specs, *given):
        taken = models.MODELS.get(spec.name, spec)
        if spec.name in llm.MODELS or not isinstance(taken, ModelSpec):
            raise ModelError(
                f"model {spec.name!r}: a built-in model has that name; declare the file under "
                "another (its points, baseline and history are its own)"
            )
        models.declare(spec)
    return {**overrides, "models": names} if given else overrides


def _own_dims(spec: ModelSpec, dims: dict[str, int]) -> ModelSpec:
    """``--perf-dims`` applies to each file's own symbolic dimensions."""
    symbolic = {d for inp in files.signature(spec) for d in inp.shape if isinstance(d, str)}
    return spec.model_copy(update={"dims": {k: v for k, v in dims.items() if k in symbolic}})


def check_declared(names, batch: int = 1) -> None:
    """Read each declared model of the run and check that every input gets data (at the
    largest ``batch``): a bad file, dimension or data set is one ModelError before anything
    is measured."""
    for name in names:
        spec = models.declared(name)
        if spec is not None:
            files.build(spec, batch)
