"""Build (or reuse) a decoder at a precision for a framework, and open a KV-cache session.

ONNX Runtime: the ``gqa`` graph, weight-only quantized by ``MatMulNBitsQuantizer``
(MatMulNBits, bits 8 or 4). OpenVINO: its ONNX frontend reads ``GroupQueryAttention`` into an
internal op that IR cannot serialize ("unsupported opset: extension" on read-back), so it
gets the ``plain`` graph, compressed by ``nncf.compress_weights`` and saved as IR. Both
sessions feed the KV cache back as numpy arrays (no stateful OpenVINO model).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite.llm import export, genai, hf_folder
from perfsuite.llm.decoder import (
    GRAPH_VERSION,
    MODELS,
    ContextTooLong,
    DecoderSpec,
    Unsupported,
    build_onnx,
    spec_for,
)
from perfsuite.llm.gguf_file import GGUF_TYPES, write_gguf
from perfsuite.text import plain_value

VARIANTS_VERSION = "1"  # bump when quantization settings change: part of the cache key
GGUF_VERSION = "1"  # bump when the GGUF writing changes
# onnxruntime/openvino run the hand-built graph; the GenAI runtimes run the same network
# exported by optimum-intel / the onnxruntime-genai builder (perfsuite.llm.export)
FRAMEWORKS = ("onnxruntime", "openvino", "onnxruntime-genai", "openvino-genai", "llama.cpp")
GENAI = ("onnxruntime-genai", "openvino-genai")
PRECISIONS = ("fp32", "int8_wo", "int4_sym_g32", "int4_sym_g128", "int4_asym_g128")
# MatMulNBits computes with int8 activations (its fast CPU kernels) at accuracy_level 4; at
# None/0, 8-bit weights fall to a path 50x slower (ORT 1.32, llm_small tg32 at 2 threads:
# 4.1 against 213.7 tokens/s; docs/measurements/2026-12-07-zen4-serving-decode.md)
ACCURACY_LEVEL = 4


@dataclass(frozen=True)
class WeightOnly:
    bits: int  # 32 = not quantized
    symmetric: bool
    group_size: int  # 0 = per output channel


SCHEMES = {
    "fp32": WeightOnly(32, True, 0),
    "int8_wo": WeightOnly(8, False, 0),
    "int4_sym_g32": WeightOnly(4, True, 32),
    "int4_sym_g128": WeightOnly(4, True, 128),
    "int4_asym_g128": WeightOnly(4, False, 128),
}
INT8_BLOCK = 128  # MatMulNBits has no per-channel mode; int8 uses blocks of 128


# users' own Hugging Face folders ([models.NAME] kind = "llm"), by name; their specs join
# MODELS, so the sweep plans them as LLMs
FOLDERS: dict[str, Path] = {}


def declare_folder(name: str, path: Path) -> DecoderSpec:
    """Register a user's Hugging Face folder as LLM ``name`` (a bad folder: ValueError)."""
    spec = hf_folder.spec_from_folder(Path(path))
    MODELS[name] = spec
    FOLDERS[name] = Path(path).resolve()
    return spec


def why_not(framework: str, precision: str, model: str | None = None) -> str | None:
    """A one-line reason when ``framework`` has no path to ``precision`` (for ``model``)
    here, else None."""
    if model in FOLDERS and framework not in GENAI:
        runtimes = ", ".join(GENAI)
        return (f"{model} is a Hugging Face folder: the GenAI runtimes run it ({runtimes}); "
                "the hand-built graph runs perfsuite's weights only")  # fmt: skip
    if framework not in FRAMEWORKS:
        return f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}"
    if framework == "llama.cpp" and precision in PRECISIONS and precision not in GGUF_TYPES:
        return f"llama.cpp has no {precision}: its types here are " + ", ".join(
            f"{p} ({t})" for p, t in GGUF_TYPES.items()
        )
    if framework == "llama.cpp" and model in FOLDERS:
        return f"{model} is a Hugging Face folder: llama.cpp points run perfsuite's own GGUF"
    if precision not in PRECISIONS:
        return f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}"
    return None


