"""A user's own models, declared without writing Python: an ONNX encoder over token ids and
a CNN as an OpenVINO IR (tests/user_models.py writes them as a user would have them), read,
inspected, refused in one line when something is wrong, and measured through the sweep with
the INT8 paths, the accuracy gate and a baseline."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from user_models import CLASSES, VOCAB, write_cnn_ir, write_encoder

from perfsuite import records
from perfsuite.cli import main
from perfsuite.host.topology import read_topology
from perfsuite.prepare import models
from perfsuite.prepare.models import files
from perfsuite.prepare.models.registry import MODELS
from perfsuite.sweep.declared import ModelError, check_declared, declare_for_run, load_models
from perfsuite.sweep.finish import FinishOptions, finish
from perfsuite.sweep.plan import expand, load_profiles, make_profile
from perfsuite.sweep.session import PerfSession

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

CONFIG = """
[models.encoder]
path = "encoder.onnx"
dims = { sequence = 16 }
inputs.input_ids = { low = 0, high = VOCAB }
inputs.attention_mask = { value = 1 }
calibration = "calib.npz"

[models.cnn]
path = "cnn"
""".replace("VOCAB", str(VOCAB))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The user's folder: the two models, calibration data and a configuration file."""
    root = tmp_path_factory.mktemp("user")
    write_encoder(root / "encoder.onnx")
    xml = write_cnn_ir(root / "cnn")
    xml.rename(xml.with_name("openvino_model.xml"))  # as optimum's export names it
    xml.with_suffix(".bin").rename(xml.with_name("openvino_model.bin"))
    rng = np.random.default_rng(1)
    ids = rng.integers(0, VOCAB, (24, 16), dtype=np.int64)
    np.savez(root / "calib.npz", input_ids=ids, attention_mask=np.ones_like(ids))
    (root / "perf.toml").write_text(CONFIG)
    return root


@pytest.fixture
def registry():
    """The model registry as it was, afterwards (a test declares models into it)."""
    before = dict(MODELS)
    yield MODELS
    MODELS.clear()
    MODELS.update(before)


def _declare(folder, text: str | None = None) -> list[records.ModelSpec]:
    config = folder / "perf.toml"
    if text is not None:
        config = folder / "bad.toml"
        config.write_text(text)
    declare_for_run(None, config, None, None, {})
    names = [s.name for s in load_models(None, config)]
    check_declared(names)
    return [models.declared(n) for n in names]


def test_a_declared_encoder_and_ir_are_read_with_their_inputs(folder, registry):
    specs = {s.name: s for s in _declare(folder)}
    assert specs["encoder"].format == "onnx" and specs["cnn"].format == "ir"
    assert specs["cnn"].path.endswith("cnn/openvino_model.xml")  # a folder: its export
    enc = models.get("encoder")
    assert [(i.name, i.dtype, i.shape) for i in enc.signature] == [
        ("input_ids", "int64", ["batch", "sequence"]),
        ("attention_mask", "int64", ["batch", "sequence"]),
    ]
    feed = enc.inputs(batch=3)
    assert feed["input_ids"].shape == (3, 16) and feed["input_ids"].max() < VOCAB
    assert (feed["attention_mask"] == 1).all() and enc.flops_per_item is None
    assert len(enc.feeds.calibration()) == 24  # the user's calibration file, row by row
    cnn = models.get("cnn")
    assert cnn.signature[0].shape == ["?", 3, 32, 32] and cnn.image == ("image", (3, 32, 32))


