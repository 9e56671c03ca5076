"""Models a user declares: an ``.onnx`` file (external data beside it), an OpenVINO IR
``.xml`` (with its ``.bin``) or a folder exported by optimum, in a ``[models.NAME]`` table
or with ``--perf-model PATH``. Each bad file, key or array is one ``ModelError`` line naming
the model and what is wrong, found before anything is measured."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import psutil
from pydantic import ValidationError

from perfsuite.prepare.models.built import BuiltModel
from perfsuite.prepare.models.feeds import Arrays, FeedError, Synthetic, shape_of
from perfsuite.records import ModelInput, ModelSpec, one_line

# what optimum's exporters write into a folder (ONNX first: every framework runs it)
FOLDER_FILES = ("model.onnx", "openvino_model.xml")
KEYS = {
    "path",
    "dims",
    "batch_dim",
    "inputs",
    "data",
    "calibration",
    "labels",
    "latency_bound_ms",
    "options",
}
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
    return _onnx_signature(spec) if spec.format == "onnx" else _ir_signature(spec)


def _onnx(spec: ModelSpec):
    import onnx  # heavy optional dependency: only reading a model needs it

    try:
        model = onnx.load(spec.path, load_external_data=False)
    except Exception as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"model {spec.name!r}: {spec.path} is not a readable ONNX file (truncated?): {why}"
        ) from None
    if not model.graph.node:
        raise ModelError(f"model {spec.name!r}: {spec.path} has no graph (truncated?)")
    folder = Path(spec.path).parent
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            where = {e.key: e.value for e in t.external_data}.get("location", "")
            if not (folder / where).is_file():
                raise ModelError(
                    f"model {spec.name!r}: external data file {where!r} of "
                    f"initializer {t.name!r} is missing beside {spec.path}"
                )
    return model


def _onnx_signature(spec: ModelSpec) -> tuple[ModelInput, ...]:
    import onnx

    graph = _onnx(spec).graph
    weights = {t.name for t in graph.initializer}
    out = []
    for inp in (i for i in graph.input if i.name not in weights):
        t = inp.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name
        shape = [
            d.dim_value if d.HasField("dim_value") else d.dim_param or _unnamed(inp.name, axis)
            for axis, d in enumerate(t.shape.dim)
        ]
        out.append(ModelInput(name=inp.name, dtype=dtype, shape=shape))
    return tuple(out)


def _unnamed(name: str, axis: int) -> str:
    """A dynamic dimension the file gives no name: the batch on axis 0, else input[axis]."""
    return "?" if axis == 0 else f"{name}[{axis}]"


def _ir(spec: ModelSpec):
    import openvino as ov  # heavy optional dependency

    try:
        return ov.Core().read_model(spec.path)
    except Exception as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"model {spec.name!r}: OpenVINO cannot read {spec.path}: {why}") from None


def _ir_signature(spec: ModelSpec) -> tuple[ModelInput, ...]:
    out = []
    for inp in _ir(spec).inputs:
        name = inp.get_any_name()
        shape = [
            d.get_length() if d.is_static else _unnamed(name, axis)
            for axis, d in enumerate(inp.get_partial_shape())
        ]
        out.append(ModelInput(name=name, dtype=inp.get_element_type().to_dtype().name, shape=shape))
    return tuple(out)


def sizes(spec: ModelSpec) -> tuple[int, int]:
    """(parameters, weight bytes): the floating-point initializers or constants."""
    if spec.format == "onnx":
        import onnx

        tensors = [
            (int(np.prod(t.dims)), onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
            for t in _onnx(spec).graph.initializer
        ]
    else:
        tensors = [
            (
                int(np.prod(list(op.get_output_shape(0)))),
                op.get_output_element_type(0).to_dtype(),
            )
            for op in _ir(spec).get_ops()
            if op.get_type_name() == "Constant"
        ]
    floats = [(n, np.dtype(t)) for n, t in tensors if np.issubdtype(np.dtype(t), np.floating)]
    return sum(n for n, _ in floats), sum(n * t.itemsize for n, t in floats)


def _check_dims(spec: ModelSpec, sig: tuple[ModelInput, ...]) -> None:
    symbolic = {d for inp in sig for d in inp.shape if isinstance(d, str)}
    for dim in spec.dims:
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


def build(spec: ModelSpec) -> BuiltModel:
    """A declared file as a BuiltModel (its file is used where it is; nothing is copied)."""
    sig = signature(spec)
    _check_dims(spec, sig)
    for inp in sig:
        _per_item(spec, inp)  # every symbolic dimension has a value
    check_memory(spec, sig, 1)
    params, weight_bytes = sizes(spec)
    stat = os.stat(spec.path)
    identity = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "spec": spec.model_dump_json()}
    return BuiltModel(
        spec.name,
        Path(spec.path),
        sig,
        feeds_of(spec, sig),
        params,
        None,
        weight_bytes,
        format=spec.format,
        identity=identity,
    )


def describe(spec: ModelSpec) -> dict:
    """What ``perfsuite models inspect`` shows of a file: inputs, outputs, opsets, the op
    histogram, parameters and weight bytes."""
    if spec.format == "onnx":
        import onnx

        model = _onnx(spec)
        outputs = [
            ModelInput(
                name=o.name,
                dtype=onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type).name,
                shape=[
                    d.dim_value if d.HasField("dim_value") else d.dim_param or _unnamed(o.name, i)
                    for i, d in enumerate(o.type.tensor_type.shape.dim)
                ],
            )
            for o in model.graph.output
        ]
        ops = [n.op_type for n in model.graph.node]
        opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    else:
        model = _ir(spec)
        outputs = [
            ModelInput(
                name=o.get_any_name(),
                dtype=o.get_element_type().to_dtype().name,
                shape=[d.get_length() if d.is_static else "?" for d in o.get_partial_shape()],
            )
            for o in model.outputs
        ]
        ops = [op.get_type_name() for op in model.get_ops()]
        opsets = {}
    params, weight_bytes = sizes(spec)
    histogram: dict[str, int] = {}
    for op in ops:
        histogram[op] = histogram.get(op, 0) + 1
    return {
        "name": spec.name, "path": spec.path, "format": spec.format,
        "inputs": [i.model_dump() for i in signature(spec)],
        "outputs": [o.model_dump() for o in outputs],
        "opsets": opsets,
        "ops": dict(sorted(histogram.items(), key=lambda kv: (-kv[1], kv[0]))),
        "params": params, "weight_bytes": weight_bytes,
        "flops_per_item": None,  # not counted for a file perfsuite did not build
    }  # fmt: skip
