"""The models perfsuite measures, from one registry (``registry.MODELS``): the zoo's, built
in code with deterministic weights (``zoo``, ``graph``), another package's (entry points)
and the files a user declares (``files``)."""

from perfsuite.prepare.models import files, zoo
from perfsuite.prepare.models.built import BuiltModel
from perfsuite.prepare.models.files import ModelError
from perfsuite.prepare.models.registry import MODELS, PythonModel
from perfsuite.prepare.models.zoo import MLP_SIZES_MB
from perfsuite.records import ModelSpec


def get(name: str) -> BuiltModel:
    """Build (or load from the cache) the model registered as ``name``."""
    model = MODELS.named(name, "model")
    if isinstance(model, ModelSpec):
        return files.build(model)
    return zoo.build(name, model)


def names() -> list[str]:
    return list(MODELS)


def declare(spec: ModelSpec) -> None:
    """A declared file under its name (a configuration's table, ``--perf-model``, or the spec
    a worker received with its point)."""
    MODELS[spec.name] = spec


def declared(name: str) -> ModelSpec | None:
    """The spec of a declared file; None for a model defined in Python."""
    model = MODELS.get(name)
    return model if isinstance(model, ModelSpec) else None


def format_of(name: str) -> str:
    spec = declared(name)
    return spec.format if spec else "onnx"


__all__ = ["MLP_SIZES_MB", "MODELS", "BuiltModel", "ModelError", "PythonModel", "declare",
           "declared", "format_of", "get", "names"]  # fmt: skip
