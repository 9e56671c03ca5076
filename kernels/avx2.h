/* AVX2 + FMA implementations, compiled inside a target region so the extension still
 * imports (and runs the generic path) on CPUs without AVX2: no global -mavx2. */
#ifndef PERFSUITE_AVX2_H
#define PERFSUITE_AVX2_H

#include <stddef.h>

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>

static inline float ps_hsum256_ps(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* dot := sum_i x[i] * y[i] */
static float dot_f32_avx2(const float *x, const float *y, ptrdiff_t n) {
    __m256 acc = _mm256_setzero_ps();
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc);
    float s = ps_hsum256_ps(acc);
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

#pragma GCC pop_options
#define PS_HAVE_AVX2_BUILD 1
#else
#define PS_HAVE_AVX2_BUILD 0
static float dot_f32_avx2(const float *x, const float *y, ptrdiff_t n) { return 0.0f; }
#endif

#endif
