"""Models a user declares: an ``.onnx`` file (external data beside it), an OpenVINO IR
``.xml`` (with its ``.bin``) or a folder exported by optimum, in a ``[models.NAME]`` table
or with ``--perf-model PATH``. Each bad file, key or array is one ``ModelError`` line naming
the model and what is wrong, found before anything is measured."""

from __future__ import annotations

import collections
import functools
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
from pydantic import ValidationError

from perfsuite.prepare.cache import file_sha256
from perfsuite.prepare.models.built import BuiltModel
from perfsuite.prepare.models.feeds import Arrays, FeedError, Synthetic, is_batch, shape_of
from perfsuite.records import ModelInput, ModelSpec, one_line

# what optimum's exporters write into a folder (ONNX first: every framework runs it)
FOLDER_FILES = ("model.onnx", "openvino_model.xml")
KEYS = set(ModelSpec.model_fields) - {"name", "format"}  # a [models.NAME] table's
# inputs bigger than this share of the available memory are refused before a session opens
MEMORY_SHARE = 0.5


class ModelError(ValueError):
    """A declared model that cannot be measured: one line naming the model and the problem."""


def spec_from_table(name: str, table: object, base: Path) -> ModelSpec:
    """``[models.NAME]`` of a configuration file in folder ``base`` as a ModelSpec (relative
    paths resolve against ``base``)."""
    if not isinstance(table, dict):
        raise ModelError(f"models.{name} must be a table (path = ..., dims = {{...}})")
    if unknown := sorted(set(table) - KEYS):
        raise ModelError(
            f"models.{name}: unknown key {unknown[0]!r}; valid: {', '.join(sorted(KEYS))}"
        )
    if "path" not in table:
        raise ModelError(f"models.{name}: path is missing (an .onnx, an IR .xml or a folder)")
    path, fmt = resolve(name, base / str(table["path"]))
    files = {k: str(base / str(table[k])) for k in ("data", "calibration", "labels") if k in table}
    try:
        return ModelSpec(
            name=name,
            path=str(path),
            format=fmt,
            **files,
            **{k: table[k] for k in KEYS - {"path", *files} if k in table},
        )
    except ValidationError as exc:
        raise ModelError(f"models.{name}: {one_line(exc)}") from None


def spec_from_path(path: str, dims: dict[str, int]) -> ModelSpec:
    """``--perf-model PATH``: the file, named by its stem (a folder by its name)."""
    p = Path(path).expanduser().resolve()
    name = p.name if p.is_dir() else p.stem
    resolved, fmt = resolve(name, p)
    return ModelSpec(name=name, path=str(resolved), format=fmt, dims=dims)


def resolve(name: str, path: Path) -> tuple[Path, str]:
    """The model file at ``path`` (a folder's exported file) and its format."""
    path = path.expanduser().resolve()
    if path.is_dir():
        found = next((path / f for f in FOLDER_FILES if (path / f).is_file()), None)
        if found is None:
            raise ModelError(f"model {name!r}: folder {path} holds no {' or '.join(FOLDER_FILES)}")
        path = found
    if not path.is_file():
        raise ModelError(f"model {name!r}: {path} does not exist")
    if path.suffix == ".onnx":
        return path, "onnx"
    if path.suffix == ".xml":
        if not path.with_suffix(".bin").is_file():
            raise ModelError(
                f"model {name!r}: OpenVINO IR {path} has no weights file "
                f"{path.with_suffix('.bin').name} beside it"
            )
        return path, "ir"
    raise ModelError(f"model {name!r}: {path.name} is not an .onnx file, an IR .xml or a folder")


def signature(spec: ModelSpec) -> tuple[ModelInput, ...]:
    return _read(spec).inputs


@dataclass(frozen=True)
class _Read:
    """What perfsuite reads of a file once (per content: ``_read`` is memoised)."""

    inputs: tuple[ModelInput, ...]
    outputs: tuple[ModelInput, ...]
    ops: tuple[str, ...]
    opsets: dict
    params: int
    weight_bytes: int
    companions: tuple[str, ...]  # files beside it that hold its weights


