"""The model zoo: every model is built in code with deterministic weights (no downloads),
registered in ``registry.MODELS`` like any package's, and cached when built (see
perfsuite.prepare.cache)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import erf
from threadpoolctl import threadpool_limits

from perfsuite.prepare import cache
from perfsuite.prepare.models.built import BuiltModel
from perfsuite.prepare.models.feeds import Arrays, Synthetic
from perfsuite.prepare.models.registry import MODELS, PythonModel
from perfsuite.records import ModelInput

if TYPE_CHECKING:  # onnx is imported only when a model is built: the registry stays light
    import onnx

    from perfsuite.prepare.models.graph import GraphBuilder, Tensor

# Bump when a builder's output changes: it is part of every cache key.
BUILDER_VERSION = "2"


# -- builders: each returns an onnx.ModelProto ----------------------------------------------


def _graph(name: str, seed: int, calib_shape: tuple[int, ...]) -> GraphBuilder:
    """A builder calibrated on a seeded standard normal batch of ``calib_shape``."""
    from perfsuite.prepare.models.graph import GraphBuilder  # imports onnx (optional)

    return GraphBuilder(name, seed, np.random.default_rng(seed + 1).standard_normal(calib_shape))


def _bottleneck(g: GraphBuilder, x: Tensor, width: int, stride: int, gain: float) -> Tensor:
    """ResNet v1.5 bottleneck: the stride sits on the 3x3 conv. The branch's last folded BN
    has gamma = ``gain`` (< 1, as trained ResNets end up with and "zero-init residual"
    training starts from): with gamma 1 a random ResNet-50 is chaotic and amplifies any
    perturbation, INT8 rounding included (docs/measurements/int8-per-generation.md)."""
    cin = x.value.shape[1]
    y = g.conv(x, width, 1)
    y = g.conv(y, width, 3, stride=stride)
    y = g.conv(y, 4 * width, 1, relu=False, gamma=gain)
    shortcut = (
        x if stride == 1 and cin == 4 * width else g.conv(x, 4 * width, 1, stride, relu=False)
    )
    return g.add(y, shortcut, relu=True)


def build_resnet(
    blocks=(3, 4, 6, 3),
    image: int = 224,
    classes: int = 1000,
    base: int = 64,
    calib_batch: int = 2,
    seed: int = 50,
    branch_gain: float = 0.1,
) -> onnx.ModelProto:
    g = _graph("resnet", seed, (calib_batch, 3, image, image))
    x = g.conv(g.input, base, 7, stride=2)
    x = g.maxpool(x)
    for stage, n in enumerate(blocks):
        for i in range(n):
            x = _bottleneck(g, x, base * 2**stage, 2 if (i == 0 and stage > 0) else 1, branch_gain)
    x = g.global_avgpool_flat(x)
    return g.model(g.linear(x, classes, normalise="global"))


def build_small_cnn(image: int = 32, classes: int = 10, seed: int = 7) -> onnx.ModelProto:
    g = _graph("small_cnn", seed, (8, 3, image, image))
    x = g.conv(g.input, 16, 3)
    x = g.conv(x, 32, 3, stride=2)
    x = g.conv(x, 32, 3, stride=2)
    x = g.global_avgpool_flat(x)
    return g.model(g.linear(x, classes, normalise="global"))


def mlp_hidden(size_mb: float, layers: int = 4) -> int:
    """Hidden width so that `layers` square fp32 weight matrices total size_mb MiB."""
    return int(round(np.sqrt(size_mb * 2**20 / (4 * layers)) / 16)) * 16


def build_mlp(size_mb: float, layers: int = 4, seed: int = 11) -> onnx.ModelProto:
    h = mlp_hidden(size_mb, layers)
    g = _graph(f"mlp_{size_mb}mb", seed, (16, h))
    x = g.input
    for i in range(layers):
        x = g.linear(x, h, relu=i < layers - 1)
    return g.model(x)


def _layernorm(g: GraphBuilder, x: Tensor) -> Tensor:
    v = x.value
    y = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + 1e-5)
    scale = g.const("ln_g", np.ones(v.shape[-1], np.float32))
    bias = g.const("ln_b", np.zeros(v.shape[-1], np.float32))
    return g.node(
        "LayerNormalization", [x.name, scale, bias], y.astype(np.float32), axis=-1, epsilon=1e-5
    )


def _gelu(g: GraphBuilder, x: Tensor) -> Tensor:
    v = x.value
    inv_sqrt2 = g.const("c", np.array(1 / np.sqrt(2), np.float32), count=False)
    half = g.const("c", np.array(0.5, np.float32), count=False)
    one = g.const("c", np.array(1.0, np.float32), count=False)
    t = g.node("Mul", [x.name, inv_sqrt2], v / np.sqrt(2))
    t = g.node("Erf", [t.name], erf(t.value))
    t = g.node("Add", [t.name, one], t.value + 1)
    t = g.node("Mul", [x.name, t.name], v * t.value)
    return g.node("Mul", [t.name, half], (t.value * 0.5).astype(np.float32))


def _attention(g: GraphBuilder, x: Tensor, heads: int) -> Tensor:
    n, s, d = x.value.shape
    hd = d // heads

    def split(t: Tensor) -> Tensor:  # (n, s, d) -> (n, heads, s, hd)
        shape = g.const("shape", np.array([0, 0, heads, hd], np.int64), count=False)
        r = g.node("Reshape", [t.name, shape], t.value.reshape(n, s, heads, hd))
        return g.node("Transpose", [r.name], r.value.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])

    q, k, v = (split(g.linear(x, d, normalise=False)) for _ in range(3))
    kt = g.node("Transpose", [k.name], k.value.transpose(0, 1, 3, 2), perm=[0, 1, 3, 2])
    scores = g.node("MatMul", [q.name, kt.name], q.value @ kt.value)
    scale = g.const("c", np.array(1 / np.sqrt(hd), np.float32), count=False)
    scores = g.node("Mul", [scores.name, scale], scores.value / np.sqrt(hd))
    e = np.exp(scores.value - scores.value.max(-1, keepdims=True))
    probs = g.node("Softmax", [scores.name], e / e.sum(-1, keepdims=True), axis=-1)
    ctx = g.node("MatMul", [probs.name, v.name], probs.value @ v.value)
    ctx = g.node("Transpose", [ctx.name], ctx.value.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])
    shape = g.const("shape", np.array([0, 0, d], np.int64), count=False)
    ctx = g.node("Reshape", [ctx.name, shape], ctx.value.reshape(n, s, d))
    # attention FLOPs: scores and context, 2 * s * s * d each
    g.flops_per_item += 4 * s * s * d
    return g.linear(ctx, d, normalise=False)


def build_transformer(
    layers: int = 4, hidden: int = 512, heads: int = 8, seq: int = 128, seed: int = 13
) -> onnx.ModelProto:
    """BERT-style post-LN encoder on float embeddings (batch, seq, hidden)."""
    g = _graph("transformer", seed, (2, seq, hidden))
    # He init would double the residual stream per layer; 1/sqrt(fan_in) keeps it level.
    x = g.input
    for _ in range(layers):
        x = _layernorm(g, g.add(x, _attention(g, x, heads)))
        h = _gelu(g, g.linear(x, 4 * hidden, normalise=False))
        x = _layernorm(g, g.add(x, g.linear(h, hidden, normalise=False)))
    return g.model(x)


def digits_split(seed: int = 0):
    """scikit-learn's bundled 8x8 digits (1797 labelled images, shipped in the package):
    70/30 stratified split, pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits  # optional (perfsuite[frameworks])
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)


def build_digits_classifier(hidden: int = 64, seed: int = 0) -> tuple[onnx.ModelProto, dict]:
    from sklearn.neural_network import MLPClassifier  # optional (perfsuite[frameworks])

    from perfsuite.prepare.models.graph import GraphBuilder  # imports onnx (optional)

    x_train, x_test, y_train, y_test = digits_split(seed)
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=100, random_state=seed)
    with warnings.catch_warnings():  # 100 epochs reach ~97.6%; more only cost build time
        warnings.simplefilter("ignore")
        clf.fit(x_train, y_train)
    g = GraphBuilder("digits_mlp", seed, x_train[:64])
    h = g.linear(
        g.input, hidden, relu=True, normalise=False, weight=clf.coefs_[0], bias=clf.intercepts_[0]
    )
    out = g.linear(h, 10, normalise=False, weight=clf.coefs_[1], bias=clf.intercepts_[1])
    return g.model(out), {"sklearn_test_accuracy": float(clf.score(x_test, y_test))}


# -- registry -------------------------------------------------------------------------------

MLP_SIZES_MB = (4, 8, 16, 24, 28, 32, 48, 64, 128)


def digits_feeds() -> Arrays:
    """The held-out digits with their labels; calibration on the training split."""
    x_train, x_test, _, y_test = digits_split()
    return Arrays({"input": x_test}, np.asarray(y_test), {"input": x_train})