@dataclass(frozen=True)
class Variant:
    path: Path  # .onnx, or the IR's .xml (its .bin beside it)
    framework: str
    precision: str
    model: str
    spec: DecoderSpec
    weight_bytes_per_token: int  # matmul weights (+ scales, zero points) + one embedding row
    file_bytes: int
    params: int
    accuracy_level: int | None = None
    notes: tuple[str, ...] = field(default=())


def default_accuracy_level(precision: str) -> int | None:
    return ACCURACY_LEVEL if SCHEMES[precision].bits < 32 else None


def prepare(
    model: str,
    precision: str,
    framework: str,
    cache_dir: Path,
    *,
    accuracy_level: int | None | str = "default",
) -> Variant:
    """The model file(s) for this combination, built once per cache key and then reused."""
    reason = why_not(framework, precision, model)
    if reason:
        raise Unsupported(reason)
    spec = spec_for(model)
    if accuracy_level == "default":
        accuracy_level = default_accuracy_level(precision)
    if framework == "llama.cpp":
        return _prepare_gguf(model, spec, precision, Path(cache_dir))
    if framework in GENAI:
        return _prepare_genai(model, spec, precision, framework, cache_dir, accuracy_level)
    if framework == "openvino" and accuracy_level is not None:
        accuracy_level = None  # an ONNX Runtime MatMulNBits attribute; OpenVINO has no such knob
    key = _cache_key(spec, precision, framework, accuracy_level)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if framework == "onnxruntime":
        path = cache_dir / f"{model}-{precision}-ort-{key}.onnx"
        if not path.exists():
            _build_ort(spec, precision, accuracy_level, path)
        wbpt = _ort_weight_bytes(path, spec)
        file_bytes = path.stat().st_size
        notes = (
            (f"int8_wo = MatMulNBits bits=8 block {INT8_BLOCK}",) if precision == "int8_wo" else ()
        )
    else:
        path = cache_dir / f"{model}-{precision}-ov-{key}.xml"
        if not (path.exists() and path.with_suffix(".bin").exists()):
            _build_ov(spec, precision, path)
        wbpt = _ov_weight_bytes(path)
        file_bytes = path.stat().st_size + path.with_suffix(".bin").stat().st_size
        notes = ()
    return Variant(
        path=path,
        framework=framework,
        precision=precision,
        model=model,
        spec=spec,
        weight_bytes_per_token=wbpt,
        file_bytes=file_bytes,
        params=param_count(spec),
        accuracy_level=accuracy_level,
        notes=notes,
    )


def _prepare_genai(model, spec, precision, framework, cache_dir, accuracy_level) -> Variant:
    cache_dir = Path(cache_dir)
    if model in FOLDERS:  # a user's: keyed by where it is and what its files are
        folder = FOLDERS[model]
        files = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                       for p in folder.iterdir() if p.is_file())  # fmt: skip
        name = f"{model}-user-{_digest(str(folder), repr(files))}"
    else:
        folder = _own_folder(model, spec, cache_dir)
        name = folder.name
    scheme = SCHEMES[precision]
    key = _digest(name, precision, framework, export.EXPORT_VERSION,
                  *export.export_requirements())  # fmt: skip
    short = "ovgenai" if framework == "openvino-genai" else "ortgenai"
    dest = export.export(framework, folder, export.Scheme(scheme.bits, scheme.symmetric,
                         scheme.group_size), cache_dir / f"{model}-{precision}-{short}-{key}",
                         cache_dir)  # fmt: skip
    if framework == "openvino-genai":
        wbpt, level = _ov_weight_bytes(dest / "openvino_model.xml"), None
    else:
        wbpt, level = _ort_weight_bytes(dest / "model.onnx", spec), accuracy_level
    return Variant(
        path=dest, framework=framework, precision=precision, model=model, spec=spec,
        weight_bytes_per_token=wbpt,
        file_bytes=sum(p.stat().st_size for p in dest.iterdir() if p.is_file()),
        params=param_count(spec), accuracy_level=level,
        notes=(f"exported: {(dest / '.complete').read_text().strip()}",),
    )  # fmt: skip


