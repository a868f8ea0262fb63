# The group loops of the table-lookup backends (table.pyx, nibble.pyx).
#
# Included textually so each module's own `spread(k, b)` (one byte's bits spread k apart)
# is inlined into the loops; the modules differ only in how they look that up. Equal
# widths go to the module's `spread_uniform` (C, csrc/spread_rows.h); ragged widths and more
# than 8 columns run that same kernel segment by segment (C, csrc/segments.h).

from zorder.interleave.segments cimport segments_rows, uniform_rows


cdef void group_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                     Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    if is_uniform(columns, ncolumns):
        # Equal widths: the unrolled kernel of csrc/spread_rows.h, with this module's tables.
        uniform_rows(columns, <int>ncolumns, size, nrows, out, out_stride, spread_uniform)
    elif not segments_rows(columns, ncolumns, size, nrows, out, out_stride, spread_uniform, 0, 0, NULL):
        # more than 64 columns (or no memory for the scratch rows)
        bitloop_rows(columns, ncolumns, size, nrows, out, out_stride)


def interleave_bits(columns, interleaved_size=None, out=None):
    return interleave_bits_with(group_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    return interleave_rows_with(group_rows, columns, interleaved_size, out, threads)


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC
