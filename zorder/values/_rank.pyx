# cython: boundscheck=False, wraparound=False, cdivision=True
"""The rank encoding's kernels (``zorder.values.rank``): ordered bytes of at most 8 bytes
to rank bytes, and a sample's keys sorted.

- ``rank_rows``: the code of each row's rank among a column's sorted split points,
  written as the big-endian bytes the interleave kernel reads (``rank_kernel.h``: a
  bucket table on the key, then four comparisons without a branch).
- ``rank_rows_near``: the same from the compact table of buckets at most ``2**30`` keys
  wide (each point as its 32-bit offset in its bucket, the codes apart).
- ``rank_rows_two_level``: the same from a two-level table, for points that cluster or
  buckets wider than ``2**30`` keys (a crowded bucket gets a sub-table of its own).
- ``sorted_keys``: the rows of a sample as big-endian words (zero-padded on the right),
  sorted: a least-significant-digit radix sort that skips the digits every key shares
  (the high bytes of a timestamp of one year, of small ids).

Both check their arguments once and run without the GIL.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy

from zorder.cpu import facts
from zorder.cpu.features import supported

#: Whether ``rank_rows_near`` takes adjacent 8-byte rows in blocks on AVX2 (this build has
#: the code and this CPU runs it; from the CPU floor's facts, read once).
AVX2 = bool(ZNEAR_AVX2_BUILT) and supported("avx2", facts())
cdef int _avx2 = AVX2

cdef extern from "rank_kernel.h":
    enum:
        ZRANK_PEEK
        ZRANK_START
    ctypedef struct zrank_table:
        const uint64_t* pair
        const uint32_t* entries
        int64_t k
        uint64_t lo
        uint64_t last
        int shift
    ctypedef struct znear_table:
        const uint32_t* entries
        const int32_t* offsets
        const uint8_t* codes
        uint64_t origin
        uint64_t top
        uint64_t index_mask
        uint64_t last
        int shift
    enum:
        ZNEAR_START_BITS
        ZNEAR_SHIFT_MAX
    uint64_t zrank_load(const uint8_t* row, Py_ssize_t width) noexcept nogil
    void znear_rows(const znear_table* t, const uint8_t* row, Py_ssize_t stride,
                    Py_ssize_t width, uint8_t* out, Py_ssize_t nbytes, Py_ssize_t n,
                    int crowded, int avx2) noexcept nogil
    enum:
        ZNEAR_AVX2_BUILT
    ctypedef struct ztwo_table:
        const uint32_t* first
        const uint32_t* second
        const int32_t* offsets
        const uint64_t* points
        const uint8_t* codes
        uint64_t origin
        uint64_t top
        uint64_t low
        uint64_t index_mask
        uint64_t second_mask
        int shift
    enum:
        ZTWO_BASE_BITS
    void ztwo_rows(const ztwo_table* t, const uint8_t* row, Py_ssize_t stride,
                   Py_ssize_t width, uint8_t* out, Py_ssize_t nbytes, Py_ssize_t n,
                   int exact, int crowded, int avx2) noexcept nogil
    void zrank_rows(const zrank_table* t, const uint8_t* row, Py_ssize_t stride,
                    Py_ssize_t width, uint8_t* out, Py_ssize_t nbytes, Py_ssize_t n) noexcept nogil


def rank_rows(const uint8_t[:, :] ordered, const uint64_t[:, ::1] pairs,
              const uint32_t[::1] table, uint64_t lo, int shift, uint8_t[:, ::1] out):
    """Fill ``out`` (``(N, nbytes)``, nbytes 1 to 8) with each row's rank code bytes.

    Args:
        ordered: ``(N, width)`` ordered bytes, width 1 to 8, each row's bytes adjacent.
        pairs: ``(K + 4, 2)``: the column's K >= 1 sorted distinct split points as
            big-endian words (zero-padded on the right), each beside the code of its
            rank (the number of points <= a key); then 4 words ``2**64 - 1``, the first
            beside the code of rank K.
        table: ``(T + 1,)``: for bucket ``h`` (the keys ``lo + (h << shift)`` up to the
            next bucket), the number of points below it, plus ``2**31`` when it holds
            more than 4; ``table[T]`` is K.
        lo: the first split point.
        shift: the bucket width in bits, 0 to 63.
    """
    cdef Py_ssize_t n = ordered.shape[0], width = ordered.shape[1]
    cdef Py_ssize_t nbytes = out.shape[1]
    cdef int64_t k = pairs.shape[0] - ZRANK_PEEK
    cdef Py_ssize_t buckets = table.shape[0] - 1
    cdef Py_ssize_t j
    if not 1 <= width <= 8 or not 1 <= nbytes <= 8:
        raise ValueError(f"rank_rows: widths 1 to 8 bytes, got {width} in, {nbytes} out")
    if n and ordered.strides[1] != 1:
        raise ValueError("rank_rows: each row's bytes must be adjacent")
    if out.shape[0] != n:
        raise ValueError(f"rank_rows: out has {out.shape[0]} rows for {n}")
    padded = k >= 1 and pairs.shape[1] == 2
    for j in range(ZRANK_PEEK if padded else 0):
        padded = padded and pairs[k + j, 0] == 0xFFFFFFFFFFFFFFFF
    if not padded or k > ZRANK_START:
        raise ValueError("rank_rows: pairs must be 1 to 2**31 - 1 (point, code) pairs, "
                         "then 4 points 2**64 - 1")
    if buckets < 1 or not 0 <= shift <= 63:
        raise ValueError("rank_rows: the bucket table does not fit the split points")
    if n == 0:
        return
    cdef zrank_table table_of
    table_of.pair = &pairs[0, 0]
    table_of.entries = &table[0]
    table_of.k = k
    table_of.lo = lo
    table_of.shift = shift
    table_of.last = <uint64_t>(buckets - 1)
    cdef const uint8_t* row = &ordered[0, 0]
    cdef Py_ssize_t stride = ordered.strides[0]
    cdef uint8_t* dest = &out[0, 0]
    with nogil:
        zrank_rows(&table_of, row, stride, width, dest, nbytes, n)


cdef int _check_rows(const uint8_t[:, :] ordered, Py_ssize_t out_rows, Py_ssize_t nbytes,
                     str name) except -1:
    cdef Py_ssize_t width = ordered.shape[1]
    if not 1 <= width <= 8 or not 1 <= nbytes <= 8:
        raise ValueError(f"{name}: widths 1 to 8 bytes, got {width} in, {nbytes} out")
    if ordered.shape[0] and ordered.strides[1] != 1:
        raise ValueError(f"{name}: each row's bytes must be adjacent")
    if out_rows != ordered.shape[0]:
        raise ValueError(f"{name}: out has {out_rows} rows for {ordered.shape[0]}")
    return 0


cdef Py_ssize_t _check_points(const uint8_t[:, ::1] codes, Py_ssize_t size, Py_ssize_t nbytes,
                              str name) except -1:
    """The span 2**p of a table of ``size`` = 2**p + 4 point offsets (p 0 to 27), checked
    with its codes, one of ``nbytes`` bytes a point."""
    if codes.shape[0] != size or codes.shape[1] != nbytes:
        raise ValueError(f"{name}: codes must be ({size}, {nbytes}) for {size} "
                         f"offsets and {nbytes}-byte codes, got ({codes.shape[0]}, "
                         f"{codes.shape[1]})")
    cdef Py_ssize_t span = size - 4
    if span < 1 or span & (span - 1) or span > (1 << ZNEAR_START_BITS):
        raise ValueError(f"{name}: offsets must hold 2**p + 4 entries, p 0 to 27")
    return span


def rank_rows_near(const uint8_t[:, :] ordered, const uint32_t[::1] entries,
                   const int32_t[::1] offsets, const uint8_t[:, ::1] codes, uint64_t origin,
                   int shift, bint crowded, uint8_t[:, ::1] out, *, bint vector=True):
    """Fill ``out`` (``(N, nbytes)``, nbytes 1 to 8) with each row's rank code bytes, from
    the compact table of a column's K sorted split points.

    Args:
        ordered: ``(N, width)`` ordered bytes, width 1 to 8, each row's bytes adjacent.
        entries: ``(T + 1,)``: for bucket ``h`` (the keys whose offset from ``origin`` is
            ``h << shift`` up to the next bucket's), the number of points below it, plus
            ``m << 27`` (bit j of m: the (j+1)-th point from there lies in the bucket) when
            it holds at most 4, else ``2**31``; ``entries[T]`` is K.
        offsets: ``(2**p + 4,)`` int32, ``2**p > K``, ``p <= 27``: each point's offset in its
            bucket (the low ``shift`` bits of its offset from ``origin``), then
            ``2**31 - 1``.
        codes: ``(2**p + 4, nbytes)``: the big-endian code of each rank 0 .. K, then any.
        origin: the first split point minus one (0 if it is 0); a key below it ranks 0.
        shift: the bucket width in bits, 0 to 30.
        crowded: whether any entry has ``2**31`` (searched; without, a wrong code).
        vector: False for the plain loop even where ``AVX2`` holds (the same bytes).
    """
    cdef Py_ssize_t n = ordered.shape[0], width = ordered.shape[1]
    cdef Py_ssize_t nbytes = out.shape[1], size = offsets.shape[0]
    _check_rows(ordered, out.shape[0], nbytes, "rank_rows_near")
    cdef Py_ssize_t span = _check_points(codes, size, nbytes, "rank_rows_near")
    if entries.shape[0] < 2 or not 0 <= shift <= ZNEAR_SHIFT_MAX:
        raise ValueError("rank_rows_near: the bucket table does not fit the split points")
    if n == 0:
        return
    cdef znear_table table
    table.entries = &entries[0]
    table.offsets = &offsets[0]
    table.codes = &codes[0, 0]
    table.origin = origin
    table.last = <uint64_t>(entries.shape[0] - 2)
    table.shift = shift
    table.top = (table.last << shift) | ((<uint64_t>1 << shift) - 1)
    table.index_mask = <uint64_t>(span - 1)
    cdef const uint8_t* row = &ordered[0, 0]
    cdef Py_ssize_t stride = ordered.strides[0]
    cdef uint8_t* dest = &out[0, 0]
    cdef int avx2 = _avx2 and vector
    with nogil:
        znear_rows(&table, row, stride, width, dest, nbytes, n, crowded, avx2)


def rank_rows_two_level(const uint8_t[:, :] ordered, const uint32_t[::1] first,
                        const uint32_t[::1] second, const int32_t[::1] offsets, points,
                        const uint8_t[:, ::1] codes, uint64_t origin, int shift, bint crowded,
                        uint8_t[:, ::1] out, *, bint vector=True):
    """Fill ``out`` (``(N, nbytes)``, nbytes 1 to 8) with each row's rank code bytes, from
    the two-level table of a column's K sorted split points.

    A key's offset from ``origin`` (clamped to the table) picks ``first[offset >> shift]``,
    either an entry of ``rank_rows_near``'s form (points below, in-bucket mask) or, with
    bit 31 set, a sub-table: its low 25 bits are where it starts in ``second``, the next 6
    its bucket width ``s`` in bits, and the key's entry is
    ``second[start + ((offset mod 2**shift) >> s)]``, of ``rank_rows_near``'s form (or
    ``2**31``: crowded). ``s`` is ``shift`` for an entry of the first level.

    Args:
        ordered: ``(N, width)`` ordered bytes, width 1 to 8, each row's bytes adjacent.
        first: ``(T,)`` uint32, T >= 1: the first level.
        second: ``(2**q,)`` uint32, ``1 <= q <= 26``: the second level (the entry after
            each sub-table's last is the next sub-table's first, or K).
        offsets: ``(2**p + 4,)`` int32, ``2**p > K``, ``p <= 27``: each point's offset in
            its bucket, ``>> (s - 30)`` where ``s > 30``; then padding.
        points: None when every ``s`` is at most 30, else ``(2**p + 4,)`` uint64: the
            points (read where a key's top bits equal a point's).
        codes: ``(2**p + 4, nbytes)``: the big-endian code of each rank 0 .. K, then any.
        origin: the first split point minus one (0 if it is 0).
        shift: the first level's bucket width in bits, 0 to 63.
        crowded: whether any second-level entry has ``2**31`` (searched; without, a
            wrong code).
        vector: False for the plain loop even where ``AVX2`` holds (the same bytes).
    """
    cdef Py_ssize_t n = ordered.shape[0], width = ordered.shape[1]
    cdef Py_ssize_t nbytes = out.shape[1], size = offsets.shape[0]
    _check_rows(ordered, out.shape[0], nbytes, "rank_rows_two_level")
    cdef const uint64_t[::1] points_of
    cdef int exact = points is not None
    if exact:
        points_of = points
        if points_of.shape[0] != size:
            raise ValueError(f"rank_rows_two_level: points must be as long as offsets "
                             f"({size}), got {points_of.shape[0]}")
    cdef Py_ssize_t span = _check_points(codes, size, nbytes, "rank_rows_two_level")
    cdef Py_ssize_t levels = second.shape[0]
    if (first.shape[0] < 1 or levels < 2 or levels & (levels - 1)
            or levels > (2 << ZTWO_BASE_BITS) or not 0 <= shift <= 63):
        raise ValueError("rank_rows_two_level: the bucket tables do not fit the split points")
    if n == 0:
        return
    cdef ztwo_table table
    table.first = &first[0]
    table.second = &second[0]
    table.offsets = &offsets[0]
    table.points = &points_of[0] if exact else NULL
    table.codes = &codes[0, 0]
    table.origin = origin
    table.shift = shift
    table.low = (<uint64_t>1 << shift) - 1
    table.top = (<uint64_t>(first.shape[0] - 1) << shift) | table.low
    table.index_mask = <uint64_t>(span - 1)
    table.second_mask = <uint64_t>(levels - 1)
    cdef const uint8_t* row = &ordered[0, 0]
    cdef Py_ssize_t stride = ordered.strides[0]
    cdef uint8_t* dest = &out[0, 0]
    cdef int avx2 = _avx2 and vector
    with nogil:
        ztwo_rows(&table, row, stride, width, dest, nbytes, n, exact, crowded, avx2)


def sorted_keys(const uint8_t[:, :] ordered):
    """The rows of ``(N, width)`` ordered bytes (width 1 to 8) as big-endian uint64 words,
    zero-padded on the right, sorted: a radix sort on bytes, skipping those every key
    shares."""
    cdef Py_ssize_t n = ordered.shape[0], width = ordered.shape[1]
    if not 1 <= width <= 8:
        raise ValueError(f"sorted_keys: widths 1 to 8 bytes, got {width}")
    if n and ordered.strides[1] != 1:
        raise ValueError("sorted_keys: each row's bytes must be adjacent")
    keys = numpy.empty(n, numpy.uint64)
    if n == 0:
        return keys
    other = numpy.empty(n, numpy.uint64)
    counts = numpy.zeros((8, 256), numpy.int64)
    cdef uint64_t[::1] a = keys, b = other
    cdef int64_t* tally = <int64_t*>(<uint64_t>counts.ctypes.data)
    cdef const uint8_t* row = &ordered[0, 0]
    cdef Py_ssize_t stride = ordered.strides[0]
    cdef Py_ssize_t i, d
    cdef uint64_t key
    cdef int64_t total, c
    cdef uint64_t* src
    cdef uint64_t* dst
    cdef uint64_t* swap
    cdef bint in_keys = True
    with nogil:
        for i in range(n):
            key = zrank_load(row + i * stride, width)
            a[i] = key
            for d in range(8):
                tally[256 * d + ((key >> (8 * d)) & 0xFF)] += 1
        src, dst = &a[0], &b[0]
        for d in range(8):
            if tally[256 * d + ((src[0] >> (8 * d)) & 0xFF)] == n:
                continue          # every key has this byte: the pass would move nothing
            total = 0
            for c in range(256):  # counts to the first position of each byte value
                total += tally[256 * d + c]
                tally[256 * d + c] = total - tally[256 * d + c]
            for i in range(n):
                key = src[i]
                c = 256 * d + ((key >> (8 * d)) & 0xFF)
                dst[tally[c]] = key
                tally[c] += 1
            swap = src
            src = dst
            dst = swap
            in_keys = not in_keys
    return keys if in_keys else other
