# The group loops of the table-lookup backends (table.pyx, nibble.pyx).
#
# Included textually so each module's own `spread(k, b)` (one byte's bits spread k apart)
# is inlined into the loops; the modules differ only in how they look that up. Equal
# widths go to the module's `spread_uniform` (C, csrc/spread_rows.h); this file keeps the
# general path for ragged widths.

cdef inline uint64_t group_word(const Column* columns, const int* column_index, int k,
                                Py_ssize_t r, Py_ssize_t j) noexcept nogil:
    # Column t's bits sit t places below column 0's: OR of spread(byte) >> t.
    cdef uint64_t w = 0
    cdef int t
    cdef const Column* col
    for t in range(k):
        col = &columns[column_index[t]]
        w |= spread(k, col.data[r * col.row_stride + j]) >> t
    return w


cdef inline void segment_rows(const Column* columns, const Plan* plan, Py_ssize_t size,
                              Py_ssize_t nrows, uint8_t* out,
                              Py_ssize_t out_stride) noexcept nogil:
    cdef Py_ssize_t r, j, pos, nbytes
    cdef int s, k
    cdef uint8_t* dst
    for r in range(nrows):
        dst = out + r * out_stride
        pos = 0
        for s in range(plan.nsegments):
            k = plan.seg_k[s]
            for j in range(plan.seg_start[s], plan.seg_end[s]):
                if pos >= size:
                    break
                nbytes = k if size - pos >= k else size - pos
                store_group(dst + pos, group_word(columns, plan.seg_cols[s], k, r, j), k, nbytes)
                pos += nbytes


cdef void group_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                     Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    cdef Plan plan
    if is_uniform(columns, ncolumns):
        # Equal widths: the unrolled kernel of csrc/spread_rows.h, with this module's tables.
        spread_uniform(columns, <int>ncolumns, size, nrows, out, out_stride)
    elif not make_plan(columns, ncolumns, &plan):
        bitloop_rows(columns, ncolumns, size, nrows, out, out_stride)
    else:
        segment_rows(columns, &plan, size, nrows, out, out_stride)


def interleave_bits(columns, interleaved_size=None, out=None):
    return interleave_bits_with(group_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    return interleave_rows_with(group_rows, columns, interleaved_size, out, threads)


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC
