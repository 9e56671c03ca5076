/* AVX2 + FMA implementations, compiled inside a target region so the extension still
 * imports (and runs the generic path) on CPUs without AVX2: no global -mavx2. */
#ifndef PERFSUITE_AVX2_H
#define PERFSUITE_AVX2_H

#include <stddef.h>
#include <stdint.h>

#include <omp.h>
#include <string.h>

#include "generic.h"
#include "simd_tile.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

static inline float ps_hsum256_ps(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* dot := sum_i x[i] * y[i] */
static float dot_f32_avx2(const float *x, const float *y, ptrdiff_t n) {
    __m256 acc = _mm256_setzero_ps();
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc);
    float s = ps_hsum256_ps(acc);
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

/* The article's kernel as written: broadcast A[i,k], aligned load of B[k, j:j+8], FMA,
 * aligned store. Requires N % 8 == 0 and 32-byte aligned B and C (checked by the wrapper). */
static void matmul_seed_avx2(const float *A, const float *B, float *C, ptrdiff_t M, ptrdiff_t N,
                             ptrdiff_t K) {
    for (ptrdiff_t i = 0; i < M; ++i)
        for (ptrdiff_t j = 0; j < N; j += 8) {
            __m256 acc = _mm256_setzero_ps();
            for (ptrdiff_t k = 0; k < K; ++k)
                acc = _mm256_fmadd_ps(_mm256_broadcast_ss(A + i * K + k),
                                      _mm256_load_ps(B + k * N + j), acc);
            _mm256_store_ps(C + i * N + j, acc);
        }
}

/* 6x16 register tile: 12 ymm accumulators, 2 B vectors and 1 broadcast per k (BLIS haswell
 * sgemm shape, also what BLIS uses on Zen 3). */
static void ukernel_f32_avx2(ptrdiff_t kc, const float *Ap, const float *Bp, float *C,
                             ptrdiff_t ldc, int accumulate) {
    __m256 acc[PS_MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < PS_MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    PS_PREFETCH_C(C, ldc, PS_MR, PS_NR)
    for (ptrdiff_t k = 0; k < kc; ++k, Ap += PS_MR, Bp += PS_NR) {
        const __m256 b0 = _mm256_load_ps(Bp), b1 = _mm256_load_ps(Bp + 8);
#pragma GCC unroll 16
        for (int r = 0; r < PS_MR; ++r) {
            const __m256 a = _mm256_broadcast_ss(Ap + r);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    PS_STORE_TILE(C, ldc, accumulate, acc, PS_MR, 8, __m256, _mm256_add_ps, _mm256_loadu_ps,
                  _mm256_storeu_ps)
}

/* u8 x s8 -> s32 over packed groups of 4 k: vpmaddubsw (u8*s8 pairs -> s16, SATURATING),
 * vpmaddwd with ones (pairs of s16 -> s32), vpaddd. The MLAS path on AVX2 without VNNI. */
#define PS_U8S8_TILE_BODY(STEP)                                                                \
    __m256i acc[PS_MR][2];                                                                     \
    for (int r = 0; r < PS_MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();            \
    const __m256i ones = _mm256_set1_epi16(1);                                                 \
    PS_PREFETCH_C(C, ldc, PS_MR, PS_NR)                                                        \
    for (ptrdiff_t k = 0; k < kc; k += 4, Ap += 4 * PS_MR, Bp += 4 * PS_NR) {                  \
        const __m256i b0 = _mm256_load_si256((const __m256i *)Bp);                             \
        const __m256i b1 = _mm256_load_si256((const __m256i *)(Bp + 32));                      \
        for (int r = 0; r < PS_MR; ++r) {                                                      \
            int32_t a4;                                                                        \
            memcpy(&a4, Ap + 4 * r, 4);                                                        \
            const __m256i a = _mm256_set1_epi32(a4);                                           \
            STEP(acc[r][0], a, b0);                                                            \
            STEP(acc[r][1], a, b1);                                                            \
        }                                                                                      \
    }                                                                                          \
    PS_STORE_TILE(C, ldc, accumulate, acc, PS_MR, 8, __m256i, _mm256_add_epi32,                \
                  _mm256_loadu_si256, _mm256_storeu_si256)

#define PS_U8S8_FAST_STEP(acc, a, b) \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones))

/* Exact: split each u8 into its low 7 bits and its top bit. |pair sums| of either part are at
 * most 2*127*128 = 32512 and 2*128*128 = 32768 (only -32768 reachable), so no saturation. */
#define PS_U8S8_EXACT_STEP(acc, a, b)                                                          \
    do {                                                                                       \
        const __m256i lo = _mm256_and_si256(a, _mm256_set1_epi8(0x7F));                       \
        const __m256i hi = _mm256_and_si256(a, _mm256_set1_epi8((char)0x80));                 \
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, b), ones));     \
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, b), ones));     \
    } while (0)

static void ukernel_u8s8_avx2(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp, int32_t *C,
                              ptrdiff_t ldc, int accumulate) {
    PS_U8S8_TILE_BODY(PS_U8S8_FAST_STEP)
}

static void ukernel_u8s8_exact_avx2(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp,
                                    int32_t *C, ptrdiff_t ldc, int accumulate) {
    PS_U8S8_TILE_BODY(PS_U8S8_EXACT_STEP)
}

