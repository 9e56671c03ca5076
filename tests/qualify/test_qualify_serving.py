"""The serving and decode checks of `perfsuite qualify --inference` (issue 30, item 5), judged
on synthetic result records: no benchmark runs here."""

import json

import pytest

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.qualify import checks as qualify
from perfsuite.sweep.plan import load_profiles, select_profile

REFS = qualify.shipped_references()
SAMPLES = [0.02, 0.021, 0.019]
STATS = summarize(SAMPLES)
SERVER = {"model": "resnet50", "framework": "onnxruntime", "precision": "int8_static_rr"}
LLM = {"model": "llm_small", "framework": "onnxruntime", "precision": "int4_sym_g32"}


def _result(point: dict, *, error: str | None = None, **measured) -> records.Result:
    p = records.Point.model_validate({"threads": 2, "batch": 1, **point})
    head = {
        "schema": records.RESULT,
        "id": p.id,
        "point": records.dump(p),
        "hardware_class": "amd-zen4-2c-1n",
        "timestamp": 1.0,
    }
    if error is not None:
        return records.load_result({**head, "status": "error", "error": f"{p.id}: {error}"})
    ok = {"status": "ok", "samples_s": SAMPLES, "stats": STATS}
    return records.load_result({**head, **ok, **measured})


def _run(qps: float, valid: bool) -> dict:
    headline = {"name": "scheduled QPS", "value": qps, "unit": "QPS", "higher_is_better": True}
    return {
        "scenario": "server",
        "target_qps": qps,
        "valid": valid,
        "duration_s": 3.0,
        "headline": {**headline, "gated": True},
    }


def server(qps: float = 40.0, *, bound: float = 50.0, **point) -> records.Result:
    runs = [_run(qps * 2, False), _run(qps, True)]
    loadgen = {
        "scenario": "server",
        "settings": {"latency_bound_ms": bound, "performance_sample_count": 16},
        "workers": 1,
        "runs": runs,
        "best": 1,
        "converged": True,
        "bracket_qps": [qps, qps * 2],
    }
    return _result(
        {**SERVER, "mode": "server", **point}, headline=runs[1]["headline"], loadgen=loadgen
    )


def no_valid_rate() -> records.Result:
    why = "no VALID server rate; every step from 5.0 QPS up was INVALID (p99 over the bound)"
    return _result({**SERVER, "mode": "server"}, error=why)


def decode(
    tokens_per_s: float = 20.0,
    *,
    fraction: float | None = 0.6,
    resident: bool = False,
    triad: float = 20.0,
    test: str = "tg128",
) -> records.Result:
    weights = 600_000_000
    d = {
        "test": test,
        "tokens": 128,
        "tokens_per_s": tokens_per_s,
        "weight_bytes_per_token": weights,
        "triad_gbs": triad,
        "roofline_tokens_per_s": triad * 1e9 / weights,
        "roofline_fraction": fraction,
        "cache_resident": resident,
    }
    headline = {"name": f"{test} tokens/s", "value": tokens_per_s, "unit": "tokens/s"}
    return _result({**LLM, "mode": test}, headline={**headline, "higher_is_better": True}, decode=d)


def latency() -> records.Result:  # a window point: neither check looks at it
    return _result({**SERVER, "mode": "latency"})


def _reference(**fields) -> records.Reference:
    base = json.loads(REFS["amd-zen4-2c-1n.json"].read_text())
    return records.load_reference({**base, **fields}, "test reference")


REF = _reference(
    server_qps={"expected": 40.0, "warn_below": 0.85, "fail_below": 0.6},
    server_latency_bound_ms=50.0,
    decode_tokens_per_s={"expected": 20.0, "warn_below": 0.85, "fail_below": 0.6},
    decode_roofline_min=0.25,
)


def one(checks: list[records.Check], name_start: str) -> records.Check:
    (c,) = [c for c in checks if c.name.startswith(name_start)]
    return c


@pytest.mark.parametrize("qps, status", [(42.0, "PASS"), (30.0, "WARN"), (20.0, "FAIL")])
def test_server_rate_is_graded_against_the_reference(qps, status):
    (c,) = qualify.check_serving([latency(), server(qps)], REF)
    assert (c.group, c.status, c.measured, c.expected) == ("serving", status, qps, 40.0)
    assert f"{qps / 40:.0%} of the reference" in c.detail


def test_the_highest_valid_rate_of_the_server_points_is_judged():
    two = server(20.0, streams=2)
    (c,) = qualify.check_serving([server(38.0), two], REF)
    assert c.status == "PASS" and c.measured == 38.0 and server(38.0).id in c.detail


def test_no_valid_server_rate_fails_with_its_reason():
    (c,) = qualify.check_serving([latency(), no_valid_rate()], REF)
    assert c.status == "FAIL" and c.measured is None
    assert c.detail.startswith(f"{no_valid_rate().id}: no VALID server rate; every step")
    (c,) = qualify.check_serving([no_valid_rate()], None)  # fails with or without a reference
    assert c.status == "FAIL" and "no VALID server rate" in c.detail


def test_a_rate_under_another_latency_bound_is_not_compared():
    (c,) = qualify.check_serving([server(20.0, bound=15.0)], REF)
    assert c.status == "WARN" and "not comparable" in c.detail


@pytest.mark.parametrize("tps, status", [(21.0, "PASS"), (15.0, "WARN"), (10.0, "FAIL")])
def test_decode_tokens_per_s_is_graded_against_the_reference(tps, status):
    checks = qualify.check_decode([latency(), decode(tps)], REF)
    c = one(checks, "tg128 tokens/s")
    assert (c.group, c.status, c.measured, c.expected) == ("decode", status, tps, 20.0)
    assert one(checks, "tg128 share").status == "PASS"


def test_decode_far_under_its_roofline_fails_in_one_line():
    checks = qualify.check_decode([decode(20.0, fraction=0.09, triad=2.0)], REF)
    c = one(checks, "tg128 share of its memory-bandwidth roofline")
    assert c.status == "FAIL" and c.measured == 0.09 and c.expected == ">= 0.25"
    assert c.detail.startswith("tg128 reaches 9% of its memory-bandwidth roofline (2.0 GB/s triad")
    assert c.detail.endswith(
        "below the reference's floor of 25%: memory or thread placement is wrong"
    )
    assert "\n" not in c.detail
    assert qualify.verdict(checks) == "FAIL"


def test_cache_resident_weights_are_exempt_from_the_roofline_floor():
    checks = qualify.check_decode([decode(20.0, fraction=0.05, resident=True)], REF)
    c = one(checks, "tg128 share")
    assert c.status == "SKIP" and "fit the L3" in c.detail and "does not apply" in c.detail
    assert qualify.verdict(checks) == "PASS"


def test_a_failed_decode_point_fails_its_check():
    broken = _result({**LLM, "mode": "tg128"}, error="llama-bench crashed")
    (c,) = qualify.check_decode([broken], REF)
    assert c.status == "FAIL" and c.detail.endswith("llama-bench crashed")


def test_the_reference_can_name_the_points_it_was_measured_on():
    ref = _reference(
        server_qps={"expected": 40.0, "warn_below": 0.85, "fail_below": 0.6},
        server_point=server(streams=2).id,
        decode_tokens_per_s={"expected": 20.0, "warn_below": 0.85, "fail_below": 0.6},
        decode_point=decode(test="tg512").id,
    )
    results = [server(40.0), server(20.0, streams=2), decode(20.0), decode(5.0, test="tg512")]
    assert qualify.check_serving(results, ref)[0].status == "FAIL"  # the s2 point's 20 QPS
    assert one(qualify.check_decode(results, ref), "tg512 tokens/s").status == "FAIL"
    assert not [c for c in qualify.check_decode(results, ref) if c.name.startswith("tg128")]
    (c,) = qualify.check_serving([server(40.0)], ref)
    assert c.status == "SKIP" and ref.server_point in c.detail


def test_an_old_reference_without_the_new_fields_loads_and_says_there_is_none():
    for name in ("amd-zen4-2c-1n.json", "amd-zen3-2c-1n.json", "epyc-7763-2s-nps4.json"):
        data = json.loads(REFS[name].read_text())
        assert not {k for k in data if k.startswith(("server_", "decode_"))}
        ref = records.load_reference(data, name)
        assert ref.server_qps is None and ref.decode_roofline_min is None
        results = [server(40.0), decode(20.0, fraction=0.05)]
        for c in qualify.check_serving(results, ref) + qualify.check_decode(results, ref):
            assert c.status == "WARN" and "no reference for this check" in c.detail, c


def test_without_the_inference_sweep_the_checks_are_skipped_and_join_evaluate(host_tree):
    from perfsuite.host.fingerprint import fingerprint

    fields = fingerprint(host_tree("epyc7763-2s-nps4"), software=False).fields
    m = records.HostMeasurements(
        bandwidth_gbs=dict.fromkeys(range(8), 39.0),
        fma_per_core=78.0,
        fma_all_cores_per_core=76.0,
        gemm_efficiency=0.7,
        fma_repeats=[78.0, 77.0, 79.0],
    )
    ref = records.load_reference(json.loads(REFS["epyc-7763-2s-nps4.json"].read_text()))
    groups = {c.group: c for c in qualify.evaluate(fields, m, ref)}
    assert groups["serving"].status == groups["decode"].status == "SKIP"
    assert "--inference" in groups["serving"].detail
    checks = qualify.evaluate(fields, m, ref, [no_valid_rate(), decode(20.0)])
    assert one(checks, "LoadGen server QPS").status == "FAIL"
    assert qualify.verdict(checks) == "FAIL"
    assert qualify.check_serving([latency()], ref)[0].status == "SKIP"
    assert qualify.check_decode([latency()], ref)[0].status == "SKIP"


def test_the_qualification_profile_has_a_server_and_a_tg_point():
    prof = select_profile(load_profiles(), "qualification", {})
    modes = {(a.models, a.mode) for a in prof.also}
    assert modes == {(("resnet50",), ("server",)), (("llm_small",), ("tg128",))}
    assert prof.loadgen("resnet50").latency_bound_ms == 100.0
    assert prof.loadgen_min_duration == 3.0
    assert (prof.search_steps, prof.search_precision) == (6, 0.1)


def test_the_reference_schema_has_the_new_fields():
    props = records.json_schema("reference")["properties"]
    assert {"server_qps", "decode_tokens_per_s", "decode_roofline_min"} <= set(props)
