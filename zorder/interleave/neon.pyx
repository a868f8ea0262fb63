"""Advanced SIMD (NEON) backend for aarch64, where every CPU has it.

Bit-sliced 8x8 transposes on 16 byte groups at once (csrc/neon_kernel.c): shifts and
bit-selects across the column registers, the packing of k-bit levels into bytes with
shifts, and the byte interleave of the result with st2/st3/st4, zips and table lookups
(tbl/tbx). The vector kernel takes 2-8 columns of one width that is a multiple of 8 bytes,
any row strides and truncated sizes. Narrow columns with rows back to back run as rows of
8 bytes; narrow ones with spaced-out rows, ragged widths and 9-64 columns run through the
shared segment decomposition (csrc/generic/segments.h), which gathers narrow segments into
rows back to back so that they take the vector kernel too. One column (a copy) and single
leftover rows narrower than 8 bytes take the table kernel (csrc/generic/table.h); more than
64 columns the bit loop. Built only on aarch64 (setup.py); elsewhere the module does not exist.
"""

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

cdef extern from *:
    """
    #include "neon_kernel.h"
    #include "table.h"
    #include "driver.h"
    /* narrow columns with spaced-out rows gathered into scratch rows back to back (a
     * malloc a call) from 8 rows; fewer, and one column, to the table kernel */
    ZORDER_BACKEND(zorder_neon_backend) = {
        .name = "neon", .vector = zorder_neon_uniform, .narrow = ZORDER_NARROW_GATHER,
        .narrow_min_rows = 8, .scalar = zorder_table_uniform,
        .uniform = zorder_neon_backend_uniform, .round8 = 1, ZORDER_DEFAULT_COSTS,
        .fallback = &zorder_bitloop_backend,
    };
    """
    const int zorder_neon_built
    void zorder_neon_init()
    void zorder_table_init()
    const BackendTable zorder_neon_backend
    RowsKernel zorder_neon_backend_rows

if zorder_neon_built:   # (every aarch64 CPU runs it: Advanced SIMD is mandatory)
    zorder_neon_init()
    zorder_table_init()
backend = publish(globals(), "neon", zorder_neon_backend_rows, &zorder_neon_backend,
                  zorder_neon_built, "this build has no Advanced SIMD kernel (not aarch64)")
_vector_rows = backend.vector_rows