def _prepare_gguf(model, spec, precision, cache_dir: Path) -> Variant:
    folder = _own_folder(model, spec, cache_dir)
    path = (
        cache_dir / f"{model}-{precision}-gguf-{_digest(folder.name, precision, GGUF_VERSION)}.gguf"
    )
    if not path.exists():
        write_gguf(spec, precision, folder / "tokenizer.json", path)
    import gguf  # optional dependency: reading the file's tensors

    streamed = 0
    for tensor in gguf.GGUFReader(str(path)).tensors:
        if tensor.name == "token_embd.weight":
            streamed += int(tensor.n_bytes) // spec.vocab  # one row per token
        elif len(tensor.shape) == 2 or not tensor.name.endswith("norm.weight"):
            streamed += int(tensor.n_bytes)
    return Variant(
        path=path, framework="llama.cpp", precision=precision, model=model, spec=spec,
        weight_bytes_per_token=streamed, file_bytes=path.stat().st_size,
        params=param_count(spec), notes=(f"GGUF {GGUF_TYPES[precision]}",),
    )  # fmt: skip


def _own_folder(model: str, spec: DecoderSpec, cache_dir: Path) -> Path:
    """A built-in model's Hugging Face folder, written once into the cache."""
    folder = cache_dir / f"{model}-hf-{_digest(spec.key(), hf_folder.FOLDER_VERSION)}"
    if not folder.exists():
        hf_folder.write_folder(spec, spec.architecture, folder)
    return folder


def _digest(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def _cache_key(spec: DecoderSpec, precision: str, framework: str, level: int | None) -> str:
    text = f"{spec.key()}|{precision}|{framework}|acc{level}|g{GRAPH_VERSION}|v{VARIANTS_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _temp_beside(path: Path, suffix: str) -> Path:
    # same directory, so os.replace is an atomic rename on one filesystem
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    os.chmod(name, 0o644)  # mkstemp's 0600 would hide the cache from other users
    return Path(name)


def _build_ort(spec: DecoderSpec, precision: str, level: int | None, path: Path) -> None:
    import onnx  # heavy optional dependency: only building needs it

    proto = build_onnx(spec, "gqa")
    scheme = SCHEMES[precision]
    if scheme.bits != 32:
        # onnxruntime.quantization pulls in onnx_ir and friends: only quantizing needs it
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            DefaultWeightOnlyQuantConfig,
            MatMulNBitsQuantizer,
        )

        block = scheme.group_size or INT8_BLOCK
        config = DefaultWeightOnlyQuantConfig(
            block_size=block, is_symmetric=scheme.symmetric, accuracy_level=level,
            bits=scheme.bits,
        )  # fmt: skip
        quantizer = MatMulNBitsQuantizer(
            proto, bits=scheme.bits, block_size=block, is_symmetric=scheme.symmetric,
            accuracy_level=level, algo_config=config,
        )  # fmt: skip
        # it logs every node it skips at INFO: thousands of lines in a sweep's output
        logging.getLogger(MatMulNBitsQuantizer.__module__).setLevel(logging.WARNING)
        quantizer.process()
        proto = quantizer.model.model
    tmp = _temp_beside(path, ".onnx")
    try:
        onnx.save(proto, str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _build_ov(spec: DecoderSpec, precision: str, path: Path) -> None:
    import onnx  # heavy optional dependency: only building needs it
    import openvino as ov  # heavy optional dependency: only the OpenVINO flavour needs it

    # OpenVINO reads ONNX from a file, not a ModelProto
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        onnx_path = Path(scratch) / "decoder.onnx"
        onnx.save(build_onnx(spec, "plain"), str(onnx_path))
        ov_model = ov.Core().read_model(str(onnx_path))
    scheme = SCHEMES[precision]
    if scheme.bits != 32:
        import nncf  # heavy optional dependency: only weight compression needs it

        mode = {
            (8, False): nncf.CompressWeightsMode.INT8_ASYM,
            (4, True): nncf.CompressWeightsMode.INT4_SYM,
            (4, False): nncf.CompressWeightsMode.INT4_ASYM,
        }[(scheme.bits, scheme.symmetric)]
        kwargs = {} if scheme.bits == 8 else {"group_size": scheme.group_size, "ratio": 1.0,
                                               "all_layers": True}  # fmt: skip
        # all_layers: the LM head too goes to int4, as MatMulNBits does on the ORT side;
        # Gathers (embedding, rotary tables) stay fp32 as on the ORT side, and the rotary
        # tables' 16-wide rows cannot take groups of 32 anyway
        ov_model = nncf.compress_weights(
            ov_model, mode=mode, ignored_scope=nncf.IgnoredScope(types=["Gather"]), **kwargs
        )
    tmp_xml = _temp_beside(path, ".xml")
    tmp_bin = tmp_xml.with_suffix(".bin")
    try:
        ov.save_model(ov_model, str(tmp_xml), compress_to_fp16=False)
        os.replace(tmp_bin, path.with_suffix(".bin"))
        os.replace(tmp_xml, path)  # the .xml last: its presence marks a complete pair
    finally:
        tmp_xml.unlink(missing_ok=True)
        tmp_bin.unlink(missing_ok=True)


def _ort_weight_bytes(path: Path, spec: DecoderSpec) -> int:
    """Bytes streamed per generated token, from the stored initializers."""
    import onnx  # heavy optional dependency: reading the built file

    graph = onnx.load(str(path), load_external_data=False).graph
    sizes = {t.name: (int(np.prod(t.dims)), _itemsize(t.data_type)) for t in graph.initializer}
    streamed = 0
    for node in graph.node:
        if node.op_type in ("MatMul", "MatMulNBits"):
            streamed += sum(n * b for n, b in (sizes.get(i, (0, 0)) for i in node.input[1:]))
    return streamed + spec.hidden * 4  # one fp32 embedding row per token


def _itemsize(onnx_type: int) -> int:
    import onnx  # heavy optional dependency: reading the built file

    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(onnx_type)).itemsize


