"""The weight-only decode kernels (gemv_q8, gemv_q4) against numpy on the dequantized weights,
for every ISA variant this CPU runs (the q4 rows that quantize x to int8 within that rounding's
own bound as well): odd K and N, K not a multiple of the block (padded with
zero weights), 1 to 16 rows of x, threads. And the quantizers' own error: each weight within
half a step of its block's grid (a whole step where Q4_0's grid clips the top value).

float32 bound: y = sum over K/32 blocks of d_b * (32-term dot of q and x) + c_b * sum(x_b),
so |y - y_exact| <= gamma_(K+2Kb) * (|x| @ A), gamma_n = n u / (1 - n u), u = 2**-24 (Higham
3.5), where A = |d| q + |c| bounds the magnitudes summed (for q4 the unsigned nibbles and the
offset cancel, so A can be twice |W|); the test allows twice that, as test_kernels.py does for
the GEMMs.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from isa_params import isa_params

from perfsuite import kernels

ISAS = isa_params()
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIMS = st.one_of(st.integers(1, 200), st.sampled_from([1, 31, 32, 33, 63, 64, 65, 96, 257]))
FORMATS = {
    "q8": (kernels.quantize_q8, kernels.gemv_q8),
    "q4_sym": (lambda w: kernels.quantize_q4(w, symmetric=True), kernels.gemv_q4),
    "q4_asym": (lambda w: kernels.quantize_q4(w, symmetric=False), kernels.gemv_q4),
}


def magnitudes(p) -> np.ndarray:
    """A (K, N): |d| q + |c| per weight, what the kernels add up before the offset cancels."""
    if p.format == "q8":
        return np.abs(p.dequantize()).astype(np.float64)
    half = p.qs.reshape(p.n, p.blocks, 16)
    q = np.concatenate([half & 15, half >> 4], axis=2).astype(np.float64)
    d = np.abs(p.scales.astype(np.float64))[:, :, None]
    c = np.abs(-8.0 * d if p.offsets is None else p.offsets.astype(np.float64)[:, :, None])
    return (d * q + c).reshape(p.n, -1)[:, : p.k].T


def bound(x: np.ndarray, packed) -> np.ndarray:
    n = x.shape[1] + 2 * -(-x.shape[1] // 32)
    u = 2.0**-24
    return 2 * n * u / (1 - n * u) * (np.abs(x).astype(np.float64) @ magnitudes(packed)) + 1e-30


def int8_x_bound(x: np.ndarray, p) -> np.ndarray:
    """The i8 path's own error (rows with ``gemv_q8_i8``/``gemv_q4_i8``): x rounded per block
    to int8 with sx = max|x| / 127 moves each product by at most sx / 2 * |d q|."""
    blocks = -(-x.shape[1] // 32)
    xp = np.zeros((x.shape[0], blocks * 32))
    xp[:, : x.shape[1]] = np.abs(x)
    sx = xp.reshape(x.shape[0], blocks, 32).max(axis=2) / 127
    if p.format == "q8":
        qsum = np.abs(p.qs.reshape(p.n, p.blocks, 32).astype(np.float64)).sum(axis=2)
    else:
        half = p.qs.reshape(p.n, p.blocks, 16)
        qsum = (half & 15).sum(axis=2, dtype=np.float64) + (half >> 4).sum(axis=2, dtype=np.float64)
    return 1.01 * (sx / 2) @ (np.abs(p.scales.astype(np.float64)) * qsum).T


@st.composite
def case(draw):
    m, k, n = draw(st.integers(1, 16)), draw(DIMS), draw(DIMS)
    elems = st.floats(-4.0, 4.0, width=32, allow_nan=False, allow_infinity=False)
    x = draw(arrays(np.float32, (m, k), elements=elems))
    w = draw(arrays(np.float32, (k, n), elements=elems))
    return x, w


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("isa", ISAS)
@SETTINGS
@given(data=case(), threads=st.sampled_from([1, 2, 3]))
def test_gemv_matches_numpy_on_the_dequantized_weights(isa, fmt, data, threads):
    x, w = data
    quantize, gemv = FORMATS[fmt]
    packed = quantize(w)
    deq = packed.dequantize().astype(np.float64)
    y = gemv(x, packed, threads=threads, isa=isa)
    assert y.shape == (x.shape[0], w.shape[1]) and y.dtype == np.float32
    limit = bound(x, packed)
    if kernels.variant_info(isa)["gemv_q8_i8" if fmt == "q8" else "gemv_q4_i8"]:
        limit = limit + int8_x_bound(x, packed)
    assert np.all(np.abs(y - x.astype(np.float64) @ deq) <= limit)
    one = gemv(x[0], packed, isa=isa)  # a vector gives a vector: the same row, bit for bit
    assert one.shape == (w.shape[1],) and np.array_equal(one, y[0])


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=case())
def test_quantized_weights_sit_within_a_step_of_the_originals(fmt, data):
    _x, w = data
    packed = FORMATS[fmt][0](w)
    deq = packed.dequantize()
    assert deq.shape == w.shape
    step = np.repeat(np.abs(packed.scales), 32, axis=1)[:, : w.shape[0]].T
    # half a step on the grid; Q4_0's +8 clips to +7, a whole step at the block's far end
    limit = step * (1.0 if fmt == "q4_sym" else 0.5) * (1 + 1e-5) + 1e-6
    assert np.all(np.abs(deq - w) <= limit)


@pytest.mark.parametrize("isa", ISAS)
def test_threads_split_outputs_so_results_are_bit_identical(isa):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 1000), dtype=np.float32)
    w = rng.standard_normal((1000, 517), dtype=np.float32)
    for packed, gemv in ((kernels.quantize_q8(w), kernels.gemv_q8),
                         (kernels.quantize_q4(w), kernels.gemv_q4)):  # fmt: skip
        one = gemv(x, packed, threads=1, isa=isa)
        assert np.array_equal(one, gemv(x, packed, threads=2, isa=isa))
        assert np.array_equal(one, gemv(x, packed, threads=7, isa=isa))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("isa", isa_params(("avx512_vnni",)))
def test_the_vnni_rows_really_take_the_int8_path(isa, fmt):
    """Their results differ from the f32 path's (x rounded to int8), within the bound."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 544), dtype=np.float32)  # 17 blocks: pairs and an odd one
    quantize, gemv = FORMATS[fmt]
    packed = quantize(rng.standard_normal((544, 64), dtype=np.float32))
    f32 = gemv(x, packed, isa="avx512")
    i8 = gemv(x, packed, isa=isa)
    assert not np.array_equal(f32, i8)
    assert np.all(np.abs(i8 - f32) <= int8_x_bound(x, packed) + bound(x, packed))


