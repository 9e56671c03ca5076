"""Scenarios and decode tests as a sweep dimension: planning, records and the gate's rate
judgement (the LoadGen driver: test_loadgen.py; the decoder: test_llm.py; both end to end
through the sweep: test_serving.py)."""

from dataclasses import replace

import numpy as np
import pytest

from perfsuite import records
from perfsuite.gate.judge import Remeasure, Side, confirm, judge
from perfsuite.gate.statistics import GateConfig
from perfsuite.host.topology import read_topology
from perfsuite.sweep.plan import PlanError, expand, load_profiles, make_profile, select_profile

FP = records.Fingerprint(fields={}, classes={}, hardware_class="x")


def profile(**over):
    raw = {**load_profiles()["smoke"], **over}
    return make_profile("t", raw)


def points(**over):
    return expand(profile(**over), read_topology("/"), model_mb=lambda m: 10.0, bf16=True)


def test_default_profile_gains_one_server_one_decode_and_one_llm_serving_point():
    default = make_profile("default", load_profiles()["default"])
    got = expand(default, read_topology("/"), model_mb=lambda m: 100.0, bf16=True)
    modes = sorted(p.mode for p in got if p.mode != "latency")
    assert modes == ["llm_server", "server", "tg128"]
    assert {(p.precision, p.mode) for p in got if p.model == "bert128"} == {
        ("fp32", "latency"),
        ("int8_static_rr", "latency"),
    }
    assert all(p.mode == "latency" for p in got if p.model == "resnet50" and p.mode != "server")


def test_scenarios_cross_models_of_their_family_only():
    got = points(
        models=["small_cnn", "llm_tiny"],
        precisions=["fp32", "int8_static", "int4_sym_g32"],
        mode=["latency", "server", "tg16"],
        numa_nodes=["none"],
    )
    ids = {p.id for p in got}
    assert "small_cnn-onnxruntime-int8_static-t1-unbound-b1-server" in ids
    assert "llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-tg16" in ids
    assert not any(p.model == "llm_tiny" and p.mode in ("latency", "server") for p in got)
    assert not any(p.model == "small_cnn" and (p.mode == "tg16" or "int4" in p.precision)
                   for p in got)  # fmt: skip
    assert not any(p.model == "llm_tiny" and p.precision == "int8_static" for p in got)


def test_streams_split_threads_of_server_and_offline_points_only():
    got = points(
        threads=["2", "3"], mode=["single_stream", "server", "offline"], streams=[1, 2],
        numa_nodes=["none"], precisions=["fp32"],
    )  # fmt: skip
    by_id = {p.id: p for p in got}
    assert by_id["small_cnn-onnxruntime-fp32-t2-unbound-b1-server-s2"].skip is None
    assert "split evenly" in by_id["small_cnn-onnxruntime-fp32-t3-unbound-b1-offline-s2"].skip
    assert not any(p.mode == "single_stream" and p.streams > 1 for p in got)


def test_llm_server_points_run_on_openvino_genai_only():
    got = points(models=["llm_tiny"], frameworks=["openvino-genai", "onnxruntime"],
                 precisions=["int4_sym_g32"], mode=["llm_server", "tg8"],
                 numa_nodes=["none"])  # fmt: skip
    by_id = {p.id: p for p in got}
    assert by_id["llm_tiny-openvino-genai-int4_sym_g32-t1-unbound-b1-llm_server"].skip is None
    assert "ContinuousBatchingPipeline; onnxruntime has none" in (
        by_id["llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-llm_server"].skip)  # fmt: skip
    assert by_id["llm_tiny-onnxruntime-int4_sym_g32-t1-unbound-b1-tg8"].skip is None
    settings = profile(llm_slo_ms=[200, 20], llm_input_tokens=[8, 8]).llm_serving()
    assert (settings.ttft_bound_ms, settings.tpot_bound_ms) == (200.0, 20.0)
    assert settings.input_tokens == (8, 8) and settings.output_tokens == (16, 48)


def test_scenario_is_the_dimension_s_other_name():
    raw = {k: v for k, v in load_profiles()["smoke"].items() if k != "mode"}
    assert make_profile("t", {**raw, "scenario": ["offline"]}).mode == ("offline",)


