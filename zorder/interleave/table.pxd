from libc.stdint cimport uint8_t

from zorder.interleave.kernel cimport Column

# This backend's RowsKernel (defined in groups.pxi), exported so the Hilbert kernel
# (zorder.hilbert._transform) can interleave with it: Cython publishes it in __pyx_capi__.
cdef void group_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                     Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil

# The uniform kernel alone (k <= 8 columns of one width), for the avx2 and neon backends'
# pieces that their vector code does not take.
cdef void table_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                        uint8_t* out, Py_ssize_t out_stride) noexcept nogil
