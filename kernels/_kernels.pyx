# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled kernels of perfsuite. Low level: no validation here (callers pass contiguous
arrays of the right dtype and shape); the facade ``perfsuite.kernels`` validates inputs and
chooses the ISA variant. A variant is a row of the dispatch table (dispatch.h), addressed
by its index; every kernel calls through that row, so there is no per-ISA branch here."""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint64_t

cdef extern from "cpu_features.h" nogil:
    ctypedef struct ps_cpu_flag:
        const char *name
        unsigned int bit
        int os_state
        int recorded
    int ps_cpu_flag_count()
    const ps_cpu_flag *ps_cpu_flag_at(int i)
    unsigned int ps_cpu_features()
    void ps_hypervisor_vendor(char *out)

ctypedef fused int8_or_uint8:
    uint8_t
    int8_t

ctypedef int (*gemm_f32_fn)(Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *, const float *,
                            float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, int) noexcept nogil
ctypedef int (*gemm_u8s8_fn)(Py_ssize_t, Py_ssize_t, Py_ssize_t, const uint8_t *,
                             const int8_t *, int32_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             int) noexcept nogil
ctypedef int (*gemm_bf16_fn)(Py_ssize_t, Py_ssize_t, Py_ssize_t, const uint16_t *,
                             const uint16_t *, float *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             int) noexcept nogil

ctypedef void (*gemv_q8_fn)(Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *, const float *,
                            const int8_t *, const float *, float *, int) noexcept nogil
ctypedef void (*gemv_q4_fn)(Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *, const float *,
                            const uint8_t *, const float *, const float *, float *,
                            int) noexcept nogil

cdef extern from "dispatch.h" nogil:
    ctypedef struct ps_tile:
        int mr, nr, kstep
    ctypedef struct ps_kernel_table:
        const char *name
        unsigned int needs
        float (*dot_f32)(const float *, const float *, Py_ssize_t) noexcept nogil
        void (*matmul_seed)(const float *, const float *, float *, Py_ssize_t, Py_ssize_t,
                            Py_ssize_t) noexcept nogil
        gemm_f32_fn gemm_f32
        ps_tile tile_f32
        gemm_u8s8_fn gemm_u8s8
        gemm_u8s8_fn gemm_u8s8_exact
        ps_tile tile_u8s8
        int u8s8_saturates
        gemm_bf16_fn gemm_bf16
        ps_tile tile_bf16
        int bf16_native
        void (*f32_to_bf16)(const float *, uint16_t *, Py_ssize_t) noexcept nogil
        void (*quantize_u8)(const float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *,
                            const int32_t *, uint8_t *) noexcept nogil
        void (*quantize_s8)(const float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *,
                            const int32_t *, int8_t *) noexcept nogil
        void (*dequantize_u8)(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                              const float *, const int32_t *, float *) noexcept nogil
        void (*dequantize_s8)(const int8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                              const float *, const int32_t *, float *) noexcept nogil
        void (*triad)(float *, const float *, const float *, float, Py_ssize_t, int) noexcept nogil
        void (*copy)(float *, const float *, Py_ssize_t, int) noexcept nogil
        double (*peak)(int64_t, int) noexcept nogil
        gemv_q8_fn gemv_q8
        gemv_q4_fn gemv_q4
        int gemv_q8_i8
        int gemv_q4_i8
    int ps_kernel_rows()
    const ps_kernel_table *ps_kernel_row(int code)
    int ps_kernel_row_runs(const ps_kernel_table *t, unsigned int features)
    const char *ps_kernel_row_lacks(const ps_kernel_table *t)

cdef extern from "probes.h" nogil:
    double false_sharing_run(int threads, Py_ssize_t stride, int64_t iters)
    uint64_t read_words(const uint8_t *a, Py_ssize_t n, int threads)
    int omp_threads_granted(int threads)

cdef extern from "omp.h" nogil:
    void omp_set_dynamic(int flag)

# OpenMP may otherwise hand out fewer threads than asked for; `threads` must be honoured.
omp_set_dynamic(0)


cdef inline const ps_kernel_table *_row(int isa) except NULL:
    if isa < 0 or isa >= ps_kernel_rows():
        raise ValueError(f"no dispatch-table row {isa}")
    return ps_kernel_row(isa)


def _check_rows():
    cdef const char *lacks
    for code in range(ps_kernel_rows()):
        lacks = ps_kernel_row_lacks(ps_kernel_row(code))
        if lacks != NULL:
            raise ImportError(f"dispatch.h: row {ps_kernel_row(code).name.decode()!r} "
                              f"sets no {lacks.decode()}")


_check_rows()


def cpu_flags():
    """The list of CPU flags in cpu_features.h (PS_CPU_FLAGS, then the OS register states of
    PS_OS_STATES) as (name, os_state, recorded) tuples; names are /proc/cpuinfo's spellings,
    recorded marks the isa.<name> fields of the host fingerprint."""
    cdef const ps_cpu_flag *flag
    out = []
    for i in range(ps_cpu_flag_count()):
        flag = ps_cpu_flag_at(i)
        out.append((flag.name.decode(), bool(flag.os_state), bool(flag.recorded)))
    return tuple(out)


def _flag_names(unsigned int bits, bint os_state):
    cdef const ps_cpu_flag *flag
    out = []
    for i in range(ps_cpu_flag_count()):
        flag = ps_cpu_flag_at(i)
        if bits & flag.bit and flag.os_state == os_state:
            out.append(flag.name.decode())
    return out


def _tile(ps_tile t):
    return (t.mr, t.nr, t.kstep)


def variants():
    """Rows of the dispatch table in order (best last): name, the CPU flags it needs
    (/proc/cpuinfo spellings) and the OS register state, whether this CPU/OS runs it, the
    register tile of each GEMM and the INT8/BF16 semantics."""
    cdef unsigned int f = ps_cpu_features()
    cdef const ps_kernel_table *t
    out = []
    for code in range(ps_kernel_rows()):
        t = ps_kernel_row(code)
        out.append({
            "name": t.name.decode(),
            "code": code,
            "requires": _flag_names(t.needs, False),
            "os_state": _flag_names(t.needs, True),
            "runnable": bool(ps_kernel_row_runs(t, f)),
            "tiles": {"f32": _tile(t.tile_f32), "u8s8": _tile(t.tile_u8s8),
                      "bf16": _tile(t.tile_bf16)},
            "u8s8_saturates": bool(t.u8s8_saturates),
            "bf16_native": bool(t.bf16_native),
            "gemv_q8_i8": bool(t.gemv_q8_i8),
            "gemv_q4_i8": bool(t.gemv_q4_i8),
        })
    return out


def cpu_features():
    """Each flag and OS register state of cpu_flags(), as seen by cpuid + xgetbv (what the
    kernels can use)."""
    cdef unsigned int f = ps_cpu_features()
    cdef const ps_cpu_flag *flag
    out = {}
    for i in range(ps_cpu_flag_count()):
        flag = ps_cpu_flag_at(i)
        out[flag.name.decode()] = bool(f & flag.bit)
    return out


def hypervisor_vendor():
    """cpuid hypervisor vendor string ('KVMKVMKVM', 'Microsoft Hv', ...), '' if none."""
    cdef char buf[16]
    ps_hypervisor_vendor(buf)
    return buf.decode("ascii", "replace").rstrip("\x00").strip()


def threads_granted(int threads):
    return omp_threads_granted(threads)


def dot_f32(const float[::1] x, const float[::1] y, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    cdef float r
    with nogil:
        r = t.dot_f32(&x[0], &y[0], x.shape[0])
    return r


def matmul_seed(const float[:, ::1] A, const float[:, ::1] B, float[:, ::1] C, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        t.matmul_seed(&A[0, 0], &B[0, 0], &C[0, 0], A.shape[0], B.shape[1], A.shape[1])


def gemm_f32_into(const float[:, ::1] A, const float[:, ::1] B, float[:, ::1] C, int isa,
                  Py_ssize_t mc, Py_ssize_t kc, Py_ssize_t nc, int threads):
    cdef const ps_kernel_table *t = _row(isa)
    cdef int rc
    with nogil:
        rc = t.gemm_f32(A.shape[0], B.shape[1], A.shape[1], &A[0, 0], &B[0, 0], &C[0, 0],
                        mc, kc, nc, threads)
    if rc != 0:
        raise MemoryError("gemm_f32: cannot allocate packing buffers")


def gemm_u8s8_s32_into(const uint8_t[:, ::1] A, const int8_t[:, ::1] B, int32_t[:, ::1] C,
                       int isa, bint exact, Py_ssize_t mc, Py_ssize_t kc, Py_ssize_t nc,
                       int threads):
    cdef const ps_kernel_table *t = _row(isa)
    cdef gemm_u8s8_fn fn = t.gemm_u8s8_exact if exact else t.gemm_u8s8
    cdef int rc
    with nogil:
        rc = fn(A.shape[0], B.shape[1], A.shape[1], &A[0, 0], &B[0, 0], &C[0, 0], mc, kc, nc,
                threads)
    if rc != 0:
        raise MemoryError("gemm_u8s8_s32: cannot allocate packing buffers")


def gemm_bf16_into(const uint16_t[:, ::1] A, const uint16_t[:, ::1] B, float[:, ::1] C,
                   int isa, Py_ssize_t mc, Py_ssize_t kc, Py_ssize_t nc, int threads):
    cdef const ps_kernel_table *t = _row(isa)
    cdef int rc
    with nogil:
        rc = t.gemm_bf16(A.shape[0], B.shape[1], A.shape[1], &A[0, 0], &B[0, 0], &C[0, 0],
                         mc, kc, nc, threads)
    if rc != 0:
        raise MemoryError("gemm_bf16: cannot allocate packing buffers")


def gemv_q8_into(const float[:, ::1] x, const float[:, ::1] xs, const int8_t[:, ::1] qs,
                 const float[:, ::1] d, float[:, ::1] y, int isa, int threads):
    """y := x @ W for q8 rows qs (N x K) with block scales d (N x K/32)."""
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        t.gemv_q8(x.shape[0], qs.shape[0], d.shape[1], &x[0, 0], &xs[0, 0], &qs[0, 0],
                  &d[0, 0], &y[0, 0], threads)


def gemv_q4_into(const float[:, ::1] x, const float[:, ::1] xs, const uint8_t[:, ::1] qs,
                 const float[:, ::1] d, const float[:, ::1] c, float[:, ::1] y, int isa,
                 int threads):
    """y := x @ W for q4 rows qs (N x K/2) with block scales d and offsets c (N x K/32;
    None: symmetric, -8 d)."""
    cdef const ps_kernel_table *t = _row(isa)
    cdef const float *cp = NULL if c is None else &c[0, 0]
    with nogil:
        t.gemv_q4(x.shape[0], qs.shape[0], d.shape[1], &x[0, 0], &xs[0, 0], &qs[0, 0],
                  &d[0, 0], cp, &y[0, 0], threads)


def read_bytes(const uint8_t[::1] a, int threads):
    """Read every byte of a (64-bit words, threads splitting it); a checksum so nothing is
    optimised away. Time it outside: the read-only bandwidth a GEMV is judged against."""
    cdef uint64_t s
    with nogil:
        s = read_words(&a[0], a.shape[0], threads)
    return s


def f32_to_bf16_into(const float[::1] x, uint16_t[::1] y, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        t.f32_to_bf16(&x[0], &y[0], x.shape[0])


def quantize_into(const float[::1] x, Py_ssize_t outer, Py_ssize_t channels, Py_ssize_t inner,
                  const float[::1] scale, const int32_t[::1] zp, int8_or_uint8[::1] q, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        if int8_or_uint8 is uint8_t:
            t.quantize_u8(&x[0], outer, channels, inner, &scale[0], &zp[0], &q[0])
        else:
            t.quantize_s8(&x[0], outer, channels, inner, &scale[0], &zp[0], &q[0])


def dequantize_into(const int8_or_uint8[::1] q, Py_ssize_t outer, Py_ssize_t channels,
                    Py_ssize_t inner, const float[::1] scale, const int32_t[::1] zp,
                    float[::1] x, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        if int8_or_uint8 is uint8_t:
            t.dequantize_u8(&q[0], outer, channels, inner, &scale[0], &zp[0], &x[0])
        else:
            t.dequantize_s8(&q[0], outer, channels, inner, &scale[0], &zp[0], &x[0])


def triad(float[::1] a, const float[::1] b, const float[::1] c, float s, int threads, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        t.triad(&a[0], &b[0], &c[0], s, a.shape[0], threads)


def copy(float[::1] a, const float[::1] b, int threads, int isa):
    cdef const ps_kernel_table *t = _row(isa)
    with nogil:
        t.copy(&a[0], &b[0], a.shape[0], threads)


def compute_peak_flops(int64_t iters, int threads, int isa):
    """Floating-point operations executed by the peak loop (time it outside)."""
    cdef const ps_kernel_table *t = _row(isa)
    cdef double flops
    with nogil:
        flops = t.peak(iters, threads)
    return flops


def false_sharing(int threads, Py_ssize_t stride, int64_t iters):
    cdef double t
    with nogil:
        t = false_sharing_run(threads, stride, iters)
    if t < 0:
        raise MemoryError("false_sharing: cannot allocate counters")
    return t
