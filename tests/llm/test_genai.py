"""The GenAI runtimes on exports made here: OpenVINO GenAI (optimum-intel) and ONNX Runtime
GenAI (its model builder), on the Hugging Face folder of the hand-built decoder's weights.

The export tools run in their own venv (perfsuite.llm.export); the first run makes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from perfsuite.llm import (
    MODELS,
    ContextTooLong,
    ExportFailed,
    accuracy,
    genai_missing,
    open_session,
    prepare,
    run_test,
    serving,
    why_not,
)
from perfsuite.llm import export as exporting
from perfsuite.llm.hf_folder import check_folder, hf_tensors, write_folder

pytest.importorskip("onnx", reason="the LLM decoder is built as ONNX")
GENAI = [
    pytest.param(
        fw, marks=pytest.mark.skipif(fw in genai_missing(), reason=genai_missing().get(fw, ""))
    )
    for fw in ("openvino-genai", "onnxruntime-genai")
]


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    """One export cache for every xdist worker of the run (the exports are made under a
    lock): each export is made once per run, cold."""
    shared = tmp_path_factory.getbasetemp().parent / "genai_cache"
    shared.mkdir(exist_ok=True)
    return shared


def _greedy(variant, prompt, n=24):
    with open_session(variant, threads=1) as session:
        return session.timed_generate(prompt, n)[2]


@pytest.mark.parametrize("framework", GENAI)
def test_exported_runtime_generates_the_hand_built_decoders_tokens(cache, framework):
    """The folder is the same network: the runtime's greedy tokens equal the hand-built
    graph's, token for token."""
    prompt = np.random.default_rng(3).integers(3, MODELS["llm_tiny"].vocab, 16)
    ours = _greedy(prepare("llm_tiny", "fp32", "onnxruntime", cache), prompt)
    variant = prepare("llm_tiny", "fp32", framework, cache)
    assert _greedy(variant, prompt) == ours
    reference = prepare("llm_tiny", "fp32", "onnxruntime", cache)
    # the same fp32 weights are streamed per token (one embedding row + every matmul)
    assert variant.weight_bytes_per_token == pytest.approx(reference.weight_bytes_per_token, 1e-3)
    assert (variant.path / ".complete").exists() and variant.notes[0].startswith("exported: ")


@pytest.mark.parametrize("framework", GENAI)
def test_int4_export_is_compressed_accurate_and_measured(cache, framework):
    variant = prepare("llm_tiny", "int4_sym_g32", framework, cache)
    fp32 = prepare("llm_tiny", "fp32", framework, cache)
    assert variant.weight_bytes_per_token < fp32.weight_bytes_per_token / 5
    got = accuracy("llm_tiny", "int4_sym_g32", framework, cache, tokens=16)
    assert got.passed, got
    # ONNX Runtime GenAI exposes logits; OpenVINO GenAI's pipeline only tokens
    assert (got.mean_cosine is None) == (framework == "openvino-genai")
    with open_session(variant, threads=1) as session:
        pp, pp_samples = run_test(session, "pp32", repetitions=3)
        tg, tg_samples = run_test(session, "tg8", repetitions=2)
        assert session.settings["framework"] == framework
    assert len(pp_samples) == 3 and pp.tokens_per_s == pytest.approx(32 / np.median(pp_samples))
    assert len(tg_samples) == 14 and tg.tokens_per_s == pytest.approx(1 / tg.tpot_s)
    assert tg.ttft_s > 0 and tg.repetitions == 2


def test_qwen2_folder_is_the_same_network(cache):
    """Qwen2's q/k/v biases are zero: its export generates llama's tokens."""
    pytest.importorskip("onnxruntime_genai", reason=genai_missing().get("onnxruntime-genai"))
    prompt = np.random.default_rng(5).integers(3, MODELS["llm_tiny"].vocab, 16)
    llama = _greedy(prepare("llm_tiny", "fp32", "onnxruntime", cache), prompt)
    qwen = prepare("qwen2_tiny", "fp32", "onnxruntime-genai", cache)
    config = json.loads((qwen.path / "genai_config.json").read_text())
    assert config["model"]["type"] == "qwen2"
    assert _greedy(qwen, prompt) == llama


def test_folder_tensors_are_huggingface_layouts():
    spec = MODELS["qwen2_tiny"]
    tensors = hf_tensors(spec, "qwen2")
    assert tensors["model.layers.0.self_attn.k_proj.weight"].shape == (
        spec.kv_heads * spec.head_dim, spec.hidden)  # fmt: skip
    assert tensors["lm_head.weight"].shape == (spec.vocab, spec.hidden)
    assert not tensors["model.layers.1.self_attn.q_proj.bias"].any()
    assert "model.layers.0.self_attn.q_proj.bias" not in hf_tensors(spec, "llama")


