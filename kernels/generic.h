/* Portable C implementations: the fallback that always exists, and the reference the
 * ISA-specific variants are tested against. Compiled with the baseline x86-64 flags. */
#ifndef PERFSUITE_GENERIC_H
#define PERFSUITE_GENERIC_H

#include <stddef.h>

/* dot := sum_i x[i] * y[i] (float accumulation in 8 lanes, like the AVX2 variant) */
static float dot_f32_generic(const float *x, const float *y, ptrdiff_t n) {
    float acc[8] = {0};
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += x[i + l] * y[i + l];
    float s = 0.0f;
    for (int l = 0; l < 8; ++l) s += acc[l];
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

#endif
