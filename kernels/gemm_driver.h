/* BLIS-style cache-blocking driver, instantiated once per element type (numpy .src style).
 *
 * Loops: jc (NC, B block in L3) -> pc (KC, panels in L1/L2) -> pack B -> ic (MC, A block in
 * L2, one per thread) -> pack A -> jr (NR) -> ir (MR) -> micro-kernel on an MR x NR tile.
 * Panels are zero-padded, so the micro-kernel always computes a full tile; edge tiles go to a
 * scratch tile and only the valid part is added to C. Every C element sees the same sequence
 * of operations whatever the thread count, so threaded results equal single-threaded ones.
 *
 * Expects: GD_NAME, GD_TA, GD_TB, GD_TC, GD_KSTEP (k values packed together), GD_MR, GD_NR;
 * optionally GD_PACK_A_PANEL(kc, a, lda, panel), a vector packer for full MR-row panels.
 * Micro-kernel: void uk(ptrdiff_t kc, const GD_TA *Ap, const GD_TB *Bp, GD_TC *C, ptrdiff_t ldc,
 *                       int accumulate)  -- kc is a multiple of GD_KSTEP.
 */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifndef PS_GEMM_SCRATCH
#define PS_GEMM_SCRATCH
/* Packing buffers kept per calling thread and grown on demand, as BLIS keeps its pool: a
 * fresh buffer per call cost ~100 page faults per n = 1024 call at 1 thread. Freed when the
 * calling thread exits. */
static pthread_key_t ps_scratch_key;
static pthread_once_t ps_scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local void *ps_scratch_buf;
static _Thread_local size_t ps_scratch_size;
static void ps_scratch_make_key(void) { pthread_key_create(&ps_scratch_key, free); }

static void *ps_scratch(size_t bytes) {
    if (bytes <= ps_scratch_size) return ps_scratch_buf;
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) return NULL;
    pthread_once(&ps_scratch_once, ps_scratch_make_key);
    free(ps_scratch_buf);
    ps_scratch_buf = p;
    ps_scratch_size = bytes;
    pthread_setspecific(ps_scratch_key, p);
    return p;
}
#endif

#define GD_CAT_(a, b) a##b
#define GD_CAT(a, b) GD_CAT_(a, b)
#define GD_UKERNEL_T GD_CAT(GD_NAME, _ukernel_t)

typedef void (*GD_UKERNEL_T)(ptrdiff_t, const GD_TA *, const GD_TB *, GD_TC *, ptrdiff_t, int);

/* A[ic:ic+mc, pc:pc+kc] -> MR-row micro-panels; within a panel: k-group, row, GD_KSTEP.
 * Full panels take a branch-free path that reads one cache line of each row at a time: rows
 * lda apart often share an L1 set (4 KiB strides), and walking all MR rows per k value then
 * reloaded each line from L2 for every k (measured on Zen 4, n=1024, 12-row tile: packing
 * 1.65 ms of a 21.8 ms GEMM before this order). */
#define GD_KLINE ((ptrdiff_t)(64 / sizeof(GD_TA)))
static void GD_CAT(GD_NAME, _pack_a)(ptrdiff_t mc, ptrdiff_t kc, const GD_TA *A, ptrdiff_t lda,
                                     ptrdiff_t kvalid, GD_TA *Ap) {
    for (ptrdiff_t ir = 0; ir < mc; ir += GD_MR) {
        GD_TA *panel = Ap + ir * kc;
        const GD_TA *a = A + ir * lda;
        if (ir + GD_MR <= mc && kvalid == kc) {
#ifdef GD_PACK_A_PANEL
            GD_PACK_A_PANEL(kc, a, lda, panel);
            continue;
#endif
            for (ptrdiff_t k0 = 0; k0 < kc; k0 += GD_KLINE) {
                const ptrdiff_t k1 = kc - k0 < GD_KLINE ? kc : k0 + GD_KLINE;
                for (ptrdiff_t r = 0; r < GD_MR; ++r)
                    for (ptrdiff_t k = k0; k < k1; k += GD_KSTEP)
                        for (ptrdiff_t s = 0; s < GD_KSTEP; ++s)
                            panel[k * GD_MR + r * GD_KSTEP + s] = a[r * lda + k + s];
            }
            continue;
        }
        for (ptrdiff_t k = 0; k < kc; k += GD_KSTEP)
            for (ptrdiff_t r = 0; r < GD_MR; ++r)
                for (ptrdiff_t s = 0; s < GD_KSTEP; ++s)
                    *panel++ = (ir + r < mc && k + s < kvalid) ? a[r * lda + k + s] : 0;
    }
}

