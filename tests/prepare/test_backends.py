import os
import signal
import time

import numpy as np
import pytest

from perfsuite.execute.isolation import WorkerCrashed, WorkerError, WorkerTimeout, run_isolated
from perfsuite.prepare import models
from perfsuite.prepare.backends import BACKENDS, BackendError, RunConfig, get_backend
from perfsuite.records import Point

FRAMEWORKS = [
    pytest.param(n, marks=pytest.mark.skipif(b.version() is None, reason=f"{n} is not installed"))
    for n, b in BACKENDS.items()
]


@pytest.fixture(scope="module")
def cnn():
    return models.get("small_cnn")


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("threads", [1, 2])
def test_fp32_inference_matches_reference(framework, threads, cnn):
    x = cnn.inputs(4)
    ref = get_backend("onnxruntime").prepare(cnn.path, RunConfig(batch=4)).infer(x)[0]
    with get_backend(framework).prepare(cnn.path, RunConfig(threads=threads, batch=4)) as s:
        y = s.infer(x)[0]
        s.callable(x)()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_onnxruntime_records_effective_settings(cnn):
    cfg = RunConfig(
        threads=2, cpus=(0, 1), options={"spinning": False, "graph_optimization": "basic"}
    )
    with get_backend("onnxruntime").prepare(cnn.path, cfg) as s:
        assert s.settings["intra_op_threads"] == 2 and s.settings["spinning"] is False
        assert s.settings["thread_affinities"] == "2"  # pool thread 1 -> CPU 1 (1-based)
        assert s.settings["providers"] == ["CPUExecutionProvider"]
        assert s.settings["spin_stop"] is False  # the default: as users run it
    with get_backend("onnxruntime").prepare(cnn.path, RunConfig(options={"spin_stop": True})) as s:
        assert s.settings["spin_stop"] is True  # read back from ORT's session options


@pytest.mark.skipif(BACKENDS["openvino"].version() is None, reason="openvino is not installed")
def test_openvino_records_streams_and_requests(cnn):
    cfg = RunConfig(threads=2, mode="throughput")
    with get_backend("openvino").prepare(cnn.path, cfg) as s:
        assert s.settings["PERFORMANCE_HINT"] == "THROUGHPUT"
        # the properties' own types, as JSON takes them: no "True", "1" or "<Type: ...>"
        assert isinstance(s.settings["NUM_STREAMS"], int) and s.settings["NUM_STREAMS"] >= 1
        assert s.settings["OPTIMAL_NUMBER_OF_INFER_REQUESTS"] >= 1
        assert s.settings["INFERENCE_NUM_THREADS"] == 2
        assert s.settings["INFERENCE_PRECISION_HINT"] == "f32"
        assert s.settings["ENABLE_CPU_PINNING"] in (True, False)
        run = s.run_throughput(cnn.inputs(1), seconds=0.3)
        assert run.items > 0 and run.items == len(run.latencies_s)
        assert run.items_per_s > 0


def test_a_points_run_config_is_built_in_one_place():
    point = Point(model="m", framework="onnxruntime", precision="fp32", threads=4, batch=2,
                  mode="offline", streams=2)  # fmt: skip
    options = {"spinning": False}
    cfg = RunConfig.for_point(point, (0, 1), options, threads=2)
    assert cfg == RunConfig(threads=2, batch=2, mode="throughput", cpus=(0, 1), options=options)
    assert cfg.options is not options  # a session cannot change the variant's options
    window = RunConfig.for_point(point.but(mode="latency", streams=1))
    assert (window.threads, window.mode, window.cpus, window.options) == (4, "latency", None, {})
    assert RunConfig.for_point(point.but(mode="throughput", streams=1)).mode == "throughput"