def param_count(spec: DecoderSpec) -> int:
    """Parameter count of the fp32 model, from the spec alone (no weights drawn)."""
    h, kv, f = spec.hidden, spec.kv_heads * spec.head_dim, spec.ffn
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * f + 2 * h
    return spec.layers * per_layer + 2 * spec.vocab * h + h


def _ov_weight_bytes(xml: Path) -> int:
    """Bytes of constants reaching a MatMul (through decompression ops), plus one row of
    each gathered table."""
    import openvino as ov  # heavy optional dependency: reading the built IR

    model = ov.Core().read_model(str(xml))
    passthrough = {"Convert", "Subtract", "Multiply", "Reshape", "Transpose", "Unsqueeze"}
    streamed = 0
    for op in model.get_ops():
        if op.get_type_name() != "Constant":
            continue
        shape = list(op.get_output_shape(0))
        nbytes = op.get_byte_size()
        frontier, reached = [op], set()
        while frontier and len(reached) < 64:
            node = frontier.pop()
            for target in node.output(0).get_target_inputs():
                consumer = target.get_node()
                kind = consumer.get_type_name()
                if kind in passthrough:
                    frontier.append(consumer)
                else:
                    reached.add(kind)
        if "MatMul" in reached:
            streamed += nbytes
        elif "Gather" in reached and shape and shape[0] > 1:
            streamed += nbytes // shape[0]
    return int(streamed)