/* B[pc:pc+kc, jc:jc+nc] -> NR-column micro-panels; within a panel: k-group, column, GD_KSTEP. */
static void GD_CAT(GD_NAME, _pack_b_panel)(ptrdiff_t nvalid, ptrdiff_t kc, ptrdiff_t kvalid,
                                           const GD_TB *B, ptrdiff_t ldb, GD_TB *panel) {
    if (nvalid == GD_NR && kvalid == kc && GD_KSTEP == 1) {
        for (ptrdiff_t k = 0; k < kc; ++k, panel += GD_NR) memcpy(panel, B + k * ldb, sizeof(GD_TB) * GD_NR);
        return;
    }
    if (nvalid == GD_NR && kvalid == kc) { /* full panel, k values interleaved: no bounds tests */
        for (ptrdiff_t k = 0; k < kc; k += GD_KSTEP)
            for (ptrdiff_t c = 0; c < GD_NR; ++c)
                for (ptrdiff_t s = 0; s < GD_KSTEP; ++s) *panel++ = B[(k + s) * ldb + c];
        return;
    }
    for (ptrdiff_t k = 0; k < kc; k += GD_KSTEP)
        for (ptrdiff_t c = 0; c < GD_NR; ++c)
            for (ptrdiff_t s = 0; s < GD_KSTEP; ++s)
                *panel++ = (c < nvalid && k + s < kvalid) ? B[(k + s) * ldb + c] : 0;
}

/* Up to GD_BGROUP full panels, k-outer: each B row is read as one run of GD_BGROUP * NR values
 * instead of NR values at a time down a 4 KiB stride. Zen 4, n = 1024, f32, B cold, 6 runs:
 * 0.35-0.46 ms for 8-panel groups against 0.56-0.64 ms panel by panel. */
#define GD_BGROUP 8
static void GD_CAT(GD_NAME, _pack_b_group)(ptrdiff_t panels, ptrdiff_t kc, const GD_TB *B,
                                           ptrdiff_t ldb, GD_TB *Bp) {
    for (ptrdiff_t k = 0; k < kc; k += GD_KSTEP)
        for (ptrdiff_t p = 0; p < panels; ++p) {
            GD_TB *panel = Bp + p * GD_NR * kc + k * GD_NR;
            const GD_TB *b = B + k * ldb + p * GD_NR;
            if (GD_KSTEP == 1) {
                memcpy(panel, b, sizeof(GD_TB) * GD_NR);
                continue;
            }
            for (ptrdiff_t c = 0; c < GD_NR; ++c)
                for (ptrdiff_t s = 0; s < GD_KSTEP; ++s) *panel++ = b[s * ldb + c];
        }
}

static inline ptrdiff_t GD_CAT(GD_NAME, _round_up)(ptrdiff_t x, ptrdiff_t m) {
    return (x + m - 1) / m * m;
}

