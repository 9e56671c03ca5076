/* Micro-architectural probes that are not ISA specific. */
#ifndef PERFSUITE_PROBES_H
#define PERFSUITE_PROBES_H

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* Each thread increments its own counter `iters` times through a volatile pointer. Counters
 * `stride` int64 apart: stride 1 puts up to 8 of them in one 64-byte line (false sharing),
 * stride 8 gives each its own line. Returns the wall time in seconds, or -1 on alloc failure. */
static double false_sharing_run(int threads, ptrdiff_t stride, int64_t iters) {
    volatile int64_t *counters = aligned_alloc(64, (size_t)(threads * stride + 8) * 64);
    if (!counters) return -1.0;
    for (ptrdiff_t i = 0; i < threads * stride; ++i) counters[i] = 0;
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
        volatile int64_t *mine = counters + omp_get_thread_num() * stride;
#pragma omp barrier
#pragma omp single
        t0 = omp_get_wtime();
        for (int64_t i = 0; i < iters; ++i) *mine += 1;
#pragma omp barrier
#pragma omp single
        t1 = omp_get_wtime();
    }
    free((void *)counters);
    return t1 - t0;
}

/* How many threads an OpenMP region with num_threads(threads) actually gets. */
static int omp_threads_granted(int threads) {
    int got = 0;
#pragma omp parallel num_threads(threads)
    {
#pragma omp single
        got = omp_get_num_threads();
    }
    return got;
}

#endif
