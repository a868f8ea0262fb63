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
# P**k modulo 2**64: the byte polynomial eight bytes at a time
cdef uint64_t P1 = P
cdef uint64_t P2 = P1 * P
cdef uint64_t P3 = P2 * P
cdef uint64_t P4 = P3 * P
cdef uint64_t P5 = P4 * P
cdef uint64_t P6 = P5 * P
cdef uint64_t P7 = P6 * P
cdef uint64_t P8 = P7 * P


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
    cdef uint64_t x
    cdef const uint8_t* p
    if width not in (1, 2, 4, 8):
        raise ValueError(f"width must be 1, 2, 4 or 8, not {width}")
    if values.shape[0] < (offset + n) * width:
        raise ValueError("values is shorter than offset + len(h) values")
    if bitmap is not None and bitmap.shape[0] * 8 < offset + n:
        raise ValueError("bitmap is shorter than offset + len(h) bits")
    with nogil:
        p = &values[0] + offset * width if n else NULL
        if bitmap is None:
            # one loop per width: a memcpy of a constant size is one load, a variable
            # one a call per value
            if width == 8:
                for i in range(n):
                    h[i] = (h[i] + mix(word_at(p + i * 8, 8))) * K
            elif width == 4:
                for i in range(n):
                    h[i] = (h[i] + mix(word_at(p + i * 4, 4))) * K
            elif width == 2:
                for i in range(n):
                    h[i] = (h[i] + mix(word_at(p + i * 2, 2))) * K
            else:
                for i in range(n):
                    h[i] = (h[i] + mix(p[i])) * K
        else:
            for i in range(n):
                if not is_valid(bitmap, offset + i):
                    x = NULL_HASH
                else:
                    x = mix(word_at(p + i * width, width))
                h[i] = (h[i] + x) * K


cdef inline uint64_t word_at(const uint8_t* p, int width) noexcept nogil:
    # the little-endian ``width``-byte (at most 8) value at p, zero-extended
    cdef uint64_t word = 0
    if ZORDER_BIG_ENDIAN:
        memcpy(<uint8_t*>&word + 8 - width, p, width)
        return zorder_from_le64(word)
    memcpy(&word, p, width)
    return word


cdef inline uint64_t block_sum(uint64_t w) noexcept nogil:
    # byte k of the little-endian word w times P**k, summed: eight products that do not
    # wait on each other
    return ((w & 0xFF) + ((w >> 8) & 0xFF) * P1 + ((w >> 16) & 0xFF) * P2
            + ((w >> 24) & 0xFF) * P3 + ((w >> 32) & 0xFF) * P4 + ((w >> 40) & 0xFF) * P5
            + ((w >> 48) & 0xFF) * P6 + (w >> 56) * P7)


cdef inline uint64_t bytes_hash(const uint8_t* p, int64_t length) noexcept nogil:
    # sum of byte j * P**j, then mixed with the length (checksum._segments), eight bytes
    # a step (the byte-by-byte loop's chain of multiplies took 1.3 ns a byte). The last
    # r < 8 bytes: the word of the value's last eight shifted down to them (one load, not
    # a memcpy of r bytes), or, in a value shorter than eight, zero-padded (a zero byte
    # adds nothing).
    cdef uint64_t acc = 0, power = 1
    cdef int64_t j = 0
    cdef int rest = length & 7
    while j + 8 <= length:
        acc += block_sum(word_at(p + j, 8)) * power
        power *= P8
        j += 8
    if rest:
        if length >= 8:
            acc += block_sum(word_at(p + length - 8, 8) >> (8 * (8 - rest))) * power
        else:
            acc += block_sum(word_at(p, rest))
    return mix(acc + <uint64_t>length * K)


cdef Py_ssize_t bad_offset(const int32_t* o32, const int64_t* o64, Py_ssize_t n,
                           int64_t size) noexcept nogil:
    # the first of n + 1 offsets that is negative, past ``size`` or below the one before
    # it, or -1 when none is
    cdef Py_ssize_t i
    cdef int64_t lo, before = 0
    for i in range(n + 1):
        lo = o64[i] if o64 != NULL else o32[i]
        if lo < before or lo > size:
            return i
        before = lo
    return -1


def add_var(uint64_t[::1] h, offsets, const uint8_t[::1] data, Py_ssize_t offset,
            const uint8_t[::1] bitmap=None):
    """Fold the hashes of ``len(h)`` strings or binary values into ``h``: value i is
    ``data[offsets[offset + i]:offsets[offset + i + 1]]``; ``offsets`` int32 or int64."""
    cdef Py_ssize_t i, bad, n = h.shape[0]
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
    with nogil:
        bad = bad_offset(&o32[offset] if not wide else NULL,
                         &o64[offset] if wide else NULL, n, data.shape[0])
    if bad >= 0:
        raise ValueError(f"offset {offset + bad} is out of order or outside the data")
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


def mixed_sum(const uint64_t[::1] h):
    """The sum modulo 2**64 of every ``h[i]`` mixed (checksum._mix): a table's row hashes
    made its checksum in one pass, not numpy's five over the array and its temporaries."""
    cdef Py_ssize_t i, n = h.shape[0]
    cdef uint64_t total = 0
    with nogil:
        for i in range(n):
            total += mix(h[i])
    return total
