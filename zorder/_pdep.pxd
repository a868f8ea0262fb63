from libc.stdint cimport uint8_t

from zorder._kernel cimport Column

# This backend's RowsKernel, exported so the Hilbert kernel (_hilbert.pyx) can interleave
# with it: Cython publishes it in __pyx_capi__.
cdef void pdep_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil
