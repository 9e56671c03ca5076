"""Numerics of the compiled kernels against numpy, for every ISA variant this CPU runs.

float32 bound: each C[i,j] is a K-term dot product; with unit roundoff u = 2**-24 the
computed value satisfies |C - C_exact| <= gamma_K * (|A| @ |B|)[i,j], gamma_K = K*u/(1-K*u)
(Higham, Accuracy and Stability of Numerical Algorithms, 3.5). The tests allow 2*gamma_K to
cover the float64 reference's own rounding; integer kernels must be exact.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from isa_params import isa_params

from perfsuite import kernels

ISAS = isa_params()
RUNNABLE = kernels.runnable_isas()
DIMS = st.one_of(st.integers(1, 300), st.sampled_from([1, 2, 5, 6, 7, 13, 16, 17, 97, 251, 257]))
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def f32_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = a.shape[1]
    u = 2.0**-24
    gamma = k * u / (1 - k * u)
    return 2 * gamma * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-30


def matrices(draw, m, k, n, lo=-4.0, hi=4.0):
    elems = st.floats(lo, hi, width=32, allow_nan=False, allow_infinity=False)
    a = draw(arrays(np.float32, (m, k), elements=elems))
    b = draw(arrays(np.float32, (k, n), elements=elems))
    return a, b


@st.composite
def gemm_case(draw):
    return matrices(draw, draw(DIMS), draw(DIMS), draw(DIMS))


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(case=gemm_case(), threads=st.sampled_from([1, 2, 3]))
def test_gemm_f32_matches_numpy(isa, case, threads):
    a, b = case
    c = kernels.gemm_f32(a, b, threads=threads, isa=isa)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - exact) <= f32_bound(a, b))


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 300, 13), (64, 64, 64), (300, 257, 301)])
def test_gemm_f32_threads_bit_identical(isa, shape):
    m, k, n = shape
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    one = kernels.gemm_f32(a, b, threads=1, isa=isa)
    for t in (2, 3, 4):
        assert np.array_equal(one, kernels.gemm_f32(a, b, threads=t, isa=isa))


def test_gemm_scratch_is_per_calling_thread():
    """The packing buffers are kept per calling thread and grown on demand: Python threads
    calling at once with growing shapes each get the single-threaded result."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    cases = [(m, 96, n) for m, n in ((5, 17), (130, 300), (64, 33), (257, 129), (12, 640))] * 2
    mats = [
        (
            rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32),
        )
        for m, k, n in cases
    ]
    expect = [kernels.gemm_f32(a, b) for a, b in mats]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda ab: kernels.gemm_f32(*ab, threads=2), mats))
    assert all(np.array_equal(e, g) for e, g in zip(expect, got, strict=True))


def test_gemm_f32_variants_agree_within_bound():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((129, 333), dtype=np.float32)
    b = rng.standard_normal((333, 65), dtype=np.float32)
    outs = [kernels.gemm_f32(a, b, isa=i) for i in RUNNABLE]
    for o in outs[1:]:
        assert np.all(np.abs(o - outs[0]) <= f32_bound(a, b))


