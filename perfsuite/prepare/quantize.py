"""Precisions and the quantization paths that produce them, cached like models (what each
one is: docs/guide/inference.md, "Precisions").

Each is a ``Quantizer`` in the ``perfsuite.precisions`` entry-point group
(``perfsuite.prepare.extensions``), or added at run time by ``register_precision``. The
frameworks' quantization libraries are heavy and optional: the builders import them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from perfsuite.kernels import cpu_features
from perfsuite.prepare import cache
from perfsuite.prepare.backends import get_backend
from perfsuite.prepare.extensions import PRECISIONS as GROUP
from perfsuite.prepare.extensions import Registry
from perfsuite.prepare.models import BuiltModel
from perfsuite.records import Unsupported

QUANTIZER_VERSION = "1"


@dataclass(frozen=True)
class Prepared:
    path: Path
    precision: str
    framework_options: dict  # extra backend options the precision needs (e.g. bf16 hint)


def calibration_inputs(model: BuiltModel) -> list[dict]:
    """Calibration feeds of batch 1, from the model's data (``BuiltModel.feeds``)."""
    return model.feeds.calibration()


def _reader(batches: list[dict]):
    from onnxruntime.quantization import CalibrationDataReader  # heavy, optional

    it = iter(batches)

    class Batches(CalibrationDataReader):
        def get_next(self):
            return next(it, None)

    return Batches()


@contextmanager
def _tmp_sibling(target: Path, suffix: str, companions: tuple[str, ...] = ()) -> Iterator[Path]:
    """A temporary file beside ``target``, removed with its ``companions`` on exit."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=suffix)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
    finally:
        for p in (tmp, *(tmp.with_suffix(s) for s in companions)):
            p.unlink(missing_ok=True)


def _ort_dynamic(model: BuiltModel, target: Path) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic  # heavy, optional

    with _tmp_sibling(target, ".onnx") as tmp:
        quantize_dynamic(model.path, tmp, weight_type=QuantType.QInt8)
        os.replace(tmp, target)
    return {}


def _ort_static(model: BuiltModel, target: Path, reduce_range: bool) -> dict:
    # heavy, optional
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    with _tmp_sibling(target, ".pre.onnx") as pre, _tmp_sibling(target, ".onnx") as tmp:
        quant_pre_process(str(model.path), str(pre), skip_symbolic_shape=False)
        quantize_static(
            str(pre),
            str(tmp),
            _reader(calibration_inputs(model)),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            reduce_range=reduce_range,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
        os.replace(tmp, target)
    return {"preprocessed": True, "reduce_range": reduce_range}


def _nncf(model: BuiltModel, target: Path) -> dict:
    import nncf  # heavy, optional (with openvino)
    import openvino as ov

    ov_model = ov.Core().read_model(str(model.path))
    batches = calibration_inputs(model)
    dataset = nncf.Dataset(batches)  # each item a feed: input name -> array
    quantized = nncf.quantize(ov_model, dataset, subset_size=len(batches))
    with _tmp_sibling(target, ".xml", (".bin",)) as tmp:
        ov.save_model(quantized, str(tmp), compress_to_fp16=False)
        os.replace(tmp.with_suffix(".bin"), target.with_suffix(".bin"))
        os.replace(tmp, target)
    return {}


NO_BF16 = "bf16 needs avx512_bf16 or AMX; this CPU has neither"


@dataclass(frozen=True)
class Quantizer:
    """How one precision's model file is made. ``build(model, target) -> metadata`` writes the
    file (None: the fp32 model as built); ``missing()`` says why this host cannot run it."""

    build: Callable[[BuiltModel, Path], dict] | None = None
    sources: tuple[str, ...] = ("onnx",)  # model formats build() reads (records.ModelFormat)
    suffix: str = ".onnx"
    companions: tuple[str, ...] = ()
    framework_options: dict = field(default_factory=dict)
    missing: Callable[[], str | None] = lambda: None


# perfsuite's own precisions: the perfsuite.precisions entry points in pyproject.toml name these
FP32 = Quantizer(sources=("onnx", "ir"))
INT8_DYNAMIC = Quantizer(_ort_dynamic)
INT8_STATIC = Quantizer(partial(_ort_static, reduce_range=False))
INT8_STATIC_RR = Quantizer(partial(_ort_static, reduce_range=True))
INT8_NNCF = Quantizer(_nncf, ("onnx", "ir"), ".xml", (".bin",))
BF16 = Quantizer(
    sources=("onnx", "ir"),
    framework_options={"precision_hint": "bf16"},
    missing=lambda: None if cpu_features().get("avx512_bf16") else NO_BF16,
)

# name -> Quantizer: the entry points, and what register_precision added
QUANTIZERS: Registry = Registry(GROUP)


def __getattr__(name: str):
    if name == "PRECISIONS":  # every precision known now (entry points can appear later)
        return tuple(QUANTIZERS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_precision(name: str, quantizer: Quantizer) -> None:
    """A new precision at run time (a conftest's); a package declares an entry point."""
    QUANTIZERS[name] = quantizer


def why_not_format(precision: str, model: str, fmt: str) -> str | None:
    """Why ``precision`` cannot be made from a model file of format ``fmt``, or None."""
    q = QUANTIZERS.named(precision, "precision")
    if fmt in q.sources:
        return None
    return (f"{precision} is made from an ONNX file; {model} is an OpenVINO IR "
            "(int8_nncf and bf16 take an IR)")  # fmt: skip


def prepare(model: BuiltModel, precision: str, framework: str) -> Prepared:
    """The model file for (precision, framework), building and caching it when needed."""
    q = QUANTIZERS.named(precision, "precision")
    if reason := get_backend(framework).why_not(precision) or q.missing():
        raise Unsupported(reason)
    if model.format not in q.sources:
        raise Unsupported(why_not_format(precision, model.name, model.format))
    path = model.path
    if q.build is not None:
        key = {"model": model.path.name, **model.identity}
        build = partial(q.build, model)
        path = cache.cached(
            f"{precision}-{model.name}", key, QUANTIZER_VERSION, build, q.suffix, q.companions
        )
    return Prepared(path, precision, dict(q.framework_options))
