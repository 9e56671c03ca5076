"""The terminal report: precision labels follow what the framework really ran, ratios are
split by kind, and the article's INT8 claim is judged from the measured ratios."""

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.sweep import claims
from perfsuite.sweep.report import precision_label, sweep_table


def record(prec, ips, threads=1, fw="openvino", hint=None, model="resnet50", node=None, mb=None):
    settings = {} if hint is None else {"INFERENCE_PRECISION_HINT": hint}
    point = records.Point(model=model, framework=fw, precision=prec, threads=threads,
                          numa_node=node, batch=1, mode="latency")  # fmt: skip
    samples = [1 / ips] * 3
    weights = None if mb is None else int(mb * 2**20)
    info = weights and records.ModelInfo(params=1, flops_per_item=1.0, weight_bytes=weights,
                                         variant_file="m.onnx")  # fmt: skip
    return records.Result(
        id=point.id, point=point, hardware_class="h", timestamp=1.7e9, status="ok",
        settings=settings, samples_s=samples, stats=summarize(samples), model=info,
    )  # fmt: skip


def test_a_bf16_run_never_reads_as_fp32_and_back():
    assert precision_label(record("bf16", 20, hint="bf16")) == "bf16"
    assert precision_label(record("fp32", 20, hint="f32")) == "fp32"
    assert precision_label(record("fp32", 20, hint="bf16")) == "fp32(ran bf16)"
    assert precision_label(record("bf16", 20, hint="f32")) == "bf16(ran fp32)"
    assert precision_label(record("fp32", 20, fw="onnxruntime")) == "fp32"


def test_ratios_split_int8_and_bf16_and_the_claim_is_judged():
    lines = []
    recs = [
        record("fp32", 10.0, hint="f32"),
        record("bf16", 19.7, hint="bf16"),
        record("int8_nncf", 37.0),
        record("int8_static", 33.0),
    ]
    sweep_table(lines.append, recs)
    text = "\n".join(lines)
    assert "BF16/FP32 throughput: resnet50 openvino bf16 t1 unbound: 1.97x" in text
    int8_line = next(line for line in lines if line.startswith("INT8/FP32 throughput:"))
    assert "int8_nncf" in int8_line and "bf16" not in int8_line
    (claim,) = claims.int8(recs, "amd-zen4-2c-1n", True, None)
    assert claim.measured.startswith("resnet50 (VNNI): 3.30-3.70x") and claim.verdict == "refuted"


def test_int8_claim_verdicts():
    fp32 = record("fp32", 10.0)
    (c,) = claims.int8([fp32, record("int8_static", 40.0)], "h", True, None)
    assert c.verdict == "confirmed"
    (c,) = claims.int8(
        [fp32, record("int8_static", 40.0), record("int8_nncf", 20.0)], "h", False, None
    )
    assert c.verdict == "partly"
    # dynamic quantization is a known slow path: it does not decide the claim
    (c,) = claims.int8([fp32, record("int8_dynamic", 3.0)], "h", None, None)
    assert c.verdict == "not measured"
    # oversubscribed (threads > cores): FP32 collapses, the ratio is not about INT8
    over = [fp32, record("int8_static", 30.0), record("fp32", 3.0, threads=4),
            record("int8_static", 30.0, threads=4)]  # fmt: skip
    (c,) = claims.int8(over, "h", True, cores=2)
    assert c.verdict == "refuted" and "3.00-3.00x" in c.measured and "1 oversubscribed" in c.why


def test_membind_is_untestable_on_one_node_and_judged_on_two():
    c = claims.membind([record("fp32", 10.0), record("fp32", 12.0, node=0)], "h", numa_nodes=1)
    assert c.verdict == "untestable here"
    assert c.why == "membind needs 2 NUMA nodes or more; this host has 1"
    gains = [record("fp32", 10.0), record("fp32", 11.6, node=0), record("fp32", 11.2, node=1)]
    c = claims.membind(gains, "nps4", numa_nodes=8)
    assert c.verdict == "confirmed" and "+12.0% to +16.0%" in c.measured and len(c.points) == 2
    c = claims.membind([record("fp32", 10.0), record("fp32", 10.3, node=0)], "h", numa_nodes=2)
    assert c.verdict == "refuted"
    assert claims.membind([record("fp32", 10.0)], "h", numa_nodes=2).verdict == "not measured"


def test_the_thread_formula_is_judged_against_the_best_measured_count():
    recs = [record("fp32", 10.0, threads=1), record("fp32", 19.0, threads=2),
            record("fp32", 9.0, threads=4)]  # fmt: skip
    c = claims.thread_formula(recs, "h", lambda model: 4)
    assert c.verdict == "refuted" and "52.6% of the best throughput lost" in c.measured
    assert claims.thread_formula(recs, "h", lambda model: 2).verdict == "confirmed"
    assert claims.thread_formula(recs, "h", None).verdict == "not measured"


def test_the_l3_cliff_is_found_where_the_ladder_crosses_the_l3():
    def ladder(rates):  # MB of weights -> items/s
        return [record("fp32", r, model=f"mlp{mb}mb", mb=mb) for mb, r in rates.items()]

    cliff = ladder({8: 100.0, 16: 50.0, 32: 24.0, 64: 6.0})  # MB/s 800, 800, 768, 384
    c = claims.l3_cliff(cliff, "h", l3_mb=32.0)
    assert c.verdict == "confirmed" and "largest drop 50% between 32 and 64 MB" in c.measured
    smooth = ladder({8: 100.0, 16: 48.0, 32: 23.0, 64: 11.0})
    assert claims.l3_cliff(smooth, "h", l3_mb=32.0).verdict == "refuted"
    early = ladder({8: 100.0, 16: 25.0, 32: 12.0, 64: 6.0})  # the drop is at 16 MB, not 32
    assert claims.l3_cliff(early, "h", l3_mb=32.0).verdict == "partly"
    assert claims.l3_cliff(cliff[:2], "h", l3_mb=32.0).verdict == "not measured"


def test_every_slow_int8_point_is_diagnosed_in_terminal_and_html():
    from perfsuite.sweep.run_report import html_page, report_lines, slow_int8

    recs = [
        record("fp32", 10.0, fw="onnxruntime"),
        record("int8_dynamic", 3.0, fw="onnxruntime"),  # slower than FP32: diagnosed
        record("int8_static", 35.0, fw="onnxruntime"),  # faster: not
        record("int8_static_rr", 9.0, threads=2, fw="onnxruntime"),  # no FP32 at t2: not
    ]
    fields = {"isa.avx512_vnni": False, "cpu.physical_cores": 2}
    fp = records.Fingerprint(hardware_class="h", classes={}, fields=fields)
    seen = []

    def fake(point, flags, flops):
        seen.append((point.precision, flags))
        return ["ConvInteger from dynamic quantization"]

    slow = slow_int8(recs, fp, diagnose=fake)
    assert [s.id for s in slow] == ["resnet50-onnxruntime-int8_dynamic-t1-unbound-b1"]
    assert seen == [("int8_dynamic", {"avx512_vnni": False})] and slow[0].ratio == 0.3
    lines = report_lines(recs, fp, slow=slow)
    i = lines.index("slow INT8: resnet50-onnxruntime-int8_dynamic-t1-unbound-b1 runs at 0.30x "
                    "its FP32 point (resnet50-onnxruntime-fp32-t1-unbound-b1):")  # fmt: skip
    assert lines[i + 1] == "  - ConvInteger from dynamic quantization"
    page = html_page(recs, fp, lines, slow, "no baseline for hardware class h", None)
    assert "id='slow-int8'" in page and "ConvInteger from dynamic quantization" in page
    assert "Regression gate: no baseline for hardware class h" in page
    assert "data:image/png;base64" in page


def test_a_run_fails_for_an_error_an_accuracy_failure_or_its_gate_and_says_which():
    from perfsuite.sweep.finish import Outcome, failures

    good = record("fp32", 10.0)
    broken = good.model_copy(update={"status": "error", "error": "worker died", "stats": None})
    acc = records.Accuracy(metric="top1_drop_points", value=5, threshold=1, passed=False, detail={})
    wrong = record("int8_static", 20.0, fw="onnxruntime").model_copy(update={"accuracy": acc})
    assert failures([good]) == [] and failures([good], Outcome()) == []
    assert failures([good, broken]) == [f"{broken.id}: worker died"]
    assert failures([wrong]) == [f"{wrong.id}: accuracy gate failed"]
    assert failures([good], Outcome(fail=True)) == ["the run's finish failed"]
