/* The dispatch table: one row of function pointers per ISA variant, best last. The Cython
 * layer calls through the row chosen once by the facade; it never branches on the ISA.
 *
 * Adding an ISA = one header with its kernels and one row here (its flags, if new, are one
 * line of PS_CPU_FLAGS in cpu_features.h). Rows use designated initialisers, so each kernel
 * is named where it is set. */
#ifndef PERFSUITE_DISPATCH_H
#define PERFSUITE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "avx2.h"
#include "avx512.h"
#include "cpu_features.h"
#include "generic.h"
#include "gemv_q.h"

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

/* One row per ISA variant. Every field is set in every row (a kernel left NULL is refused at
 * import, see ps_kernel_row_lacks). */
typedef struct {
    const char *name;
    uint32_t needs; /* PS_FEAT bits: CPU flags and OS register state (cpu_features.h) */
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
    ps_gemv_q8_fn gemv_q8; /* weight-only decode kernels (gemv_q.h) */
    ps_gemv_q4_fn gemv_q4;
    int gemv_q8_i8; /* 1: gemv_q8 quantizes x to int8 per block (vpdpbusd), 0: fp32 */
    int gemv_q4_i8; /* the same for gemv_q4 */
} ps_kernel_table;

#define PS_TILE_6x16(KSTEP) {PS_MR, PS_NR, KSTEP}
#define PS_TILE_ZMM(KSTEP) {PS_ZMM_MR, PS_ZMM_NR, KSTEP}

/* What each level needs; each AVX-512 level includes the one before it, as on every CPU that
 * has them (Zen 4/5, Cooper Lake, SPR). The OS must save YMM for AVX2, ZMM and opmask for
 * AVX-512. */
#define PS_NEEDS_AVX2 (PS_FEAT(avx2) | PS_FEAT(fma) | PS_FEAT(os_avx))
#define PS_NEEDS_AVX512                                                                        \
    (PS_NEEDS_AVX2 | PS_FEAT(avx512f) | PS_FEAT(avx512bw) | PS_FEAT(avx512vl) |               \
     PS_FEAT(avx512dq) | PS_FEAT(os_avx512))
#define PS_NEEDS_AVX512_VNNI (PS_NEEDS_AVX512 | PS_FEAT(avx512_vnni))
#define PS_NEEDS_AVX512_BF16 (PS_NEEDS_AVX512_VNNI | PS_FEAT(avx512_bf16))

/* Kernels shared by every AVX-512 level. dot and the seed kernel are the article's AVX2 code;
 * quantization and streams are bandwidth bound and gain nothing from zmm on these parts. */
#define PS_AVX512_F32                                                                          \
    .dot_f32 = dot_f32_avx2, .matmul_seed = matmul_seed_avx2, .gemm_f32 = gemm_f32_avx512,      \
    .tile_f32 = PS_TILE_ZMM(1)
#define PS_AVX2_BANDWIDTH                                                                      \
    .quantize_u8 = quantize_u8_avx2, .quantize_s8 = quantize_s8_avx2,                           \
    .dequantize_u8 = dequantize_u8_avx2, .dequantize_s8 = dequantize_s8_avx2,                   \
    .triad = triad_f32_avx2, .copy = copy_f32_avx2
/* Weight-only decode kernels: fp32 widening without VNNI, int8 x and vpdpbusd for q4 with it. */
#define PS_AVX512_GEMV .gemv_q8 = gemv_q8_avx512, .gemv_q4 = gemv_q4_avx512
#define PS_AVX512_VNNI_GEMV                                                                    \
    .gemv_q8 = gemv_q8_avx512_vnni, .gemv_q4 = gemv_q4_avx512_vnni, .gemv_q8_i8 = 1,            \
    .gemv_q4_i8 = 1
/* BF16 emulated in scalar fp32: every level below avx512_bf16. */
#define PS_BF16_EMULATED                                                                       \
    .gemm_bf16 = gemm_bf16_generic, .tile_bf16 = PS_TILE_6x16(2), .bf16_native = 0,            \
    .f32_to_bf16 = f32_to_bf16_generic