def _zoo(builder, params, input_shape, feeds=None) -> PythonModel:
    return PythonModel(builder, params, input_shape, feeds, version=BUILDER_VERSION)


ZOO: dict[str, PythonModel] = {
    "resnet50": _zoo(build_resnet, {}, lambda p: (3, 224, 224)),
    "small_cnn": _zoo(build_small_cnn, {}, lambda p: (3, 32, 32)),
    "transformer": _zoo(build_transformer, {}, lambda p: (128, 512)),
    # BERT-class encoders for the serving scenarios: BERT-base's width (768, 12 heads), 4 of its
    # 12 layers, so that a 2-core host still runs enough queries for LoadGen in seconds
    **{
        f"bert{seq}": _zoo(
            build_transformer,
            {"layers": 4, "hidden": 768, "heads": 12, "seq": seq},
            lambda p: (p["seq"], p["hidden"]),
        )
        for seq in (128, 384)
    },
    "digits_mlp": _zoo(build_digits_classifier, {}, lambda p: (64,), digits_feeds),
    **{
        f"mlp{mb}mb": _zoo(build_mlp, {"size_mb": mb}, lambda p: (mlp_hidden(p["size_mb"]),))
        for mb in MLP_SIZES_MB
    },
}


for _name, _model in ZOO.items():
    MODELS[_name] = _model


def _build_to(model: PythonModel, path: Path) -> dict:
    # One BLAS thread: multi-threaded reductions round differently, and the calibration pass
    # must give the same bytes whatever the caller's thread settings.
    with threadpool_limits(1):
        built = model.builder(**model.params)
    proto, extra = built if isinstance(built, tuple) else (built, {})
    params, flops = (int(kv.split("=")[1]) for kv in proto.doc_string.split())
    cache.atomic_write_bytes(path, proto.SerializeToString())
    weight_bytes = sum(
        int(np.prod(t.dims)) * 4 for t in proto.graph.initializer if t.data_type == 1
    )
    return {"params": params, "flops_per_item": flops, "weight_bytes": weight_bytes, **extra}


def build(name: str, model: PythonModel) -> BuiltModel:
    """Build (or load from the cache) a model defined in Python."""
    key = f"model-{name}"
    path = cache.cached(key, model.params, model.version, lambda p: _build_to(model, p))
    meta = cache.read_meta(path)  # what _build_to measured, and the cache's own keys
    counts = {k: meta.pop(k) for k in ("params", "flops_per_item", "weight_bytes")}
    shape = ["N", *model.input_shape(model.params)]
    signature = (ModelInput(name="input", dtype="float32", shape=shape),)
    samples = 8 if counts["flops_per_item"] > 1e9 else 32
    feeds = model.feeds() if model.feeds else Synthetic(name, signature, samples=samples)
    return BuiltModel(name, path, signature, feeds, **counts, meta=meta)
