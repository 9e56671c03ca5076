"""perfsuite.llm on llm_tiny: KV-cache correctness, graph contents, accuracy, bench shape."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from perfsuite.llm import (
    MODELS,
    PRECISIONS,
    ContextTooLong,
    Unsupported,
    accuracy,
    open_session,
    prepare,
    roofline,
    run_test,
    why_not,
)
from perfsuite.llm.bench import agreement_of, teacher_forced_logits
from perfsuite.records import decode_test

onnx = pytest.importorskip("onnx", reason="the LLM decoder is built as ONNX")
pytest.importorskip("onnxruntime", reason="ONNX Runtime is a framework under test")

HAS_OPENVINO = importlib.util.find_spec("openvino") is not None
FRAMEWORKS = [
    "onnxruntime",
    pytest.param(
        "openvino",
        marks=pytest.mark.skipif(not HAS_OPENVINO, reason="OpenVINO is an optional framework"),
    ),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("llm_cache")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_step_by_step_logits_equal_prefill(cache, framework):
    session = open_session(prepare("llm_tiny", "fp32", framework, cache), threads=1)
    tokens = np.random.default_rng(7).integers(0, MODELS["llm_tiny"].vocab, 12)
    stepped = teacher_forced_logits(session, tokens)
    for end in (1, 5, 12):
        full = session.prefill(tokens[:end])
        np.testing.assert_allclose(stepped[end - 1], full, atol=2e-4, rtol=1e-4)
    session.close()


def test_gqa_and_plain_attention_agree():
    import onnxruntime as ort

    from perfsuite.llm.decoder import build_onnx

    spec = MODELS["llm_tiny"]
    ids = np.arange(3, 11, dtype=np.int64)[None]
    empty = np.zeros((1, spec.kv_heads, 0, spec.head_dim), np.float32)
    logits = []
    for attention in ("gqa", "plain"):
        s = ort.InferenceSession(build_onnx(spec, attention).SerializeToString())
        feed = {"input_ids": ids, "seqlens_k": np.array([7], np.int32),
                "total_sequence_length": np.array(8, np.int32)}  # fmt: skip
        feed |= {i.name: empty for i in s.get_inputs() if i.name.startswith("past_")}
        names = {i.name for i in s.get_inputs()}
        logits.append(s.run(["logits"], {k: v for k, v in feed.items() if k in names})[0])
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-4)


def test_ort_graph_has_gqa_and_matmulnbits_with_block_size(cache):
    fp32 = onnx.load(str(prepare("llm_tiny", "fp32", "onnxruntime", cache).path))
    assert any(n.op_type == "GroupQueryAttention" for n in fp32.graph.node)
    variant = prepare("llm_tiny", "int4_sym_g32", "onnxruntime", cache)
    nbits = [n for n in onnx.load(str(variant.path)).graph.node if n.op_type == "MatMulNBits"]
    spec = MODELS["llm_tiny"]
    assert len(nbits) == 7 * spec.layers + 1  # q k v o gate up down per layer + LM head
    for node in nbits:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (4, 32, 4)
    assert variant.accuracy_level == 4
    assert variant.weight_bytes_per_token < variant.params * 4 / 6


def test_openvino_int4_has_compressed_constants(cache):
    ov = pytest.importorskip("openvino", reason="OpenVINO is a framework under test")
    variant = prepare("llm_tiny", "int4_asym_g128", "openvino", cache)
    model = ov.Core().read_model(str(variant.path))
    types = {str(op.get_output_element_type(0)) for op in model.get_ops()
             if op.get_type_name() == "Constant"}  # fmt: skip
    assert types & {"<Type: 'uint4_t'>", "<Type: 'int4_t'>"} or types & {"u4", "i4"}, types


def test_cache_is_reused_and_keyed_by_accuracy_level(cache):
    a = prepare("llm_tiny", "int4_sym_g128", "onnxruntime", cache)
    mtime = a.path.stat().st_mtime_ns
    assert (
        prepare("llm_tiny", "int4_sym_g128", "onnxruntime", cache).path.stat().st_mtime_ns == mtime
    )
    b = prepare("llm_tiny", "int4_sym_g128", "onnxruntime", cache, accuracy_level=0)
    assert b.path != a.path and b.accuracy_level == 0
    assert not list(cache.glob(".*"))  # no temp files left behind


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("precision", ["int8_wo", "int4_sym_g32", "int4_asym_g128"])
def test_accuracy_of_quantized_variants(cache, framework, precision):
    result = accuracy("llm_tiny", precision, framework, cache, tokens=32)
    assert result.passed, result


def test_broken_variant_fails_accuracy(cache, tmp_path):
    """A variant whose transformer-block weights came out zero (a broken quantizer) fails."""
    good = prepare("llm_tiny", "fp32", "onnxruntime", cache)
    proto = onnx.load(str(good.path))
    for tensor in proto.graph.initializer:
        if tensor.name.startswith("layers.") and ".w" in tensor.name:
            zeros = np.zeros(onnx.numpy_helper.to_array(tensor).shape, np.float32)
            tensor.CopyFrom(onnx.numpy_helper.from_array(zeros, tensor.name))
    onnx.save(proto, str(tmp_path / "broken.onnx"))
    broken = dataclasses.replace(good, path=tmp_path / "broken.onnx", precision="int8_wo")
    tokens = np.random.default_rng(3).integers(0, MODELS["llm_tiny"].vocab, 32)
    logits = [teacher_forced_logits(open_session(v, 1), tokens) for v in (good, broken)]
    result = agreement_of("llm_tiny", "int8_wo", "onnxruntime", *logits)
    assert not result.passed, result


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_bench_pp_and_tg_give_consistent_positive_numbers(cache, framework):
    session = open_session(prepare("llm_tiny", "int4_sym_g32", framework, cache), threads=1)
    pp, pp_samples = run_test(session, "pp32", repetitions=3)
    assert len(pp_samples) == 3 and pp.tpot_s is None and pp.ttft_s is None
    assert all(s > 0 for s in pp_samples) and pp.tokens == 32
    assert pp.tokens_per_s == pytest.approx(32 / float(np.median(pp_samples)))
    assert pp.weight_bytes_per_token == session.variant.weight_bytes_per_token
    tg, tg_samples = run_test(session, "tg8", repetitions=2)
    # the first token's time is the TTFT; tg's samples are the 7 steps after it, per rep
    assert len(tg_samples) == 14 and all(s > 0 for s in tg_samples)
    assert tg.repetitions == 2 and tg.tokens_per_s_sd is not None
    assert tg.tokens_per_s == pytest.approx(1 / tg.tpot_s)
    assert tg.ttft_s > 0 and math.isfinite(tg.tokens_per_s)
    assert session.settings["framework"] == framework
    session.close()


@pytest.mark.parametrize("name", ["tg0", "xx12", "pp", "pp-3", "PP12", "tg100000", "tg012"])
def test_bad_test_names_raise_one_line(name):
    with pytest.raises(ValueError, match="bad LLM test name") as error:
        decode_test(name)
    assert "\n" not in str(error.value)
    assert decode_test("pp512") == ("pp", 512) and decode_test("tg128") == ("tg", 128)


def test_prompt_longer_than_context_raises(cache):
    session = open_session(prepare("llm_tiny", "fp32", "onnxruntime", cache), threads=1)
    with pytest.raises(ContextTooLong) as error:
        run_test(session, "pp700", repetitions=1)
    assert (
        str(error.value) == "prompt of 700 tokens + 1 generated exceeds the model's context of 640"
    )
    with pytest.raises(ContextTooLong, match="prompt of 16 tokens \\+ 640 generated"):
        run_test(session, "tg640", repetitions=1)


def test_roofline_arithmetic():
    r = roofline(50_000_000, triad_gbs=20.0, l3_bytes=32 << 20)
    assert r.ceiling_tokens_per_s == pytest.approx(400.0)
    assert not r.cache_resident
    assert r.fraction(100.0) == pytest.approx(0.25)
    assert roofline(1 << 20, 20.0, 32 << 20).cache_resident
    with pytest.raises(ValueError):
        roofline(0, 20.0, 1)


def test_llm_small_int4_weights_exceed_l3():
    spec = MODELS["llm_small"]
    assert spec.kv_heads < spec.heads  # GQA
    h, kv = spec.hidden, spec.kv_heads * spec.head_dim
    matmul_params = spec.layers * (2 * h * h + 2 * h * kv + 3 * h * spec.ffn) + h * spec.vocab
    assert matmul_params / 2 > 32 << 20


def test_why_not_and_unsupported(cache):
    assert why_not("onnxruntime", "fp32") is None
    assert all(why_not(f, p) is None for f in ("onnxruntime", "openvino") for p in PRECISIONS)
    assert "unknown precision" in why_not("onnxruntime", "int3")
    assert "unknown framework" in why_not("tvm", "fp32")
    with pytest.raises(Unsupported, match="unknown framework"):
        prepare("llm_tiny", "fp32", "tvm", cache)
    with pytest.raises(Unsupported, match="unknown LLM model"):
        prepare("llm_huge", "fp32", "onnxruntime", cache)
