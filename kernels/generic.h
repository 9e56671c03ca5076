/* Portable C implementations: the fallback that always exists, and the reference the
 * ISA-specific variants are tested against. Compiled with the baseline x86-64 flags. */
#ifndef PERFSUITE_GENERIC_H
#define PERFSUITE_GENERIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PS_MR 6
#define PS_NR 16

/* dot := sum_i x[i] * y[i] (float accumulation in 8 lanes, like the AVX2 variant) */
static float dot_f32_generic(const float *x, const float *y, ptrdiff_t n) {
    float acc[8] = {0};
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += x[i + l] * y[i + l];
    float s = 0.0f;
    for (int l = 0; l < 8; ++l) s += acc[l];
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

/* The article's kernel, scalar: C[i, j:j+8] := sum_k A[i,k] * B[k, j:j+8]; N % 8 == 0. */
static void matmul_seed_generic(const float *A, const float *B, float *C, ptrdiff_t M,
                                ptrdiff_t N, ptrdiff_t K) {
    for (ptrdiff_t i = 0; i < M; ++i)
        for (ptrdiff_t j = 0; j < N; j += 8) {
            float acc[8] = {0};
            for (ptrdiff_t k = 0; k < K; ++k)
                for (int l = 0; l < 8; ++l) acc[l] += A[i * K + k] * B[k * N + j + l];
            for (int l = 0; l < 8; ++l) C[i * N + j + l] = acc[l];
        }
}

/* C[0:MR, 0:NR] (+)= Ap^T Bp over kc packed k values. */
static void ukernel_f32_generic(ptrdiff_t kc, const float *Ap, const float *Bp, float *C,
                                ptrdiff_t ldc, int accumulate) {
    float acc[PS_MR][PS_NR] = {{0}};
    for (ptrdiff_t k = 0; k < kc; ++k, Ap += PS_MR, Bp += PS_NR)
        for (int r = 0; r < PS_MR; ++r)
            for (int c = 0; c < PS_NR; ++c) acc[r][c] += Ap[r] * Bp[c];
    for (int r = 0; r < PS_MR; ++r)
        for (int c = 0; c < PS_NR; ++c)
            C[r * ldc + c] = accumulate ? acc[r][c] + C[r * ldc + c] : acc[r][c];
}

static inline int32_t ps_sat16(int32_t v) { return v > 32767 ? 32767 : (v < -32768 ? -32768 : v); }

/* u8 x s8 -> s32 micro-kernel over packed groups of 4 k values.
 * exact=0 reproduces vpmaddubsw: each adjacent pair a0*b0 + a1*b1 saturates to int16. */
static inline void ukernel_u8s8_generic_impl(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp,
                                             int32_t *C, ptrdiff_t ldc, int accumulate,
                                             int exact) {
    int32_t acc[PS_MR][PS_NR] = {{0}};
    for (ptrdiff_t k = 0; k < kc; k += 4, Ap += 4 * PS_MR, Bp += 4 * PS_NR)
        for (int r = 0; r < PS_MR; ++r)
            for (int c = 0; c < PS_NR; ++c) {
                const uint8_t *a = Ap + 4 * r;
                const int8_t *b = Bp + 4 * c;
                int32_t p0 = a[0] * b[0] + a[1] * b[1], p1 = a[2] * b[2] + a[3] * b[3];
                acc[r][c] += exact ? p0 + p1 : ps_sat16(p0) + ps_sat16(p1);
            }
    for (int r = 0; r < PS_MR; ++r)
        for (int c = 0; c < PS_NR; ++c)
            C[r * ldc + c] = accumulate ? acc[r][c] + C[r * ldc + c] : acc[r][c];
}

static void ukernel_u8s8_generic(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp, int32_t *C,
                                 ptrdiff_t ldc, int accumulate) {
    ukernel_u8s8_generic_impl(kc, Ap, Bp, C, ldc, accumulate, 0);
}

static void ukernel_u8s8_exact_generic(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp,
                                       int32_t *C, ptrdiff_t ldc, int accumulate) {
    ukernel_u8s8_generic_impl(kc, Ap, Bp, C, ldc, accumulate, 1);
}

/* bf16 is the top half of an fp32. Conversion rounds to nearest even, keeps NaN quiet and
 * flushes denormals to signed zero: the rules of vcvtne2ps2bf16, so variants agree bitwise. */
static inline uint16_t ps_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u); /* zero, denormal */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float ps_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void f32_to_bf16_generic(const float *x, uint16_t *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; ++i) y[i] = ps_f32_to_bf16(x[i]);
}

