"""Decode kernels at the memory-bandwidth limit: gemv_q4 and gemv_q8 on the weight matrices of
a 7-8 B model layer, against the read-only bandwidth at the same threads and against ONNX
Runtime's MatMulNBits (4 and 8 bits; accuracy level 4: int8 activations, 0: fp32) and
OpenVINO's weight-compressed MatMul on the same shapes.

All in interleaved rounds: each round times every operation once, in a rotated order, and each
ratio is the median of its per-round ratios, so drift of the shared VM between operations
cancels (the reason test_ratios_interleaved exists). Weights are random bytes and scales, as
a speed test needs: building them from fp32 matrices of 0.5-2 GB would cost more than the
measurement. Weight bytes per call are what each operation reads: packed weights and scales.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from perfsuite import kernels
from perfsuite.weight_only import BLOCK, Packed, read_buffer, read_gbs

ALL_CORES = len(os.sched_getaffinity(0))
THREADS = sorted({1, ALL_CORES})
ROUNDS = 9
# K x N: a 7-8 B layer's attention (4096 x 4096) and MLP (4096 x 14336) matrices, one whose
# int4 weights are 4x a 32 MB L3 (128 MB), where the cache cannot help, and Llama 3's LM head.
SHAPES = {"attn 4096x4096": (4096, 4096), "mlp 4096x14336": (4096, 14336),
          "4xL3 4096x65536": (4096, 65536), "lm_head 4096x128256": (4096, 128256)}  # fmt: skip


def packed(fmt: str, k: int, n: int, seed: int = 0) -> Packed:
    rng = np.random.default_rng(seed)
    blocks = k // BLOCK
    scales = rng.uniform(0.001, 0.01, (n, blocks)).astype(np.float32)
    if fmt == "q8":
        qs = rng.integers(-127, 128, (n, k), dtype=np.int8)
        return Packed("q8", k, n, qs, scales)
    qs = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    return Packed("q4_sym", k, n, qs, scales)


def matmulnbits(p: Packed, accuracy_level: int, threads: int):
    """An ONNX Runtime session of one MatMulNBits node holding ``p``'s bytes (its own nibble
    order differs, which a speed test does not mind)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    bits = 8 if p.format == "q8" else 4
    blob = BLOCK * bits // 8
    b = p.qs.view(np.uint8).reshape(p.n, p.blocks, blob)
    node = helper.make_node(
        "MatMulNBits", ["x", "B", "scales"], ["y"], domain="com.microsoft",
        K=p.k, N=p.n, bits=bits, block_size=BLOCK, accuracy_level=accuracy_level,
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "gemv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, p.k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, p.n])],
        initializer=[numpy_helper.from_array(b, "B"),
                     numpy_helper.from_array(p.scales.reshape(-1), "scales")],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def F32_PATHS(x, q4, q8, threads, y) -> dict:
    """Where the variant in use quantizes x to int8, the same calls through the fp32 path (the
    avx512 row) too: the two ways, measured in one run, are why a row has its path."""
    info, ops = kernels.variant_info(kernels.isa()), {}
    if info["gemv_q4_i8"]:
        call = lambda: kernels.gemv_q4(x, q4, threads, isa="avx512", out=y)  # noqa: E731
        ops["gemv_q4 f32 path"] = (call, q4.nbytes)
    if info["gemv_q8_i8"]:
        call = lambda: kernels.gemv_q8(x, q8, threads, isa="avx512", out=y)  # noqa: E731
        ops["gemv_q8 f32 path"] = (call, q8.nbytes)
    return ops


def openvino_q4(p: Packed, threads: int):
    """OpenVINO's weight-compressed MatMul on the same bytes: the subgraph NNCF's
    compress_weights writes (u4 constant, Convert, Subtract the zero point 8, Multiply by f16
    scales, Reshape), which the CPU plugin runs as one fully connected layer with
    decompression."""
    import openvino as ov
    from openvino import opset13 as ops

    w = ops.constant(ov.Tensor(p.qs, [p.n, p.blocks, BLOCK], ov.Type.u4))
    zp = ops.constant(np.array(8, np.uint8), ov.Type.u4)
    scale = ops.constant(p.scales.astype(np.float16).reshape(p.n, p.blocks, 1))
    deq = ops.multiply(ops.subtract(ops.convert(w, "f16"), ops.convert(zp, "f16")), scale)
    wf = ops.convert(ops.reshape(deq, [p.n, p.k], special_zero=False), "f32")
    x = ops.parameter([1, p.k], np.float32, name="x")
    model = ov.Model([ops.matmul(x, wf, False, True)], [x])
    config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
              "PERFORMANCE_HINT": "LATENCY"}  # fmt: skip
    request = ov.Core().compile_model(model, "CPU", config).create_infer_request()
    return request


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_decode_gemv(benchmark, kernel_results, save_kernel, shape, threads):
    k, n = SHAPES[shape]
    q4, q8 = packed("q4", k, n), packed("q8", k, n, seed=1)
    x = np.random.default_rng(2).standard_normal((1, k), dtype=np.float32)
    y = np.empty((1, n), np.float32)
    # 8-bit MatMulNBits at accuracy level 0 runs tens of times slower (the decode points'
    # finding), so only level 4 holds the q8 bytes here.
    ort = {("q4", lvl): matmulnbits(q4, lvl, threads) for lvl in (4, 0)}
    ort["q8", 4] = matmulnbits(q8, 4, threads)
    ov_q4 = openvino_q4(q4, threads)
    sizes = {"q4": q4.nbytes, "q8": q8.nbytes}
    ops = {
        "gemv_q4": (lambda: kernels.gemv_q4(x, q4, threads, out=y), q4.nbytes),
        "gemv_q8": (lambda: kernels.gemv_q8(x, q8, threads, out=y), q8.nbytes),
        **F32_PATHS(x, q4, q8, threads, y),
        **{f"MatMulNBits {fmt} acc{lvl}": ((lambda s=s: s.run(None, {"x": x})), sizes[fmt])
           for (fmt, lvl), s in ort.items()},
        "OpenVINO q4": (lambda: ov_q4.infer({"x": x}), q4.nbytes),
    }  # fmt: skip
    probe = read_buffer(max(q4.nbytes, 64 << 20))  # allocated and touched once, not per round
    gbs: dict[str, list[float]] = {name: [] for name in [*ops, "read"]}
    order = list(ops)

    def one_round():
        gbs["read"].append(read_gbs(probe, threads, repeats=1))
        for name in order:
            call, nbytes = ops[name]
            t0 = time.perf_counter()
            call()
            gbs[name].append(nbytes / (time.perf_counter() - t0) / 1e9)
        order.append(order.pop(0))

    for _ in range(2):  # warm-up: first touches, ORT's first run, page faults
        one_round()
    for v in gbs.values():
        v.clear()
    benchmark.pedantic(one_round, rounds=ROUNDS, warmup_rounds=0)

    def ratio(num, den):
        per_round = [a / b for a, b in zip(gbs[num], gbs[den], strict=True)]
        return float(np.median(per_round)), min(per_round), max(per_round)

    medians = {name: float(np.median(v)) for name, v in gbs.items()}
    ratios = {
        "gemv_q4 / bandwidth": ratio("gemv_q4", "read"),
        "gemv_q8 / bandwidth": ratio("gemv_q8", "read"),
        "gemv_q4 / MatMulNBits acc4": ratio("gemv_q4", "MatMulNBits q4 acc4"),
        "gemv_q4 / MatMulNBits acc0": ratio("gemv_q4", "MatMulNBits q4 acc0"),
        "gemv_q8 / MatMulNBits acc4": ratio("gemv_q8", "MatMulNBits q8 acc4"),
        "gemv_q4 / OpenVINO": ratio("gemv_q4", "OpenVINO q4"),
    }
    for fmt in ("q4", "q8"):
        if f"gemv_{fmt} f32 path" in gbs:
            ratios[f"gemv_{fmt} i8 / f32 path"] = ratio(f"gemv_{fmt}", f"gemv_{fmt} f32 path")
    kernel_results[("decode", threads, shape)] = {"gbs": medians, "ratios": ratios,
                                                  "weights_mb": q4.nbytes / 2**20}  # fmt: skip
    benchmark.extra_info.update(
        {"shape": shape, "threads": threads, "isa": kernels.isa(), "gbs": medians,
         "ratios": {k: v[0] for k, v in ratios.items()}}
    )  # fmt: skip
    save_kernel(medians["gemv_q4"], "bandwidth_gbs")


