import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from perfsuite.prepare import accuracy, models, quantize
from perfsuite.prepare.backends import BACKENDS
from perfsuite.prepare.diagnose import diagnose, op_counts
from perfsuite.prepare.quantize import Prepared
from perfsuite.records import Unsupported

pytest.importorskip("onnxruntime")
HAVE_OV = BACKENDS["openvino"].version() is not None
HAVE_NNCF = HAVE_OV and pytest.importorskip("importlib").util.find_spec("nncf") is not None

CASES = [("onnxruntime", p) for p in BACKENDS["onnxruntime"].precisions if p != "fp32"]
CASES += [
    pytest.param(
        "openvino",
        p,
        marks=pytest.mark.skipif(
            not HAVE_OV or (p == "int8_nncf" and not HAVE_NNCF),
            reason="openvino/nncf not installed",
        ),
    )
    for p in BACKENDS["openvino"].precisions
    if p not in ("fp32", "bf16")
]


@pytest.fixture(scope="module")
def cnn():
    return models.get("small_cnn")


@pytest.fixture(scope="module")
def digits():
    return models.get("digits_mlp")


@pytest.mark.parametrize("framework, precision", CASES)
def test_every_int8_variant_passes_the_gate_on_the_small_cnn(cnn, framework, precision):
    variant = quantize.prepare(cnn, precision, framework)
    result = accuracy.evaluate(cnn, variant, framework)
    assert result.metric == "centred_sqnr_db"
    assert result.passed, str(result)


@pytest.mark.parametrize("framework, precision", CASES)
def test_int8_on_real_labels_loses_at_most_one_point(digits, framework, precision):
    result = accuracy.evaluate(digits, quantize.prepare(digits, precision, framework), framework)
    assert result.metric == "top1_drop_points"
    assert result.detail["top1_fp32"] > 95 and result.detail["samples"] == 540
    assert result.passed, str(result)


def test_quantized_models_hold_the_expected_operators(cnn):
    dyn = op_counts(quantize.prepare(cnn, "int8_dynamic", "onnxruntime").path)
    assert dyn["ConvInteger"] == 3 and dyn["DynamicQuantizeLinear"] >= 3
    static = op_counts(quantize.prepare(cnn, "int8_static", "onnxruntime").path)
    assert static["QuantizeLinear"] >= 3 and static["DequantizeLinear"] >= 6
    assert static["Conv"] == 3 and "ConvInteger" not in static


def test_reduce_range_gives_7_bit_weights(cnn):
    def weight_range(precision):
        g = onnx.load(str(quantize.prepare(cnn, precision, "onnxruntime").path)).graph
        vals = [
            numpy_helper.to_array(t) for t in g.initializer if t.data_type == onnx.TensorProto.INT8
        ]
        return max(int(np.abs(v.astype(np.int16)).max()) for v in vals if v.size > 1)

    assert weight_range("int8_static") == 127
    assert weight_range("int8_static_rr") <= 64


