# cython: boundscheck=False, wraparound=False, cdivision=True
"""Rows of a string or binary column in a given order, for ``zorder.parquet.gather``
(private).

Arrow's ``take`` appends a variable-width value at a time through a builder; these two
passes do the same gather with nothing between the copies: the output offsets and
where each value starts, then the bytes, each read prefetched a few rows ahead.
Offsets are int32 or int64 (``string``/``binary`` or their ``large_`` forms);
``offset`` is the array's own (a slice's first row in its buffers).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #include "compiler.h"
    #define zorder_prefetch(p) ZORDER_PREFETCH(p)
    """
    void zorder_prefetch(const void *p) noexcept nogil

ctypedef fused offset_t:
    int32_t
    int64_t

cdef enum:
    AHEAD = 16   # rows ahead whose value is prefetched (about a memory latency of copies)


def gather_offsets(const offset_t[::1] offsets, Py_ssize_t offset, const int64_t[::1] rows,
                   offset_t[::1] out, int64_t[::1] starts) -> int:
    """Fill ``out`` (len(rows) + 1) with the offsets of values ``rows`` put one after
    another, and ``starts`` (len(rows)) with where each starts in the data; their total
    size in bytes, or -1 if it passes what ``offset_t`` holds. IndexError for a row
    outside the array."""
    cdef Py_ssize_t n = rows.shape[0], size = offsets.shape[0] - offset - 1, j
    cdef Py_ssize_t bad = -1
    cdef int64_t r, at = 0, limit = (1 << 31) - 1 if offset_t is int32_t else (1 << 62)
    if out.shape[0] != n + 1 or starts.shape[0] != n or size < 0:
        raise ValueError("gather_offsets: out must hold len(rows) + 1 offsets, starts "
                         "len(rows)")
    with nogil:
        out[0] = 0
        for j in range(n):
            if j + AHEAD < n and 0 <= rows[j + AHEAD] < size:
                zorder_prefetch(&offsets[offset + rows[j + AHEAD]])
            r = rows[j]
            if r < 0 or r >= size:
                bad = j
                break
            starts[j] = offsets[offset + r]
            at += offsets[offset + r + 1] - starts[j]
            if at > limit:
                at = -1
                break
            out[j + 1] = <offset_t>at
    if bad >= 0:
        raise IndexError(f"row {rows[bad]} is outside an array of {size}")
    return at


def gather_bytes(const uint8_t[::1] data, const int64_t[::1] starts,
                 const offset_t[::1] out_offsets, uint8_t[::1] out) -> None:
    """Copy the values that start at ``starts`` in ``data`` (from ``gather_offsets``,
    which checked them) into ``out`` at ``out_offsets``."""
    cdef Py_ssize_t n = starts.shape[0], j
    cdef int64_t length
    cdef const uint8_t *source = &data[0] if data.shape[0] else NULL
    cdef uint8_t *target = &out[0] if out.shape[0] else NULL
    if out_offsets.shape[0] != n + 1 or out.shape[0] < out_offsets[n]:
        raise ValueError("gather_bytes: out is smaller than the values")
    with nogil:
        for j in range(n):
            if j + AHEAD < n:
                zorder_prefetch(source + starts[j + AHEAD])
            length = out_offsets[j + 1] - out_offsets[j]
            if length:
                memcpy(target + out_offsets[j], source + starts[j], <size_t>length)


def gather_bits(const uint8_t[::1] bitmap, Py_ssize_t offset, const int64_t[::1] rows,
                uint8_t[::1] out) -> int:
    """Set bit j of ``out`` (zeroed, (len(rows) + 7) // 8 bytes) to bit ``rows[j]`` of
    ``bitmap`` (Arrow's validity, from bit ``offset``); how many bits were 0 (nulls).
    The rows are those ``gather_offsets`` checked."""
    cdef Py_ssize_t n = rows.shape[0], j, nulls = 0
    cdef int64_t bit
    if out.shape[0] * 8 < n:
        raise ValueError("gather_bits: out is smaller than one bit a row")
    with nogil:
        for j in range(n):
            bit = offset + rows[j]
            if (bitmap[bit >> 3] >> (bit & 7)) & 1:
                out[j >> 3] |= <uint8_t>(1 << (j & 7))
            else:
                nulls += 1
    return nulls
