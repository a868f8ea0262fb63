from libc.stdint cimport uint8_t

from zorder.interleave.kernel cimport Column

# This backend's RowsKernel, exported so the Hilbert kernel (zorder.hilbert._transform) can interleave
# with it: Cython publishes it in __pyx_capi__.
cdef void neon_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil
