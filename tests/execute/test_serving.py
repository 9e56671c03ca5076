"""LoadGen scenarios and LLM decode points through the sweep plugin (pytester): what the
records, logs and reports hold, and the gate on a slowed SUT. The smoke versions of the
serving and llm profiles: a tiny CNN, a tiny decoder, LoadGen runs of about a second."""

import json

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("onnxruntime")
pytest.importorskip("mlperf_loadgen", reason="mlcommons-loadgen is not installed")
# pytester's in-process runs drop modules first imported inside them, and a second copy of a
# C extension aborts the interpreter: import what the runs import (test_plugin.py) out here.
import onnx  # noqa: E402,F401
import onnxruntime.quantization  # noqa: E402,F401
import onnxruntime.quantization.matmul_nbits_quantizer  # noqa: E402,F401 - the LLM accuracy gate
import psycopg  # noqa: E402,F401
import sqlalchemy.dialects.postgresql  # noqa: E402,F401

import perfsuite.store.database  # noqa: E402,F401
import perfsuite.sweep.finish  # noqa: E402,F401

if __import__("importlib.util").util.find_spec("openvino") is not None:
    import openvino  # noqa: E402,F401

SWEEP = """
def test_sweep(perf_point, perf_run):
    result = perf_run(perf_point)
    assert result.stats.throughput_ips > 0
"""
PROFILE = """
[tiny]
models = ["small_cnn", "llm_tiny"]
frameworks = ["onnxruntime"]
precisions = ["fp32", "int4_sym_g32"]
threads = ["1"]
numa_nodes = ["none"]
batch = [1]
mode = {modes}
latency_bound_ms = {{small_cnn = 15}}
loadgen_min_duration = 1.0
search_steps = 3
search_precision = 0.2
min_time = 0.3
min_samples = 5
warmup_time = 0.05
warmup_calls = 3
timeout = 300
kernels = false
sessions = 1
{extra}
"""


def _sweep(pytester, modes, extra="server_searches = 1"):  # default's 3 cost CI time
    pytester.makepyfile(test_demo_sweep=SWEEP)
    pytester.makefile(".toml", profiles=PROFILE.format(modes=json.dumps(modes), extra=extra))
    return ["--perf-config=profiles.toml", "--perf-profile", "tiny", "-p", "no:cacheprovider"]


