# cython: boundscheck=False, wraparound=False, cdivision=True
"""Stable sort of fixed-width byte strings (Z-values) as unsigned bytes, left to right.

A most-significant-byte-first radix sort of row indices: each bucket is split by its
next byte with a stable counting sort, a byte that is the same in the whole bucket costs
one counting pass and no move, and small buckets finish with a stable insertion sort.
Ties keep their input order. numpy has no stable sort on many-word keys that is fast
when the leading words tie (a lexsort of 4 words takes half a second for 1M rows);
Z-values tie on their leading bytes whenever columns have constant high bits, which is
the common case (small integers, timestamps of one year, strings with a shared prefix).
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

import numpy

cdef enum:
    SMALL = 24     # insertion sort at or below this many rows


cdef inline uint64_t load_key(const uint8_t* row, Py_ssize_t avail) noexcept nogil:
    """Bytes row[0:8] as a big-endian word, zero-padded past `avail` bytes (the same
    padding for every row, so order is unchanged)."""
    cdef uint64_t k = 0
    cdef Py_ssize_t i
    if avail >= 8:
        for i in range(8):
            k = (k << 8) | row[i]
        return k
    for i in range(8):
        k <<= 8
        if i < avail:
            k |= row[i]
    return k


cdef inline bint greater(const uint8_t* z, Py_ssize_t stride, Py_ssize_t rest_at,
                         Py_ssize_t rest, int64_t a, uint64_t ka, int64_t b,
                         uint64_t kb) noexcept nogil:
    """Row a > row b, given their cached words; the bytes after them decide ties."""
    if ka != kb:
        return ka > kb
    if rest <= 0:
        return False
    return memcmp(z + a * stride + rest_at, z + b * stride + rest_at, rest) > 0


cdef inline void insertion(const uint8_t* z, Py_ssize_t stride, Py_ssize_t size,
                           Py_ssize_t cached, int64_t* idx, uint64_t* keys,
                           Py_ssize_t n) noexcept nogil:
    """Stable insertion sort of rows equal before `cached`, keyed by their cached words
    (bytes [cached, cached + 8)) and then by the bytes after them."""
    cdef Py_ssize_t i, j
    cdef Py_ssize_t rest_at = cached + 8
    cdef Py_ssize_t rest = size - rest_at
    cdef int64_t cur
    cdef uint64_t ck
    for i in range(1, n):
        cur = idx[i]
        ck = keys[i]
        j = i
        # Move only past strictly greater rows: stable.
        while j > 0 and greater(z, stride, rest_at, rest, idx[j - 1], keys[j - 1], cur, ck):
            idx[j] = idx[j - 1]
            keys[j] = keys[j - 1]
            j -= 1
        idx[j] = cur
        keys[j] = ck


cdef struct Sorter:
    const uint8_t* z
    Py_ssize_t stride
    Py_ssize_t size
    Py_ssize_t* counts     # 257 per depth: one live frame per depth at a time


cdef void msd(Sorter* s, int64_t* idx, uint64_t* keys, int64_t* tmp_idx,
              uint64_t* tmp_keys, Py_ssize_t n, Py_ssize_t depth,
              Py_ssize_t cached) noexcept nogil:
    """Sorts idx[0:n] (rows equal on bytes [0, depth)). keys[i] caches bytes
    [cached, cached + 8) of row idx[i], cached <= depth < cached + 8, moved along with
    idx so each pass reads them in order; they are reloaded every 8 bytes."""
    cdef Py_ssize_t i, b, start, total, nonempty, shift
    cdef Py_ssize_t* cnt
    while True:
        if n <= 1 or depth >= s.size:
            return
        if depth - cached >= 8:
            cached = depth
            for i in range(n):
                keys[i] = load_key(s.z + idx[i] * s.stride + depth, s.size - depth)
        if n <= SMALL:
            insertion(s.z, s.stride, s.size, cached, idx, keys, n)
            return
        shift = 56 - 8 * (depth - cached)
        cnt = s.counts + depth * 257
        for b in range(257):
            cnt[b] = 0
        for i in range(n):
            cnt[((keys[i] >> shift) & 0xFF) + 1] += 1
        nonempty = 0
        for b in range(1, 257):
            if cnt[b]:
                nonempty += 1
        if nonempty == 1:
            depth += 1      # one byte value in the whole bucket: nothing to move
            continue
        for b in range(1, 257):
            cnt[b] += cnt[b - 1]
        # cnt[v] is where bucket v starts: scatter stably.
        for i in range(n):
            b = (keys[i] >> shift) & 0xFF
            tmp_idx[cnt[b]] = idx[i]
            tmp_keys[cnt[b]] = keys[i]
            cnt[b] += 1
        memcpy(idx, tmp_idx, n * sizeof(int64_t))
        memcpy(keys, tmp_keys, n * sizeof(uint64_t))
        # cnt[v] is now where bucket v ends.
        start = 0
        for b in range(256):
            total = cnt[b] - start
            if total > 1:
                msd(s, idx + start, keys + start, tmp_idx + start, tmp_keys + start,
                    total, depth + 1, cached)
            start = cnt[b]
        return


def argsort_rows(const uint8_t[:, :] values):
    """Stable argsort (int64) of the rows of a 2-D uint8 array, bytewise unsigned.

    Rows must have contiguous bytes (any row stride).
    """
    cdef Py_ssize_t n = values.shape[0], size = values.shape[1]
    perm = numpy.arange(n, dtype=numpy.int64)
    if n <= 1 or size == 0:
        return perm
    if size > 1 and values.strides[1] != 1:
        raise ValueError("rows must have contiguous bytes")
    cdef int64_t[::1] p = perm
    tmp = numpy.empty(n, dtype=numpy.int64)
    cdef int64_t[::1] t = tmp
    key_arr = numpy.empty(n, dtype=numpy.uint64)
    tmp_key_arr = numpy.empty(n, dtype=numpy.uint64)
    cdef uint64_t[::1] keys = key_arr
    cdef uint64_t[::1] tkeys = tmp_key_arr
    cdef Sorter s
    s.z = &values[0, 0]
    s.stride = values.strides[0]
    s.size = size
    s.counts = <Py_ssize_t*>malloc(size * 257 * sizeof(Py_ssize_t))
    if s.counts == NULL:
        raise MemoryError()
    try:
        with nogil:
            # cached = -8 makes the first pass load bytes [0, 8) of every row.
            msd(&s, &p[0], &keys[0], &t[0], &tkeys[0], n, 0, -8)
    finally:
        free(s.counts)
    return perm