@pytest.mark.parametrize(
    "over, words",
    [
        ({"server_target_qps": -5}, "server_target_qps = -5 must be queries/s >= 0"),
        ({"server_target_qps": float("nan")}, "server_target_qps"),
        ({"latency_bound_ms": {"resnet50": 0}}, "latency_bound_ms.resnet50 = 0"),
        ({"latency_bound_ms": 15}, "latency_bound_ms must be a table"),
        ({"loadgen_min_duration": 0}, "loadgen_min_duration = 0"),
        ({"loadgen_min_queries": 0.5}, "loadgen_min_queries = 0.5"),
        ({"loadgen_min_queries": -1}, "loadgen_min_queries = -1"),
        ({"search_precision": 1.5}, "search_precision = 1.5"),
        ({"streams": [0]}, "streams must be whole numbers"),
        ({"mode": ["tg0"]}, "mode 'tg0'"),
        ({"mode": ["server_x"]}, "mode 'server_x'"),
        ({"models": ["llm_tiny"], "mode": ["pp700"]}, "pp700 on llm_tiny needs 700 tokens"),
        ({"also": [{"min_time": 3}]}, "also[0] sets ['min_time']"),
        ({"llm_slo_ms": [100]}, "llm_slo_ms = [100] must be [TTFT ms, TPOT ms], both > 0"),
        ({"llm_slo_ms": [100, 0]}, "llm_slo_ms = [100, 0]"),
        ({"llm_input_tokens": [64, 32]}, "llm_input_tokens = [64, 32] must be [fewest, most]"),
        ({"llm_output_tokens": [1, 8]}, "llm_output_tokens = [1, 8]"),
        ({"llm_requests": 1}, "llm_requests = 1 must be from 2 to 100000"),
        ({"llm_burstiness": 0}, "llm_burstiness = 0 must be from 0.01 to 100"),
        ({"llm_static_batch": 2.5}, "llm_static_batch = 2.5"),
    ],
)
def test_bad_serving_settings_are_one_line(over, words):
    with pytest.raises(PlanError) as info:
        profile(**over)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_old_points_keep_their_ids_and_streams_show_in_new_ones():
    old = {"model": "m", "framework": "f", "precision": "p", "threads": 2, "batch": 1,
           "mode": "latency"}  # fmt: skip
    assert records.Point.model_validate(old).id == "m-f-p-t2-unbound-b1"
    served = records.Point.model_validate({**old, "mode": "server", "streams": 2})
    assert served.id == "m-f-p-t2-unbound-b1-server-s2"
    with pytest.raises(ValueError, match="does not match"):
        records.Point.model_validate({**old, "mode": "server", "streams": 2,
                                      "id": "m-f-p-t2-unbound-b1-server"})  # fmt: skip


# -- the gate on a rate -----------------------------------------------------------------------


def rate(value, gated=True):
    return records.Headline(name="server rate", value=value, unit="queries/s",
                            higher_is_better=True, gated=gated)  # fmt: skip


def sides(base_rate, cur_rate, *, gated=True):
    pid = "m-f-p-t2-unbound-b1-server"
    lat = np.linspace(0.010, 0.012, 50)  # latencies at two different loads: not comparable
    base = Side(FP, {pid: lat}, "baseline", headlines={pid: rate(base_rate, gated)})
    cur = Side(FP, {pid: lat * 0.5}, "current", headlines={pid: rate(cur_rate, gated)})
    return pid, base, cur


@pytest.mark.parametrize(
    "base_rate, cur_rate, verdict",
    [(100, 66, "regressed"), (100, 88, "unchanged"), (100, 112, "unchanged"),
     (100, 130, "improved")],
)  # fmt: skip
def test_a_rate_is_judged_on_its_own_against_the_rate_threshold(base_rate, cur_rate, verdict):
    pid, base, cur = sides(base_rate, cur_rate)
    (v,) = judge(base, cur, GateConfig()).verdicts
    assert v.verdict == verdict, v.reason
    assert v.change == pytest.approx(base_rate / cur_rate - 1)
    assert "one value per run" in v.reason


