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
#include "simd_tile.h"

#ifndef PS_ZMM_MR
#define PS_ZMM_MR 12
#endif
#define PS_ZMM_NR 32

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
#include <immintrin.h>

/* acc[PS_ZMM_MR][2] := 0, and fetch the C tile; then, after the k loop, C (+)= acc. */
#define PS_ZMM_TILE_START(VEC, ZERO)                                                           \
    VEC acc[PS_ZMM_MR][2];                                                                     \
    _Pragma("GCC unroll 16") for (int r = 0; r < PS_ZMM_MR; ++r) acc[r][0] = acc[r][1] =       \
        ZERO();                                                                                \
    PS_PREFETCH_C(C, ldc, PS_ZMM_MR, PS_ZMM_NR)
#define PS_ZMM_TILE_STORE(VEC, ADD, LOADU, STOREU)                                             \
    PS_STORE_TILE(C, ldc, accumulate, acc, PS_ZMM_MR, 16, VEC, ADD, LOADU, STOREU)

/* The k loop over packed groups of KSTEP values of A and B that make 32 bits (4 u8/s8, 2 bf16):
 * each row's group is broadcast and STEP(acc, a, b) folds it with two B vectors (vpdpbusd,
 * vdpbf16ps). OPV is the operand type those instructions take. */
#define PS_ZMM_GROUP_TILE(VEC, OPV, KSTEP, ZERO, STEP, ADD, LOADU, STOREU)                     \
    PS_ZMM_TILE_START(VEC, ZERO)                                                               \
    for (ptrdiff_t k = 0; k < kc; k += KSTEP, Ap += KSTEP * PS_ZMM_MR, Bp += KSTEP * PS_ZMM_NR) { \
        const OPV b0 = (OPV)_mm512_loadu_si512((const void *)Bp);                              \
        const OPV b1 = (OPV)_mm512_loadu_si512((const void *)(Bp + 16 * KSTEP));               \
        _Pragma("GCC unroll 16") for (int r = 0; r < PS_ZMM_MR; ++r) {                         \
            int32_t group;                                                                     \
            memcpy(&group, Ap + KSTEP * r, 4);                                                 \
            const OPV a = (OPV)_mm512_set1_epi32(group);                                       \
            acc[r][0] = STEP(acc[r][0], a, b0);                                                \
            acc[r][1] = STEP(acc[r][1], a, b1);                                                \
        }                                                                                      \
    }                                                                                          \
    PS_ZMM_TILE_STORE(VEC, ADD, LOADU, STOREU)

static void ukernel_f32_avx512(ptrdiff_t kc, const float *Ap, const float *Bp, float *C,
                               ptrdiff_t ldc, int accumulate) {
    PS_ZMM_TILE_START(__m512, _mm512_setzero_ps)
    for (ptrdiff_t k = 0; k < kc; ++k, Ap += PS_ZMM_MR, Bp += PS_ZMM_NR) {
        const __m512 b0 = _mm512_loadu_ps(Bp), b1 = _mm512_loadu_ps(Bp + 16);
#pragma GCC unroll 16
        for (int r = 0; r < PS_ZMM_MR; ++r) {
            const __m512 a = _mm512_set1_ps(Ap[r]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    PS_ZMM_TILE_STORE(__m512, _mm512_add_ps, _mm512_loadu_ps, _mm512_storeu_ps)
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
PS_DEFINE_FMA_PEAK(fma_peak_avx512, __m512, 16, 16, _mm512_set1_ps, _mm512_fmadd_ps,
                   _mm512_add_ps, _mm512_reduce_add_ps)

#pragma GCC pop_options

/* VNNI: vpdpbusd multiplies 4 adjacent u8 x s8 pairs and adds them to an int32 lane with no
 * int16 intermediate, so unlike vpmaddubsw it cannot saturate: the result is the exact int32
 * matmul (as long as the int32 accumulator itself does not overflow, K < 2^16 is safe). */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#include <immintrin.h>

static void ukernel_u8s8_avx512_vnni(ptrdiff_t kc, const uint8_t *Ap, const int8_t *Bp,
                                     int32_t *C, ptrdiff_t ldc, int accumulate) {
    PS_ZMM_GROUP_TILE(__m512i, __m512i, 4, _mm512_setzero_si512, _mm512_dpbusd_epi32,
                      _mm512_add_epi32, _mm512_loadu_si512, _mm512_storeu_si512)
}

#pragma GCC pop_options

/* BF16: vdpbf16ps multiplies 2 adjacent bf16 pairs and adds both products to an fp32 lane
 * (products of bf16 are exact in fp32; inputs and outputs denormals are flushed to zero). */
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
#include <immintrin.h>

static void ukernel_bf16_avx512_bf16(ptrdiff_t kc, const uint16_t *Ap, const uint16_t *Bp,
                                     float *C, ptrdiff_t ldc, int accumulate) {
    PS_ZMM_GROUP_TILE(__m512, __m512bh, 2, _mm512_setzero_ps, _mm512_dpbf16_ps, _mm512_add_ps,
                      _mm512_loadu_ps, _mm512_storeu_ps)
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
