/* The dispatch table: one row of function pointers per ISA variant, best last. The Cython
 * layer calls through the row chosen once by the facade; it never branches on the ISA.
 *
 * Adding an ISA = one header with its kernels, one ps_can_run_* check in cpu_features.h and
 * one row here. A row reuses the kernels of the level below where it has nothing better. */
#ifndef PERFSUITE_DISPATCH_H
#define PERFSUITE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "avx2.h"
#include "avx512.h"
#include "cpu_features.h"
#include "generic.h"

/* -- the blocked driver, instantiated per (element types, register tile) ------------------ */

#define GD_NAME gemm_f32_6x16
#define GD_TA float
#define GD_TB float
#define GD_TC float
#define GD_KSTEP 1
#define GD_MR PS_MR
#define GD_NR PS_NR
#include "gemm_driver.h"

#define GD_NAME gemm_u8s8_6x16
#define GD_TA uint8_t
#define GD_TB int8_t
#define GD_TC int32_t
#define GD_KSTEP 4
#define GD_MR PS_MR
#define GD_NR PS_NR
#include "gemm_driver.h"

#define GD_NAME gemm_bf16_6x16
#define GD_TA uint16_t
#define GD_TB uint16_t
#define GD_TC float
#define GD_KSTEP 2
#define GD_MR PS_MR
#define GD_NR PS_NR
#include "gemm_driver.h"

#define GD_NAME gemm_f32_zmm
#define GD_TA float
#define GD_TB float
#define GD_TC float
#define GD_KSTEP 1
#define GD_MR PS_ZMM_MR
#define GD_NR PS_ZMM_NR
#if PS_ZMM_MR == 12 && defined(PS_HAVE_AVX512_BUILD)
#define GD_PACK_A_PANEL pack_a12_f32_avx512
#endif
#include "gemm_driver.h"

#define GD_NAME gemm_u8s8_zmm
#define GD_TA uint8_t
#define GD_TB int8_t
#define GD_TC int32_t
#define GD_KSTEP 4
#define GD_MR PS_ZMM_MR
#define GD_NR PS_ZMM_NR
#include "gemm_driver.h"

#define GD_NAME gemm_bf16_zmm
#define GD_TA uint16_t
#define GD_TB uint16_t
#define GD_TC float
#define GD_KSTEP 2
#define GD_MR PS_ZMM_MR
#define GD_NR PS_ZMM_NR
#include "gemm_driver.h"

/* C := A @ B, row-major, C-contiguous; returns 0, or -1 when packing buffers cannot be had. */
#define PS_GEMM_OP(NAME, DRIVER, UKERNEL, TA, TB, TC)                                          \
    static int NAME(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const TA *A, const TB *B, TC *C,    \
                    ptrdiff_t MC, ptrdiff_t KC, ptrdiff_t NC, int threads) {                   \
        return DRIVER(UKERNEL, M, N, K, A, K, B, N, C, N, MC, KC, NC, threads);                \
    }

PS_GEMM_OP(gemm_f32_generic, gemm_f32_6x16, ukernel_f32_generic, float, float, float)
PS_GEMM_OP(gemm_f32_avx2, gemm_f32_6x16, ukernel_f32_avx2, float, float, float)
PS_GEMM_OP(gemm_f32_avx512, gemm_f32_zmm, ukernel_f32_avx512, float, float, float)
PS_GEMM_OP(gemm_u8s8_generic, gemm_u8s8_6x16, ukernel_u8s8_generic, uint8_t, int8_t, int32_t)
PS_GEMM_OP(gemm_u8s8_exact_generic, gemm_u8s8_6x16, ukernel_u8s8_exact_generic, uint8_t,
           int8_t, int32_t)
PS_GEMM_OP(gemm_u8s8_avx2, gemm_u8s8_6x16, ukernel_u8s8_avx2, uint8_t, int8_t, int32_t)
PS_GEMM_OP(gemm_u8s8_exact_avx2, gemm_u8s8_6x16, ukernel_u8s8_exact_avx2, uint8_t, int8_t,
           int32_t)
PS_GEMM_OP(gemm_u8s8_avx512_vnni, gemm_u8s8_zmm, ukernel_u8s8_avx512_vnni, uint8_t, int8_t,
           int32_t)
PS_GEMM_OP(gemm_bf16_generic, gemm_bf16_6x16, ukernel_bf16_generic, uint16_t, uint16_t, float)
PS_GEMM_OP(gemm_bf16_avx512_bf16, gemm_bf16_zmm, ukernel_bf16_avx512_bf16, uint16_t, uint16_t,
           float)

/* -- the table ---------------------------------------------------------------------------- */

typedef int (*ps_gemm_f32_fn)(ptrdiff_t, ptrdiff_t, ptrdiff_t, const float *, const float *,
                              float *, ptrdiff_t, ptrdiff_t, ptrdiff_t, int);
typedef int (*ps_gemm_u8s8_fn)(ptrdiff_t, ptrdiff_t, ptrdiff_t, const uint8_t *, const int8_t *,
                               int32_t *, ptrdiff_t, ptrdiff_t, ptrdiff_t, int);
typedef int (*ps_gemm_bf16_fn)(ptrdiff_t, ptrdiff_t, ptrdiff_t, const uint16_t *,
                               const uint16_t *, float *, ptrdiff_t, ptrdiff_t, ptrdiff_t, int);
typedef void (*ps_quantize_u8_fn)(const float *, ptrdiff_t, ptrdiff_t, ptrdiff_t, const float *,
                                  const int32_t *, uint8_t *);
typedef void (*ps_quantize_s8_fn)(const float *, ptrdiff_t, ptrdiff_t, ptrdiff_t, const float *,
                                  const int32_t *, int8_t *);
typedef void (*ps_dequantize_u8_fn)(const uint8_t *, ptrdiff_t, ptrdiff_t, ptrdiff_t,
                                    const float *, const int32_t *, float *);
typedef void (*ps_dequantize_s8_fn)(const int8_t *, ptrdiff_t, ptrdiff_t, ptrdiff_t,
                                    const float *, const int32_t *, float *);

/* Register tile of a GEMM micro-kernel: mr x nr outputs, kstep k values packed together. */
typedef struct {
    int mr, nr, kstep;
} ps_tile;

typedef struct {
    const char *name;
    const char *requires; /* CPU flags as /proc/cpuinfo spells them, for skip messages */
    int (*can_run)(uint32_t features);
    float (*dot_f32)(const float *, const float *, ptrdiff_t);
    void (*matmul_seed)(const float *, const float *, float *, ptrdiff_t, ptrdiff_t, ptrdiff_t);
    ps_gemm_f32_fn gemm_f32;
    ps_tile tile_f32;
    ps_gemm_u8s8_fn gemm_u8s8, gemm_u8s8_exact;
    ps_tile tile_u8s8;
    int u8s8_saturates; /* 1: the fast path clamps int16 pair sums (vpmaddubsw) */
    ps_gemm_bf16_fn gemm_bf16;
    ps_tile tile_bf16;
    int bf16_native; /* 0: emulated in scalar fp32 (a numerics reference, not a speed path) */
    void (*f32_to_bf16)(const float *, uint16_t *, ptrdiff_t);
    ps_quantize_u8_fn quantize_u8;
    ps_quantize_s8_fn quantize_s8;
    ps_dequantize_u8_fn dequantize_u8;
    ps_dequantize_s8_fn dequantize_s8;
    void (*triad)(float *, const float *, const float *, float, ptrdiff_t, int);
    void (*copy)(float *, const float *, ptrdiff_t, int);
    double (*peak)(int64_t, int);
} ps_kernel_table;

#define PS_TILE_6x16(KSTEP) {PS_MR, PS_NR, KSTEP}
#define PS_TILE_ZMM(KSTEP) {PS_ZMM_MR, PS_ZMM_NR, KSTEP}

/* Kernels shared by every AVX-512 level: quantization and streams are bandwidth bound and
 * gain nothing from zmm on these parts, so they keep the AVX2 code. */
#define PS_AVX512_COMMON                                                                       \
    dot_f32_avx2, matmul_seed_avx2, gemm_f32_avx512, PS_TILE_ZMM(1)

#define PS_AVX2_TAIL                                                                           \
    quantize_u8_avx2, quantize_s8_avx2, dequantize_u8_avx2, dequantize_s8_avx2,               \
        triad_f32_avx2, copy_f32_avx2

static const ps_kernel_table PS_KERNEL_TABLE[] = {
    {"generic", "", ps_can_run_generic, dot_f32_generic, matmul_seed_generic, gemm_f32_generic,
     PS_TILE_6x16(1), gemm_u8s8_generic, gemm_u8s8_exact_generic, PS_TILE_6x16(4), 1,
     gemm_bf16_generic, PS_TILE_6x16(2), 0, f32_to_bf16_generic, quantize_u8_generic,
     quantize_s8_generic, dequantize_u8_generic, dequantize_s8_generic, triad_f32_generic,
     copy_f32_generic, madd_peak_generic},
    {"avx2", "avx2 fma", ps_can_run_avx2, dot_f32_avx2, matmul_seed_avx2, gemm_f32_avx2,
     PS_TILE_6x16(1), gemm_u8s8_avx2, gemm_u8s8_exact_avx2, PS_TILE_6x16(4), 1,
     gemm_bf16_generic, PS_TILE_6x16(2), 0, f32_to_bf16_generic, PS_AVX2_TAIL, fma_peak_avx2},
    {"avx512", "avx2 fma avx512f avx512bw avx512vl avx512dq", ps_can_run_avx512, PS_AVX512_COMMON,
     gemm_u8s8_avx2, gemm_u8s8_exact_avx2, PS_TILE_6x16(4), 1, gemm_bf16_generic,
     PS_TILE_6x16(2), 0, f32_to_bf16_generic, PS_AVX2_TAIL, fma_peak_avx512},
    {"avx512_vnni", "avx2 fma avx512f avx512bw avx512vl avx512dq avx512_vnni", ps_can_run_avx512_vnni,
     PS_AVX512_COMMON, gemm_u8s8_avx512_vnni, gemm_u8s8_avx512_vnni, PS_TILE_ZMM(4), 0,
     gemm_bf16_generic, PS_TILE_6x16(2), 0, f32_to_bf16_generic, PS_AVX2_TAIL, fma_peak_avx512},
    {"avx512_bf16", "avx2 fma avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16",
     ps_can_run_avx512_bf16, PS_AVX512_COMMON, gemm_u8s8_avx512_vnni, gemm_u8s8_avx512_vnni,
     PS_TILE_ZMM(4), 0, gemm_bf16_avx512_bf16, PS_TILE_ZMM(2), 1, f32_to_bf16_avx512_bf16,
     PS_AVX2_TAIL, fma_peak_avx512},
};

static inline int ps_kernel_rows(void) {
    return (int)(sizeof(PS_KERNEL_TABLE) / sizeof(PS_KERNEL_TABLE[0]));
}

static inline const ps_kernel_table *ps_kernel_row(int code) { return &PS_KERNEL_TABLE[code]; }

#endif