/* QuantizeLinear with division (not a reciprocal multiply) and round-half-even, like ORT. */
#define PS_DEFINE_QUANTIZE_AVX2(name, T, LO, HI)                                                \
    static void name(const float *x, ptrdiff_t outer, ptrdiff_t channels, ptrdiff_t inner,      \
                     const float *scale, const int32_t *zp, T *q) {                              \
        for (ptrdiff_t o = 0; o < outer; ++o)                                                    \
            for (ptrdiff_t ch = 0; ch < channels; ++ch) {                                        \
                const ptrdiff_t base = (o * channels + ch) * inner;                              \
                const __m256 s = _mm256_set1_ps(scale[ch]), z = _mm256_set1_ps((float)zp[ch]);   \
                const __m256 lo = _mm256_set1_ps(LO), hi = _mm256_set1_ps(HI);                   \
                ptrdiff_t i = 0;                                                                 \
                for (; i + 8 <= inner; i += 8) {                                                 \
                    __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + base + i), s);                  \
                    v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);       \
                    v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, z), lo), hi);               \
                    int32_t tmp[8];                                                              \
                    _mm256_storeu_si256((__m256i *)tmp, _mm256_cvtps_epi32(v));                  \
                    for (int l = 0; l < 8; ++l) q[base + i + l] = (T)tmp[l];                     \
                }                                                                                \
                for (; i < inner; ++i) {                                                         \
                    float v = nearbyintf(x[base + i] / scale[ch]) + (float)zp[ch];               \
                    q[base + i] = (T)(v < LO ? LO : (v > HI ? HI : v));                          \
                }                                                                                \
            }                                                                                    \
    }
PS_DEFINE_QUANTIZE_AVX2(quantize_u8_avx2, uint8_t, 0.0f, 255.0f)
PS_DEFINE_QUANTIZE_AVX2(quantize_s8_avx2, int8_t, -128.0f, 127.0f)

#define PS_DEFINE_DEQUANTIZE_AVX2(name, T, WIDEN)                                               \
    static void name(const T *q, ptrdiff_t outer, ptrdiff_t channels, ptrdiff_t inner,          \
                     const float *scale, const int32_t *zp, float *x) {                          \
        for (ptrdiff_t o = 0; o < outer; ++o)                                                    \
            for (ptrdiff_t ch = 0; ch < channels; ++ch) {                                        \
                const ptrdiff_t base = (o * channels + ch) * inner;                              \
                const __m256 s = _mm256_set1_ps(scale[ch]);                                      \
                const __m256i z = _mm256_set1_epi32(zp[ch]);                                     \
                ptrdiff_t i = 0;                                                                 \
                for (; i + 8 <= inner; i += 8) {                                                 \
                    __m128i raw = _mm_loadl_epi64((const __m128i *)(q + base + i));              \
                    __m256i v = _mm256_sub_epi32(WIDEN(raw), z);                                 \
                    _mm256_storeu_ps(x + base + i, _mm256_mul_ps(_mm256_cvtepi32_ps(v), s));     \
                }                                                                                \
                for (; i < inner; ++i)                                                           \
                    x[base + i] = (float)((int32_t)q[base + i] - zp[ch]) * scale[ch];            \
            }                                                                                    \
    }
PS_DEFINE_DEQUANTIZE_AVX2(dequantize_u8_avx2, uint8_t, _mm256_cvtepu8_epi32)
PS_DEFINE_DEQUANTIZE_AVX2(dequantize_s8_avx2, int8_t, _mm256_cvtepi8_epi32)

/* STREAM triad/copy with non-temporal stores: the destination is written without being read
 * first (no write-allocate), which is what STREAM-style peak bandwidth figures assume. */
static void triad_f32_avx2(float *a, const float *b, const float *c, float s, ptrdiff_t n,
                           int threads) {
    const __m256 vs = _mm256_set1_ps(s);
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        ptrdiff_t chunk = (n / nt + 7) / 8 * 8, lo = t * chunk, hi = lo + chunk;
        if (hi > n || t == nt - 1) hi = n;
        ptrdiff_t i = lo;
        for (; i < hi && ((uintptr_t)(a + i) & 31); ++i) a[i] = b[i] + s * c[i];
        for (; i + 8 <= hi; i += 8)
            _mm256_stream_ps(a + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(c + i),
                                                    _mm256_loadu_ps(b + i)));
        for (; i < hi; ++i) a[i] = b[i] + s * c[i];
    }
    _mm_sfence();
}

static void copy_f32_avx2(float *a, const float *b, ptrdiff_t n, int threads) {
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        ptrdiff_t chunk = (n / nt + 7) / 8 * 8, lo = t * chunk, hi = lo + chunk;
        if (hi > n || t == nt - 1) hi = n;
        ptrdiff_t i = lo;
        for (; i < hi && ((uintptr_t)(a + i) & 31); ++i) a[i] = b[i];
        for (; i + 8 <= hi; i += 8) _mm256_stream_ps(a + i, _mm256_loadu_ps(b + i));
        for (; i < hi; ++i) a[i] = b[i];
    }
    _mm_sfence();
}

/* FMA throughput: 10 independent accumulator chains hide the 4-cycle FMA latency on 2 pipes
 * (Zen 3: 2 FMA/cycle x 8 lanes x 2 flops = 32 flop/cycle/core). */
PS_DEFINE_FMA_PEAK(fma_peak_avx2, __m256, 8, 10, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
                   ps_hsum256_ps)

#pragma GCC pop_options
#define PS_HAVE_AVX2_BUILD 1
#else
#error "perfsuite kernels target x86-64"
#endif

#endif
