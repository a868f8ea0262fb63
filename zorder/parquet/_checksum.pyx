# cython: boundscheck=False, wraparound=False, cdivision=True
"""One-pass column hashes for ``zorder.parquet.checksum`` (private).

The same hashes as that module's numpy code (``_fixed`` for 1, 2, 4 and 8-byte values,
``_var`` for strings and binary), folded straight into the running row hashes:
``h[i] = (h[i] + hash of value i) * K``. numpy needs five to eight passes over a column
and as many temporary arrays for the same numbers; a rewrite checksums every row it reads
and every row it writes, on the threads beside the sort and the writer.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #include "compiler.h"
    #if !ZORDER_LITTLE_ENDIAN
    #define zorder_from_le64(x) ZORDER_BSWAP64(x)
    #define ZORDER_BIG_ENDIAN 1
    #else
    #define zorder_from_le64(x) (x)
    #define ZORDER_BIG_ENDIAN 0
    #endif
    """
    uint64_t zorder_from_le64(uint64_t x) noexcept nogil
    const int ZORDER_BIG_ENDIAN

# the constants of checksum.py
cdef uint64_t M1 = 0xBF58476D1CE4E5B9ULL
cdef uint64_t M2 = 0x94D049BB133111EBULL
cdef uint64_t K = 0x9E3779B97F4A7C15ULL
cdef uint64_t P = 0x100000001B3ULL
cdef uint64_t NULL_HASH = 0x6A09E667F3BCC909ULL


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    x = x ^ (x >> 30)
    x = x * M1
    x = x ^ (x >> 27)
    x = x * M2
    return x ^ (x >> 31)


cdef inline bint is_valid(const uint8_t[::1] bitmap, Py_ssize_t bit) noexcept nogil:
    return (bitmap[bit >> 3] >> (bit & 7)) & 1


def add_fixed(uint64_t[::1] h, const uint8_t[::1] values, Py_ssize_t offset, int width,
              const uint8_t[::1] bitmap=None):
    """Fold the hashes of ``len(h)`` little-endian ``width``-byte (1, 2, 4 or 8) values
    from value ``offset`` of ``values`` into ``h``; ``bitmap``: Arrow's validity bits
    (counted from the same offset), or None."""
    cdef Py_ssize_t i, n = h.shape[0]
    cdef uint64_t word, x
    cdef const uint8_t* p
    if width not in (1, 2, 4, 8):
        raise ValueError(f"width must be 1, 2, 4 or 8, not {width}")
    if values.shape[0] < (offset + n) * width:
        raise ValueError("values is shorter than offset + len(h) values")
    if bitmap is not None and bitmap.shape[0] * 8 < offset + n:
        raise ValueError("bitmap is shorter than offset + len(h) bits")
    with nogil:
        p = &values[0] + offset * width if n else NULL
        for i in range(n):
            if bitmap is not None and not is_valid(bitmap, offset + i):
                x = NULL_HASH
            else:
                word = 0
                if ZORDER_BIG_ENDIAN:
                    memcpy(<uint8_t*>&word + 8 - width, p + i * width, width)
                    word = zorder_from_le64(word)
                else:
                    memcpy(&word, p + i * width, width)
                x = mix(word)
            h[i] = (h[i] + x) * K


cdef inline uint64_t bytes_hash(const uint8_t* p, int64_t length) noexcept nogil:
    # sum of byte j * P**j, then mixed with the length (checksum._segments)
    cdef uint64_t acc = 0, power = 1
    cdef int64_t j
    for j in range(length):
        acc += p[j] * power
        power *= P
    return mix(acc + <uint64_t>length * K)


def add_var(uint64_t[::1] h, offsets, const uint8_t[::1] data, Py_ssize_t offset,
            const uint8_t[::1] bitmap=None):
    """Fold the hashes of ``len(h)`` strings or binary values into ``h``: value i is
    ``data[offsets[offset + i]:offsets[offset + i + 1]]``; ``offsets`` int32 or int64."""
    cdef Py_ssize_t i, n = h.shape[0]
    cdef const int32_t[::1] o32
    cdef const int64_t[::1] o64
    cdef int64_t lo, hi
    cdef bint wide = offsets.dtype.itemsize == 8
    cdef const uint8_t* d = &data[0] if data.shape[0] else NULL
    if wide:
        o64 = offsets
        if o64.shape[0] < offset + n + 1:
            raise ValueError("offsets is shorter than offset + len(h) + 1")
    else:
        o32 = offsets
        if o32.shape[0] < offset + n + 1:
            raise ValueError("offsets is shorter than offset + len(h) + 1")
    if bitmap is not None and bitmap.shape[0] * 8 < offset + n:
        raise ValueError("bitmap is shorter than offset + len(h) bits")
    # every value's bytes must lie in data (offsets from a foreign buffer are not trusted)
    for i in range(n + 1):
        lo = o64[offset + i] if wide else o32[offset + i]
        if lo < 0 or lo > data.shape[0] or (i and lo < (o64[offset + i - 1] if wide else o32[offset + i - 1])):
            raise ValueError(f"offset {offset + i} is out of order or outside the data")
    with nogil:
        for i in range(n):
            if bitmap is not None and not is_valid(bitmap, offset + i):
                h[i] = (h[i] + NULL_HASH) * K
                continue
            if wide:
                lo, hi = o64[offset + i], o64[offset + i + 1]
            else:
                lo, hi = o32[offset + i], o32[offset + i + 1]
            h[i] = (h[i] + bytes_hash(d + lo, hi - lo)) * K