def test_gemm_small_blocks_exercise_every_loop():
    """Tiny block sizes force several jc/pc/ic iterations and edge tiles on a small problem."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 70), dtype=np.float32)
    b = rng.standard_normal((70, 90), dtype=np.float32)
    blk = kernels.Blocking(kc_l1=8, mc_l2=12, nc_l3=32)
    for isa in RUNNABLE:
        c = kernels.gemm_f32(a, b, isa=isa, block=blk, threads=2)
        assert np.all(np.abs(c - a.astype(np.float64) @ b) <= f32_bound(a, b))
    au = rng.integers(0, 256, (50, 70), dtype=np.uint8)
    bs = rng.integers(-128, 128, (70, 90), dtype=np.int8)
    blk8 = kernels.Blocking(kc_l1=12, mc_l2=12, nc_l3=32)
    ref = au.astype(np.int32) @ bs.astype(np.int32)
    for isa in RUNNABLE:
        assert np.array_equal(kernels.gemm_u8s8_s32(au, bs, exact=True, isa=isa, block=blk8), ref)


@pytest.mark.parametrize(
    "sizes, error",
    [((0, 64, 64), ValueError), ((64, -5, 64), ValueError), ((64, 64, 0), ValueError),
     ((64, 64, 1 << 20), ValueError), ((64.0, 64, 64), TypeError), ((True, 64, 64), TypeError)],
)  # fmt: skip
def test_bad_block_sizes_are_refused_not_looped_on(sizes, error):
    """Blocking(0, 64, 64) made every GEMM loop forever (a block step of 0)."""
    with pytest.raises(error, match="Blocking"):
        kernels.Blocking(*sizes)


def test_one_element_blocks_still_compute():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((13, 9), dtype=np.float32)
    b = rng.standard_normal((9, 35), dtype=np.float32)
    for isa in RUNNABLE:
        c = kernels.gemm_f32(a, b, isa=isa, block=kernels.Blocking(1, 1, 1))
        assert np.all(np.abs(c - a.astype(np.float64) @ b) <= f32_bound(a, b))
        au, bs = (a > 0).astype(np.uint8) * 200, (b > 0).astype(np.int8) * -100
        got = kernels.gemm_u8s8_s32(au, bs, exact=True, isa=isa, block=kernels.Blocking(1, 1, 1))
        assert np.array_equal(got, au.astype(np.int32) @ bs.astype(np.int32))


@st.composite
def int8_case(draw, a_max=255, b_lo=-128, b_hi=127):
    m, k, n = draw(DIMS), draw(DIMS), draw(DIMS)
    a = draw(arrays(np.uint8, (m, k), elements=st.integers(0, a_max)))
    b = draw(arrays(np.int8, (k, n), elements=st.integers(b_lo, b_hi)))
    return a, b


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(case=int8_case(), threads=st.sampled_from([1, 2]))
def test_gemm_u8s8_exact_equals_int32_matmul(isa, case, threads):
    a, b = case
    ref = a.astype(np.int32) @ b.astype(np.int32)
    assert np.array_equal(kernels.gemm_u8s8_s32(a, b, threads=threads, exact=True, isa=isa), ref)


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(case=st.one_of(int8_case(a_max=255, b_lo=-64, b_hi=63), int8_case(a_max=127)))
def test_gemm_u8s8_fast_exact_when_saturation_impossible(isa, case):
    """7-bit weights (reduce_range) or 7-bit activations: vpmaddubsw cannot saturate."""
    a, b = case
    assert kernels.saturation_free(int(a.max()), int(np.abs(b.astype(np.int16)).max()))
    ref = a.astype(np.int32) @ b.astype(np.int32)
    assert np.array_equal(kernels.gemm_u8s8_s32(a, b, isa=isa), ref)


def saturating_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The documented fast-path semantics: pairs (k, k+1) summed and clamped to int16."""
    m, k = a.shape
    kp = (k + 3) // 4 * 4
    ap = np.zeros((m, kp), np.int64)
    ap[:, :k] = a
    bp = np.zeros((kp, b.shape[1]), np.int64)
    bp[:k] = b
    pairs = ap[:, 0::2, None] * bp[None, 0::2, :] + ap[:, 1::2, None] * bp[None, 1::2, :]
    return np.clip(pairs, -32768, 32767).sum(axis=1).astype(np.int32)


@pytest.mark.parametrize("isa", ISAS)
def test_gemm_u8s8_fast_saturates_as_documented(isa):
    """Without VNNI the fast path clamps int16 pair sums (vpmaddubsw); with VNNI (vpdpbusd)
    there is no int16 intermediate and the fast path is the exact int32 matmul."""
    saturates = kernels.variant_info(isa)["u8s8_saturates"]
    assert saturates == (isa in ("generic", "avx2", "avx512"))
    a = np.full((3, 8), 255, np.uint8)
    b = np.full((8, 5), -128, np.int8)
    fast = kernels.gemm_u8s8_s32(a, b, isa=isa)
    # 255*-128*2 = -65280 per pair clamps to -32768; 4 pairs -> -131072 (exact: -261120).
    assert np.all(fast == (-131072 if saturates else -261120))
    assert np.all(kernels.gemm_u8s8_s32(a, b, exact=True, isa=isa) == -261120)
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, (37, 45), dtype=np.uint8)
    b = rng.integers(-128, 128, (45, 29), dtype=np.int8)
    expect = saturating_reference(a, b) if saturates else a.astype(np.int64) @ b
    assert np.array_equal(kernels.gemm_u8s8_s32(a, b, isa=isa), expect)


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(m=st.integers(1, 40), k=st.integers(1, 70), n8=st.integers(1, 12), data=st.data())
def test_matmul_seed_matches_numpy(isa, m, k, n8, data):
    n = 8 * n8
    a, b_ = matrices(data.draw, m, k, n)
    b = kernels.aligned_empty((k, n), np.float32, align=32)
    b[...] = b_
    c = kernels.matmul_seed(a, b, isa=isa)
    assert np.all(np.abs(c - a.astype(np.float64) @ b) <= f32_bound(a, b))


