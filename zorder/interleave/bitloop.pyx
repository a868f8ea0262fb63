"""The reference backend: Iceberg's interleave one output bit at a time.

Handles every input the front end accepts (any column count, ragged widths, any
truncated size). It is the oracle the other backends are tested against, and the last
fallback of every one of them (csrc/generic/bitloop.h).
"""

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

cdef extern from *:
    """
    #include "driver.h"
    ZORDER_BACKEND_ROWS(zorder_bitloop_backend)
    """
    const BackendTable zorder_bitloop_backend
    RowsKernel zorder_bitloop_backend_rows

publish(globals(), "bitloop", zorder_bitloop_backend_rows, &zorder_bitloop_backend)
