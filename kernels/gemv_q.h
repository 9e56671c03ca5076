/* Weight-only quantized GEMV/GEMM for LLM decode: y[M, N] := x[M, K] @ W[K, N] with W stored
 * as N rows (one per output) of K/32 blocks of 32 weights along K, one fp32 scale per block
 * (llama.cpp's Q8_0 and Q4_0/Q4_1 shapes). Decode reads every weight byte once per token, so
 * these kernels are judged against the memory read bandwidth, not the FMA peak.
 *
 *   q8: qs int8 [N][K], w = d * q.
 *   q4: qs uint8 [N][K/2]: byte j of a block holds element j (low nibble) and j + 16 (high
 *       nibble), unsigned 0..15; w = d * q + c, c the block's min (asymmetric, c given) or
 *       -8 d (symmetric, c NULL: not stored, so not read).
 *
 * Two ways to compute, chosen per dispatch-table row by measurement (docs/guide/kernels.md):
 *   f32: weights widened to fp32 in registers, FMAs against x (exact up to fp32 rounding);
 *   i8:  x quantized per block to int8 (scale max|x|/127) and int8 dot products with
 *        vpdpbusd, as ONNX Runtime's MatMulNBits at accuracy level 4 does.
 *
 * xs[M][K/32] are the block sums of x (the q4 offset term c * sum(x) and the i8 path's
 * correction use them); the facade computes them once per call. Threads split N. */
#ifndef PERFSUITE_GEMV_Q_H
#define PERFSUITE_GEMV_Q_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <omp.h>

#define PS_QBLOCK 32

typedef void (*ps_gemv_q8_fn)(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                              const float *xs, const int8_t *qs, const float *d, float *y,
                              int threads);
typedef void (*ps_gemv_q4_fn)(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                              const float *xs, const uint8_t *qs, const float *d,
                              const float *c, float *y, int threads);

/* -- generic: the reference the SIMD rows are tested against -------------------------------- */

static void gemv_q8_generic(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                            const float *xs, const int8_t *qs, const float *d, float *y,
                            int threads) {
    (void)xs;
    const ptrdiff_t K = Kb * PS_QBLOCK;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t n = 0; n < N; ++n)
        for (ptrdiff_t m = 0; m < M; ++m) {
            float acc = 0.0f;
            for (ptrdiff_t b = 0; b < Kb; ++b) {
                float s = 0.0f;
                for (int j = 0; j < PS_QBLOCK; ++j)
                    s += (float)qs[n * K + b * PS_QBLOCK + j] * x[m * K + b * PS_QBLOCK + j];
                acc += d[n * Kb + b] * s;
            }
            y[m * N + n] = acc;
        }
}

static inline int ps_q4_at(const uint8_t *block, int j) {
    return j < 16 ? block[j] & 15 : block[j - 16] >> 4;
}

static void gemv_q4_generic(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                            const float *xs, const uint8_t *qs, const float *d, const float *c,
                            float *y, int threads) {
    const ptrdiff_t K = Kb * PS_QBLOCK;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t n = 0; n < N; ++n)
        for (ptrdiff_t m = 0; m < M; ++m) {
            float acc = 0.0f;
            for (ptrdiff_t b = 0; b < Kb; ++b) {
                const uint8_t *block = qs + (n * Kb + b) * (PS_QBLOCK / 2);
                float s = 0.0f;
                for (int j = 0; j < PS_QBLOCK; ++j)
                    s += (float)ps_q4_at(block, j) * x[m * K + b * PS_QBLOCK + j];
                const float cb = c ? c[n * Kb + b] : -8.0f * d[n * Kb + b];
                acc += d[n * Kb + b] * s + cb * xs[m * Kb + b];
            }
            y[m * N + n] = acc;
        }
}

#if defined(__x86_64__)

/* Rows of x handled together: each widened weight vector is used MR times from registers. */
#define PS_GEMV_MR 4

