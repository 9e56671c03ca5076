/* Runtime CPU feature detection: cpuid for what the CPU has, xgetbv for what the OS saves.
 * AVX state must be enabled by the OS (XCR0 bits 1,2) or AVX instructions fault even when
 * cpuid advertises them - the case numpy and simdjson guard against. */
#ifndef PERFSUITE_CPU_FEATURES_H
#define PERFSUITE_CPU_FEATURES_H

#include <stdint.h>

/* The one list of CPU flags perfsuite knows. Everything else is expanded from it: the cpuid
 * checks below, the dispatch table's requirements (PS_FEAT(name) in dispatch.h), and through
 * perfsuite._kernels.cpu_flags() the Python side: perfsuite.kernels.CPU_FLAGS and
 * cpu_features(), and the must-match isa.<name> fields of the host fingerprint. Names are
 * /proc/cpuinfo's spellings, as the fingerprint reads them from there (of any host tree).
 *
 * X(name, cpuid leaf, subleaf, register, bit, recorded)
 * recorded: 1 = an isa.<name> field of the host fingerprint. avx512bw/vl/dq come with avx512f
 * on every part that has it and are left out, so stored fingerprints stay comparable (tests:
 * the recorded set equals the isa.* fields of the stored baselines). */
#define PS_CPU_FLAGS(X)                                                                        \
    X(sse4_2, 1, 0, ecx, 20, 1)                                                                \
    X(avx, 1, 0, ecx, 28, 1)                                                                   \
    X(avx2, 7, 0, ebx, 5, 1)                                                                   \
    X(fma, 1, 0, ecx, 12, 1)                                                                   \
    X(f16c, 1, 0, ecx, 29, 1)                                                                  \
    X(avx512f, 7, 0, ebx, 16, 1)                                                               \
    X(avx512bw, 7, 0, ebx, 30, 0)                                                              \
    X(avx512vl, 7, 0, ebx, 31, 0)                                                              \
    X(avx512dq, 7, 0, ebx, 17, 0)                                                              \
    X(avx512_vnni, 7, 0, ecx, 11, 1)                                                           \
    X(avx512_bf16, 7, 1, eax, 5, 1)                                                            \
    X(avx_vnni, 7, 1, eax, 4, 1)                                                               \
    X(amx_tile, 7, 0, edx, 24, 1)                                                              \
    X(amx_int8, 7, 0, edx, 25, 1)                                                              \
    X(amx_bf16, 7, 0, edx, 22, 1)

/* Register state the OS saves (XCR0 bits, read with xgetbv): YMM for AVX; ZMM and opmask for
 * AVX-512. Not CPU flags (no /proc/cpuinfo name), but a variant needs them as it needs flags.
 * X(name, XCR0 mask) */
#define PS_OS_STATES(X)                                                                        \
    X(os_avx, 0x6)                                                                             \
    X(os_avx512, 0xE6)

/* One bit per flag and state, in list order: PS_FEAT(avx2), PS_FEAT(os_avx512), ... */
enum {
#define PS_CPU_FLAG_BIT(name, ...) PS_FEAT_BIT_##name,
    PS_CPU_FLAGS(PS_CPU_FLAG_BIT) PS_OS_STATES(PS_CPU_FLAG_BIT)
#undef PS_CPU_FLAG_BIT
    PS_FEAT_COUNT
};
#define PS_FEAT(name) (1u << PS_FEAT_BIT_##name)
_Static_assert(PS_FEAT_COUNT <= 32, "the feature word is a uint32_t");

/* The list as data, for the Python side. */
typedef struct {
    const char *name;
    uint32_t bit;
    int os_state; /* 1: an OS register state (PS_OS_STATES), 0: a CPU flag */
    int recorded; /* 1: an isa.<name> field of the host fingerprint */
} ps_cpu_flag;

static const ps_cpu_flag PS_CPU_FLAG_LIST[] = {
#define PS_CPU_FLAG_ROW(name, leaf, subleaf, reg, bit, recorded)                               \
    {#name, PS_FEAT(name), 0, recorded},
#define PS_OS_STATE_ROW(name, mask) {#name, PS_FEAT(name), 1, 0},
    PS_CPU_FLAGS(PS_CPU_FLAG_ROW) PS_OS_STATES(PS_OS_STATE_ROW)
#undef PS_CPU_FLAG_ROW
#undef PS_OS_STATE_ROW
};

static inline int ps_cpu_flag_count(void) { return PS_FEAT_COUNT; }
static inline const ps_cpu_flag *ps_cpu_flag_at(int i) { return &PS_CPU_FLAG_LIST[i]; }

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static inline uint64_t ps_xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

/* The cpuid leaves the list reads, each read once: regs[PS_CPUID_<leaf>_<subleaf>][PS_<reg>]. */
enum { PS_CPUID_1_0, PS_CPUID_7_0, PS_CPUID_7_1, PS_CPUID_LEAVES };
enum { PS_eax, PS_ebx, PS_ecx, PS_edx };

static inline uint32_t ps_cpu_features(void) {
    uint32_t regs[PS_CPUID_LEAVES][4] = {{0}}, max_leaf, b, c, d, f = 0;
    if (!__get_cpuid(0, &max_leaf, &b, &c, &d)) return 0;
    uint32_t *r = regs[PS_CPUID_1_0];
    __cpuid(1, r[0], r[1], r[2], r[3]);
    if (max_leaf >= 7) {
        r = regs[PS_CPUID_7_0];
        __cpuid_count(7, 0, r[0], r[1], r[2], r[3]);
        if (r[PS_eax] >= 1) { /* highest subleaf of leaf 7 */
            r = regs[PS_CPUID_7_1];
            __cpuid_count(7, 1, r[0], r[1], r[2], r[3]);
        }
    }
#define PS_CPU_FLAG_TEST(name, leaf, subleaf, reg, bit, recorded)                              \
    if (regs[PS_CPUID_##leaf##_##subleaf][PS_##reg] & (1u << bit)) f |= PS_FEAT(name);
    PS_CPU_FLAGS(PS_CPU_FLAG_TEST)
#undef PS_CPU_FLAG_TEST
    if (regs[PS_CPUID_1_0][PS_ecx] & (1u << 27)) { /* OSXSAVE: xgetbv is available */
        const uint64_t xcr0 = ps_xgetbv0();
#define PS_OS_STATE_TEST(name, mask)                                                           \
    if ((xcr0 & (mask)) == (mask)) f |= PS_FEAT(name);
        PS_OS_STATES(PS_OS_STATE_TEST)
#undef PS_OS_STATE_TEST
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

#endif