def _read(spec: ModelSpec) -> _Read:
    stat = os.stat(spec.path)
    return _read_once(spec.name, spec.path, spec.format, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _read_once(name: str, path: str, fmt: str, size: int, mtime_ns: int) -> _Read:
    spec = ModelSpec(name=name, path=path, format=fmt)
    return _read_onnx(spec) if fmt == "onnx" else _read_ir(spec)


def _heavy(spec: ModelSpec, module: str):
    try:
        return importlib.import_module(module)  # optional dependency: only reading needs it
    except ImportError:
        raise ModelError(f"model {spec.name!r}: reading it needs {module} "
                         "(pip install 'perfsuite[frameworks]')") from None  # fmt: skip


def _dtype(spec: ModelSpec, name: str, to_numpy) -> str:
    try:
        return np.dtype(to_numpy()).name
    except Exception:
        raise ModelError(f"model {spec.name!r}: tensor {name!r} has an element type perfsuite "
                         "cannot feed (only numpy's: float, int, bool)") from None  # fmt: skip


def _onnx_tensor(spec: ModelSpec, onnx, value) -> ModelInput:
    t = value.type.tensor_type
    shape = [
        d.dim_value if d.HasField("dim_value") else d.dim_param or _unnamed(value.name, axis)
        for axis, d in enumerate(t.shape.dim)
    ]
    dtype = _dtype(spec, value.name, lambda: onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
    return ModelInput(name=value.name, dtype=dtype, shape=shape)


def _ir_port(spec: ModelSpec, port) -> ModelInput:
    name = port.get_any_name()
    shape = [
        d.get_length() if d.is_static else _unnamed(name, axis)
        for axis, d in enumerate(port.get_partial_shape())
    ]
    dtype = _dtype(spec, name, lambda: port.get_element_type().to_dtype())
    return ModelInput(name=name, dtype=dtype, shape=shape)


def _unnamed(name: str, axis: int) -> str:
    """A dynamic dimension the file gives no name: the batch on axis 0, else input[axis]."""
    return "?" if axis == 0 else f"{name}[{axis}]"


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _read_onnx(spec: ModelSpec) -> _Read:
    onnx = _heavy(spec, "onnx")
    try:
        model = onnx.load(spec.path, load_external_data=False)
    except Exception as exc:
        raise ModelError(f"model {spec.name!r}: {spec.path} is not a readable ONNX file "
                         f"(truncated?): {_first_line(exc)}") from None  # fmt: skip
    graph = model.graph
    if not graph.node:
        raise ModelError(f"model {spec.name!r}: {spec.path} has no graph (truncated?)")
    folder = Path(spec.path).parent
    external = set()
    for t in graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            where = {e.key: e.value for e in t.external_data}.get("location", "")
            external.add(where)
            if not (folder / where).is_file():
                raise ModelError(
                    f"model {spec.name!r}: external data file {where!r} of "
                    f"initializer {t.name!r} is missing beside {spec.path}"
                )
    weights = {t.name for t in graph.initializer}
    tensors = [(int(np.prod(t.dims)), t.data_type) for t in graph.initializer]
    real = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)
    floats = [(n, onnx.helper.tensor_dtype_to_np_dtype(k)) for n, k in tensors if k in real]
    return _Read(
        inputs=tuple(_onnx_tensor(spec, onnx, i) for i in graph.input if i.name not in weights),
        outputs=tuple(_onnx_tensor(spec, onnx, o) for o in graph.output),
        ops=tuple(n.op_type for n in graph.node),
        opsets={o.domain or "ai.onnx": o.version for o in model.opset_import},
        params=sum(n for n, _ in floats),
        weight_bytes=sum(n * np.dtype(t).itemsize for n, t in floats),
        companions=tuple(sorted(external)),
    )


def _read_ir(spec: ModelSpec) -> _Read:
    ov = _heavy(spec, "openvino")
    try:
        model = ov.Core().read_model(spec.path)
    except Exception as exc:
        raise ModelError(
            f"model {spec.name!r}: OpenVINO cannot read {spec.path}: {_first_line(exc)}"
        ) from None
    floats = []
    for op in model.get_ops():
        if op.get_type_name() == "Constant" and op.get_output_element_type(0).is_real():
            n = int(np.prod(list(op.get_output_shape(0))))
            floats.append((n, op.get_output_element_type(0).size))
    return _Read(
        inputs=tuple(_ir_port(spec, p) for p in model.inputs),
        outputs=tuple(_ir_port(spec, p) for p in model.outputs),
        ops=tuple(op.get_type_name() for op in model.get_ops()),
        opsets={},
        params=sum(n for n, _ in floats),
        weight_bytes=sum(n * size for n, size in floats),
        companions=(Path(spec.path).with_suffix(".bin").name,),
    )


def check_dims(spec: ModelSpec, sig: tuple[ModelInput, ...]) -> None:
    symbolic = {d for inp in sig for d in inp.shape if isinstance(d, str)}
    batch = {d for inp in sig for a, d in enumerate(inp.shape) if is_batch(d, a, spec.batch_dim)}
    for dim in spec.dims:
        if dim in batch:
            raise ModelError(
                f"model {spec.name!r}: dims.{dim}: {dim} is the batch dimension; the profile's "
                "batch (--perf-batch) sets it"
            )
        if dim not in symbolic:
            names = ", ".join(sorted(symbolic)) or "none"
            raise ModelError(
                f"model {spec.name!r}: dims.{dim}: the model has no symbolic "
                f"dimension {dim!r} (its symbolic dimensions: {names})"
            )


def _arrays(spec: ModelSpec, key: str, sig: tuple[ModelInput, ...]) -> dict[str, np.ndarray]:
    path = getattr(spec, key)
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as exc:
        raise ModelError(
            f"model {spec.name!r}: {key} = {path}: cannot read it as .npz "
            f"({type(exc).__name__}: {exc})"
        ) from None
    counts = set()
    for inp in sig:
        if inp.name not in arrays:
            raise ModelError(
                f"model {spec.name!r}: {key} {Path(path).name} has no array for "
                f"input {inp.name!r} (it has {', '.join(arrays) or 'none'})"
            )
        a = arrays[inp.name]
        if a.dtype != np.dtype(inp.dtype):
            raise ModelError(
                f"model {spec.name!r}: {key} {Path(path).name}[{inp.name!r}] is "
                f"{a.dtype}; the input is {inp.dtype}"
            )
        want = _per_item(spec, inp)
        if a.ndim < 1 or a.shape[1:] != want:
            raise ModelError(
                f"model {spec.name!r}: {key} {Path(path).name}[{inp.name!r}] has "
                f"shape {a.shape}; samples of the input are {want} (first axis: "
                "samples)"
            )
        counts.add(len(a))
    if len(counts) > 1 or 0 in counts:
        raise ModelError(
            f"model {spec.name!r}: {key} {Path(path).name}: the inputs' arrays "
            f"hold {sorted(counts)} samples; they must hold the same number > 0"
        )
    return {inp.name: np.ascontiguousarray(arrays[inp.name]) for inp in sig}


def _per_item(spec: ModelSpec, inp: ModelInput) -> tuple[int, ...]:
    try:
        return shape_of(inp, 1, spec.dims, spec.batch_dim)[1:]
    except FeedError as exc:
        raise ModelError(f"model {spec.name!r}: {exc}") from None


def _labels(spec: ModelSpec, samples: int) -> np.ndarray:
    try:
        labels = np.load(spec.labels, allow_pickle=False)
    except Exception as exc:
        raise ModelError(
            f"model {spec.name!r}: labels = {spec.labels}: cannot read it as .npy "
            f"({type(exc).__name__}: {exc})"
        ) from None
    if labels.ndim != 1 or len(labels) != samples or not np.issubdtype(labels.dtype, np.integer):
        raise ModelError(
            f"model {spec.name!r}: labels {Path(spec.labels).name} must hold "
            f"{samples} class indices (one per data sample); it holds "
            f"{labels.dtype} {labels.shape}"
        )
    return labels


def feeds_of(spec: ModelSpec, sig: tuple[ModelInput, ...]):
    if spec.labels and not spec.data:
        raise ModelError(f"model {spec.name!r}: labels need data (the samples they label)")
    calibration = _arrays(spec, "calibration", sig) if spec.calibration else None
    if spec.data:
        data = _arrays(spec, "data", sig)
        n = len(next(iter(data.values())))
        labels = _labels(spec, n) if spec.labels else None
        return Arrays(data, labels, calibration)
    try:
        return Synthetic(
            spec.name,
            sig,
            dict(spec.inputs),
            spec.dims,
            spec.batch_dim,
            calibration_data=calibration,
        )
    except FeedError as exc:
        raise ModelError(str(exc)) from None


def check_memory(spec: ModelSpec, sig: tuple[ModelInput, ...], batch: int) -> None:
    """Refuse dims whose inputs alone would take more than MEMORY_SHARE of what is free."""
    need = 0
    for inp in sig:
        shape = (batch, *_per_item(spec, inp))
        need += int(np.prod(shape, dtype=np.float64)) * np.dtype(inp.dtype).itemsize
    free = psutil.virtual_memory().available
    if need > MEMORY_SHARE * free:
        raise ModelError(
            f"model {spec.name!r}: its inputs at batch {batch} take "
            f"{need / 2**30:.1f} GiB; this host has {free / 2**30:.1f} GiB free "
            "(lower dims or batch)"
        )


def batch_problem(spec: ModelSpec, batch: int) -> str | None:
    """Why the file cannot run at ``batch`` (a fixed first axis), or None."""
    for inp in signature(spec):
        try:
            shape_of(inp, batch, {d: 1 for d in inp.shape if isinstance(d, str)}, spec.batch_dim)
        except FeedError as exc:
            return f"model {spec.name!r}: {exc}"
    return None


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def _contents(spec: ModelSpec) -> dict[str, str]:
    """The digests of every file the model's variants are made from: the model, its weights
    beside it (.bin, external data), its data and calibration arrays."""
    model = Path(spec.path)
    paths = [model, *(model.parent / c for c in _read(spec).companions)]
    paths += [Path(p) for p in (spec.data, spec.calibration) if p]
    return {p.name: _digest(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths}


def build(spec: ModelSpec, batch: int = 1) -> BuiltModel:
    """A declared file as a BuiltModel (its file is used where it is; nothing is copied);
    ``batch``: the largest the run feeds it (its inputs must fit in memory)."""
    sig = signature(spec)
    check_dims(spec, sig)
    for inp in sig:
        _per_item(spec, inp)  # every symbolic dimension has a value
    check_memory(spec, sig, batch)
    read = _read(spec)  # parameters, weight bytes: the floating-point initializers
    feeding = spec.model_dump(include={"dims", "batch_dim", "inputs"}, mode="json")
    identity = {"files": _contents(spec), **feeding}
    return BuiltModel(
        spec.name,
        Path(spec.path),
        sig,
        feeds_of(spec, sig),
        read.params,
        None,  # FLOPs per item: not counted for a file perfsuite did not build
        read.weight_bytes,
        format=spec.format,
        identity=identity,
    )


def describe(spec: ModelSpec) -> dict:
    """What ``perfsuite models inspect`` shows of a file: inputs, outputs, opsets, the op
    histogram, parameters and weight bytes."""
    read = _read(spec)
    histogram = collections.Counter(read.ops)
    return {
        "name": spec.name, "path": spec.path, "format": spec.format,
        "inputs": [i.model_dump() for i in read.inputs],
        "outputs": [o.model_dump() for o in read.outputs],
        "opsets": read.opsets,
        "ops": dict(sorted(histogram.items(), key=lambda kv: (-kv[1], kv[0]))),
        "params": read.params, "weight_bytes": read.weight_bytes,
        "flops_per_item": None,  # not counted for a file perfsuite did not build
    }  # fmt: skip