class DecoderSession:
    """One sequence at batch 1 with its KV cache, fed back as numpy arrays."""

    def __init__(self, variant: Variant, threads: int) -> None:
        self.variant = variant
        self.spec = variant.spec
        self.threads = threads
        self.settings: dict = {}
        self._run = self._open(variant, threads)
        self.reset()

    def _open(self, variant: Variant, threads: int):
        if variant.framework == "onnxruntime":
            import onnxruntime as ort  # heavy optional dependency: only this framework

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(
                str(variant.path), options, providers=["CPUExecutionProvider"]
            )
            self.settings = {
                "framework": "onnxruntime",
                "version": ort.__version__,
                "intra_op_num_threads": threads,
                "inter_op_num_threads": 1,
                "execution_mode": "sequential",
                "accuracy_level": variant.accuracy_level,
                "kv_cache": "numpy, fed back",
            }
            self._input_names = {i.name for i in session.get_inputs()}
            outputs = [o.name for o in session.get_outputs()]
            return lambda feed: dict(zip(outputs, session.run(outputs, feed), strict=True))
        import openvino as ov  # heavy optional dependency: only this framework

        core = ov.Core()
        config = {
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
            # fp32 means fp32: without this a bf16-capable CPU would run in bf16
            "INFERENCE_PRECISION_HINT": "f32",
        }
        compiled = core.compile_model(str(variant.path), "CPU", config)
        request = compiled.create_infer_request()
        self.settings = {
            "framework": "openvino",
            "version": ov.__version__,
            **{
                k: plain_value(compiled.get_property(k))
                for k in ("INFERENCE_NUM_THREADS", "PERFORMANCE_HINT", "INFERENCE_PRECISION_HINT")
            },
            "accuracy_level": None,
            "kv_cache": "numpy, fed back (not stateful)",
        }
        self._input_names = {i.get_any_name() for i in compiled.inputs}

        def run(feed):
            result = request.infer(feed)
            # copy: the request's output buffers are reused by the next infer; an output has
            # several names (its producer's and the graph output's): index by all of them
            return {n: np.array(result[o]) for o in compiled.outputs for n in o.get_names()}

        return run

    def reset(self) -> None:
        empty = np.zeros((1, self.spec.kv_heads, 0, self.spec.head_dim), np.float32)
        self._past = {
            f"past_{n}_{i}": empty for i in range(self.spec.layers) for n in ("key", "value")
        }
        self.position = 0

    def check_fits(self, prompt: int, generated: int) -> None:
        if prompt + generated > self.spec.max_context:
            raise ContextTooLong(
                f"prompt of {prompt} tokens + {generated} generated exceeds the model's "
                f"context of {self.spec.max_context}"
            )

    def _forward(self, ids: np.ndarray) -> np.ndarray:
        seq = ids.shape[1]
        total = self.position + seq
        if total > self.spec.max_context:
            raise ContextTooLong(
                f"{self.position} tokens in the cache + {seq} more exceed the model's "
                f"context of {self.spec.max_context}"
            )
        feed = {
            "input_ids": ids,
            "seqlens_k": np.array([total - 1], np.int32),
            "total_sequence_length": np.array(total, np.int32),
            **self._past,
        }
        out = self._run({k: v for k, v in feed.items() if k in self._input_names})
        self._past = {
            f"past_{n}_{i}": out[f"present_{n}_{i}"]
            for i in range(self.spec.layers)
            for n in ("key", "value")
        }
        self.position = total
        return out["logits"][0, -1]

    def prefill(self, tokens: np.ndarray) -> np.ndarray:
        """Reset, run the whole prompt at once; the last position's logits [vocab]."""
        ids = np.asarray(tokens, dtype=np.int64).reshape(1, -1)
        if ids.shape[1] == 0:
            raise ValueError("prefill needs at least one token")
        self.check_fits(ids.shape[1], 0)
        self.reset()
        return self._forward(ids)

    def step(self, token: int) -> np.ndarray:
        """One decode step on the KV cache; that position's logits [vocab]."""
        return self._forward(np.array([[token]], dtype=np.int64))

    def timed_generate(self, prompt, n: int) -> tuple[float, list[float], list[int]]:
        return genai.greedy_timed(self, prompt, n)

    def __enter__(self) -> DecoderSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._run = None
        self._past = {}


def open_session(variant: Variant, threads: int):
    """A session of the variant's runtime; each has ``timed_generate``, ``check_fits``
    and ``settings``; those that expose logits have ``prefill``/``step`` too."""
    if variant.framework == "openvino-genai":
        return genai.OpenVinoGenAISession(variant, threads)
    if variant.framework == "onnxruntime-genai":
        return genai.OnnxRuntimeGenAISession(variant, threads)
    if variant.framework == "llama.cpp":
        return genai.LlamaCppSession(variant, threads)
    return DecoderSession(variant, threads)
