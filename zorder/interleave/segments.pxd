# The shared segment machinery of csrc/segments.h (ragged widths and more than 8
# columns run on a backend's uniform kernel), declared once for every backend module.

from libc.stdint cimport uint8_t

from zorder.interleave.kernel cimport Column

cdef extern from "segments.h" nogil:
    # A backend's uniform kernel: k (1..8) columns of one width, size <= k * width.
    ctypedef void (*UniformKernel "zorder_uniform_fn")(const Column* cols, int k, Py_ssize_t size,
                                                      Py_ssize_t nrows, uint8_t* out,
                                                      Py_ssize_t out_stride) noexcept nogil
    ctypedef void (*SqueezeFn "zorder_squeeze_fn")(const uint8_t* src, int k, int nb,
                                                  Py_ssize_t w, Py_ssize_t limit,
                                                  Py_ssize_t rows, uint8_t* out,
                                                  Py_ssize_t out_stride) noexcept nogil
    ctypedef void (*MergeFn "zorder_merge_fn")(const uint8_t* planes, int nb, Py_ssize_t n,
                                              uint8_t* out) noexcept nogil
    ctypedef int (*SqueezePlanesFn "zorder_squeeze_planes_fn")(const uint8_t* planes, int k,
                                                              int nb, Py_ssize_t w,
                                                              Py_ssize_t limit, Py_ssize_t rows,
                                                              uint8_t* out,
                                                              Py_ssize_t out_stride) noexcept nogil
    ctypedef struct SegPiece "zorder_seg_piece":
        const uint8_t* src
        Py_ssize_t stride, n, at
    ctypedef Py_ssize_t (*AssembleFn "zorder_assemble_fn")(const SegPiece* pieces, int npieces,
                                                         Py_ssize_t size, Py_ssize_t rows,
                                                         uint8_t* out) noexcept nogil
    ctypedef Py_ssize_t (*SliceFn "zorder_slice_fn")(uint8_t* dst, const uint8_t* src,
                                                   Py_ssize_t rows, Py_ssize_t w,
                                                   Py_ssize_t st) noexcept nogil
    # What a backend's stages cost (more than 8 columns), its merge and squeeze, and its
    # assembly and slices of narrow ragged rows, if any.
    ctypedef struct SegBackend "zorder_seg_backend":
        int cost[9]
        int merge_cost
        MergeFn merge
        SqueezeFn squeeze
        SqueezePlanesFn squeeze_planes
        int squeeze_planes_cost
        AssembleFn assemble
        SliceFn slice
    bint is_uniform "zorder_is_uniform"(const Column* cols, Py_ssize_t ncols)
    int segments_rows "zorder_segments_rows"(const Column* cols, Py_ssize_t ncols,
                                             Py_ssize_t size, Py_ssize_t nrows, uint8_t* out,
                                             Py_ssize_t out_stride, UniformKernel uniform,
                                             int round8, int gather_all,
                                             const SegBackend* backend)
    void uniform_rows "zorder_uniform_rows"(const Column* cols, int k, Py_ssize_t size,
                                            Py_ssize_t nrows, uint8_t* out,
                                            Py_ssize_t out_stride, UniformKernel uniform)
    # The same with a backend's way of cutting whole rows in scratch to their first
    # `size` bytes (NULL: copies).
    void uniform_rows_cut "zorder_uniform_rows_cut"(const Column* cols, int k, Py_ssize_t size,
                                                    Py_ssize_t nrows, uint8_t* out,
                                                    Py_ssize_t out_stride, UniformKernel uniform,
                                                    SliceFn cut)
    void copy_rows_exact "zorder_copy_rows_exact"(uint8_t* dst, Py_ssize_t dst_stride,
                                                  const uint8_t* src, Py_ssize_t src_stride,
                                                  Py_ssize_t n, Py_ssize_t rows)


# A backend's assembly hook called on caller-given buffers (the backends' `_assemble`, for
# tests/test_assemble_bounds.py, which puts the buffers against guard pages): pieces is a
# sequence of (src, stride, n, at). The buffers must hold what the hook's contract lets it
# touch (each src its rows' bytes up to the last row's n, out rows * size bytes), so that
# any byte it reads or writes past them is the hook's own fault. Returns the rows it
# assembled.
# Refused (RuntimeError with `unsupported`), never run, where the CPU cannot run it.
cdef inline Py_ssize_t call_assemble(const SegBackend* backend, bint supported,
                                     str unsupported, object pieces, Py_ssize_t size,
                                     Py_ssize_t rows, uint8_t[::1] out) except -1:
    cdef SegPiece cpieces[8]
    cdef const uint8_t[::1] src
    cdef Py_ssize_t npieces = len(pieces), p, r
    cdef AssembleFn assemble = backend.assemble
    if not supported or assemble == NULL:
        raise RuntimeError(unsupported or "this backend has no assembly of narrow rows")
    if not 1 <= npieces <= 8:
        raise ValueError(f"pieces: 1 to 8 pieces, not {npieces}")
    if size < 1 or rows < 0:
        raise ValueError(f"size must be positive and rows not negative, not {size}, {rows}")
    if out.shape[0] != rows * size:
        raise ValueError(f"out: must be exactly rows * size = {rows * size} bytes, "
                         f"not {out.shape[0]}")
    sources = []   # keeps each src buffer while the hook runs
    for p, (src_obj, stride, n, at) in enumerate(pieces):
        src = src_obj
        sources.append(src)
        if stride < 1 or n < 1 or at < 0 or at + n > size:
            raise ValueError(f"pieces[{p}]: stride {stride}, n {n}, at {at} do not fit "
                             f"a row of {size} bytes")
        if rows and src.shape[0] != (rows - 1) * stride + n:
            raise ValueError(f"pieces[{p}]: src must be exactly (rows - 1) * stride + n = "
                             f"{(rows - 1) * stride + n} bytes, not {src.shape[0]}")
        cpieces[p].src = &src[0] if src.shape[0] else NULL
        cpieces[p].stride = stride
        cpieces[p].n = n
        cpieces[p].at = at
    if rows == 0:
        return 0
    with nogil:
        r = assemble(cpieces, <int>npieces, size, rows, &out[0])
    return r
