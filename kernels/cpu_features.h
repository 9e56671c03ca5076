/* Runtime CPU feature detection: cpuid for what the CPU has, xgetbv for what the OS saves.
 * AVX state must be enabled by the OS (XCR0 bits 1,2) or AVX instructions fault even when
 * cpuid advertises them - the case numpy and simdjson guard against. */
#ifndef PERFSUITE_CPU_FEATURES_H
#define PERFSUITE_CPU_FEATURES_H

#include <stdint.h>

enum {
    PS_FEAT_SSE42 = 1 << 0,
    PS_FEAT_AVX = 1 << 1,
    PS_FEAT_AVX2 = 1 << 2,
    PS_FEAT_FMA = 1 << 3,
    PS_FEAT_F16C = 1 << 4,
    PS_FEAT_AVX512F = 1 << 5,
    PS_FEAT_AVX512VNNI = 1 << 6,
    PS_FEAT_AVX512BF16 = 1 << 7,
    PS_FEAT_AVXVNNI = 1 << 8,
    PS_FEAT_OS_AVX = 1 << 9,
    PS_FEAT_OS_AVX512 = 1 << 10,
    PS_FEAT_AVX512BW = 1 << 11,
    PS_FEAT_AVX512VL = 1 << 12,
    PS_FEAT_AVX512DQ = 1 << 13,
};

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static inline uint64_t ps_xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static inline uint32_t ps_cpu_features(void) {
    uint32_t a, b, c, d, max_leaf, f = 0;
    if (!__get_cpuid(0, &max_leaf, &b, &c, &d)) return 0;
    __cpuid(1, a, b, c, d);
    if (c & (1u << 20)) f |= PS_FEAT_SSE42;
    if (c & (1u << 28)) f |= PS_FEAT_AVX;
    if (c & (1u << 12)) f |= PS_FEAT_FMA;
    if (c & (1u << 29)) f |= PS_FEAT_F16C;
    int osxsave = (c >> 27) & 1;
    if (osxsave) {
        uint64_t xcr0 = ps_xgetbv0();
        if ((xcr0 & 0x6) == 0x6) f |= PS_FEAT_OS_AVX;
        if ((xcr0 & 0xE6) == 0xE6) f |= PS_FEAT_OS_AVX512;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        if (b & (1u << 5)) f |= PS_FEAT_AVX2;
        if (b & (1u << 16)) f |= PS_FEAT_AVX512F;
        if (b & (1u << 17)) f |= PS_FEAT_AVX512DQ;
        if (b & (1u << 30)) f |= PS_FEAT_AVX512BW;
        if (b & (1u << 31)) f |= PS_FEAT_AVX512VL;
        if (c & (1u << 11)) f |= PS_FEAT_AVX512VNNI;
        __cpuid_count(7, 1, a, b, c, d);
        if (a & (1u << 4)) f |= PS_FEAT_AVXVNNI;
        if (a & (1u << 5)) f |= PS_FEAT_AVX512BF16;
    }
    return f;
}
/* Hypervisor vendor from cpuid leaf 0x40000000 (e.g. "KVMKVMKVM"); "" on bare metal. */
static inline void ps_hypervisor_vendor(char out[13]) {
    uint32_t a, b, c, d;
    out[0] = 0;
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 31))) return;
    __cpuid(0x40000000, a, b, c, d);
    ((uint32_t *)out)[0] = b;
    ((uint32_t *)out)[1] = c;
    ((uint32_t *)out)[2] = d;
    out[12] = 0;
}
#else
static inline uint32_t ps_cpu_features(void) { return 0; }
static inline void ps_hypervisor_vendor(char out[13]) { out[0] = 0; }
#endif

/* One check per dispatch-table row. Each variant needs the CPU flags and the register state
 * enabled by the OS (YMM for AVX2; ZMM and opmask for AVX-512). The AVX-512 rows are levels:
 * each includes the one before it, as on every CPU that has them (Zen 4/5, Cooper Lake, SPR). */
static inline int ps_can_run_generic(uint32_t f) { return (void)f, 1; }

static inline int ps_can_run_avx2(uint32_t f) {
    return (f & PS_FEAT_AVX2) && (f & PS_FEAT_FMA) && (f & PS_FEAT_OS_AVX);
}

static inline int ps_can_run_avx512(uint32_t f) {
    const uint32_t need = PS_FEAT_AVX512F | PS_FEAT_AVX512BW | PS_FEAT_AVX512VL |
                          PS_FEAT_AVX512DQ | PS_FEAT_OS_AVX512;
    return ps_can_run_avx2(f) && (f & need) == need;
}

static inline int ps_can_run_avx512_vnni(uint32_t f) {
    return ps_can_run_avx512(f) && (f & PS_FEAT_AVX512VNNI);
}

static inline int ps_can_run_avx512_bf16(uint32_t f) {
    return ps_can_run_avx512_vnni(f) && (f & PS_FEAT_AVX512BF16);
}

#endif