def test_inspect_shows_inputs_dims_dtypes_and_what_can_run(folder, capsys, registry):
    assert main(["models", "inspect", str(folder / "encoder.onnx"), "--json"]) == 0
    about = json.loads(capsys.readouterr().out)
    assert about["inputs"][0] == {"name": "input_ids", "dtype": "int64",
                                  "shape": ["batch", "sequence"]}  # fmt: skip
    assert about["outputs"][0]["shape"] == ["batch", CLASSES]
    assert about["ops"]["MatMul"] == 2 and about["opsets"] == {"ai.onnx": 17}
    assert about["runs"]["onnxruntime"]["int8_static"] == "yes"
    assert "has no openvino path" in about["runs"]["openvino"]["int8_dynamic"]
    assert main(["models", "inspect", str(folder / "cnn")]) == 0
    text = capsys.readouterr().out
    assert "image" in text and "[?, 3, 32, 32]" in text
    assert "onnxruntime  fp32            onnxruntime cannot load an OpenVINO IR" in text


def _broken(folder, tmp_path, what: str):
    """A bad input of each kind, as (configuration text, the line it must give)."""
    enc = "[models.m]\npath = %r\n"
    good_rules = (
        "inputs.input_ids = { low = 0, high = 10 }\ninputs.attention_mask = { value = 1 }\n"
    )
    src = folder / "encoder.onnx"
    if what == "missing file":
        return enc % str(tmp_path / "none.onnx"), "none.onnx does not exist"
    if what == "truncated":
        (tmp_path / "t.onnx").write_bytes(src.read_bytes()[:5000])
        return enc % str(tmp_path / "t.onnx"), "is not a readable ONNX file (truncated?)"
    if what == "missing external data":
        import onnx

        model = onnx.load(str(src))
        onnx.save(model, str(tmp_path / "x.onnx"), save_as_external_data=True,
                  location="x.data", size_threshold=0)  # fmt: skip
        (tmp_path / "x.data").unlink()
        return enc % str(tmp_path / "x.onnx"), "external data file 'x.data'"
    if what == "IR without .bin":
        shutil.copy(folder / "cnn" / "openvino_model.xml", tmp_path / "lone.xml")
        return enc % str(tmp_path / "lone.xml"), "has no weights file lone.bin beside it"
    if what == "no value for a dimension":
        return enc % str(src) + good_rules, "symbolic dimension 'sequence' with no value"
    if what == "a dimension the model does not have":
        text = enc % str(src) + "dims = { sequence = 8, width = 3 }\n" + good_rules
        return text, "dims.width: the model has no symbolic dimension 'width'"
    if what == "integer input without a range":
        text = enc % str(src) + "dims = { sequence = 8 }\ninputs.attention_mask = { value = 1 }\n"
        return text, "integer input 'input_ids' (int64) has no data rule"

    def with_data(**arrays) -> str:
        np.savez(tmp_path / "d.npz", **arrays)
        return enc % str(src) + f'dims = {{ sequence = 8 }}\ndata = "{tmp_path / "d.npz"}"\n'

    if what == "npz without an input":
        text = with_data(input_ids=np.zeros((4, 8), np.int64))
        return text, "has no array for input 'attention_mask'"
    if what == "npz of the wrong dtype":
        z = np.zeros((4, 8), np.int32)
        return with_data(input_ids=z, attention_mask=z), "d.npz['input_ids'] is int32; the input"
    if what == "npz of the wrong shape":
        z = np.zeros((4, 9), np.int64)
        text = with_data(input_ids=z, attention_mask=z)
        return text, "has shape (4, 9); samples of the input are (8,)"
    if what == "more memory than the host has":
        text = enc % str(src) + "dims = { sequence = 4000000000000 }\n" + good_rules
        return text, "GiB; this host has"
    if what == "a built-in model's name":
        return f"[models.resnet50]\npath = {str(src)!r}\n", "a built-in model has that name"
    if what == "dims for the batch":
        text = enc % str(src) + "dims = { sequence = 8, batch = 4 }\n" + good_rules
        return text, "dims.batch: batch is the batch dimension"
    if what == "a precision in the options":
        text = enc % str(src) + 'options.openvino = { precision_hint = "bf16" }\n'
        return text, "options.openvino.precision_hint: the precision is the point's"
    if what == "unknown key":
        return enc % str(src) + "shapes = 1\n", "models.m: unknown key 'shapes'"
    raise AssertionError(what)


