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
                                                         uint8_t* out,
                                                         Py_ssize_t total) noexcept nogil
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