/* -- AVX2 + FMA: the f32 path ------------------------------------------------------------ */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

static inline float ps_gemv_hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 32 weights of a block as four vectors of 8 floats. */
static inline void ps_q8_widen_avx2(const int8_t *q, __m256 w[4]) {
    for (int i = 0; i < 4; ++i)
        w[i] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * i))));
}

static inline void ps_q4_widen_avx2(const uint8_t *q, __m256 w[4]) {
    const __m128i bytes = _mm_loadu_si128((const __m128i *)q);
    const __m128i mask = _mm_set1_epi8(15);
    const __m128i lo = _mm_and_si128(bytes, mask), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
    w[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
    w[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
    w[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
    w[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
}

/* R rows of x against one output row of W: per block, the weights are widened once and used
 * for every row; U blocks in flight, each with its own accumulators, because one chain of
 * FMAs per row was latency bound (one block per FMA latency: gemv_q4 at 0.52 of the read
 * bandwidth on Zen 5, 1 thread). NW vectors of LANES floats make a block. */
#define PS_GEMV_RUN(NAME, VEC, TQ, WIDEN, NW, LANES, QSTRIDE, R, U, ZERO, SET1, MUL, FMA, ADD,   \
                    LOAD, HSUM)                                                                  \
    static inline void NAME(ptrdiff_t Kb, ptrdiff_t K, const float *x, const TQ *qrow,         \
                            const float *drow, float *y, ptrdiff_t ystride) {                  \
        VEC acc[R][U];                                                                         \
        for (int r = 0; r < R; ++r)                                                            \
            for (int u = 0; u < U; ++u) acc[r][u] = ZERO();                                    \
        ptrdiff_t b = 0;                                                                       \
        for (; b + U <= Kb; b += U)                                                            \
            _Pragma("GCC unroll 4") for (int u = 0; u < U; ++u) {                              \
                VEC w[NW];                                                                     \
                WIDEN(qrow + (b + u) * (QSTRIDE), w);                                          \
                const VEC db = SET1(drow[b + u]);                                              \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; ++r) {                          \
                    const float *xb = x + r * K + (b + u) * PS_QBLOCK;                         \
                    VEC t = MUL(w[0], LOAD(xb));                                               \
                    for (int i = 1; i < NW; ++i) t = FMA(w[i], LOAD(xb + i * LANES), t);      \
                    acc[r][u] = FMA(db, t, acc[r][u]);                                         \
                }                                                                              \
            }                                                                                  \
        for (; b < Kb; ++b) {                                                                  \
            VEC w[NW];                                                                         \
            WIDEN(qrow + b * (QSTRIDE), w);                                                    \
            const VEC db = SET1(drow[b]);                                                      \
            for (int r = 0; r < R; ++r) {                                                      \
                const float *xb = x + r * K + b * PS_QBLOCK;                                   \
                VEC t = MUL(w[0], LOAD(xb));                                                   \
                for (int i = 1; i < NW; ++i) t = FMA(w[i], LOAD(xb + i * LANES), t);          \
                acc[r][0] = FMA(db, t, acc[r][0]);                                             \
            }                                                                                  \
        }                                                                                      \
        for (int r = 0; r < R; ++r) {                                                          \
            VEC sum = acc[r][0];                                                               \
            for (int u = 1; u < U; ++u) sum = ADD(sum, acc[r][u]);                             \
            y[r * ystride] = HSUM(sum);                                                        \
        }                                                                                      \
    }

/* y[:, n] for every row of x: four rows at a time, then one by one. */
#define PS_GEMV_ROWS(RUN4, RUN1, QROW)                                                         \
    {                                                                                          \
        ptrdiff_t m0 = 0;                                                                      \
        for (; m0 + PS_GEMV_MR <= M; m0 += PS_GEMV_MR)                                         \
            RUN4(Kb, K, x + m0 * K, QROW, drow, y + m0 * N + n, N);                            \
        for (; m0 < M; ++m0) RUN1(Kb, K, x + m0 * K, QROW, drow, y + m0 * N + n, N);           \
    }

/* The kernels of a row: threads split the outputs n; each output's rows through RUN4/RUN1.
 * q4 adds its offset term per row (ps_q4_offset_avx2, shared by the AVX-512 rows). */
#define PS_GEMV_Q8_FN(NAME, RUN4, RUN1)                                                        \
    static void NAME(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x, const float *xs,  \
                     const int8_t *qs, const float *d, float *y, int threads) {                \
        (void)xs;                                                                              \
        const ptrdiff_t K = Kb * PS_QBLOCK;                                                    \
        _Pragma("omp parallel for num_threads(threads) schedule(static)")                      \
        for (ptrdiff_t n = 0; n < N; ++n) {                                                    \
            const float *drow = d + n * Kb;                                                    \
            PS_GEMV_ROWS(RUN4, RUN1, qs + n * K)                                               \
        }                                                                                      \
    }
#define PS_GEMV_Q4_FN(NAME, RUN4, RUN1)                                                        \
    static void NAME(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x, const float *xs,  \
                     const uint8_t *qs, const float *d, const float *c, float *y,              \
                     int threads) {                                                            \
        const ptrdiff_t K = Kb * PS_QBLOCK;                                                    \
        _Pragma("omp parallel for num_threads(threads) schedule(static)")                      \
        for (ptrdiff_t n = 0; n < N; ++n) {                                                    \
            const float *drow = d + n * Kb;                                                    \
            PS_GEMV_ROWS(RUN4, RUN1, qs + n * Kb * (PS_QBLOCK / 2))                            \
            for (ptrdiff_t m = 0; m < M; ++m)                                                  \
                y[m * N + n] += ps_q4_offset_avx2(c, drow, n, Kb, xs + m * Kb);                \
        }                                                                                      \
    }

/* A row's q8 and q4 kernels: RUN instantiated for 4 rows and for 1, U blocks in flight each
 * (the same U, so a row's result does not depend on its batch), widening with the ISA's
 * ps_q8_widen_ISA / ps_q4_widen_ISA. */
#define PS_GEMV_KERNELS(ISA, RUN, U)                                                            \
    RUN(ps_q8_run4_##ISA, int8_t, ps_q8_widen_##ISA, PS_QBLOCK, 4, U)                           \
    RUN(ps_q8_run1_##ISA, int8_t, ps_q8_widen_##ISA, PS_QBLOCK, 1, U)                           \
    RUN(ps_q4_run4_##ISA, uint8_t, ps_q4_widen_##ISA, PS_QBLOCK / 2, 4, U)                      \
    RUN(ps_q4_run1_##ISA, uint8_t, ps_q4_widen_##ISA, PS_QBLOCK / 2, 1, U)                      \
    PS_GEMV_Q8_FN(gemv_q8_##ISA, ps_q8_run4_##ISA, ps_q8_run1_##ISA)                            \
    PS_GEMV_Q4_FN(gemv_q4_##ISA, ps_q4_run4_##ISA, ps_q4_run1_##ISA)

#define PS_AVX2_RUN(NAME, TQ, WIDEN, QSTRIDE, R, U)                                            \
    PS_GEMV_RUN(NAME, __m256, TQ, WIDEN, 4, 8, QSTRIDE, R, U, _mm256_setzero_ps,               \
                _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_loadu_ps, \
                ps_gemv_hsum256)
/* The q4 offset term: y[m, n] += sum_b c[n, b] * xs[m, b] (c = -8 d when symmetric). */
static inline float ps_dot_f32_avx2(const float *a, const float *b, ptrdiff_t n) {
    __m256 acc = _mm256_setzero_ps();
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float s = ps_gemv_hsum256(acc);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

static inline float ps_q4_offset_avx2(const float *c, const float *drow, ptrdiff_t n,
                                      ptrdiff_t Kb, const float *xs) {
    return c ? ps_dot_f32_avx2(c + n * Kb, xs, Kb) : -8.0f * ps_dot_f32_avx2(drow, xs, Kb);
}

/* 16 ymm registers: 4 rows x 2 blocks in flight. One row runs with the same 2, so a row's
 * result does not depend on how many rows came with it (batch invariance, tested). */
PS_GEMV_KERNELS(avx2, PS_AVX2_RUN, 2)
#pragma GCC pop_options

/* -- AVX-512: the f32 path with zmm, and the i8 path with VNNI ------------------------------- */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")

static inline void ps_q8_widen_avx512(const int8_t *q, __m512 w[2]) {
    w[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q)));
    w[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 16))));
}

static inline void ps_q4_widen_avx512(const uint8_t *q, __m512 w[2]) {
    const __m128i bytes = _mm_loadu_si128((const __m128i *)q);
    const __m128i mask = _mm_set1_epi8(15);
    w[0] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(bytes, mask)));
    w[1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(bytes, 4), mask)));
}