def test_bad_options_and_config_are_clear_errors(cnn):
    with pytest.raises(ValueError, match="unknown onnxruntime options"):
        get_backend("onnxruntime").prepare(cnn.path, RunConfig(options={"spin": 1}))
    with pytest.raises(ValueError, match="threads must be >= 1"):
        RunConfig(threads=0)
    with pytest.raises(ValueError, match="mode must be"):
        RunConfig(mode="fast")
    with pytest.raises(ValueError, match="unknown framework 'tvm'"):
        get_backend("tvm")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_unloadable_model_is_a_backend_error(framework, tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(BackendError, match="cannot load broken.onnx"):
        get_backend(framework).prepare(bad, RunConfig())


def test_missing_framework_is_unavailable(monkeypatch):
    from perfsuite.prepare.backends import BackendUnavailable
    from perfsuite.prepare.backends.onnxruntime_backend import OnnxRuntimeBackend

    monkeypatch.setattr(OnnxRuntimeBackend, "version", lambda self: None)
    with pytest.raises(BackendUnavailable, match="not installed"):
        OnnxRuntimeBackend().prepare("x.onnx", RunConfig())


# -- isolation: crashes and hangs become errors for one point ------------------------------


def _sleep_forever():
    time.sleep(3600)


def _abort():
    os.kill(os.getpid(), signal.SIGSEGV)


def _raise():
    raise ValueError("bad point")


def _ov_throughput_then_teardown(path: str) -> dict:
    """perfsuite's own OpenVINO throughput path, then teardown: must not hang."""
    from pathlib import Path

    from perfsuite.prepare.backends import RunConfig, get_backend
    from perfsuite.prepare.models import get

    info = get("small_cnn")
    s = get_backend("openvino").prepare(Path(path), RunConfig(threads=2, mode="throughput"))
    run = s.run_throughput(info.inputs(1), seconds=0.5)
    s.close()
    return {"items": run.items}


def _ov_async_queue_with_callback_then_teardown(path: str) -> int:
    """The hazardous pattern (AsyncInferQueue + Python callback, then teardown)."""
    import numpy as np
    import openvino as ov

    compiled = ov.Core().compile_model(path, "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
    done = []
    queue = ov.AsyncInferQueue(compiled, 4)
    queue.set_callback(lambda req, userdata: done.append(userdata))
    x = np.zeros((1, 3, 32, 32), np.float32)
    for i in range(32):
        queue.start_async({0: x}, i)
    queue.wait_all()
    del queue, compiled
    return len(done)


def test_isolated_hang_becomes_timeout():
    t0 = time.perf_counter()
    with pytest.raises(WorkerTimeout, match="no answer within 2 s"):
        run_isolated(_sleep_forever, timeout=2)
    assert time.perf_counter() - t0 < 30


def test_isolated_crash_is_reported_with_signal():
    with pytest.raises(WorkerCrashed, match="SIGSEGV"):
        run_isolated(_abort, timeout=60)


def test_isolated_exception_carries_message():
    with pytest.raises(WorkerError, match="ValueError: bad point"):
        run_isolated(_raise, timeout=60)


@pytest.mark.skipif(BACKENDS["openvino"].version() is None, reason="openvino is not installed")
def test_openvino_throughput_path_never_hangs(cnn):
    res = run_isolated(_ov_throughput_then_teardown, str(cnn.path), timeout=120, exit_grace=20)
    assert res.value["items"] > 0
    assert not res.teardown_hung, "perfsuite's own OpenVINO throughput path hung at exit"


@pytest.mark.skipif(BACKENDS["openvino"].version() is None, reason="openvino is not installed")
def test_openvino_async_queue_callback_hazard_is_contained(cnn):
    """Whatever this OpenVINO version does with the hazardous pattern, the suite gets an
    answer within the deadline: a result, or a timeout/teardown-hang it can record."""
    t0 = time.perf_counter()
    try:
        res = run_isolated(
            _ov_async_queue_with_callback_then_teardown, str(cnn.path), timeout=60, exit_grace=10
        )
        assert res.value == 32
        outcome = "teardown hung (killed)" if res.teardown_hung else "completed"
    except WorkerTimeout:
        outcome = "timed out (killed)"
    assert time.perf_counter() - t0 < 120
    print(f"OpenVINO AsyncInferQueue+callback teardown: {outcome}")