def test_folder_tokenizer_round_trips(tmp_path):
    from tokenizers import Tokenizer

    folder = write_folder(MODELS["llm_tiny"], "llama", tmp_path / "m")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    text = "The iris dataset has 150 samples."
    assert tokenizer.decode(tokenizer.encode(text).ids) == text
    assert tokenizer.token_to_id("</s>") == json.loads((folder / "config.json").read_text())[
        "eos_token_id"]  # fmt: skip


@pytest.mark.parametrize("missing", ["tokenizer.json", "config.json"])
def test_folder_missing_a_file_is_one_line(tmp_path, missing):
    folder = write_folder(MODELS["llm_tiny"], "llama", tmp_path / "m")
    (folder / missing).unlink()
    with pytest.raises(ValueError) as error:
        check_folder(folder)
    assert str(error.value) == f"LLM folder {folder} has no {missing}"
    with pytest.raises(ValueError, match="does not exist"):
        check_folder(tmp_path / "nowhere")


def test_failed_export_is_one_line(tmp_path, cache):
    pytest.importorskip("onnxruntime_genai", reason=genai_missing().get("onnxruntime-genai"))
    folder = write_folder(MODELS["llm_tiny"], "llama", tmp_path / "broken")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "no_such_arch"}))
    dest = tmp_path / "out"
    with pytest.raises(ExportFailed) as error:
        exporting.export("onnxruntime-genai", folder, exporting.Scheme(32, True, 0), dest, cache)
    message = str(error.value)
    assert "\n" not in message and "no_such_arch" in message, message
    assert message.startswith("the onnxruntime-genai builder export of broken failed (exit")
    assert not dest.exists() and error.value.detail  # nothing half-written; the log is kept
    assert not list(tmp_path.glob(".out.*"))


def test_unknown_runtime_and_long_prompt(cache):
    assert "unknown framework 'tensorrt-llm'" in why_not("tensorrt-llm", "fp32")
    assert why_not("openvino-genai", "int4_asym_g128") is None
    if "onnxruntime-genai" in genai_missing():
        pytest.skip(genai_missing()["onnxruntime-genai"])
    variant = prepare("llm_tiny", "fp32", "onnxruntime-genai", cache)
    with (
        open_session(variant, 1) as session,
        pytest.raises(ContextTooLong, match="prompt of 700 tokens \\+ 1 generated"),
    ):
        run_test(session, "pp700", repetitions=1)


def test_export_python_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv(exporting.PYTHON_ENV, str(tmp_path / "python"))
    with pytest.raises(ExportFailed, match="PERFSUITE_EXPORT_PYTHON=.*: no such executable"):
        exporting.export_python(tmp_path)
    assert shutil.which("python3")  # the managed venv path is exercised by the tests above


def test_tool_error_line_is_the_exception():
    out = "Traceback (most recent call last):\n  File x\nKeyError: 'no_such_arch'\nbye\n"
    assert exporting.last_error(out) == "KeyError: 'no_such_arch'"
    assert exporting.last_error("warning\n\n") == "warning"


def test_continuous_and_static_batching_serve_every_request(cache):
    for why in genai_missing().values():
        pytest.skip(why)
    ov = prepare("llm_tiny", "int4_sym_g32", "openvino-genai", cache)
    ort = prepare("llm_tiny", "int4_sym_g32", "onnxruntime-genai", cache)
    work = serving.Workload(requests=12, input_tokens=(8, 24), output_tokens=(4, 12),
                            duration_s=0)  # fmt: skip
    requests = serving.schedule(work, 400.0, MODELS["llm_tiny"].vocab)
    continuous = serving.ContinuousBatching(ov, 1)
    static = serving.StaticBatching(ort, 1, batch=4)
    for engine in (continuous, static):
        served = engine.serve(requests)
        assert [len(s.token_s) for s in served] == [r.output_tokens for r in requests]
        assert all(s.ttft > 0 and np.all(np.diff(s.token_s) >= 0) for s in served)
        if engine is static:  # a batch's requests get their tokens at the same steps
            firsts = [s.token_s[0] for s in served]
            assert len(set(firsts)) < len(firsts)
            assert max(firsts.count(t) for t in firsts) <= 4
    got = serving.serve_point(continuous, static, MODELS["llm_tiny"].vocab, work,
                              serving.Bounds(ttft_s=5.0, tpot_s=1.0), start_rps=50.0,
                              max_steps=2)  # fmt: skip
    assert got.best == 1 and got.runs[1].rate_rps > got.runs[0].rate_rps  # generous bounds
    assert got.static.batching == "static" and got.static.rate_rps == got.runs[1].rate_rps
    assert got.static.max_batch == 4 and got.runs[1].goodput_rps > 0