#define PS_AVX512_RUN(NAME, TQ, WIDEN, QSTRIDE, R, U)                                          \
    PS_GEMV_RUN(NAME, __m512, TQ, WIDEN, 2, 16, QSTRIDE, R, U, _mm512_setzero_ps,              \
                _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_loadu_ps, \
                _mm512_reduce_add_ps)
/* 32 zmm registers: 4 rows x 4 blocks in flight */
PS_GEMV_KERNELS(avx512, PS_AVX512_RUN, 4)

#pragma GCC pop_options

/* -- AVX-512 VNNI: the i8 path ------------------------------------------------------------ */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")

/* The i8 path (q4 only): x quantized per block to int8, sx = max|x| / 127, then one vpdpbusd
 * of 64 unsigned nibbles (two blocks) with 64 int8 x values, scaled per block by d * sx. Fewer
 * instructions per block than widening to fp32 (no byte-to-float conversions), at the cost of
 * x's rounding: |error| <= sum over blocks of |d| * sx / 2 * sum(q).
 *
 * Two blocks' nibbles (32 bytes) give [b0 0-15 | b1 0-15] (low) and [b0 16-31 | b1 16-31]
 * (high); x of a block pair is stored in that order, so the zmm needs no shuffle. A last odd
 * block keeps its natural order and takes the ymm step. */
