"""Why an INT8 variant can run slower than FP32: read the quantized model and the host's ISA
and name the known causes. Used when a measured INT8/FP32 ratio is below 1.

The causes differ per CPU generation: without VNNI (Zen 3) the u8s8 path (vpmaddubsw) can
saturate and reduce_range helps; with AVX-512 VNNI (Zen 4/5) vpdpbusd cannot saturate, so
reduce_range only costs accuracy and S8S8 QOperator models are fast too."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

# Below this, INT8 rarely wins on CPUs (docs/measurements/int8-per-generation.md).
SMALL_MODEL_FLOPS = 50e6


def op_counts(path: Path) -> Counter:
    import onnx  # optional (perfsuite[frameworks]), and slow to import

    return Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node)


def diagnose(
    path: Path,
    cpu_flags: dict,
    *,
    reduce_range: bool | None = None,
    preprocessed: bool | None = None,
    flops_per_item: float | None = None,
) -> list[str]:
    """Reasons found in the model at ``path`` (an ONNX file, or an OpenVINO IR for the
    size rule only) for slow INT8 on this CPU."""
    reasons = []
    if flops_per_item is not None and flops_per_item < SMALL_MODEL_FLOPS:
        reasons.append(
            f"the model is small ({flops_per_item / 1e6:.1f} MFLOP per item): per-call costs "
            "(quantizing activations, re-layout, framework dispatch) outweigh the faster "
            "INT8 arithmetic; the INT8 gain shows on models of hundreds of MFLOP and more"
        )
    if Path(path).suffix != ".onnx":
        return reasons
    ops = op_counts(Path(path))
    vnni = bool(cpu_flags.get("avx512_vnni") or cpu_flags.get("avx_vnni"))
    if ops.get("ConvInteger"):
        reasons.append(
            f"{ops['ConvInteger']} ConvInteger node(s) from dynamic quantization of convolutions: "
            "onnxruntime has no optimised ConvInteger kernel and re-quantizes activations at run "
            "time (DynamicQuantizeLinear); use quantize_static (QDQ) for CNNs "
            "(onnxruntime issue #12854)"
        )
    if ops.get("DynamicQuantizeLinear") and not ops.get("ConvInteger"):
        reasons.append(
            f"{ops['DynamicQuantizeLinear']} DynamicQuantizeLinear node(s): activation ranges are "
            "computed on every call; for small matrices this overhead can outweigh the INT8 gain"
        )
    qop = ops.get("QLinearConv", 0) + ops.get("QLinearMatMul", 0)
    if qop and not vnni:
        reasons.append(
            f"{qop} QOperator node(s) (QLinearConv/QLinearMatMul): with s8 activations (S8S8) "
            "x86-64 CPUs without VNNI take a slower path; prefer QDQ with u8 activations"
        )
    if ops.get("QuantizeLinear") and not vnni and reduce_range is False:
        reasons.append(
            "full-range s8 weights on a CPU without VNNI: the u8s8 vpmaddubsw path can saturate "
            "its int16 pair sums (see perfsuite.kernels); onnxruntime recommends "
            "reduce_range=True (7-bit weights) here: compare int8_static_rr"
        )
    if ops.get("QuantizeLinear") and vnni and reduce_range is True:
        reasons.append(
            "reduce_range=True (7-bit weights) on a CPU with VNNI: vpdpbusd adds u8 x s8 "
            "products into int32 with no int16 step, so nothing saturates and both u8s8 and s8s8 "
            "take the fast path; full-range weights cost no speed here and keep a bit of accuracy"
        )
    if ops.get("QuantizeLinear") and preprocessed is False:
        reasons.append(
            "the model was quantized without onnxruntime's pre-processing step "
            "(quant_pre_process): unfused ops stay in float between Q/DQ pairs"
        )
    return reasons