@pytest.mark.parametrize("current, verdict", [(23.8, "unchanged"), (12.0, "regressed")])
def test_a_rate_inside_the_baseline_runs_range_is_not_a_change(current, verdict):
    """Server searches of one build on the Zen 4 VM found 32.7, 20.3 and 46.1 queries/s
    (docs/measurements/2026-12-07-zen4-serving-decode.md): a fourth at 23.8 is 27% under
    their median but inside their range; a slowed SUT's 12 is below all of them."""
    pid, base, cur = sides(32.7, current)
    base = replace(base, headline_runs={pid: [32.7, 20.3, 46.1]})
    (v,) = judge(base, cur, GateConfig()).verdicts
    assert v.verdict == verdict, v.reason
    assert "3 baseline runs, 20.3-46.1" in v.reason


@pytest.mark.parametrize(
    "searches, verdict",
    [([70, 74, 77], "regressed"), ([70, 74, 101], "unstable"), ([76, 99, 146], "unchanged"),
     ([81, 82, 97], "unstable"), ([124, 130, 133], "improved")],
)  # fmt: skip
def test_a_median_of_searches_is_judged_with_their_spread(searches, verdict):
    """A headline that is the median of fresh searches carries them (Headline.runs): a
    regression needs every search below the baseline's runs; a median past the threshold
    whose searches overlap them is unstable (their spread is wider than the change); a wide
    spread around an unmoved median is no change."""
    pid, base, cur = sides(100, float(np.median(searches)))
    base = replace(base, headline_runs={pid: [97.0, 100.0, 103.0]})
    head = cur.headlines[pid].model_copy(update={"runs": [float(x) for x in searches]})
    cur = replace(cur, headlines={pid: head})
    (v,) = judge(base, cur, GateConfig()).verdicts
    assert v.verdict == verdict, v.reason
    assert f"median of 3 searches, {min(searches)}-{max(searches)}" in v.reason


def test_a_point_threshold_wider_than_the_rate_threshold_wins():
    pid, base, cur = sides(100, 66)
    cfg = GateConfig(thresholds={"*-server": 0.6})
    assert judge(base, cur, cfg).verdicts[0].verdict == "unchanged"


def test_samples_decide_when_the_headline_is_not_gated():
    pid, base, cur = sides(100, 50, gated=False)  # latencies halved: an improvement
    assert judge(base, cur, GateConfig()).verdicts[0].verdict == "improved"


def test_a_rate_regression_is_confirmed_only_if_the_re_measured_rate_repeats_it():
    pid, base, cur = sides(100, 60)
    comparison = judge(base, cur, GateConfig())
    lat = np.full(5, 0.01)
    kept = confirm(comparison, base, {pid: Remeasure(lat, headline=rate(62))}, GateConfig())
    gone = confirm(comparison, base, {pid: Remeasure(lat, headline=rate(97))}, GateConfig())
    assert kept.verdicts[0].confirmed is True and kept.verdicts[0].verdict == "regressed"
    assert gone.verdicts[0].confirmed is False
    assert kept.failing("regression") and not gone.failing("regression")


def test_a_narrowed_run_drops_the_profile_s_extra_points():
    profiles = load_profiles()
    full = select_profile(profiles, "default", {})
    narrowed = select_profile(profiles, "default", {"models": ["small_cnn"]})
    assert full.also and not narrowed.also
    assert select_profile(profiles, "default", {"min_time": 0.5}).also  # not a dimension


def test_an_invalid_offline_rate_is_not_gated_and_nan_fields_stay_text(tmp_path):
    from perfsuite import serve
    from perfsuite.execute.serving import _run_record

    settings = serve.ScenarioSettings(scenario="offline", target_qps=10.0)
    run = serve.ScenarioRun(
        scenario="offline", valid=False, result="INVALID", reasons=["* Run unsuccessful."],
        fields={"Samples per second": 9.0, "Odd": float("nan")},
        headline=records.Headline(name="Samples per second", value=9.0, unit="samples/s",
                                  higher_is_better=True),
        latencies_s=[0.1], duration_s=1.0, summary_path=tmp_path / "s" / "x.txt",
        detail_path=tmp_path / "s" / "y.txt", settings=settings,
    )  # fmt: skip
    rec = _run_record(run, tmp_path / "run" / "loadgen" / "p")
    assert rec.headline is not None and not rec.headline.gated
    assert rec.fields["Odd"] == "nan"
