"""The terminal report: precision labels follow what the framework really ran, ratios are
split by kind, and the article's INT8 claim is judged from the measured ratios."""

from perfsuite.report import int8_claim, precision_label, sweep_table


def record(prec, ips, threads=1, fw="openvino", hint=None):
    settings = {} if hint is None else {"INFERENCE_PRECISION_HINT": hint}
    return {
        "id": f"resnet50-{fw}-{prec}-t{threads}",
        "status": "ok",
        "point": {
            "model": "resnet50",
            "framework": fw,
            "precision": prec,
            "threads": threads,
            "numa_node": None,
            "batch": 1,
            "mode": "latency",
        },
        "settings": settings,
        "stats": {
            "throughput_ips": ips,
            "latency_p50_ms": 1000 / ips,
            "latency_p99_ms": 1000 / ips,
            "p99_reliable": True,
            "cv": 0.01,
        },
    }


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