/* C := A @ B. Returns 0, or -1 when scratch memory cannot be allocated. */
static int GD_NAME(GD_UKERNEL_T uk, ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const GD_TA *A,
                   ptrdiff_t lda, const GD_TB *B, ptrdiff_t ldb, GD_TC *C, ptrdiff_t ldc,
                   ptrdiff_t MC, ptrdiff_t KC, ptrdiff_t NC, int threads) {
    const ptrdiff_t kc_max = GD_CAT(GD_NAME, _round_up)(KC < K ? KC : K, GD_KSTEP);
        const ptrdiff_t mc_max = GD_CAT(GD_NAME, _round_up)(MC < M ? MC : M, GD_MR);
    /* at least 4 blocks per thread when threaded, so the dynamic hand-out can balance */
    const ptrdiff_t share = GD_CAT(GD_NAME, _round_up)((M + 4 * threads - 1) / (4 * threads), GD_MR);
    const ptrdiff_t mb = threads > 1 && share < mc_max ? share : mc_max;
    const ptrdiff_t blocks = (M + mb - 1) / mb;
    const ptrdiff_t nc_max = GD_CAT(GD_NAME, _round_up)(NC < N ? NC : N, GD_NR);
    size_t b_bytes = (size_t)kc_max * nc_max * sizeof(GD_TB);
    size_t a_bytes = (size_t)kc_max * mc_max * sizeof(GD_TA);
    b_bytes = (b_bytes + 63) / 64 * 64;
    a_bytes = (a_bytes + 63) / 64 * 64;
    char *scratch = ps_scratch(b_bytes + a_bytes * threads);
    if (!scratch) return -1;
    GD_TB *Bp = (GD_TB *)scratch;
    GD_TA *Ap_all = (GD_TA *)(scratch + b_bytes);
#pragma omp parallel num_threads(threads)
    {
        GD_TA *Ap = (GD_TA *)((char *)Ap_all + a_bytes * omp_get_thread_num());
        GD_TC tile[GD_MR * GD_NR] __attribute__((aligned(64)));
        for (ptrdiff_t jc = 0; jc < N; jc += NC) {
            const ptrdiff_t nc = N - jc < NC ? N - jc : NC;
            for (ptrdiff_t pc = 0; pc < K; pc += KC) {
                const ptrdiff_t kvalid = K - pc < KC ? K - pc : KC;
                const ptrdiff_t kc = GD_CAT(GD_NAME, _round_up)(kvalid, GD_KSTEP);
#pragma omp for schedule(static)
                for (ptrdiff_t j0 = 0; j0 < nc; j0 += GD_BGROUP * GD_NR) {
                    const ptrdiff_t j1 = nc - j0 < GD_BGROUP * GD_NR ? nc : j0 + GD_BGROUP * GD_NR;
                    const ptrdiff_t full = kvalid == kc ? (j1 - j0) / GD_NR : 0;
                    GD_CAT(GD_NAME, _pack_b_group)(full, kc, B + pc * ldb + jc + j0, ldb,
                                                   Bp + j0 * kc);
                    for (ptrdiff_t jr = j0 + full * GD_NR; jr < j1; jr += GD_NR)
                        GD_CAT(GD_NAME, _pack_b_panel)(j1 - jr < GD_NR ? j1 - jr : GD_NR, kc, kvalid,
                                                       B + pc * ldb + jc + jr, ldb, Bp + jr * kc);
                }
                /* Row blocks are handed out dynamically: a thread whose core another process
                 * shares takes fewer of them instead of holding the others at the barrier.
                 * Zen 4, 2 threads, n=1024, one spinning competitor, paired runs against the
                 * static split (tools/busy_core_bench.py): 0.68-0.71 of the quiet rate vs
                 * 0.65-0.67 (fair share 0.67); quiet rates equal (187-201 vs 188-203). */
#pragma omp for schedule(dynamic, 1)
                for (ptrdiff_t blk = 0; blk < blocks; ++blk) {
                    const ptrdiff_t ic = blk * mb;
                    const ptrdiff_t mc = M - ic < mb ? M - ic : mb;
                    GD_CAT(GD_NAME, _pack_a)(mc, kc, A + ic * lda + pc, lda, kvalid, Ap);
                    for (ptrdiff_t jr = 0; jr < nc; jr += GD_NR) {
                        const ptrdiff_t nr = nc - jr < GD_NR ? nc - jr : GD_NR;
                        for (ptrdiff_t ir = 0; ir < mc; ir += GD_MR) {
                            const ptrdiff_t mr = mc - ir < GD_MR ? mc - ir : GD_MR;
                            GD_TC *c = C + (ic + ir) * ldc + jc + jr;
                            if (mr == GD_MR && nr == GD_NR) {
                                uk(kc, Ap + ir * kc, Bp + jr * kc, c, ldc, pc > 0);
                            } else {
                                uk(kc, Ap + ir * kc, Bp + jr * kc, tile, GD_NR, 0);
                                for (ptrdiff_t r = 0; r < mr; ++r)
                                    for (ptrdiff_t q = 0; q < nr; ++q)
                                        c[r * ldc + q] = pc > 0 ? c[r * ldc + q] + tile[r * GD_NR + q]
                                                                : tile[r * GD_NR + q];
                            }
                        }
                    }
                }
                /* the implicit barrier above: the next pc step repacks the shared B panel */
            }
        }
    }
    return 0;
}

#undef GD_UKERNEL_T
#undef GD_KLINE
#undef GD_BGROUP
#undef GD_PACK_A_PANEL
#undef GD_NAME
#undef GD_TA
#undef GD_TB
#undef GD_TC
#undef GD_KSTEP
#undef GD_MR
#undef GD_NR