def _records(out):
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*/points/*.json")}


@pytest.mark.slow
@pytest.mark.serial
def test_every_scenario_and_decode_test_runs_through_the_sweep(pytester, tmp_path):
    modes = ["single_stream", "multi_stream", "server", "offline", "pp32", "tg16"]
    out = tmp_path / "runs"
    bench = tmp_path / "b.json"
    r = pytester.runpytest(
        *_sweep(pytester, modes, "server_searches = 2"),
        f"--perf-out={out}",
        f"--benchmark-json={bench}",
    )
    r.assert_outcomes(passed=8)  # 4 scenarios of small_cnn fp32, 2 tests of llm_tiny x 2
    got = _records(out)
    (run_dir,) = out.iterdir()
    for scenario in modes[:4]:
        rec = got[f"small_cnn-onnxruntime-fp32-t1-unbound-b1-{scenario}"]
        lg = rec["loadgen"]
        assert rec["status"] == "ok" and lg["scenario"] == scenario and lg["workers"] == 1
        best = lg["runs"][lg["best"]]
        assert best["valid"]
        if scenario == "server":  # the median of its searches: the best run is one of them
            assert best["headline"]["value"] in rec["headline"]["runs"]
            assert rec["headline"]["name"] == best["headline"]["name"]
        else:
            assert rec["headline"] == best["headline"]
        assert rec["headline"]["gated"] == (scenario in ("server", "offline"))
        assert len(rec["samples_s"]) == rec["stats"]["n"] > 0
        for run in lg["runs"]:  # LoadGen's own logs, beside the run
            assert (run_dir / run["log_dir"] / "mlperf_log_summary.txt").is_file()
            assert (run_dir / run["log_dir"] / "mlperf_log_detail.txt").is_file()
            assert (run["valid"] and not run["reasons"]) or (not run["valid"] and run["reasons"])
    server = got["small_cnn-onnxruntime-fp32-t1-unbound-b1-server"]["loadgen"]
    assert len(server["runs"]) >= 2 and server["bracket_qps"][0] is not None
    assert server["runs"][server["best"]]["target_qps"] == server["bracket_qps"][0]
    # two searches, each in a fresh process: the headline is their median and lists both
    searches, head = server["searches"], got["small_cnn-onnxruntime-fp32-t1-unbound-b1-server"]
    assert len(searches) == 2 and sorted(head["headline"]["runs"]) == sorted(
        s["rate"] for s in searches
    )
    assert head["isolation"] == "worker" and head["headline"]["value"] == pytest.approx(
        sum(head["headline"]["runs"]) / 2
    )
    for run in [*server["runs"], server["unloaded"]]:  # each run's timeline beside its logs
        table = (run_dir / run["log_dir"] / "timeline.csv").read_text().splitlines()
        assert table[0].startswith("query,scheduled_ms")
        assert run["timeline"]["queries"] == len(table) - 1
        assert not (run_dir / run["log_dir"] / "mlperf_log_trace.json").exists()
    assert server["unloaded"]["scenario"] == "single_stream"
    assert "Server timeline: small_cnn" in (run_dir / "report.html").read_text()
    for test in ("pp32", "tg16"):
        rec = got[f"llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-{test}"]
        assert rec["decode"]["tokens_per_s"] == rec["headline"]["value"]
        assert rec["accuracy"]["metric"] == "logits_cosine" and rec["accuracy"]["passed"]
    pp = got["llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-pp32"]["decode"]
    assert pp["roofline_tokens_per_s"] is None  # a prompt's tokens share a pass: no roofline
    tg = got["llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-tg16"]["decode"]
    assert tg["triad_gbs"] > 0 and tg["roofline_tokens_per_s"] == pytest.approx(
        tg["triad_gbs"] * 1e9 / tg["weight_bytes_per_token"]
    )
    assert tg["cache_resident"] is True  # a tiny decoder's weights fit any L3
    assert tg["ttft_s"] > tg["tpot_s"] > 0
    text = r.stdout.str()
    assert "-server: Scheduled samples per second" in text and "VALID up to" in text
    assert "median of 2 searches" in text and "per query (p50/p99): latency" in text
    assert "of the roofline" in text and "cache-resident" in text
    assert "weight-only/FP32 tokens/s: llm_tiny onnxruntime int4_sym_g32 t1 pp32" in text
    assert "INT8/FP32" not in text  # no ratios of LoadGen rates or of tokens/s under that name
    # the figures leave perfsuite as the console prints them: summary, pytest-benchmark, exports
    sid, tid = (
        "small_cnn-onnxruntime-fp32-t1-unbound-b1-server",
        "llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-tg16",
    )
    rate, fraction = got[sid]["headline"], got[tid]["decode"]["roofline_fraction"]
    assert rate["valid"] is True and f"Scheduled samples per second {rate['value']:.4g}" in text
    best = got[sid]["loadgen"]["runs"][got[sid]["loadgen"]["best"]]
    assert got[sid]["stats"]["throughput_ips"] == pytest.approx(  # completed over its run
        got[sid]["stats"]["n"] / best["duration_s"]
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    figures = {p["id"]: p.get("figures", []) for p in summary["points"]}
    assert figures[sid][0] == rate and figures[tid][-1]["value"] == fraction
    infos = {b["extra_info"]["perfsuite_id"]: b["extra_info"]
             for b in json.loads(bench.read_text())["benchmarks"]}  # fmt: skip
    assert infos[sid]["figures"][0] == rate and infos[tid]["figures"][-1]["value"] == fraction
    from perfsuite.history import exports
    from perfsuite.store.files import read_run

    run = read_run(run_dir)
    bmf = exports.bmf(run)
    assert bmf[sid]["scheduled-samples-per-second"]["value"] == rate["value"]
    assert bmf[tid]["roofline-fraction"]["value"] == fraction


@pytest.mark.slow
@pytest.mark.serial
def test_a_slowed_sut_lowers_the_server_rate_and_the_gate_flags_it(pytester, monkeypatch):
    """Each served query sleeps 2 ms more (``PERFSUITE_FAULT=sleep:2``): the tiny CNN's
    ~0.1 ms calls can then sustain at most ~500 queries/s instead of thousands."""
    args = _sweep(pytester, ["server"])
    args += ["--perf-models", "small_cnn", "--perf-precisions", "fp32", "--perf-baseline=b"]
    r = pytester.runpytest(*args, "--perf-save-baseline")
    assert r.ret == 0 and "baseline saved" in r.stdout.str()
    base = json.loads(next((pytester.path / "b").rglob("*.json")).read_text())
    (entry,) = base["entries"].values()
    assert entry["headline"]["gated"] and entry["headline"]["higher_is_better"]
    monkeypatch.setenv("PERFSUITE_FAULT", "sleep:2")
    r = pytester.runpytest(*args, "--perf-fail-on", "regression")
    out = r.stdout.str()
    assert r.ret == 1 and "GATE FAILED" in out and "server" in out
    assert "(confirmed re-measured" in out and "rate threshold" in out
