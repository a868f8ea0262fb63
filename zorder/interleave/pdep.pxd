from zorder.interleave.kernel cimport Column

# The BMI2 kernel, for other backends that fall back to it (simd, for shapes its vector
# code does not cover). Call pdep_rows only where pdep_supported() is true; it falls back
# to the bit loop itself for shapes it does not cover.
cdef bint pdep_supported() noexcept nogil
cdef void pdep_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, unsigned char* out, Py_ssize_t out_stride) noexcept nogil
# Its uniform kernel alone (k columns of one width), for segments of a ragged call.
cdef void pdep_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                       unsigned char* out, Py_ssize_t out_stride) noexcept nogil