/* One block of 32 x values to int8 with sx = max|x| / 127: elements 0-15 to lo, 16-31 to hi. */
static inline float ps_quantize_x_block(const float *x, int8_t *lo, int8_t *hi) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const __m512 vi = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    /* cvtps_epi32 rounds to nearest even (MXCSR default); |x * inv| <= 127 fits int8 */
    _mm_storeu_si128((__m128i *)lo, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vi))));
    _mm_storeu_si128((__m128i *)hi, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vi))));
    return amax / 127.0f;
}

static void ps_quantize_x_avx512(const float *x, ptrdiff_t n_blocks, int8_t *xq, float *sx) {
    const ptrdiff_t paired = n_blocks & ~(ptrdiff_t)1;
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        const ptrdiff_t lo = b < paired ? (b & ~(ptrdiff_t)1) * PS_QBLOCK + (b & 1) * 16 : b * PS_QBLOCK;
        const ptrdiff_t hi = b < paired ? lo + 32 : lo + 16;
        sx[b] = ps_quantize_x_block(x + b * PS_QBLOCK, xq + lo, xq + hi);
    }
}

/* The blocks' scales d * sx over the lanes their int32 dot products land in (0-3 and 8-11
 * for the first block, 4-7 and 12-15 for the second): one 2-float product and one permute. */
static inline __m512 ps_pair_scale(const float *d, const float *sx) {
    const __m128 ds = _mm_mul_ps(_mm_castpd_ps(_mm_load_sd((const double *)d)),
                                 _mm_castpd_ps(_mm_load_sd((const double *)sx)));
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(ds));
}