# -- bf16 -----------------------------------------------------------------------------------


def bf16_reference(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 by the vcvtne2ps2bf16 rules, written independently of the kernels:
    round to nearest even, NaN quiet, denormals to signed zero."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    sign = (u >> 16) & 0x8000
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    out = np.where((u & 0x7F800000) == 0, sign, rounded)
    out = np.where((u & 0x7FFFFFFF) > 0x7F800000, ((u >> 16) | 0x40) & 0xFFFF, out)
    return out.astype(np.uint16)


SPECIAL_F32 = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-40,
        -1e-40,
        3.4e38,
        1.00390625,
        1.01171875,
        1.0 + 2**-8 + 2**-20,
        np.finfo(np.float32).tiny,
        65504.0,
    ],
    dtype=np.float32,
)


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(x=arrays(np.float32, st.integers(1, 100), elements=st.floats(width=32)))
def test_to_bf16_rounds_like_vcvtne2ps2bf16(isa, x):
    x = np.concatenate([x, SPECIAL_F32])
    assert np.array_equal(kernels.to_bf16(x, isa=isa), bf16_reference(x))


def test_bf16_round_trip_is_exact_on_bf16_values():
    h = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
    h = h[~np.isnan(kernels.from_bf16(h)) & ((h & 0x7F80) != 0)]  # NaN and denormals aside
    assert np.array_equal(kernels.to_bf16(kernels.from_bf16(h)), h)


@st.composite
def bf16_case(draw):
    a, b = matrices(draw, draw(DIMS), draw(DIMS), draw(DIMS))
    return kernels.to_bf16(a), kernels.to_bf16(b)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@SETTINGS
@given(case=bf16_case())
def test_gemm_bf16_matches_numpy_on_bf16_rounded_inputs(isa, threads, case):
    """Products of bf16 values are exact in fp32, so the only error is the fp32 accumulation:
    the float32 bound holds against the float64 product of the bf16-rounded inputs."""
    ah, bh = case
    a, b = kernels.from_bf16(ah), kernels.from_bf16(bh)
    c = kernels.gemm_bf16(ah, bh, threads=threads, isa=isa)
    assert np.all(np.abs(c - a.astype(np.float64) @ b) <= f32_bound(a, b))


