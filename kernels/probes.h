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

/* Read n bytes (whole 64-bit words; a tail under 8 bytes is left) split across threads in
 * static chunks, summing the words in 8 independent lanes: integer adds vectorise with any
 * x86-64 baseline, so this is a read-only bandwidth probe on every CPU. */
static uint64_t read_words(const uint8_t *a, ptrdiff_t n, int threads) {
    const uint64_t *w = (const uint64_t *)a;
    const ptrdiff_t words = n / 8;
    uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const ptrdiff_t chunk = (words / nt + 7) / 8 * 8, lo = t * chunk;
        const ptrdiff_t hi = (t == nt - 1 || lo + chunk > words) ? words : lo + chunk;
        uint64_t lane[8] = {0};
        ptrdiff_t i = lo;
        for (; i + 8 <= hi; i += 8)
            for (int l = 0; l < 8; ++l) lane[l] += w[i + l];
        for (; i < hi; ++i) lane[0] += w[i];
        for (int l = 0; l < 8; ++l) total += lane[l];
    }
    return total;
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
