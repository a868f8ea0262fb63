# cython: boundscheck=False, wraparound=False, cdivision=True
"""Byte-table backend: SPREAD[k][b] is byte b with its bits spread k apart.

The method of Iceberg issue #17758 / PR #17774: a group of k output bytes is the OR of
SPREAD[k][column_t[j]] >> t over the k columns. Up to 8 columns of one width run that
directly; ragged widths and 9-64 columns run it segment by segment (csrc/segments.h); more
than 64 columns go to the bit loop, in the same call.
"""

from libc.stdint cimport uint8_t, uint64_t

from zorder.interleave.bitloop cimport bitloop_rows
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column, Plan, make_plan, spread_bits, store_group

from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "table_kernel.h" nogil:
    void fill_shifted "zorder_table_fill_shifted"(const uint64_t table[9][256])
    bint is_uniform "zorder_is_uniform"(const Column* cols, Py_ssize_t ncols)
    void spread_uniform "zorder_spread_uniform"(const Column* cols, int k, Py_ssize_t size,
                                                Py_ssize_t nrows, uint8_t* out,
                                                Py_ssize_t out_stride)

name = "table"

# SPREAD[k][b]: bit i of b (i = 0 is the MSB) at position 8k-1-i*k. Filled once at import.
cdef uint64_t SPREAD[9][256]


cdef void fill_spread_table() noexcept:
    cdef int k, b
    for k in range(1, 9):
        for b in range(256):
            SPREAD[k][b] = spread_bits(b, 8, k)


fill_spread_table()
fill_shifted(SPREAD)   # the pre-shifted per-column copies the uniform kernel reads


cdef inline uint64_t spread(int k, uint8_t b) noexcept nogil:
    return SPREAD[k][b]


include "groups.pxi"


cdef void table_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                        uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    spread_uniform(columns, k, size, nrows, out, out_stride)


def spread_table():
    """A copy of SPREAD as nested lists ([k][b], k = 0..8), to inspect or test."""
    return [[SPREAD[k][b] for b in range(256)] for k in range(9)]
