from zorder.interleave.kernel cimport BackendTable, RowsKernel

# The argument checking and buffer handling shared by every backend.
cdef object interleave_bits_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out)
cdef object interleave_rows_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out, object threads)

# The column list of a call, refusing what has no column order (sets, mappings), one bytes
# object for a list of columns, and an empty list; shared with the Hilbert transform.
cdef list as_column_list(object columns)


# A backend module's face (its public functions over its RowsKernel and C table).
cdef class Backend:
    cdef RowsKernel kernel
    cdef const BackendTable* table
    cdef readonly str name
    cdef readonly bint supported
    cdef readonly str reason
    cdef int refuse(self) except -1

# What each backend module calls once: its Backend, and its public names in `namespace`.
cdef Backend publish(dict namespace, str name, RowsKernel kernel, const BackendTable* table,
                     bint supported=*, str reason=*)
