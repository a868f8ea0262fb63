# cython: boundscheck=False, wraparound=False, cdivision=True
"""One-pass kernels for ``zorder.ordered.numbers``: 64-bit values to their 8 ordered bytes.

numpy needs four to six passes over a column for the same bytes (a widening copy, a NaN
mask, the sign arithmetic, a byte swap), each reading and writing the whole column; these
read each value once and write its 8 bytes once, big-endian, at the speed of a copy.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #include "compiler.h"
    #if ZORDER_LITTLE_ENDIAN
    #define zorder_to_be64(x) ZORDER_BSWAP64(x)
    #else
    #define zorder_to_be64(x) (x)
    #endif
    """
    uint64_t zorder_to_be64(uint64_t x) noexcept nogil

cdef uint64_t SIGN = 1ULL << 63
cdef int64_t CANONICAL_NAN = 0x7FF8000000000000


def ordered_longs(const int64_t[:] values, uint8_t[:, ::1] out):
    """``out[i]`` = the ordered bytes of long ``values[i]``: the sign bit flipped, big-endian."""
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint64_t word
    if out.shape[0] != n or out.shape[1] != 8:
        raise ValueError(f"out must be ({n}, 8), not ({out.shape[0]}, {out.shape[1]})")
    with nogil:
        for i in range(n):
            word = zorder_to_be64((<uint64_t>values[i]) ^ SIGN)
            memcpy(&out[i, 0], &word, 8)


def ordered_doubles(const double[:] values, uint8_t[:, ::1] out, int shift):
    """``out[i]`` = the ordered bytes of double ``values[i]`` as Iceberg computes them: its
    bits (every NaN as the canonical NaN, as ``doubleToLongBits``), XORed with the bits
    shifted arithmetically right by ``shift`` (63; 31 in releases before the fix, see
    ``zorder.ordered.numbers.floats``) OR the sign bit, big-endian."""
    cdef Py_ssize_t i, n = values.shape[0]
    cdef double d
    cdef int64_t bits
    cdef uint64_t word
    if out.shape[0] != n or out.shape[1] != 8:
        raise ValueError(f"out must be ({n}, 8), not ({out.shape[0]}, {out.shape[1]})")
    if not 0 <= shift <= 63:
        raise ValueError(f"shift must be 0..63, not {shift}")
    with nogil:
        for i in range(n):
            d = values[i]
            memcpy(&bits, &d, 8)
            if d != d:
                bits = CANONICAL_NAN
            # >> on a negative int64 is arithmetic in every compiler zorder builds with
            bits = bits ^ ((bits >> shift) | <int64_t>SIGN)
            word = zorder_to_be64(<uint64_t>bits)
            memcpy(&out[i, 0], &word, 8)