/* Best last. A row reuses the kernels of the level below where it has nothing better. */
static const ps_kernel_table PS_KERNEL_TABLE[] = {
    {
        .name = "generic",
        .needs = 0,
        .dot_f32 = dot_f32_generic, .matmul_seed = matmul_seed_generic,
        .gemm_f32 = gemm_f32_generic, .tile_f32 = PS_TILE_6x16(1),
        .gemm_u8s8 = gemm_u8s8_generic, .gemm_u8s8_exact = gemm_u8s8_exact_generic,
        .tile_u8s8 = PS_TILE_6x16(4), .u8s8_saturates = 1,
        PS_BF16_EMULATED,
        .quantize_u8 = quantize_u8_generic, .quantize_s8 = quantize_s8_generic,
        .dequantize_u8 = dequantize_u8_generic, .dequantize_s8 = dequantize_s8_generic,
        .triad = triad_f32_generic, .copy = copy_f32_generic,
        .peak = madd_peak_generic,
        .gemv_q8 = gemv_q8_generic, .gemv_q4 = gemv_q4_generic,
    },
    {
        .name = "avx2",
        .needs = PS_NEEDS_AVX2,
        .dot_f32 = dot_f32_avx2, .matmul_seed = matmul_seed_avx2,
        .gemm_f32 = gemm_f32_avx2, .tile_f32 = PS_TILE_6x16(1),
        .gemm_u8s8 = gemm_u8s8_avx2, .gemm_u8s8_exact = gemm_u8s8_exact_avx2,
        .tile_u8s8 = PS_TILE_6x16(4), .u8s8_saturates = 1,
        PS_BF16_EMULATED,
        PS_AVX2_BANDWIDTH,
        .peak = fma_peak_avx2,
        .gemv_q8 = gemv_q8_avx2, .gemv_q4 = gemv_q4_avx2,
    },
    {
        .name = "avx512",
        .needs = PS_NEEDS_AVX512,
        PS_AVX512_F32,
        .gemm_u8s8 = gemm_u8s8_avx2, .gemm_u8s8_exact = gemm_u8s8_exact_avx2,
        .tile_u8s8 = PS_TILE_6x16(4), .u8s8_saturates = 1,
        PS_BF16_EMULATED,
        PS_AVX2_BANDWIDTH,
        .peak = fma_peak_avx512,
        PS_AVX512_GEMV,
    },
    {
        .name = "avx512_vnni",
        .needs = PS_NEEDS_AVX512_VNNI,
        PS_AVX512_F32,
        .gemm_u8s8 = gemm_u8s8_avx512_vnni, .gemm_u8s8_exact = gemm_u8s8_avx512_vnni,
        .tile_u8s8 = PS_TILE_ZMM(4), .u8s8_saturates = 0,
        PS_BF16_EMULATED,
        PS_AVX2_BANDWIDTH,
        .peak = fma_peak_avx512,
        PS_AVX512_VNNI_GEMV,
    },
    {
        .name = "avx512_bf16",
        .needs = PS_NEEDS_AVX512_BF16,
        PS_AVX512_F32,
        .gemm_u8s8 = gemm_u8s8_avx512_vnni, .gemm_u8s8_exact = gemm_u8s8_avx512_vnni,
        .tile_u8s8 = PS_TILE_ZMM(4), .u8s8_saturates = 0,
        .gemm_bf16 = gemm_bf16_avx512_bf16, .tile_bf16 = PS_TILE_ZMM(2), .bf16_native = 1,
        .f32_to_bf16 = f32_to_bf16_avx512_bf16,
        PS_AVX2_BANDWIDTH,
        .peak = fma_peak_avx512,
        PS_AVX512_VNNI_GEMV,
    },
};

static inline int ps_kernel_rows(void) {
    return (int)(sizeof(PS_KERNEL_TABLE) / sizeof(PS_KERNEL_TABLE[0]));
}

static inline const ps_kernel_table *ps_kernel_row(int code) { return &PS_KERNEL_TABLE[code]; }

static inline int ps_kernel_row_runs(const ps_kernel_table *t, uint32_t features) {
    return (features & t->needs) == t->needs;
}

/* The first kernel a row lacks, or NULL: designated initialisers leave a forgotten field
 * zero, and the extension refuses to import with its name rather than crash on first call. */
static inline const char *ps_kernel_row_lacks(const ps_kernel_table *t) {
#define PS_LACKS(field)                                                                        \
    if (!t->field) return #field;
    PS_LACKS(dot_f32) PS_LACKS(matmul_seed) PS_LACKS(gemm_f32) PS_LACKS(gemm_u8s8)
    PS_LACKS(gemm_u8s8_exact) PS_LACKS(gemm_bf16) PS_LACKS(f32_to_bf16) PS_LACKS(quantize_u8)
    PS_LACKS(quantize_s8) PS_LACKS(dequantize_u8) PS_LACKS(dequantize_s8) PS_LACKS(triad)
    PS_LACKS(copy) PS_LACKS(peak) PS_LACKS(gemv_q8) PS_LACKS(gemv_q4)
#undef PS_LACKS
    if (!t->tile_f32.mr || !t->tile_u8s8.mr || !t->tile_bf16.mr) return "tile";
    return NULL;
}

#endif