@pytest.mark.parametrize("isa", ISAS)
def test_gemm_bf16_threads_bit_identical(isa):
    rng = np.random.default_rng(5)
    a = kernels.to_bf16(rng.standard_normal((301, 517), dtype=np.float32))
    b = kernels.to_bf16(rng.standard_normal((517, 133), dtype=np.float32))
    one = kernels.gemm_bf16(a, b, isa=isa)
    assert np.array_equal(one, kernels.gemm_bf16(a, b, threads=3, isa=isa))


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 3])
def test_gemm_u8s8_full_range_large(isa, threads):
    """Full-range u8 x s8 at sizes that cross every block boundary: exact=True always equals
    the int32 matmul, and so does the fast path on variants that do not saturate."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 256, (131, 2100), dtype=np.uint8)
    b = rng.integers(-128, 128, (2100, 67), dtype=np.int8)
    ref = a.astype(np.int64) @ b
    assert np.array_equal(kernels.gemm_u8s8_s32(a, b, threads=threads, exact=True, isa=isa), ref)
    if not kernels.variant_info(isa)["u8s8_saturates"]:
        assert np.array_equal(kernels.gemm_u8s8_s32(a, b, threads=threads, isa=isa), ref)


# -- quantization ---------------------------------------------------------------------------


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype, zp", [(np.uint8, 128), (np.int8, 0), (np.uint8, 3), (np.int8, -7)])
def test_quantize_ties_to_even_and_saturation(isa, dtype, zp):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -1e9, 0.49999997], np.float32)
    q = kernels.quantize_linear(x, np.float32(1.0), dtype(zp), isa=isa)
    lo, hi = (0, 255) if dtype is np.uint8 else (-128, 127)
    expect = np.clip(np.array([0, 2, 2, 0, -2, -2, 10**9, -(10**9), 0]) + zp, lo, hi)
    assert q.dtype == dtype
    assert q.tolist() == expect.tolist()


@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(
    x=arrays(
        np.float32,
        st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 40)),
        elements=st.floats(-100, 100, width=32),
    ),
    scale=st.floats(0.0009765625, 8.0, width=32),
    signed=st.booleans(),
)
def test_quantize_round_trip_bound(isa, x, scale, signed):
    dtype, zp = (np.int8, 0) if signed else (np.uint8, 128)
    q = kernels.quantize_linear(x, np.float32(scale), dtype(zp), isa=isa)
    back = kernels.dequantize_linear(q, np.float32(scale), dtype(zp), isa=isa)
    lo, hi = (-128, 127) if signed else (0, 255)
    inside = (x / np.float32(scale) + zp >= lo) & (x / np.float32(scale) + zp <= hi)
    # In range: error at most half a step (plus float rounding); outside: clamped to the edge.
    assert np.all(np.abs(back - x)[inside] <= scale * 0.5 * (1 + 1e-5) + 1e-6)
    assert np.all(np.isin(q[~inside], [lo, hi]))


@pytest.mark.parametrize("isa", ISAS)
def test_per_channel_quantize(isa):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    scale = np.array([0.01, 0.02, 0.05], np.float32)
    zp = np.array([0, 5, -5], np.int8)
    q = kernels.quantize_linear(x, scale, zp, axis=1, isa=isa)
    ref = np.clip(np.rint(x / scale[None, :, None, None]) + zp[None, :, None, None], -128, 127)
    assert np.array_equal(q, ref.astype(np.int8))
    back = kernels.dequantize_linear(q, scale, zp, axis=1, isa=isa)
    ref_back = (q.astype(np.int32) - zp[None, :, None, None]) * scale[None, :, None, None]
    assert np.array_equal(back, ref_back.astype(np.float32))


def _ort_quantize(x, scale, zp, axis=None):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    attrs = {"axis": axis} if axis is not None else {}
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs)
    qtype = TensorProto.UINT8 if zp.dtype == np.uint8 else TensorProto.INT8
    graph = helper.make_graph(
        [node],
        "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("q", qtype, list(x.shape))],
        [
            numpy_helper.from_array(np.asarray(scale, np.float32), "s"),
            numpy_helper.from_array(np.asarray(zp), "z"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype, zp", [(np.uint8, 128), (np.int8, 0), (np.int8, 3)])
def test_quantize_agrees_with_onnxruntime(isa, dtype, zp):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((4, 257)) * 3).astype(np.float32)
    x[0, :8] = [0.5, 1.5, 2.5, -0.5, -2.5, 1000, -1000, 0.0]  # ties and saturation
    scale = np.float32(0.05)
    ours = kernels.quantize_linear(x, scale, dtype(zp), isa=isa)
    assert np.array_equal(ours, _ort_quantize(x, scale, np.asarray(zp, dtype)))


@pytest.mark.parametrize("isa", ISAS)
def test_per_channel_quantize_agrees_with_onnxruntime(isa):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 33)).astype(np.float32)
    scale = np.array([0.01, 0.03, 0.1, 0.004], np.float32)
    zp = np.array([0, 1, -2, 3], np.int8)
    ours = kernels.quantize_linear(x, scale, zp, axis=1, isa=isa)
    assert np.array_equal(ours, _ort_quantize(x, scale, zp, axis=1))


# -- aligned buffers, bandwidth, probes -----------------------------------------------------


@pytest.mark.parametrize("align", [8, 16, 32, 64, 128, 4096])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_aligned_empty(align, dtype):
    for shape in [(1,), (3, 5), (17, 33, 2)]:
        a = kernels.aligned_empty(shape, dtype, align=align)
        assert a.ctypes.data % align == 0 and a.shape == shape and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.writeable
    z = kernels.aligned_zeros((7, 9), dtype, align=align)
    assert not z.any()


def test_aligned_buffer_outlives_its_creator():
    a = kernels.aligned_zeros(1 << 20, np.float32)
    view = a[10:20]
    del a
    view[:] = 1.0
    assert view.sum() == 10.0 and view.base is not None


def test_ascontiguousarray_does_not_guarantee_64_byte_alignment():
    """The article implies np.ascontiguousarray aligns for AVX; it only makes memory
    contiguous. A contiguous view at a 4-byte offset stays misaligned; aligned_empty is not."""
    raw = np.zeros(1025, np.float32)
    misaligned = np.ascontiguousarray(raw[1:] if raw.ctypes.data % 64 == 0 else raw[:-1])
    offsets = {np.ascontiguousarray(raw[i : i + 1024]).ctypes.data % 64 for i in range(16)}
    assert len(offsets) > 1, "contiguous slices land on different 64-byte offsets"
    assert misaligned.flags.c_contiguous
    assert kernels.aligned_empty(1024, np.float32, 64).ctypes.data % 64 == 0


@pytest.mark.parametrize("bad", [0, 3, 7, 48, -64, True, 64.0])
def test_aligned_empty_rejects_bad_alignment(bad):
    with pytest.raises(ValueError, match="power of two"):
        kernels.aligned_empty(4, np.float32, align=bad)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
def test_stream_kernels_compute_the_right_values(isa, threads):
    n = 100_003
    b = np.arange(n, dtype=np.float32)
    c = np.ones(n, np.float32)
    a = np.empty(n, np.float32)
    r = kernels.stream_triad(a, b, c, 3.0, threads=threads, isa=isa)
    assert np.array_equal(a, b + np.float32(3.0) * c)
    assert r["bandwidth_gbs"] > 0 and r["bytes"] == 3 * 4 * n
    a2 = np.empty(n + 1, np.float32)[1:]  # deliberately not 32-byte aligned
    kernels.stream_copy(a2, b, threads=threads, isa=isa)
    assert np.array_equal(a2, b)


def test_triad_gbs_reads_the_median_or_the_best_and_reuses_given_arrays(monkeypatch):
    """One triad for every caller: the median (calibration, decode) or the best (bound
    workers, qualification) of its repeats; a discarded first run is not counted."""
    rates = iter([1.0, 9.0, 2.0, 4.0])
    seen = []

    def fake(a, b, c, scalar, threads):
        seen.append((a, threads))
        return {"bandwidth_gbs": next(rates)}

    monkeypatch.setattr(kernels, "stream_triad", fake)
    arrays = kernels.triad_arrays(16)
    assert kernels.triad_gbs(16, 2, 3, discard_first=True, arrays=arrays) == 4.0  # 9, 2, 4
    assert len(seen) == 4 and all(a is arrays[0] and t == 2 for a, t in seen)
    rates = iter([1.0, 9.0, 2.0])
    assert kernels.triad_gbs(16, 1, 3, best=True) == 9.0
    assert [x.dtype for x in kernels.triad_arrays(8)] == [np.float32] * 3


def test_triad_gbs_measures_a_bandwidth():
    assert kernels.triad_gbs(1 << 16, 1, 2) > 0


def test_threads_are_honoured_exactly():
    for t in (1, 2, 3, 5):
        assert kernels.threads_granted(t) == t


def test_compute_peak_and_false_sharing_report_numbers():
    peak = kernels.compute_peak(threads=1, seconds=0.02)
    assert peak["gflops"] > 0 and peak["isa"] == kernels.isa()
    fs = kernels.false_sharing_probe(threads=2, iters=100_000)
    assert fs["packed_s"] > 0 and fs["padded_s"] > 0 and fs["ratio"] > 0


# -- bad input never crashes ----------------------------------------------------------------

BAD_INPUT_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from perfsuite import kernels as k
    f = np.ones((4, 8), np.float32)
    cases = {
        "wrong dtype": lambda: k.gemm_f32(f.astype(np.float64), f.T.copy()),
        "wrong ndim": lambda: k.gemm_f32(f.ravel(), f),
        "mismatched": lambda: k.gemm_f32(f, f),
        "non-contiguous": lambda: k.gemm_f32(f[:, ::2], f[:4, :]),
        "zero-size": lambda: k.gemm_f32(np.ones((0, 8), np.float32), f.T.copy()),
        "threads=0": lambda: k.gemm_f32(f, f.T.copy(), threads=0),
        "threads<0": lambda: k.gemm_f32(f, f.T.copy(), threads=-2),
        "threads float": lambda: k.gemm_f32(f, f.T.copy(), threads=1.5),
        "read-only out": lambda: k.gemm_f32(f, f.T.copy(), out=np.broadcast_to(
            np.zeros((4, 4), np.float32), (4, 4))),
        "out aliases A": lambda: k.gemm_f32(np.ones((4, 4), np.float32),
                                            np.ones((4, 4), np.float32), out=f[:, :4]),
        "out aliases A exactly": lambda: (lambda a: k.gemm_f32(
            a, np.ones((4, 4), np.float32), out=a))(np.ones((4, 4), np.float32)),
        "out wrong shape": lambda: k.gemm_f32(f, f.T.copy(), out=np.empty((3, 3), np.float32)),
        "not an array": lambda: k.gemm_f32([[1.0]], [[1.0]]),
        "seed N%8": lambda: k.matmul_seed(np.ones((2, 3), np.float32),
                                          k.aligned_empty((3, 12), np.float32)),
        "seed misaligned": lambda: k.matmul_seed(
            np.ones((2, 3), np.float32), k.aligned_empty(25, np.float32, 64)[1:].reshape(3, 8)),
        "int8 dtype": lambda: k.gemm_u8s8_s32(f, f),
        "int8 signed A": lambda: k.gemm_u8s8_s32(np.ones((2, 2), np.int8),
                                                 np.ones((2, 2), np.int8)),
        "quant zp range": lambda: k.quantize_linear(f, 0.1, np.int32(300), dtype=np.uint8),
        "quant scale 0": lambda: k.quantize_linear(f, 0.0, 0),
        "quant channels": lambda: k.quantize_linear(
            f, np.ones(3, np.float32), np.zeros(3, np.int8)
        ),
        "quant axis": lambda: k.quantize_linear(f, np.ones(4, np.float32),
                                                np.zeros(4, np.int8), axis=5),
        "dequant float": lambda: k.dequantize_linear(f, 0.1, 0),
        "triad lengths": lambda: k.stream_triad(np.ones(4, np.float32), np.ones(5, np.float32),
                                                np.ones(4, np.float32), 1.0),
        "triad aliasing": lambda: (lambda a: k.stream_triad(a, a, a, 1.0))(np.ones(4, np.float32)),
        "isa unknown": lambda: k.gemm_f32(f, f.T.copy(), isa="avx1024"),
        "bf16 dtype": lambda: k.gemm_bf16(f, f.T.copy()),
        "bf16 shapes": lambda: k.gemm_bf16(np.ones((2, 3), np.uint16), np.ones((2, 3), np.uint16)),
        "to_bf16 float64": lambda: k.to_bf16(np.ones(3)),
        "from_bf16 int": lambda: k.from_bf16(np.ones(3, np.int32)),
        "block type": lambda: k.gemm_f32(f, f.T.copy(), block=(64, 64, 64)),
        "blocking op": lambda: k.blocking("f64"),
    }
    for name, call in cases.items():
        try:
            call()
        except (TypeError, ValueError) as exc:
            print(f"ok {name}: {exc}")
        else:
            print(f"NOT REJECTED {name}")
    """
)


def test_bad_input_gives_clear_errors_not_crashes():
    r = subprocess.run(
        [sys.executable, "-c", BAD_INPUT_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, f"interpreter died (rc {r.returncode}): {r.stderr[-2000:]}"
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("ok ") for line in lines), r.stdout
    text = r.stdout
    for fragment in [
        "float32",
        "2-D",
        "do not align",
        "C-contiguous",
        "empty",
        ">= 1",
        "read-only",
        "overlaps",
        "N % 8",
        "aligned",
        "uint8",
        "zero_point outside",
        "scale must be",
        "per-channel",
        "axis 5",
        "differ in length",
        "unknown isa",
        "uint16",
        "bf16 bit patterns",
        "Blocking",
        "unknown GEMM op",
    ]:
        assert fragment in text, f"no error mentions {fragment!r}:\n{text}"
