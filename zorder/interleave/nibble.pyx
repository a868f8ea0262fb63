# cython: boundscheck=False, wraparound=False, cdivision=True
"""Nibble-table backend: NIBBLE[k][h] is nibble h with its bits spread k apart.

The smaller table (9 x 16 words instead of 9 x 256) named in Iceberg issue #17758: each
byte takes two lookups, high nibble shifted above the low one. Same coverage as table.
"""

from libc.stdint cimport uint8_t, uint64_t

from zorder.interleave.bitloop cimport bitloop_rows
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column, Plan, make_plan, spread_bits, store_group

from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "nibble_kernel.h" nogil:
    void fill_shifted "zorder_nibble_fill_shifted"(const uint64_t table[9][16])
    bint is_uniform "zorder_is_uniform"(const Column* cols, Py_ssize_t ncols)
    void spread_uniform "zorder_spread_uniform"(const Column* cols, int k, Py_ssize_t size,
                                                Py_ssize_t nrows, uint8_t* out,
                                                Py_ssize_t out_stride)

name = "nibble"

# NIBBLE[k][h]: bit i of nibble h (i = 0 is its MSB) at position 4k-1-i*k. Filled at import.
cdef uint64_t NIBBLE[9][16]


cdef void fill_nibble_table() noexcept:
    cdef int k, h
    for k in range(1, 9):
        for h in range(16):
            NIBBLE[k][h] = spread_bits(h, 4, k)


fill_nibble_table()
fill_shifted(NIBBLE)   # the pre-shifted per-column copies the uniform kernel reads


cdef inline uint64_t spread(int k, uint8_t b) noexcept nogil:
    return (NIBBLE[k][b >> 4] << (4 * k)) | NIBBLE[k][b & 15]


include "groups.pxi"


def nibble_table():
    """A copy of NIBBLE as nested lists ([k][h], k = 0..8), to inspect or test."""
    return [[NIBBLE[k][h] for h in range(16)] for k in range(9)]