static inline __m512 ps_q4_i8_pair(const uint8_t *q, const int8_t *xq, __m512 scale,
                                   __m512 acc) {
    const __m256i mask = _mm256_set1_epi8(15);
    const __m256i v = _mm256_loadu_si256((const __m256i *)q);
    const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(xq));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc);
}

static inline float ps_q4_i8_row(ptrdiff_t Kb, const int8_t *xq, const float *sx,
                                 const uint8_t *qrow, const float *drow) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    const int nb = PS_QBLOCK / 2; /* bytes of a block's nibbles */
    ptrdiff_t b = 0;
    for (; b + 4 <= Kb; b += 4)
        _Pragma("GCC unroll 2") for (int u = 0; u < 2; ++u) {
            const ptrdiff_t p = b + 2 * u;
            acc[u] = ps_q4_i8_pair(qrow + p * nb, xq + p * PS_QBLOCK,
                                   ps_pair_scale(drow + p, sx + p), acc[u]);
        }
    for (; b + 2 <= Kb; b += 2)
        acc[0] = ps_q4_i8_pair(qrow + b * nb, xq + b * PS_QBLOCK, ps_pair_scale(drow + b, sx + b),
                               acc[0]);
    float total = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    if (b < Kb) { /* the last odd block, in x's natural order */
        const __m128i bytes = _mm_loadu_si128((const __m128i *)(qrow + b * nb));
        const __m128i m4 = _mm_set1_epi8(15);
        const __m256i w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(bytes, 4), m4),
                                           _mm_and_si128(bytes, m4));
        const __m256i dot = _mm256_dpbusd_epi32(
            _mm256_setzero_si256(), w, _mm256_loadu_si256((const __m256i *)(xq + b * PS_QBLOCK)));
        total += drow[b] * sx[b] * ps_gemv_hsum256(_mm256_cvtepi32_ps(dot));
    }
    return total;
}

static void gemv_q4_avx512_vnni(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                                const float *xs, const uint8_t *qs, const float *d,
                                const float *c, float *y, int threads) {
    const ptrdiff_t K = Kb * PS_QBLOCK;
    int8_t *xq = malloc((size_t)(M * K));
    float *sx = malloc((size_t)(M * Kb) * sizeof(float));
    if (!xq || !sx) { /* no memory for x's int8 copy: the f32 path needs none */
        free(xq), free(sx);
        gemv_q4_avx512(M, N, Kb, x, xs, qs, d, c, y, threads);
        return;
    }
    for (ptrdiff_t m = 0; m < M; ++m) ps_quantize_x_avx512(x + m * K, Kb, xq + m * K, sx + m * Kb);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t n = 0; n < N; ++n) {
        const float *drow = d + n * Kb;
        const uint8_t *qrow = qs + n * Kb * (PS_QBLOCK / 2);
        for (ptrdiff_t m = 0; m < M; ++m)
            y[m * N + n] = ps_q4_i8_row(Kb, xq + m * K, sx + m * Kb, qrow, drow) +
                           ps_q4_offset_avx2(c, drow, n, Kb, xs + m * Kb);
    }
    free(xq), free(sx);
}

/* q8 on the i8 path. vpdpbusd takes one unsigned operand, so the weights go in as q + 128
 * (one xor) and each int32 lane starts from -128 times the sum of its four x bytes, computed
 * once per call: the lane ends at sum(q * xq) exactly, with no fp32 cancellation. x keeps its
 * natural order (a zmm of weights is two whole blocks). */