def _break_scales(src, dst, factor=8.0):
    """A deliberately broken quantization: every weight scale multiplied by `factor`."""
    model = onnx.load(str(src))
    dq_scales = {n.input[1] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    weights = {n.input[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    int8_weights = {
        t.name
        for t in model.graph.initializer
        if t.name in weights and t.data_type == onnx.TensorProto.INT8
    }
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in int8_weights:
            for t in model.graph.initializer:
                if t.name == n.input[1] and t.name in dq_scales:
                    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * factor, t.name))
    onnx.save(model, str(dst))
    return dst


@pytest.mark.parametrize("model_fixture", ["digits", "cnn"])
def test_gate_catches_a_wrong_scale(request, tmp_path, model_fixture):
    model = request.getfixturevalue(model_fixture)
    good = quantize.prepare(model, "int8_static", "onnxruntime")
    broken = Prepared(_break_scales(good.path, tmp_path / "broken.onnx"), "int8_static", {})
    ok = accuracy.evaluate(model, good, "onnxruntime")
    bad = accuracy.evaluate(model, broken, "onnxruntime")
    assert ok.passed and not bad.passed, (str(ok), str(bad))
    assert bad.metric == ok.metric and bad.threshold == ok.threshold  # one gate, two verdicts


def test_centred_sqnr_sees_what_cosine_misses():
    rng = np.random.default_rng(0)
    common = rng.standard_normal(100) * 10  # input-independent part, shared by every row
    signal = rng.standard_normal((16, 100)) * 0.1
    ref = common + signal
    noisy = ref + rng.standard_normal((16, 100)) * 0.1  # noise as large as the signal
    cos = (ref * noisy).sum() / np.linalg.norm(ref) / np.linalg.norm(noisy)
    assert cos > 0.99  # cosine looks excellent...
    assert abs(accuracy.centred_sqnr_db(ref, noisy)) < 1.5  # ...the centred SQNR says ~0 dB
    assert accuracy.centred_sqnr_db(ref, ref + 0.001 * rng.standard_normal((16, 100))) > 35


def test_centred_sqnr_is_finite_at_its_limits():
    """Identical outputs read as float32's limit, not infinity (which no JSON reader takes);
    a constant reference is 0 dB matched, the lower limit otherwise."""
    ref = np.random.default_rng(1).standard_normal((8, 10))
    limit = accuracy.SQNR_LIMIT_DB
    assert accuracy.centred_sqnr_db(ref, ref) == pytest.approx(limit) and 144 < limit < 145
    assert accuracy.centred_sqnr_db(ref, ref + 1e-30) == pytest.approx(limit)
    flat = np.ones((8, 10))
    assert accuracy.centred_sqnr_db(flat, flat) == 0.0
    assert accuracy.centred_sqnr_db(flat, flat + ref) == -limit


def test_unsupported_combinations_say_why(cnn):
    with pytest.raises(Unsupported, match="int8_dynamic .*has no openvino path"):
        quantize.prepare(cnn, "int8_dynamic", "openvino")
    with pytest.raises(Unsupported, match="int8_nncf is an OpenVINO IR"):
        quantize.prepare(cnn, "int8_nncf", "onnxruntime")
    with pytest.raises(ValueError, match="unknown precision 'int4'"):
        quantize.prepare(cnn, "int4", "onnxruntime")


def test_bf16_skips_without_the_isa(cnn):
    from perfsuite.kernels import cpu_features

    if cpu_features()["avx512_bf16"]:
        assert quantize.prepare(cnn, "bf16", "openvino").framework_options == {
            "precision_hint": "bf16"
        }
    else:
        with pytest.raises(Unsupported, match="bf16 needs avx512_bf16 or AMX"):
            quantize.prepare(cnn, "bf16", "openvino")


def test_diagnosis_names_conv_integer_and_saturation(cnn):
    no_vnni = {"avx2": True, "avx512_vnni": False, "avx_vnni": False}
    dyn = diagnose(quantize.prepare(cnn, "int8_dynamic", "onnxruntime").path, no_vnni)
    assert any("ConvInteger" in r and "#12854" in r for r in dyn)
    static = quantize.prepare(cnn, "int8_static", "onnxruntime").path
    assert any("saturate" in r for r in diagnose(static, no_vnni, reduce_range=False))
    assert not any(
        "saturate" in r for r in diagnose(static, {"avx512_vnni": True}, reduce_range=False)
    )
    assert any("pre-processing" in r for r in diagnose(static, no_vnni, preprocessed=False))
    # the size rule: the smoke CNN is too small for INT8 to pay; ResNet-50 is not
    small = diagnose(static, {"avx512_vnni": True}, flops_per_item=cnn.flops_per_item)
    assert any("the model is small (4.4 MFLOP per item)" in r for r in small)
    assert not diagnose(static, {"avx512_vnni": True}, flops_per_item=8.2e9)


def test_diagnosis_knows_vnni_makes_reduce_range_unnecessary(cnn):
    static = quantize.prepare(cnn, "int8_static_rr", "onnxruntime").path
    vnni = {"avx2": True, "avx512_vnni": True}
    no_vnni = {"avx2": True, "avx512_vnni": False, "avx_vnni": False}
    with_vnni = diagnose(static, vnni, reduce_range=True)
    assert any("reduce_range=True" in r and "vpdpbusd" in r for r in with_vnni)
    assert not any("vpdpbusd" in r for r in diagnose(static, no_vnni, reduce_range=True))