@pytest.mark.parametrize("m", [4, 16])
def test_decode_gemm_small_batches(benchmark, kernel_results, save_kernel, m):
    """M = 4 and 16 rows (small batches): GFLOP/s of gemv_q4, and of the blocked SGEMM on
    the dequantized weights of the same shape, interleaved."""
    k, n = SHAPES["mlp 4096x14336"]
    q4 = packed("q4", k, n)
    w = np.random.default_rng(3).standard_normal((k, n), dtype=np.float32)
    x = np.random.default_rng(4).standard_normal((m, k), dtype=np.float32)
    y, c = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    flops = 2 * m * k * n
    rates = {"gemv_q4": [], "gemm_f32": []}
    threads = ALL_CORES

    def one_round():
        for name, call in (("gemv_q4", lambda: kernels.gemv_q4(x, q4, threads, out=y)),
                           ("gemm_f32", lambda: kernels.gemm_f32(x, w, c, threads))):  # fmt: skip
            t0 = time.perf_counter()
            call()
            rates[name].append(flops / (time.perf_counter() - t0) / 1e9)

    one_round()
    for v in rates.values():
        v.clear()
    benchmark.pedantic(one_round, rounds=ROUNDS, warmup_rounds=0)
    medians = {name: float(np.median(v)) for name, v in rates.items()}
    kernel_results[("decode_batch", threads, m)] = medians
    benchmark.extra_info.update({"m": m, "threads": threads, "gflops": medians})
    save_kernel(medians["gemv_q4"], "gflops")
