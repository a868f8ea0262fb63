"""Advanced SIMD (NEON) backend for aarch64, where every CPU has it.

Bit-sliced 8x8 transposes on 16 byte groups at once (csrc/neon_kernel.c): shifts and
bit-selects across the column registers, the packing of k-bit levels into bytes with
shifts, and the byte interleave of the result with st2/st3/st4, zips and table lookups
(tbl/tbx). The vector kernel takes 2-8 columns of one width that is a multiple of 8 bytes,
any row strides and truncated sizes. Narrow columns with rows back to back run as rows of
8 bytes; narrow ones with spaced-out rows, ragged widths and 9-64 columns run through the
shared segment decomposition (csrc/segments.h), which gathers narrow segments into rows back
to back so that they take the vector kernel too. One column (a copy) and single leftover rows
narrower than 8 bytes take the table backend's uniform kernel; more than 64 columns the bit
loop. Built only on aarch64 (setup.py); elsewhere the module does not exist.
"""

from libc.stdint cimport uint8_t

from zorder.interleave.bitloop cimport bitloop_rows
from zorder.interleave.table cimport table_uniform
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column
from zorder.interleave.segments cimport is_uniform, segments_rows, uniform_rows

from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "neon_kernel.h" nogil:
    const int zorder_neon_built
    void zorder_neon_init()
    int zorder_neon_uniform(const Column* cols, int k, Py_ssize_t size, Py_ssize_t nrows,
                            uint8_t* out, Py_ssize_t out_stride)


name = "neon"

cdef bint _supported = zorder_neon_built
if _supported:
    zorder_neon_init()

#: Whether this build has the kernel (every aarch64 CPU runs it: Advanced SIMD is mandatory).
SUPPORTED = bool(_supported)
UNSUPPORTED_REASON = "" if SUPPORTED else "this build has no Advanced SIMD kernel (not aarch64)"

# Narrow columns with spaced-out rows are gathered into scratch rows back to back (a malloc
# a call) from this many rows; fewer go to the table kernel.
cdef Py_ssize_t MIN_GATHER_ROWS = 8


cdef void neon_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                       uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    # k columns of one width: the vector kernel where the width is a multiple of 8 bytes.
    if zorder_neon_uniform(columns, k, size, nrows, out, out_stride):
        return
    if k >= 2 and nrows >= MIN_GATHER_ROWS and columns[0].width % 8 != 0:
        # Narrow or odd widths with spaced-out rows: gathered into rows back to back and
        # run as rows of 8 bytes (segments.h calls back here with widths of 8, and with
        # single leftover rows, which go to the table kernel below).
        if segments_rows(columns, k, size, nrows, out, out_stride, neon_uniform, 1, 0, NULL):
            return
    table_uniform(columns, k, size, nrows, out, out_stride)


cdef void neon_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    if is_uniform(columns, ncolumns):
        # narrow columns with rows back to back: as rows of 8 bytes (segments.h)
        uniform_rows(columns, <int>ncolumns, size, nrows, out, out_stride, neon_uniform)
    elif not segments_rows(columns, ncolumns, size, nrows, out, out_stride, neon_uniform, 1, 0, NULL):
        # more than 64 columns (or no memory for the scratch rows)
        bitloop_rows(columns, ncolumns, size, nrows, out, out_stride)


cdef inline int check_supported() except -1:
    if not _supported:
        raise RuntimeError(f"the neon backend cannot run here: {UNSUPPORTED_REASON}")
    return 0


def interleave_bits(columns, interleaved_size=None, out=None):
    check_supported()
    return interleave_bits_with(neon_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    check_supported()
    return interleave_rows_with(neon_rows, columns, interleaved_size, out, threads)


# For the tests: the vector kernel alone, to show a shape really takes it. Raises
# LookupError for a shape it does not cover.
cdef bint _declined = False


cdef void vector_only_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                           Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    global _declined
    if ncolumns > 8 or not zorder_neon_uniform(columns, <int>ncolumns, size, nrows, out,
                                               out_stride):
        _declined = True


def _vector_rows(columns, interleaved_size=None, out=None):
    global _declined
    check_supported()
    _declined = False
    result = interleave_rows_with(vector_only_rows, columns, interleaved_size, out, 1)
    if _declined:
        raise LookupError("the NEON kernel does not cover this shape")
    return result


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC
