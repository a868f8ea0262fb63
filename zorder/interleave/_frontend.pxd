from zorder.interleave.kernel cimport RowsKernel

# The argument checking and buffer handling shared by every backend: each backend's
# interleave_bits / interleave_rows is one call to these with its own kernel.
cdef object interleave_bits_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out)
cdef object interleave_rows_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out, object threads)

# The column list of a call, refusing what has no column order (sets, mappings), one bytes
# object for a list of columns, and an empty list; shared with the Hilbert transform.
cdef list as_column_list(object columns)
