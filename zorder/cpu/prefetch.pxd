# The C compiler's prefetch hint, for Cython code: a read of p soon (compiler.h; nothing
# where the compiler has none).
cdef extern from "compiler.h" nogil:
    void prefetch "ZORDER_PREFETCH"(const void *p)