@pytest.mark.parametrize("isa", isa_params(("avx512_vnni",)))
def test_q8_int8_path_is_exact_on_int8_grid_activations(isa):
    """x already on its int8 grid (sx = 1) is not rounded, and weights of +-127/128 give
    d = 1/128 and q = +-127: every step is exact in fp32, so the q + 128 offset and its
    -128 * sum(x) correction must cancel to the exact result."""
    rng = np.random.default_rng(2)
    x = rng.integers(-127, 128, (2, 544)).astype(np.float32)
    x[:, ::32] = 127  # each block's max|x| = 127, so sx = 1
    w = rng.choice(np.array([-127 / 128, 127 / 128], np.float32), (544, 40))
    packed = kernels.quantize_q8(w)
    y = kernels.gemv_q8(x, packed, isa=isa)
    assert np.array_equal(y, x.astype(np.float64) @ packed.dequantize().astype(np.float64))


def test_a_packed_matrix_carries_its_layout_and_size():
    w = np.ones((70, 3), np.float32)
    q8, q4 = kernels.quantize_q8(w), kernels.quantize_q4(w, symmetric=False)
    assert (q8.format, q8.k, q8.n, q8.blocks) == ("q8", 70, 3, 3)  # 70 padded to 96
    assert q8.qs.shape == (3, 96) and q4.qs.shape == (3, 48)
    assert q8.nbytes == 3 * 96 + 3 * 3 * 4
    assert q4.nbytes == 3 * 48 + 2 * 3 * 3 * 4  # scales and minimums
    assert kernels.quantize_q4(w).nbytes == 3 * 48 + 3 * 3 * 4  # symmetric: scales only
    assert np.array_equal(q4.dequantize(), w)


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda p: kernels.gemv_q8(np.ones(5, np.float32), p), "x has 5 columns but W has 64"),
        (lambda p: kernels.gemv_q8(np.ones((17, 64), np.float32), p), "1 to 16"),
        (lambda p: kernels.gemv_q8(np.ones(64, np.float64), p), "x must be float32"),
        (lambda p: kernels.gemv_q4(np.ones(64, np.float32), p), "packed holds q8"),
        (lambda p: kernels.gemv_q8(np.ones(64, np.float32), p, threads=0), "threads must be"),
        (lambda p: kernels.gemv_q8(np.ones(64, np.float32), "W"), "must be a Packed"),
        (lambda p: kernels.quantize_q8(np.full((2, 2), np.nan, np.float32)), "NaN"),
        (lambda p: kernels.quantize_q4(np.ones((2, 2), np.float32), block=64), "block must be"),
    ],
)
def test_bad_input_is_refused_before_the_c_code(call, says):
    packed = kernels.quantize_q8(np.ones((64, 8), np.float32))
    with pytest.raises((TypeError, ValueError), match=says):
        call(packed)


def test_the_read_probe_reads_a_buffer_it_is_given():
    from perfsuite.weight_only import read_buffer, read_gbs

    assert read_gbs(read_buffer(1 << 20), threads=2, repeats=2) > 0
    with pytest.raises(TypeError, match="buf must be uint8"):
        read_gbs(np.ones(16, np.float32))