BAD = ["missing file", "truncated", "missing external data", "IR without .bin",
       "no value for a dimension", "a dimension the model does not have",
       "integer input without a range", "npz without an input", "npz of the wrong dtype",
       "npz of the wrong shape", "more memory than the host has", "unknown key",
       "a built-in model's name", "dims for the batch", "a precision in the options"]  # fmt: skip


@pytest.mark.parametrize("what", BAD)
def test_every_bad_input_is_one_line_before_anything_is_measured(folder, tmp_path, registry, what):
    text, line = _broken(folder, tmp_path, what)
    with pytest.raises(ModelError) as error:
        _declare(tmp_path, text)
    assert line in str(error.value) and "\n" not in str(error.value)
    assert any(name in str(error.value) for name in ("'m'", "models.m", "'resnet50'"))


def test_a_bad_model_file_is_exit_2_on_the_command_line(tmp_path, capsys, registry):
    (tmp_path / "t.onnx").write_bytes(b"\x08\x07garbage")
    assert main(["models", "inspect", str(tmp_path / "t.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfsuite models: model 't':") and "\n" not in err


def test_models_is_a_table_of_models_not_a_profile(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.perfsuite.profiles.models]\nbatch = [1]\n")
    with pytest.raises(Exception, match="'models' is not a profile name"):
        load_profiles(tmp_path / "pyproject.toml")


def test_a_model_with_nan_outputs_is_an_error_for_its_points(tmp_path, registry):
    from onnx import TensorProto, helper, save

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Div", ["x", "x"], ["y"])], "nan", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(tmp_path / "nan.onnx"))
    spec = files.spec_from_path(str(tmp_path / "nan.onnx"), {})
    models.declare(spec)
    zero = records.InputRule(value=0.0)
    models.declare(spec.model_copy(update={"inputs": {"x": zero}}))  # 0 / 0 every time
    result = _sweep(tmp_path, ["nan"], ["onnxruntime"], ["fp32"])[
        "nan-onnxruntime-fp32-t1-unbound-b1"
    ]
    assert result.status == "error" and "output 0 is not finite (NaN or inf)" in result.error


def _sweep(tmp_path, names, frameworks, precisions, *, save=False, baselines=None):
    profile = make_profile("user", {
        "models": names, "frameworks": frameworks, "precisions": precisions, "threads": ["1"],
        "numa_nodes": ["none"], "batch": [1], "mode": ["latency"], "min_time": 0.05,
        "min_samples": 5, "warmup_time": 0.0, "warmup_calls": 1, "timeout": 300,
        "kernels": False, "sessions": 1,
    })  # fmt: skip
    fp = records.Fingerprint(hardware_class="test-host", fields={}, classes={})
    session = PerfSession(profile, tmp_path / "runs", read_topology("/"), fp,
                          executor="in-process", baselines=baselines or tmp_path / "b")  # fmt: skip
    try:
        points = session.points()
        for p in points:
            if not p.skip:
                session.run(p)
        if save:
            finish(session, FinishOptions(gate=_gate(), fail_on="regression", save_baseline=True))
    finally:
        session.close()
    skipped = {p.id: p.skip for p in points if p.skip}
    return {r.id: r for r in session.records} | {"skipped": skipped}


def _gate():
    from perfsuite.gate.statistics import GateConfig

    return GateConfig(bootstrap_resamples=200)


def test_declared_models_run_on_both_frameworks_at_fp32_and_int8_with_the_accuracy_gate(
    folder, tmp_path, registry
):
    """The encoder on ONNX Runtime and OpenVINO at fp32, ORT static INT8 calibrated on the
    user's file and NNCF INT8; the IR on OpenVINO only; a baseline saved from the run."""
    _declare(folder)
    got = _sweep(tmp_path, ["encoder", "cnn"], ["onnxruntime", "openvino"],
                 ["fp32", "int8_static", "int8_nncf"], save=True)  # fmt: skip
    skipped = got.pop("skipped")
    ok = {pid: r for pid, r in got.items() if r.ok}
    assert set(ok) >= {
        "encoder-onnxruntime-fp32-t1-unbound-b1", "encoder-onnxruntime-int8_static-t1-unbound-b1",
        "encoder-openvino-fp32-t1-unbound-b1", "encoder-openvino-int8_nncf-t1-unbound-b1",
        "cnn-openvino-fp32-t1-unbound-b1", "cnn-openvino-int8_nncf-t1-unbound-b1",
    }, {pid: r.error for pid, r in got.items() if not r.ok}  # fmt: skip
    ort_int8 = ok["encoder-onnxruntime-int8_static-t1-unbound-b1"]
    assert ort_int8.accuracy.metric == "centred_sqnr_db" and ort_int8.accuracy.passed
    assert ok["cnn-openvino-int8_nncf-t1-unbound-b1"].accuracy is not None
    assert ok["encoder-openvino-fp32-t1-unbound-b1"].model.flops_per_item is None
    assert "onnxruntime cannot load an OpenVINO IR" in skipped["cnn-onnxruntime-fp32-t1-unbound-b1"]
    assert "is made from an ONNX file" in skipped["cnn-openvino-int8_static-t1-unbound-b1"]
    (baseline,) = (tmp_path / "b").glob("*/user.json")
    saved = records.load_baseline(json.loads(baseline.read_text()))
    assert {str(p) for p in saved.entries} >= set(ok)  # gated from now on under its own name


def test_the_crosscheck_pins_benchmark_app_to_the_same_precision_and_threads(capsys):
    """Both figures, their ratio and each side's effective settings (benchmark_app's own
    default precision on a BF16 CPU is bf16: the cross-check pins f32 and one thread)."""
    assert main(["models", "crosscheck", "small_cnn", "--time", "1", "--turns", "1",
                 "--json"]) == 0  # fmt: skip
    got = json.loads(capsys.readouterr().out)
    assert got["point"] == "small_cnn-openvino-fp32-t1-unbound-b1"
    assert got["perfsuite_ips"][0] > 0 and got["benchmark_app_ips"][0] > 0 and got["ratio"] > 0
    assert "float32" in got["benchmark_app_settings"]["INFERENCE_PRECISION_HINT"]
    assert got["benchmark_app_settings"]["INFERENCE_NUM_THREADS"] == "1"
    assert got["perfsuite_settings"]["INFERENCE_PRECISION_HINT"] == "f32"  # a value, no repr
    assert "-infer_precision" in got["benchmark_app"] and "input[1,3,32,32]" in got["benchmark_app"]


def test_a_file_with_a_fixed_batch_skips_other_batches_and_dims_go_to_the_files_that_have_them(
    folder, tmp_path, registry
):
    from onnx import TensorProto, helper, save

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "fixed", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(tmp_path / "fixed.onnx"))
    paths = [str(tmp_path / "fixed.onnx"), str(folder / "cnn")]
    overrides = declare_for_run(None, None, paths, None, {})
    assert overrides["models"] == ["fixed", "cnn"]
    profile = make_profile("user", {
        "models": overrides["models"], "frameworks": ["openvino"], "precisions": ["fp32"],
        "threads": ["1"], "numa_nodes": ["none"], "batch": [1, 2], "mode": ["latency"],
        "min_time": 0.05, "min_samples": 5, "warmup_time": 0.0, "warmup_calls": 1,
        "timeout": 300, "kernels": False, "sessions": 1,
    })  # fmt: skip
    skips = {p.id: p.skip for p in expand(profile, read_topology("/"))}
    assert (
        "fixed first dimension of 1: batch 2 cannot run"
        in skips["fixed-openvino-fp32-t1-unbound-b2"]
    )
    assert skips["fixed-openvino-fp32-t1-unbound-b1"] is None
    assert skips["cnn-openvino-fp32-t1-unbound-b2"] is None
    with pytest.raises(ModelError, match="--perf-dims width: no --perf-model file has that"):
        declare_for_run(None, None, paths, {"width": 3}, {})
