from zorder.interleave.kernel cimport Column

# The reference interleave, one output bit per step; every other backend falls back to
# it for shapes its fast path does not cover.
cdef void bitloop_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                       Py_ssize_t nrows, unsigned char* out,
                       Py_ssize_t out_stride) noexcept nogil
