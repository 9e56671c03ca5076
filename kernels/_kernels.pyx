# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled kernels of perfsuite. Low level: no validation here, the facade
``perfsuite.kernels`` validates inputs and chooses the ISA variant."""

cdef extern from "cpu_features.h" nogil:
    unsigned int ps_cpu_features()
    int ps_can_run_avx2(unsigned int f)
    void ps_hypervisor_vendor(char *out)
    enum:
        PS_FEAT_SSE42
        PS_FEAT_AVX
        PS_FEAT_AVX2
        PS_FEAT_FMA
        PS_FEAT_F16C
        PS_FEAT_AVX512F
        PS_FEAT_AVX512VNNI
        PS_FEAT_AVX512BF16
        PS_FEAT_AVXVNNI
        PS_FEAT_OS_AVX
        PS_FEAT_OS_AVX512

cdef extern from "generic.h" nogil:
    float dot_f32_generic(const float *x, const float *y, Py_ssize_t n)

cdef extern from "avx2.h" nogil:
    int PS_HAVE_AVX2_BUILD
    float dot_f32_avx2(const float *x, const float *y, Py_ssize_t n)

# Variant codes shared with the facade.
ISA_GENERIC = 0
ISA_AVX2 = 1


def cpu_features():
    """CPU features as seen by cpuid + xgetbv (what the kernels can use)."""
    cdef unsigned int f = ps_cpu_features()
    return {
        "sse4_2": bool(f & PS_FEAT_SSE42),
        "avx": bool(f & PS_FEAT_AVX),
        "avx2": bool(f & PS_FEAT_AVX2),
        "fma": bool(f & PS_FEAT_FMA),
        "f16c": bool(f & PS_FEAT_F16C),
        "avx512f": bool(f & PS_FEAT_AVX512F),
        "avx512_vnni": bool(f & PS_FEAT_AVX512VNNI),
        "avx512_bf16": bool(f & PS_FEAT_AVX512BF16),
        "avx_vnni": bool(f & PS_FEAT_AVXVNNI),
        "os_avx": bool(f & PS_FEAT_OS_AVX),
        "os_avx512": bool(f & PS_FEAT_OS_AVX512),
    }


def hypervisor_vendor():
    """cpuid hypervisor vendor string ('KVMKVMKVM', 'Microsoft Hv', ...), '' if none."""
    cdef char buf[16]
    ps_hypervisor_vendor(buf)
    return buf.decode("ascii", "replace").rstrip("\x00").strip()


def runnable_isas():
    """ISA variants this build contains and this CPU/OS can execute, best last."""
    out = ["generic"]
    if PS_HAVE_AVX2_BUILD and ps_can_run_avx2(ps_cpu_features()):
        out.append("avx2")
    return out


def dot_f32(const float[::1] x, const float[::1] y, int isa):
    """dot := sum_i x[i] * y[i]"""
    cdef float r
    cdef Py_ssize_t n = x.shape[0]
    with nogil:
        if isa == 1:
            r = dot_f32_avx2(&x[0], &y[0], n)
        else:
            r = dot_f32_generic(&x[0], &y[0], n)
    return r
