/* AVX-512 implementations (F/BW/VL, VNNI, BF16), each compiled inside its own target region
 * so the extension still imports, and dispatches to another variant, on CPUs without them.
 *
 * Register tiles are 12 rows x 32 columns (two zmm per row): 24 accumulators, 2 B vectors and
 * the broadcast A value fit in the 32 zmm registers. Zen 4 runs a zmm FMA as two halves on its
 * two 256-bit FMA pipes (1 zmm FMA/cycle, the same flops as 2 ymm FMA/cycle); zmm halves the
 * instruction count per flop, which is why these tiles are zmm (measured in the closing note of
 * the new-EPYC issue: zmm 12x32 vs ymm 12x16 at n=1024). */
#ifndef PERFSUITE_AVX512_H
#define PERFSUITE_AVX512_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "generic.h"

#ifndef PS_ZMM_MR
#define PS_ZMM_MR 12
#endif
#define PS_ZMM_NR 32

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
#include <immintrin.h>

/* C tiles are rows far apart in big problems: start fetching them while the FMAs run. */
#define PS_ZMM_PREFETCH_C(C, ldc, T)                                                          \
    for (int r = 0; r < PS_ZMM_MR; ++r) {                                                     \
        _mm_prefetch((const char *)((C) + r * (ldc)), _MM_HINT_T0);                           \
        _mm_prefetch((const char *)((C) + r * (ldc) + PS_ZMM_NR - 1), _MM_HINT_T0);           \
    }

static void ukernel_f32_avx512(ptrdiff_t kc, const float *Ap, const float *Bp, float *C,
                               ptrdiff_t ldc, int accumulate) {
    __m512 acc[PS_ZMM_MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    PS_ZMM_PREFETCH_C(C, ldc, float)
    for (ptrdiff_t k = 0; k < kc; ++k, Ap += PS_ZMM_MR, Bp += PS_ZMM_NR) {
        const __m512 b0 = _mm512_loadu_ps(Bp), b1 = _mm512_loadu_ps(Bp + 16);
#pragma GCC unroll 16
        for (int r = 0; r < PS_ZMM_MR; ++r) {
            const __m512 a = _mm512_set1_ps(Ap[r]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r)
        for (int h = 0; h < 2; ++h) {
            float *p = C + r * ldc + 16 * h;
            __m512 v = acc[r][h];
            if (accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(p));
            _mm512_storeu_ps(p, v);
        }
}

/* A's 12-row micro-panel, panel[k * 12 + r] = a[r * lda + k]: 16 k values at a time go
 * through a 16 x 16 register transpose (rows 12-15 zero) and 12-float masked stores, instead
 * of 192 scalar moves. */
#define PS_F32X4(x, y, imm) _mm512_shuffle_f32x4((x), (y), (imm))
#define PS_PD(v) _mm512_castps_pd(v)
#define PS_PS(v) _mm512_castpd_ps(v)
static void pack_a12_f32_avx512(ptrdiff_t kc, const float *a, ptrdiff_t lda, float *panel) {
    ptrdiff_t k0 = 0;
    for (; k0 + 16 <= kc; k0 += 16) {
        __m512 t[16], u[16];
        /* rows i, i+1 interleaved by 32 bits, then rows 4g..4g+3 by 64 bits: u[4g + c] holds,
         * in 128-bit lane L, rows 4g..4g+3 at column k0 + 4L + c */
#pragma GCC unroll 8
        for (int i = 0; i < 12; i += 2) {
            const __m512 x = _mm512_loadu_ps(a + i * lda + k0);
            const __m512 y = _mm512_loadu_ps(a + (i + 1) * lda + k0);
            t[i] = _mm512_unpacklo_ps(x, y);
            t[i + 1] = _mm512_unpackhi_ps(x, y);
        }
#pragma GCC unroll 4
        for (int g = 0; g < 12; g += 4) {
            u[g] = PS_PS(_mm512_unpacklo_pd(PS_PD(t[g]), PS_PD(t[g + 2])));
            u[g + 1] = PS_PS(_mm512_unpackhi_pd(PS_PD(t[g]), PS_PD(t[g + 2])));
            u[g + 2] = PS_PS(_mm512_unpacklo_pd(PS_PD(t[g + 1]), PS_PD(t[g + 3])));
            u[g + 3] = PS_PS(_mm512_unpackhi_pd(PS_PD(t[g + 1]), PS_PD(t[g + 3])));
        }
        const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            /* lanes L of u[c], u[4 + c], u[8 + c] (and zeros): column k0 + 4L + c, rows 0-11 */
            const __m512 v0 = PS_F32X4(u[c], u[4 + c], 0x44), v1 = PS_F32X4(u[c], u[4 + c], 0xEE);
            const __m512 v2 = PS_F32X4(u[8 + c], zero, 0x44), v3 = PS_F32X4(u[8 + c], zero, 0xEE);
            float *p = panel + (k0 + c) * 12;
            _mm512_mask_storeu_ps(p, 0x0FFF, PS_F32X4(v0, v2, 0x88));
            _mm512_mask_storeu_ps(p + 4 * 12, 0x0FFF, PS_F32X4(v0, v2, 0xDD));
            _mm512_mask_storeu_ps(p + 8 * 12, 0x0FFF, PS_F32X4(v1, v3, 0x88));
            _mm512_mask_storeu_ps(p + 12 * 12, 0x0FFF, PS_F32X4(v1, v3, 0xDD));
        }
    }
    for (; k0 < kc; ++k0)
        for (int r = 0; r < 12; ++r) panel[k0 * 12 + r] = a[r * lda + k0];
}
#undef PS_F32X4
#undef PS_PD
#undef PS_PS

/* 16 independent zmm FMA chains: 4-cycle latency x 1 zmm FMA/cycle (Zen 4) or 2/cycle
 * (two 512-bit FMA units, Zen 5 and Intel server parts) needs at most 8; 16 covers both. */
static double fma_peak_avx512(int64_t iters, int threads) {
    double flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
        __m512 x[16];
        const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
        for (int l = 0; l < 16; ++l) x[l] = _mm512_set1_ps(1.0f + l);
        for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
            for (int l = 0; l < 16; ++l) x[l] = _mm512_fmadd_ps(x[l], m, a);
        }
        __m512 s = x[0];
        for (int l = 1; l < 16; ++l) s = _mm512_add_ps(s, x[l]);
        volatile float sink = _mm512_reduce_add_ps(s);
        (void)sink;
        flops += 2.0 * 16 * 16 * (double)iters;
    }
    return flops;
}