static void ps_quantize_x_q8(const float *x, ptrdiff_t n_blocks, int8_t *xq, float *sx,
                             int32_t *neg) {
    const __m512i m128 = _mm512_set1_epi8((char)0x80);
    for (ptrdiff_t b = 0; b < n_blocks; ++b) {
        int8_t *q = xq + b * PS_QBLOCK;
        sx[b] = ps_quantize_x_block(x + b * PS_QBLOCK, q, q + 16);
        const __m256i sums = _mm512_castsi512_si256(_mm512_dpbusd_epi32(
            _mm512_setzero_si512(), m128, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)q))));
        _mm256_storeu_si256((__m256i *)(neg + b * 8), _mm256_sub_epi32(_mm256_setzero_si256(), sums));
    }
}

static inline __m512 ps_q8_i8_pair(const int8_t *q, const int8_t *xq, const int32_t *neg,
                                   __m512 scale, __m512 acc) {
    const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(q), _mm512_set1_epi8((char)0x80));
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_loadu_si512(neg), w, _mm512_loadu_si512(xq));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc);
}

/* lanes 0-7 carry the first block, 8-15 the second */
static inline __m512 ps_q8_pair_scale(const float *d, const float *sx) {
    const __m128 ds = _mm_mul_ps(_mm_castpd_ps(_mm_load_sd((const double *)d)),
                                 _mm_castpd_ps(_mm_load_sd((const double *)sx)));
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(ds));
}

static inline float ps_q8_i8_row(ptrdiff_t Kb, const int8_t *xq, const float *sx,
                                 const int32_t *neg, const int8_t *qrow, const float *drow) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    ptrdiff_t b = 0;
    for (; b + 4 <= Kb; b += 4)
        _Pragma("GCC unroll 2") for (int u = 0; u < 2; ++u) {
            const ptrdiff_t p = b + 2 * u;
            acc[u] = ps_q8_i8_pair(qrow + p * PS_QBLOCK, xq + p * PS_QBLOCK, neg + p * 8,
                                   ps_q8_pair_scale(drow + p, sx + p), acc[u]);
        }
    for (; b + 2 <= Kb; b += 2)
        acc[0] = ps_q8_i8_pair(qrow + b * PS_QBLOCK, xq + b * PS_QBLOCK, neg + b * 8,
                               ps_q8_pair_scale(drow + b, sx + b), acc[0]);
    float total = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    if (b < Kb) { /* the last odd block */
        const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(qrow + b * PS_QBLOCK)),
                                           _mm256_set1_epi8((char)0x80));
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_loadu_si256((const __m256i *)(neg + b * 8)), w,
                                                _mm256_loadu_si256((const __m256i *)(xq + b * PS_QBLOCK)));
        total += drow[b] * sx[b] * ps_gemv_hsum256(_mm256_cvtepi32_ps(dot));
    }
    return total;
}

static void gemv_q8_avx512_vnni(ptrdiff_t M, ptrdiff_t N, ptrdiff_t Kb, const float *x,
                                const float *xs, const int8_t *qs, const float *d, float *y,
                                int threads) {
    const ptrdiff_t K = Kb * PS_QBLOCK;
    int8_t *xq = malloc((size_t)(M * K));
    float *sx = malloc((size_t)(M * Kb) * sizeof(float));
    int32_t *neg = malloc((size_t)(M * K / 4) * sizeof(int32_t));
    if (!xq || !sx || !neg) { /* no memory for x's int8 copy: the f32 path needs none */
        free(xq), free(sx), free(neg);
        gemv_q8_avx512(M, N, Kb, x, xs, qs, d, y, threads);
        return;
    }
    for (ptrdiff_t m = 0; m < M; ++m)
        ps_quantize_x_q8(x + m * K, Kb, xq + m * K, sx + m * Kb, neg + m * K / 4);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t n = 0; n < N; ++n)
        for (ptrdiff_t m = 0; m < M; ++m)
            y[m * N + n] = ps_q8_i8_row(Kb, xq + m * K, sx + m * Kb, neg + m * K / 4, qs + n * K,
                                        d + n * Kb);
    free(xq), free(sx), free(neg);
}

#pragma GCC pop_options
#define PS_HAVE_GEMV_Q_BUILD 1
#endif

#endif
