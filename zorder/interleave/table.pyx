"""Byte-table backend: SPREAD[k][b] is byte b with its bits spread k apart.

The method of Iceberg issue #17758 / PR #17774: a group of k output bytes is the OR of
SPREAD[k][column_t[j]] >> t over the k columns. Up to 8 columns of one width run that
directly; ragged widths and 9-64 columns run it segment by segment (csrc/generic/
segments.h); more than 64 columns go to the bit loop, in the same call. The kernel is the
generic layer's (csrc/generic/table.h), which avx2 and neon fall back to.
"""

from libc.stdint cimport uint64_t

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

cdef extern from *:
    """
    #include "table.h"
    #include "driver.h"
    ZORDER_BACKEND_ROWS(zorder_table_backend)
    """
    void zorder_table_init()
    const uint64_t zorder_table_spread[9][256]
    const BackendTable zorder_table_backend
    RowsKernel zorder_table_backend_rows

zorder_table_init()
publish(globals(), "table", zorder_table_backend_rows, &zorder_table_backend)


def spread_table():
    """A copy of SPREAD as nested lists ([k][b], k = 0..8), to inspect or test."""
    return [[zorder_table_spread[k][b] for b in range(256)] for k in range(9)]
