from libc.stdint cimport uint8_t

from zorder.interleave.kernel cimport Column

# The dispatcher's RowsKernel, exported (Cython's __pyx_capi__) like every backend's.
cdef void auto_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil
