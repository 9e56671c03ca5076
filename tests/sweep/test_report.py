"""The terminal report: precision labels follow what the framework really ran, ratios are
split by kind, and the article's INT8 claim is judged from the measured ratios."""

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.sweep.report import int8_claim, precision_label, sweep_table


def record(prec, ips, threads=1, fw="openvino", hint=None):
    settings = {} if hint is None else {"INFERENCE_PRECISION_HINT": hint}
    point = records.Point(model="resnet50", framework=fw, precision=prec, threads=threads,
                          batch=1, mode="latency")  # fmt: skip
    samples = [1 / ips] * 3
    return records.Result(
        id=point.id, point=point, hardware_class="h", timestamp=1.7e9, status="ok",
        settings=settings, samples_s=samples, stats=summarize(samples),
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
    sweep_table(lines.append, recs, hardware_class="amd-zen4-2c-1n", vnni=True)
    text = "\n".join(lines)
    assert "BF16/FP32 throughput: resnet50 openvino bf16 t1 unbound: 1.97x" in text
    int8_line = next(line for line in lines if line.startswith("INT8/FP32 throughput:"))
    assert "int8_nncf" in int8_line and "bf16" not in int8_line
    assert "resnet50 on amd-zen4-2c-1n (VNNI): measured 3.30-3.70x" in text
    assert "refuted on this host class" in text


def test_claim_verdicts():
    def key(prec, t=1):
        return ("m", "fw", prec, t, None, 1, "latency")

    base = {key("fp32"): 10.0}
    (line,) = int8_claim({**base, key("int8_static"): 40.0}, "h", True)
    assert "confirmed" in line
    (line,) = int8_claim({**base, key("int8_static"): 40.0, key("int8_nncf"): 20.0}, "h", False)
    assert "partly" in line
    # dynamic quantization is a known slow path: it does not decide the claim
    assert int8_claim({**base, key("int8_dynamic"): 3.0}, "h", None) == []
    # oversubscribed (threads > cores): FP32 collapses, the ratio is not about INT8
    over = {**base, key("int8_static"): 30.0, key("fp32", 4): 3.0, key("int8_static", 4): 30.0}
    (line,) = int8_claim(over, "h", True, cores=2)
    assert "refuted" in line and "3.00-3.00x" in line and "1 oversubscribed point(s)" in line


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
