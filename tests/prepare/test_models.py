import numpy as np
import onnx
import pytest

from perfsuite.prepare import cache, models
from perfsuite.prepare.models import zoo

ort = pytest.importorskip("onnxruntime")


def run(info, batch=2):
    sess = ort.InferenceSession(str(info.path), providers=["CPUExecutionProvider"])
    return sess.run(None, info.inputs(batch))[0]


def test_resnet50_architecture_and_counts():
    info = models.get("resnet50")
    # torchvision resnet50 has 25,557,032 parameters including 53,120 BN gammas/betas; folding
    # BN into the convs leaves conv weights + one bias per BN channel + the FC.
    assert 25_400_000 < info.params < 25_600_000
    assert 8.0e9 < info.flops_per_item < 8.4e9  # ~4.1 GMAC per image
    g = onnx.load(str(info.path)).graph
    ops = [n.op_type for n in g.node]
    assert ops.count("Conv") == 53 and ops.count("MaxPool") == 1 and ops.count("Add") >= 16
    stem = next(n for n in g.node if n.op_type == "Conv")
    attrs = {a.name: list(a.ints) for a in stem.attribute}
    assert attrs["kernel_shape"] == [7, 7] and attrs["strides"] == [2, 2]
    assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "N"  # dynamic batch
    y = run(info, batch=3)
    assert y.shape == (3, 1000) and np.isfinite(y).all()
    assert 0.1 < y.std() < 10  # standardised, not blown up


def test_v15_stride_on_3x3():
    g = onnx.load(str(models.get("resnet50").path)).graph
    strided = [
        n
        for n in g.node
        if n.op_type == "Conv" and [a.ints for a in n.attribute if a.name == "strides"][0] == [2, 2]
    ]
    kernels = sorted(
        tuple([a.ints for a in n.attribute if a.name == "kernel_shape"][0]) for n in strided
    )
    # stem 7x7, three 3x3 (stages 2-4) and three 1x1 projection shortcuts
    assert kernels == [(1, 1)] * 3 + [(3, 3)] * 3 + [(7, 7)]


@pytest.mark.parametrize(
    "name, out_shape",
    [
        ("small_cnn", (2, 10)),
        ("mlp4mb", (2, 512)),
        ("transformer", (2, 128, 512)),
        ("digits_mlp", (2, 10)),
    ],
)
def test_models_run_with_sane_outputs(name, out_shape):
    info = models.get(name)
    y = run(info)
    assert y.shape == out_shape and np.isfinite(y).all()
    assert 0.05 < float(np.abs(y).mean()) < 50


def test_mlp_family_sizes():
    for mb in (4, 8, 32, 128):
        h = zoo.mlp_hidden(mb)
        assert abs(4 * h * h * 4 / 2**20 - mb) / mb < 0.03
    info = models.get("mlp8mb")
    assert abs(info.weight_bytes / 2**20 - 8) < 0.3


def test_transformer_shape():
    info = models.get("transformer")
    assert 12_000_000 < info.params < 13_000_000  # 4 x (4*512^2 + 2*512*2048) + biases, LN
    ops = {n.op_type for n in onnx.load(str(info.path)).graph.node}
    assert {"LayerNormalization", "Softmax", "Erf", "MatMul"} <= ops


def test_digits_classifier_is_trained_on_real_labels():
    info = models.get("digits_mlp")
    _, x_test, _, y_test = zoo.digits_split()
    sess = ort.InferenceSession(str(info.path), providers=["CPUExecutionProvider"])
    acc = (sess.run(None, {"input": x_test})[0].argmax(1) == y_test).mean()
    assert acc > 0.95
    assert info.meta["sklearn_test_accuracy"] == pytest.approx(acc, abs=0.002)


@pytest.mark.parametrize(
    "builder", [zoo.build_small_cnn, zoo.build_transformer, lambda: zoo.build_mlp(4)]
)
def test_builders_are_deterministic(builder):
    assert builder().SerializeToString() == builder().SerializeToString()


def test_cached_model_is_reused_and_rebuilt_when_corrupt():
    info = models.get("small_cnn")
    mtime = info.path.stat().st_mtime_ns
    assert models.get("small_cnn").path.stat().st_mtime_ns == mtime
    data = info.path.read_bytes()
    info.path.write_bytes(data[:100])  # truncated
    again = models.get("small_cnn")
    assert again.path.read_bytes() == data and cache.is_valid(again.path)


def test_unknown_model_lists_choices():
    with pytest.raises(ValueError, match="unknown model 'resnet51'.*resnet50"):
        models.get("resnet51")
