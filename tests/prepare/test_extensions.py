"""Another package adds a framework, a precision and an executor through perfsuite's
entry-point groups, without touching perfsuite's files: a ``*.dist-info`` on sys.path
declares them, pointing at a module beside it. The sweep plans and measures the framework's
points, in fresh worker processes too (they start with this sys.path and read the same entry
points), and ``get_executor`` builds the executor."""

from __future__ import annotations

import json
import sys

import pytest
from fake_dist import install

from perfsuite import records
from perfsuite.execute.executors import EXECUTORS, Executor, get_executor
from perfsuite.execute.runner import runtime_extensions
from perfsuite.host.topology import read_topology
from perfsuite.prepare.backends import BACKENDS, get_backend
from perfsuite.prepare.models import MODELS
from perfsuite.prepare.quantize import QUANTIZERS
from perfsuite.sweep.plan import make_profile
from perfsuite.sweep.session import PerfSession

pytest.importorskip("onnx")  # the planned model (small_cnn) is built as an ONNX file

MODULE = "fake_perfsuite_ext"
FAKE = """
import numpy as np

from perfsuite.execute.executors import InProcess
from perfsuite.prepare.backends import Backend, Session
from perfsuite.prepare.models import PythonModel
from perfsuite.prepare.quantize import Quantizer


class FakeSession(Session):
    framework = "fakefw"

    def __init__(self, cfg):
        self.settings = {"threads": cfg.threads, "fake": True}

    def infer(self, inputs):
        x = next(iter(inputs.values()))
        return [np.tanh(x.reshape(len(x), -1)[:, :10])]


class FakeBackend(Backend):
    name = "fakefw"
    distribution = "perfsuite-fake"  # the dist-info below: installed, so available
    precisions = ("fp32", "fake8")

    def prepare(self, model, config):
        self.require()
        return FakeSession(config)


FAKE8 = Quantizer()  # the fp32 file, run as is


def _relu_model():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 8])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", 8])
    graph = helper.make_graph([helper.make_node("Relu", ["input"], ["output"])], "relu", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.doc_string = "params=0 flops_per_item=8"
    return model


FAKE_MODEL = PythonModel(_relu_model, input_shape=lambda params: (8,))


class FakeExecutor(InProcess):
    name = "fake"
    closed = 0

    def run(self, point, protocol):
        return super().run(point, protocol).model_copy(update={"isolation": "fake"})

    def close(self):
        type(self).closed += 1
"""
ENTRY_POINTS = f"""
[perfsuite.backends]
fakefw = {MODULE}:FakeBackend

[perfsuite.precisions]
fake8 = {MODULE}:FAKE8

[perfsuite.executors]
fake = {MODULE}:FakeExecutor

[perfsuite.models]
fake_relu = {MODULE}:FAKE_MODEL
"""


@pytest.fixture
def fake_package(tmp_path, monkeypatch, request):
    """The fake package installed on sys.path; the registries as they were afterwards."""
    registries = (BACKENDS, QUANTIZERS, EXECUTORS, MODELS)
    before = [dict(r) for r in registries]

    def restore():  # before monkeypatch takes the path away again
        for registry, entries in zip(registries, before, strict=True):
            registry.clear()
            registry.update(entries)
        sys.modules.pop(MODULE, None)

    site = install(tmp_path / "site", monkeypatch, "perfsuite-fake", MODULE, FAKE, ENTRY_POINTS)
    request.addfinalizer(restore)
    return site


def _profile():
    return make_profile("fake", {
        "models": ["small_cnn"], "frameworks": ["fakefw"], "precisions": ["fp32", "fake8"],
        "threads": ["1"], "numa_nodes": ["none"], "batch": [1], "mode": ["latency"],
        "min_time": 0.02, "min_samples": 5, "warmup_time": 0.0, "warmup_calls": 1,
        "timeout": 120, "kernels": False, "sessions": 1,
    })  # fmt: skip


def _fingerprint() -> records.Fingerprint:
    return records.Fingerprint(hardware_class="test-host", fields={}, classes={})


def _records(out) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*/points/*.json")}


def test_a_framework_and_precision_from_entry_points_are_planned_and_measured(
    fake_package, tmp_path
):
    assert "fakefw" in BACKENDS and "fake8" in QUANTIZERS
    assert get_backend("fakefw").version() == "1.0"
    assert runtime_extensions() == []  # nothing shipped to workers: they read entry points
    out = tmp_path / "runs"
    session = PerfSession(_profile(), out, read_topology("/"), _fingerprint(), executor="worker",
                          baselines=tmp_path / "baselines")  # fmt: skip
    try:
        points = session.points()
        assert [(p.precision, p.skip) for p in points] == [("fp32", None), ("fake8", None)]
        for p in points:
            session.run(p)
    finally:
        session.close()
    got = _records(out)
    assert set(got) == {
        "small_cnn-fakefw-fp32-t1-unbound-b1",
        "small_cnn-fakefw-fake8-t1-unbound-b1",
    }
    for rec in got.values():
        assert rec["status"] == "ok", rec.get("error_detail")
        assert rec["isolation"] == "worker"  # measured in a spawned process
        assert rec["settings"] == {"threads": 1, "fake": True} and rec["stats"]["n"] >= 5


def test_an_executor_from_entry_points_is_built_run_and_closed(fake_package, tmp_path):
    assert "fake" in EXECUTORS
    with get_executor("fake", timeout=60) as executor:
        assert type(executor).__name__ == "FakeExecutor" and executor.name == "fake"
        assert isinstance(executor, Executor)
    fake_class = type(executor)
    assert fake_class.closed == 1
    out = tmp_path / "runs"
    session = PerfSession(_profile(), out, read_topology("/"), _fingerprint(), executor="fake",
                          baselines=tmp_path / "baselines")  # fmt: skip
    try:
        session.run(session.points()[0])
    finally:
        session.close()  # the session closes its executor
    assert fake_class.closed == 2
    (rec,) = _records(out).values()
    assert rec["status"] == "ok" and rec["isolation"] == "fake"


def test_unknown_names_list_what_is_registered():
    with pytest.raises(ValueError, match="unknown executor 'nope'; choose one of .*worker"):
        get_executor("nope")
    with pytest.raises(ValueError, match="unknown framework 'nope'; choose one of .*onnxruntime"):
        get_backend("nope")


def test_a_model_from_entry_points_is_planned_and_reaches_a_spawned_worker(fake_package, tmp_path):
    """Another package's model, through the perfsuite.models group: no file of perfsuite's
    is touched, and a fresh worker process finds it by its entry point."""
    assert "fake_relu" in MODELS and runtime_extensions() == []
    profile = make_profile("fake", {
        "models": ["fake_relu"], "frameworks": ["onnxruntime"], "precisions": ["fp32"],
        "threads": ["1"], "numa_nodes": ["none"], "batch": [2], "mode": ["latency"],
        "min_time": 0.02, "min_samples": 5, "warmup_time": 0.0, "warmup_calls": 1,
        "timeout": 120, "kernels": False, "sessions": 1,
    })  # fmt: skip
    out = tmp_path / "runs"
    session = PerfSession(profile, out, read_topology("/"), _fingerprint(), executor="worker",
                          baselines=tmp_path / "baselines")  # fmt: skip
    try:
        (point,) = session.points()
        session.run(point)
    finally:
        session.close()
    (rec,) = _records(out).values()
    assert rec["status"] == "ok", rec.get("error_detail")
    assert rec["id"] == "fake_relu-onnxruntime-fp32-t1-unbound-b2" and rec["isolation"] == "worker"
    assert rec["model"]["flops_per_item"] == 8