#pragma GCC pop_options

/* VNNI: vpdpbusd multiplies 4 adjacent u8 x s8 pairs and adds them to an int32 lane with no
 * int16 intermediate, so unlike vpmaddubsw it cannot saturate: the result is the exact int32
 * matmul (as long as the int32 accumulator itself does not overflow, K < 2^16 is safe). */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>

static void ukernel_u8s8_avx512_vnni(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp,
                                     int32_t *C, ptrdiff_t ldc, int accumulate) {
    __m512i acc[PS_ZMM_MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    PS_ZMM_PREFETCH_C(C, ldc, int32_t)
    for (ptrdiff_t k = 0; k < kc; k += 4, Ap += 4 * PS_ZMM_MR, Bp += 4 * PS_ZMM_NR) {
        const __m512i b0 = _mm512_loadu_si512((const void *)Bp);
        const __m512i b1 = _mm512_loadu_si512((const void *)(Bp + 64));
#pragma GCC unroll 16
        for (int r = 0; r < PS_ZMM_MR; ++r) {
            int32_t a4;
            memcpy(&a4, Ap + 4 * r, 4);
            const __m512i a = _mm512_set1_epi32(a4);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], a, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], a, b1);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r)
        for (int h = 0; h < 2; ++h) {
            int32_t *p = C + r * ldc + 16 * h;
            __m512i v = acc[r][h];
            if (accumulate) v = _mm512_add_epi32(v, _mm512_loadu_si512((const void *)p));
            _mm512_storeu_si512((void *)p, v);
        }
}

#pragma GCC pop_options

/* BF16: vdpbf16ps multiplies 2 adjacent bf16 pairs and adds both products to an fp32 lane
 * (products of bf16 are exact in fp32; inputs and outputs denormals are flushed to zero). */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
#include <immintrin.h>

static void ukernel_bf16_avx512_bf16(ptrdiff_t kc, const uint16_t *Ap, const uint16_t *Bp,
                                     float *C, ptrdiff_t ldc, int accumulate) {
    __m512 acc[PS_ZMM_MR][2];
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    PS_ZMM_PREFETCH_C(C, ldc, float)
    for (ptrdiff_t k = 0; k < kc; k += 2, Ap += 2 * PS_ZMM_MR, Bp += 2 * PS_ZMM_NR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)Bp);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(Bp + 32));
#pragma GCC unroll 16
        for (int r = 0; r < PS_ZMM_MR; ++r) {
            int32_t a2;
            memcpy(&a2, Ap + 2 * r, 4);
            const __m512bh a = (__m512bh)_mm512_set1_epi32(a2);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < PS_ZMM_MR; ++r)
        for (int h = 0; h < 2; ++h) {
            float *p = C + r * ldc + 16 * h;
            __m512 v = acc[r][h];
            if (accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(p));
            _mm512_storeu_ps(p, v);
        }
}

/* fp32 -> bf16 with vcvtne2ps2bf16: round to nearest even, NaN kept quiet, denormals to zero
 * (the generic variant implements the same rules, so both agree bit for bit). */
static void f32_to_bf16_avx512_bf16(const float *x, uint16_t *y, ptrdiff_t n) {
    ptrdiff_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512((void *)(y + i), (__m512i)v);
    }
    for (; i < n; ++i) y[i] = ps_f32_to_bf16(x[i]);
}

#pragma GCC pop_options
#define PS_HAVE_AVX512_BUILD 1
#endif

#endif
