"""Nibble-table backend: NIBBLE[k][h] is nibble h with its bits spread k apart.

The smaller table (9 x 16 words instead of 9 x 256) named in Iceberg issue #17758: each
byte takes two lookups, high nibble shifted above the low one. Same coverage as table
(csrc/nibble_kernel.h).
"""

from libc.stdint cimport uint64_t

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

cdef extern from *:
    """
    #include "nibble_kernel.h"
    #include "driver.h"
    ZORDER_BACKEND_ROWS(zorder_nibble_backend)
    """
    void zorder_nibble_init()
    const uint64_t zorder_nibble_spread[9][16]
    const BackendTable zorder_nibble_backend
    RowsKernel zorder_nibble_backend_rows

zorder_nibble_init()
publish(globals(), "nibble", zorder_nibble_backend_rows, &zorder_nibble_backend)


def nibble_table():
    """A copy of NIBBLE as nested lists ([k][h], k = 0..8), to inspect or test."""
    return [[zorder_nibble_spread[k][h] for h in range(16)] for k in range(9)]
