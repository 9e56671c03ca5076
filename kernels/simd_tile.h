/* Shapes the SIMD variants share (AVX2, AVX-512), as macros: each expands inside its caller's
 * `#pragma GCC target` region, so it compiles to that ISA's instructions with no call or
 * indirection, and the intrinsics are the caller's arguments. */
#ifndef PERFSUITE_SIMD_TILE_H
#define PERFSUITE_SIMD_TILE_H

/* Start fetching the MR rows of a C tile (rows far apart in big problems) while the FMAs run. */
#define PS_PREFETCH_C(C, ldc, MR, NR)                                                          \
    for (int r_ = 0; r_ < (MR); ++r_) {                                                        \
        _mm_prefetch((const char *)((C) + r_ * (ldc)), _MM_HINT_T0);                           \
        _mm_prefetch((const char *)((C) + r_ * (ldc) + (NR)-1), _MM_HINT_T0);                  \
    }

/* C[r, LANES*h : LANES*(h+1)] (+)= acc[r][h] for an MR x 2-vector tile of accumulators. */
#define PS_STORE_TILE(C, ldc, accumulate, acc, MR, LANES, VEC, ADD, LOADU, STOREU)             \
    _Pragma("GCC unroll 16") for (int r_ = 0; r_ < (MR); ++r_)                                 \
        for (int h_ = 0; h_ < 2; ++h_) {                                                       \
            void *p_ = (C) + r_ * (ldc) + (LANES)*h_;                                          \
            VEC v_ = (acc)[r_][h_];                                                            \
            if (accumulate) v_ = ADD(v_, LOADU(p_));                                           \
            STOREU(p_, v_);                                                                    \
        }

/* FMA throughput: CHAINS independent accumulator chains of VEC (LANES floats) hide the FMA
 * latency; returns the flops executed (2 per lane per FMA). */
#define PS_DEFINE_FMA_PEAK(name, VEC, LANES, CHAINS, SET1, FMADD, ADD, HSUM)                   \
    static double name(int64_t iters, int threads) {                                          \
        double flops = 0.0;                                                                    \
        _Pragma("omp parallel num_threads(threads) reduction(+ : flops)") {                    \
            VEC x[CHAINS];                                                                     \
            const VEC m = SET1(0.999999f), a = SET1(1e-7f);                                    \
            for (int l = 0; l < (CHAINS); ++l) x[l] = SET1(1.0f + l);                          \
            for (int64_t i = 0; i < iters; ++i) {                                              \
                _Pragma("GCC unroll 16") for (int l = 0; l < (CHAINS); ++l) x[l] =             \
                    FMADD(x[l], m, a);                                                         \
            }                                                                                  \
            VEC s = x[0];                                                                      \
            for (int l = 1; l < (CHAINS); ++l) s = ADD(s, x[l]);                               \
            volatile float sink = HSUM(s);                                                     \
            (void)sink;                                                                        \
            flops += 2.0 * (LANES) * (CHAINS) * (double)iters;                                 \
        }                                                                                      \
        return flops;                                                                          \
    }

#endif
