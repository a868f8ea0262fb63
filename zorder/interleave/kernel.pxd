# The C-level contract every backend implements.
#
# The public functions (in _frontend.pyx) validate their arguments once, describe each
# column as a Column, and hand one RowsKernel all the rows of the call. A kernel sees
# only checked pointers and sizes, runs without the GIL, and decides once per call
# whether its fast path covers the shape (never per row).

from libc.stdint cimport uint8_t

cdef extern from "kernel.h":
    ctypedef struct Column "zorder_column":
        const uint8_t* data      # byte 0 of row 0
        Py_ssize_t row_stride    # bytes from one row to the next (any sign; 0 for one row)
        Py_ssize_t width         # bytes of this column in every row (may be 0)

    # need[c]: the bytes of column c that rows cut to `size` bytes use (Iceberg's order)
    void bytes_used "zorder_bytes_used"(const Column* cols, Py_ssize_t ncols, Py_ssize_t size,
                                        int* need) noexcept nogil
    bint rows_reachable "zorder_rows_reachable"(const Column* cols, Py_ssize_t ncols,
                                                const int* need) noexcept nogil

# Writes rows [0, nrows): row r's `size` interleaved bytes go to out + r * out_stride,
# every one of them written (Iceberg zero-fills first). The caller guarantees
# ncolumns >= 1, 0 <= size <= sum of widths, and columns[0].width >= 1 if size >= 1.
ctypedef void (*RowsKernel)(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                            Py_ssize_t nrows, uint8_t* out,
                            Py_ssize_t out_stride) noexcept nogil


# A backend's C table (csrc/generic/backend.h): the fields the Python side reads.
cdef extern from "backend.h" nogil:
    ctypedef struct SegPiece "zorder_seg_piece":
        const uint8_t* src
        Py_ssize_t stride, n, at
    ctypedef Py_ssize_t (*AssembleFn "zorder_assemble_fn")(const SegPiece* pieces, int npieces,
                                                         Py_ssize_t size, Py_ssize_t rows,
                                                         uint8_t* out) noexcept nogil
    ctypedef int (*TryRowsFn "zorder_try_rows_fn")(const Column* cols, Py_ssize_t ncols,
                                                  Py_ssize_t size, Py_ssize_t nrows,
                                                  uint8_t* out,
                                                  Py_ssize_t out_stride) noexcept nogil
    ctypedef int (*TryUniformFn "zorder_try_uniform_fn")(const Column* cols, int k,
                                                        Py_ssize_t size, Py_ssize_t nrows,
                                                        uint8_t* out,
                                                        Py_ssize_t out_stride) noexcept nogil
    ctypedef struct BackendTable "zorder_backend":
        TryRowsFn rows              # its kernel for whole calls (NULL: none)
        TryUniformFn vector         # its uniform vector kernel (NULL: none)
        AssembleFn assemble         # its assembly of narrow ragged rows (NULL: none)
        Py_ssize_t* stream_min      # where streaming stores start (NULL: none)


# Columns without data, for the tests' hooks on a call's shape (auto.shape_class_of, the
# avx2 byte planes' choice): widths[i] bytes, rows row_strides[i] apart (default: the
# widths, back to back). Fills cols (room for 64) and returns the count.
cdef inline Py_ssize_t shape_columns(Column* cols, widths, row_strides) except -1:
    cdef Py_ssize_t i, n = len(widths)
    if not 1 <= n <= 64:
        raise ValueError("widths must hold 1 to 64 column widths")
    strides = list(widths) if row_strides is None else list(row_strides)
    if len(strides) != n:
        raise ValueError("row_strides must hold one stride per column width")
    for i in range(n):
        cols[i].data = NULL
        cols[i].row_stride = strides[i]
        cols[i].width = widths[i]
    return n
