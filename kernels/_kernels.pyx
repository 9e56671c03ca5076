# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled kernels of perfsuite. Low level: no validation here (callers pass contiguous
arrays of the right dtype and shape); the facade ``perfsuite.kernels`` validates inputs and
chooses the ISA variant. Variant codes: 0 generic, 1 avx2."""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t

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
    enum:
        PS_MR
        PS_NR
    float dot_f32_generic(const float *x, const float *y, Py_ssize_t n)
    void matmul_seed_generic(const float *A, const float *B, float *C, Py_ssize_t M,
                             Py_ssize_t N, Py_ssize_t K)
    void quantize_u8_generic(const float *x, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                             const float *s, const int32_t *z, uint8_t *q)
    void quantize_s8_generic(const float *x, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                             const float *s, const int32_t *z, int8_t *q)
    void dequantize_u8_generic(const uint8_t *q, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                               const float *s, const int32_t *z, float *x)
    void dequantize_s8_generic(const int8_t *q, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                               const float *s, const int32_t *z, float *x)
    void triad_f32_generic(float *a, const float *b, const float *c, float s, Py_ssize_t n,
                           int threads)
    void copy_f32_generic(float *a, const float *b, Py_ssize_t n, int threads)
    double madd_peak_generic(int64_t iters, int threads)

cdef extern from "avx2.h" nogil:
    int PS_HAVE_AVX2_BUILD
    float dot_f32_avx2(const float *x, const float *y, Py_ssize_t n)
    void matmul_seed_avx2(const float *A, const float *B, float *C, Py_ssize_t M,
                          Py_ssize_t N, Py_ssize_t K)
    void quantize_u8_avx2(const float *x, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                          const float *s, const int32_t *z, uint8_t *q)
    void quantize_s8_avx2(const float *x, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                          const float *s, const int32_t *z, int8_t *q)
    void dequantize_u8_avx2(const uint8_t *q, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                            const float *s, const int32_t *z, float *x)
    void dequantize_s8_avx2(const int8_t *q, Py_ssize_t o, Py_ssize_t c, Py_ssize_t i,
                            const float *s, const int32_t *z, float *x)
    void triad_f32_avx2(float *a, const float *b, const float *c, float s, Py_ssize_t n,
                        int threads)
    void copy_f32_avx2(float *a, const float *b, Py_ssize_t n, int threads)
    double fma_peak_avx2(int64_t iters, int threads)

cdef extern from "kernels_gemm.h" nogil:
    int gemm_f32(int isa, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, const float *A,
                 const float *B, float *C, Py_ssize_t MC, Py_ssize_t KC, Py_ssize_t NC,
                 int threads)
    int gemm_u8s8_s32(int isa, int exact, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K,
                      const uint8_t *A, const int8_t *B, int32_t *C, Py_ssize_t MC,
                      Py_ssize_t KC, Py_ssize_t NC, int threads)

cdef extern from "probes.h" nogil:
    double false_sharing_run(int threads, Py_ssize_t stride, int64_t iters)
    int omp_threads_granted(int threads)

cdef extern from "omp.h" nogil:
    void omp_set_dynamic(int flag)

# OpenMP may otherwise hand out fewer threads than asked for; `threads` must be honoured.
omp_set_dynamic(0)

ISA_GENERIC = 0
ISA_AVX2 = 1
MICRO_TILE = (PS_MR, PS_NR)


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


def threads_granted(int threads):
    return omp_threads_granted(threads)


def dot_f32(const float[::1] x, const float[::1] y, int isa):
    cdef float r
    cdef Py_ssize_t n = x.shape[0]
    with nogil:
        if isa == 1:
            r = dot_f32_avx2(&x[0], &y[0], n)
        else:
            r = dot_f32_generic(&x[0], &y[0], n)
    return r


def matmul_seed(const float[:, ::1] A, const float[:, ::1] B, float[:, ::1] C, int isa):
    cdef Py_ssize_t M = A.shape[0], K = A.shape[1], N = B.shape[1]
    with nogil:
        if isa == 1:
            matmul_seed_avx2(&A[0, 0], &B[0, 0], &C[0, 0], M, N, K)
        else:
            matmul_seed_generic(&A[0, 0], &B[0, 0], &C[0, 0], M, N, K)


def gemm_f32_into(const float[:, ::1] A, const float[:, ::1] B, float[:, ::1] C, int isa,
                  Py_ssize_t mc, Py_ssize_t kc, Py_ssize_t nc, int threads):
    cdef int rc
    with nogil:
        rc = gemm_f32(isa, A.shape[0], B.shape[1], A.shape[1], &A[0, 0], &B[0, 0], &C[0, 0],
                      mc, kc, nc, threads)
    if rc != 0:
        raise MemoryError("gemm_f32: cannot allocate packing buffers")


def gemm_u8s8_s32_into(const uint8_t[:, ::1] A, const int8_t[:, ::1] B, int32_t[:, ::1] C,
                       int isa, bint exact, Py_ssize_t mc, Py_ssize_t kc, Py_ssize_t nc,
                       int threads):
    cdef int rc
    with nogil:
        rc = gemm_u8s8_s32(isa, exact, A.shape[0], B.shape[1], A.shape[1], &A[0, 0],
                           &B[0, 0], &C[0, 0], mc, kc, nc, threads)
    if rc != 0:
        raise MemoryError("gemm_u8s8_s32: cannot allocate packing buffers")


def quantize_into(const float[::1] x, Py_ssize_t outer, Py_ssize_t channels, Py_ssize_t inner,
                  const float[::1] scale, const int32_t[::1] zp, q, int isa):
    cdef uint8_t[::1] qu
    cdef int8_t[::1] qs
    if q.dtype.kind == "u":
        qu = q
        with nogil:
            if isa == 1:
                quantize_u8_avx2(&x[0], outer, channels, inner, &scale[0], &zp[0], &qu[0])
            else:
                quantize_u8_generic(&x[0], outer, channels, inner, &scale[0], &zp[0], &qu[0])
    else:
        qs = q
        with nogil:
            if isa == 1:
                quantize_s8_avx2(&x[0], outer, channels, inner, &scale[0], &zp[0], &qs[0])
            else:
                quantize_s8_generic(&x[0], outer, channels, inner, &scale[0], &zp[0], &qs[0])


def dequantize_into(q, Py_ssize_t outer, Py_ssize_t channels, Py_ssize_t inner,
                    const float[::1] scale, const int32_t[::1] zp, float[::1] x, int isa):
    cdef const uint8_t[::1] qu
    cdef const int8_t[::1] qs
    if q.dtype.kind == "u":
        qu = q
        with nogil:
            if isa == 1:
                dequantize_u8_avx2(&qu[0], outer, channels, inner, &scale[0], &zp[0], &x[0])
            else:
                dequantize_u8_generic(&qu[0], outer, channels, inner, &scale[0], &zp[0], &x[0])
    else:
        qs = q
        with nogil:
            if isa == 1:
                dequantize_s8_avx2(&qs[0], outer, channels, inner, &scale[0], &zp[0], &x[0])
            else:
                dequantize_s8_generic(&qs[0], outer, channels, inner, &scale[0], &zp[0], &x[0])


def triad(float[::1] a, const float[::1] b, const float[::1] c, float s, int threads, int isa):
    with nogil:
        if isa == 1:
            triad_f32_avx2(&a[0], &b[0], &c[0], s, a.shape[0], threads)
        else:
            triad_f32_generic(&a[0], &b[0], &c[0], s, a.shape[0], threads)


def copy(float[::1] a, const float[::1] b, int threads, int isa):
    with nogil:
        if isa == 1:
            copy_f32_avx2(&a[0], &b[0], a.shape[0], threads)
        else:
            copy_f32_generic(&a[0], &b[0], a.shape[0], threads)


def compute_peak_flops(int64_t iters, int threads, int isa):
    """Floating-point operations executed by the peak loop (time it outside)."""
    cdef double flops
    with nogil:
        if isa == 1:
            flops = fma_peak_avx2(iters, threads)
        else:
            flops = madd_peak_generic(iters, threads)
    return flops


def false_sharing(int threads, Py_ssize_t stride, int64_t iters):
    cdef double t
    with nogil:
        t = false_sharing_run(threads, stride, iters)
    if t < 0:
        raise MemoryError("false_sharing: cannot allocate counters")
    return t