def _declare(tmp_path, table: str):
    from perfsuite.sweep.declared import load_models

    config = tmp_path / "perf.toml"
    config.write_text(f"[models.mine]\n{table}\n")
    return load_models(None, config)


@pytest.fixture
def forget_folders():
    from perfsuite import llm

    yield
    for name in list(llm.FOLDERS):
        llm.FOLDERS.pop(name)
        llm.MODELS.pop(name, None)


def test_a_users_folder_is_an_llm_the_genai_runtimes_run(tmp_path, cache, forget_folders):
    """[models.mine] kind = "llm": the planner takes it as an LLM, the hand-built frameworks
    skip it with the reason, and the GenAI runtime runs its export."""
    from perfsuite import llm
    from perfsuite.sweep.plan import skip_reason

    if "onnxruntime-genai" in genai_missing():
        pytest.skip(genai_missing()["onnxruntime-genai"])
    write_folder(MODELS["qwen2_tiny"], "qwen2", tmp_path / "my-qwen")
    assert _declare(tmp_path, 'kind = "llm"\npath = "my-qwen"') == []  # no file model
    assert llm.MODELS["mine"].architecture == "qwen2" and llm.MODELS["mine"].vocab == 1024
    assert "the GenAI runtimes run it" in skip_reason("mine", "onnxruntime", "fp32", {}, True)
    assert skip_reason("mine", "onnxruntime-genai", "int4_sym_g32", {}, True) is None
    variant = prepare("mine", "fp32", "onnxruntime-genai", cache)
    prompt = np.random.default_rng(5).integers(3, 1024, 16)
    ours = _greedy(prepare("llm_tiny", "fp32", "onnxruntime", cache), prompt)
    assert _greedy(variant, prompt) == ours  # the folder's weights are llm_tiny's


@pytest.mark.parametrize(
    "table, words",
    [
        ('kind = "llm"\npath = "nowhere"', "does not exist or is not a folder"),
        ('kind = "llm"\npath = "no-tokenizer"', "has no tokenizer.json"),
        ('kind = "llm"\npath = "no-config"', "has no config.json"),
        ('kind = "llm"\npath = "bad-config"', "config.json has no num_attention_heads"),
        ('kind = "llm"', "path is missing (a Hugging Face model folder)"),
        ('kind = "llm"\npath = "x"\ndims = {a = 1}', "unknown key 'dims' for kind = \"llm\""),
    ],
)
def test_a_bad_llm_folder_is_one_line(tmp_path, table, words, forget_folders):
    from perfsuite.sweep.declared import ModelError

    for name, drop in (("no-tokenizer", "tokenizer.json"), ("no-config", "config.json")):
        (tmp_path / name).mkdir()
        (tmp_path / name / ("config.json" if drop == "tokenizer.json" else "tokenizer.json")
         ).write_text("{}")  # fmt: skip
    (tmp_path / "bad-config").mkdir()
    (tmp_path / "bad-config" / "config.json").write_text('{"model_type": "llama"}')
    (tmp_path / "bad-config" / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelError) as error:
        _declare(tmp_path, table)
    assert words in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith("models.mine: ")


LLAMA_CPP = genai_missing().get("llama.cpp")


@pytest.mark.skipif(LLAMA_CPP is not None, reason=LLAMA_CPP or "")
def test_llama_cpp_runs_the_same_network_from_gguf(cache):
    """The GGUF file perfsuite writes (Q/K permuted to llama.cpp's rotary pairs) is the
    hand-built network: fp32 greedy tokens agree, Q4_0 passes the logits gate."""
    prompt = np.random.default_rng(3).integers(3, MODELS["llm_tiny"].vocab, 16)
    ours = _greedy(prepare("llm_tiny", "fp32", "onnxruntime", cache), prompt)
    fp32 = prepare("llm_tiny", "fp32", "llama.cpp", cache)
    assert _greedy(fp32, prompt) == ours
    got = accuracy("llm_tiny", "int4_sym_g32", "llama.cpp", cache, tokens=32)
    assert got.passed and got.mean_cosine is not None, got
    q4 = prepare("llm_tiny", "int4_sym_g32", "llama.cpp", cache)
    assert q4.weight_bytes_per_token < fp32.weight_bytes_per_token / 5
    with open_session(q4, threads=1) as session:
        tg, samples = run_test(session, "tg8", repetitions=2)
    assert len(samples) == 14 and tg.tokens_per_s > 0


def test_llama_cpp_precisions_and_missing_package_are_one_line():
    assert "llama.cpp has no int4_asym_g128: its types here are" in why_not(
        "llama.cpp", "int4_asym_g128")  # fmt: skip
    assert why_not("llama.cpp", "int4_sym_g32") is None
    if LLAMA_CPP is not None:
        assert "pip install 'perfsuite[llamacpp]'" in LLAMA_CPP