/* bf16 x bf16 -> fp32 over packed pairs of k (the vdpbf16ps layout): each pair's two exact
 * products are added to the fp32 accumulator. The reference for the native variant. */
static void ukernel_bf16_generic(ptrdiff_t kc, const uint16_t *Ap, const uint16_t *Bp, float *C,
                                 ptrdiff_t ldc, int accumulate) {
    float acc[PS_MR][PS_NR] = {{0}};
    for (ptrdiff_t k = 0; k < kc; k += 2, Ap += 2 * PS_MR, Bp += 2 * PS_NR)
        for (int r = 0; r < PS_MR; ++r)
            for (int c = 0; c < PS_NR; ++c) {
                acc[r][c] += ps_bf16_to_f32(Ap[2 * r]) * ps_bf16_to_f32(Bp[2 * c]);
                acc[r][c] += ps_bf16_to_f32(Ap[2 * r + 1]) * ps_bf16_to_f32(Bp[2 * c + 1]);
            }
    for (int r = 0; r < PS_MR; ++r)
        for (int c = 0; c < PS_NR; ++c)
            C[r * ldc + c] = accumulate ? acc[r][c] + C[r * ldc + c] : acc[r][c];
}

/* ONNX QuantizeLinear: q := saturate(round_half_even(x / scale) + zero_point).
 * x is (outer, channels, inner); scale/zero_point have one entry per channel. */
#define PS_DEFINE_QUANTIZE_GENERIC(name, T, LO, HI)                                             \
    static void name(const float *x, ptrdiff_t outer, ptrdiff_t channels, ptrdiff_t inner,      \
                     const float *scale, const int32_t *zp, T *q) {                              \
        for (ptrdiff_t o = 0; o < outer; ++o)                                                    \
            for (ptrdiff_t ch = 0; ch < channels; ++ch) {                                        \
                const float s = scale[ch], z = (float)zp[ch];                                    \
                const ptrdiff_t base = (o * channels + ch) * inner;                              \
                for (ptrdiff_t i = 0; i < inner; ++i) {                                          \
                    float v = nearbyintf(x[base + i] / s) + z;                                   \
                    v = v < LO ? LO : (v > HI ? HI : v);                                         \
                    q[base + i] = (T)v;                                                          \
                }                                                                                \
            }                                                                                    \
    }
PS_DEFINE_QUANTIZE_GENERIC(quantize_u8_generic, uint8_t, 0.0f, 255.0f)
PS_DEFINE_QUANTIZE_GENERIC(quantize_s8_generic, int8_t, -128.0f, 127.0f)

/* ONNX DequantizeLinear: x := (q - zero_point) * scale. */
#define PS_DEFINE_DEQUANTIZE_GENERIC(name, T)                                                   \
    static void name(const T *q, ptrdiff_t outer, ptrdiff_t channels, ptrdiff_t inner,          \
                     const float *scale, const int32_t *zp, float *x) {                          \
        for (ptrdiff_t o = 0; o < outer; ++o)                                                    \
            for (ptrdiff_t ch = 0; ch < channels; ++ch) {                                        \
                const float s = scale[ch];                                                       \
                const int32_t z = zp[ch];                                                        \
                const ptrdiff_t base = (o * channels + ch) * inner;                              \
                for (ptrdiff_t i = 0; i < inner; ++i)                                            \
                    x[base + i] = (float)((int32_t)q[base + i] - z) * s;                         \
            }                                                                                    \
    }
PS_DEFINE_DEQUANTIZE_GENERIC(dequantize_u8_generic, uint8_t)
PS_DEFINE_DEQUANTIZE_GENERIC(dequantize_s8_generic, int8_t)

/* STREAM triad a := b + s * c and copy a := b, split across threads in static chunks. */
static void triad_f32_generic(float *a, const float *b, const float *c, float s, ptrdiff_t n,
                              int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

static void copy_f32_generic(float *a, const float *b, ptrdiff_t n, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t i = 0; i < n; ++i) a[i] = b[i];
}

/* Scalar multiply-add chains: the generic variant's compute peak (flops counted as 2/madd). */
static double madd_peak_generic(int64_t iters, int threads) {
    double flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
        float x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        const float m = 0.999999f, a = 1e-7f;
        for (int64_t i = 0; i < iters; ++i)
            for (int l = 0; l < 8; ++l) x[l] = x[l] * m + a;
        volatile float sink = x[0] + x[7];
        (void)sink;
        flops += 2.0 * 8 * (double)iters;
    }
    return flops;
}

#endif
