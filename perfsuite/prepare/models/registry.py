"""One registry of models: the built-in zoo's and another package's (entry-point group
``perfsuite.models``, each naming a ``PythonModel``), and the files a user declares
(``records.ModelSpec``). Nothing downstream asks a model's name: it asks the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perfsuite.prepare.extensions import Registry

MODELS_GROUP = "perfsuite.models"


@dataclass(frozen=True)
class PythonModel:
    """A model built in code with deterministic weights: ``builder(**params)`` returns an
    ``onnx.ModelProto`` whose doc_string holds ``params=N flops_per_item=N`` (or a
    (ModelProto, metadata) pair); its one float input, named "input", has shape
    ``("N", *input_shape(params))``. ``feeds()`` gives real data when the model has some
    (default: seeded normal inputs). ``version`` is part of its cache key: bump it when the
    builder's output changes."""

    builder: Callable
    params: dict = field(default_factory=dict)
    input_shape: Callable[[dict], tuple[int, ...]] = lambda params: ()
    feeds: Callable[[], object] | None = None
    version: str = "1"


# name -> PythonModel | records.ModelSpec
MODELS: Registry = Registry(MODELS_GROUP)
