/* GEMM entry points: the blocked driver instantiated per element type, with the micro-kernel
 * of the requested ISA variant plugged in. */
#ifndef PERFSUITE_KERNELS_GEMM_H
#define PERFSUITE_KERNELS_GEMM_H

#include <stdint.h>

#include "avx2.h"
#include "generic.h"

#define GD_NAME gemm_f32_blocked
#define GD_TA float
#define GD_TB float
#define GD_TC float
#define GD_KSTEP 1
#define GD_MR PS_MR
#define GD_NR PS_NR
#include "gemm_driver.h"

#define GD_NAME gemm_u8s8_blocked
#define GD_TA uint8_t
#define GD_TB int8_t
#define GD_TC int32_t
#define GD_KSTEP 4
#define GD_MR PS_MR
#define GD_NR PS_NR
#include "gemm_driver.h"

/* C := A @ B, row-major, C-contiguous. isa: 0 generic, 1 avx2. */
static int gemm_f32(int isa, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float *A,
                    const float *B, float *C, ptrdiff_t MC, ptrdiff_t KC, ptrdiff_t NC,
                    int threads) {
    return gemm_f32_blocked(isa == 1 ? ukernel_f32_avx2 : ukernel_f32_generic, M, N, K, A, K, B,
                            N, C, N, MC, KC, NC, threads);
}

/* C := A @ B with A uint8, B int8, C int32. exact=0 saturates pair sums to int16 like
 * vpmaddubsw (in both variants, so they agree bit for bit); exact=1 never saturates. */
static int gemm_u8s8_s32(int isa, int exact, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K,
                         const uint8_t *A, const int8_t *B, int32_t *C, ptrdiff_t MC,
                         ptrdiff_t KC, ptrdiff_t NC, int threads) {
    gemm_u8s8_blocked_ukernel_t uk =
        isa == 1 ? (exact ? ukernel_u8s8_exact_avx2 : ukernel_u8s8_avx2)
                 : (exact ? ukernel_u8s8_exact_generic : ukernel_u8s8_generic);
    return gemm_u8s8_blocked(uk, M, N, K, A, K, B, N, C, N, MC, KC, NC, threads);
}

#endif
