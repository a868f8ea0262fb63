# cython: boundscheck=False, wraparound=False, cdivision=True
"""Rows of a string or binary column in a given order, for ``zorder.parquet.gather``
(private).

Arrow's ``take`` appends a variable-width value at a time through a builder; these two
passes do the same gather with nothing between the copies: the output offsets and
where each value starts, then the bytes, each read prefetched a few rows ahead.
Offsets are int32 or int64 (``string``/``binary`` or their ``large_`` forms);
``offset`` is the array's own (a slice's first row in its buffers).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from cython.view cimport array as cvarray

from zorder.cpu.prefetch cimport prefetch

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
                prefetch(&offsets[offset + rows[j + AHEAD]])
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
                prefetch(source + starts[j + AHEAD])
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


# ---- columns of several chunks ----------------------------------------------------------
# A table read from several files or row groups holds each column as several chunks;
# gathering from them in place spares a combined copy of the whole table. ``chunk_rows``
# says, once per layout, which chunk holds each row and where in it; the gathers below
# then read each row from its chunk, checking both against the chunks they are given.

def chunk_rows(const int64_t[::1] bounds, const int64_t[::1] rows, int32_t[::1] which,
               int64_t[::1] local) -> None:
    """For each of ``rows`` (rows of the whole column), the chunk that holds it
    (``which``) and its row there (``local``); ``bounds`` are the chunks' first rows and
    the column's length after them (ascending). IndexError for a row outside."""
    cdef Py_ssize_t n = rows.shape[0], nchunks = bounds.shape[0] - 1, j, c, b, nbuckets
    cdef Py_ssize_t bad = -1
    cdef int64_t r, total
    cdef int shift = 0
    cdef int32_t *first
    if nchunks < 1 or nchunks >= (1 << 31) or which.shape[0] != n or local.shape[0] != n:
        raise ValueError("chunk_rows: bounds must hold one chunk or more, which and local "
                         "len(rows)")
    total = bounds[nchunks]
    for c in range(nchunks):
        if bounds[c] > bounds[c + 1] or bounds[c] < 0:
            raise ValueError("chunk_rows: bounds must ascend from 0 or more")
    # The chunk holding each bucket's first row, buckets of 2**shift rows, at most 4096
    # of them: a row's chunk is then its bucket's or a few after (a binary search per
    # row, its branches unpredictable, took twice the gathers' time).
    while (total >> shift) >= 4096:
        shift += 1
    nbuckets = (total >> shift) + 1
    first = <int32_t *>malloc(nbuckets * sizeof(int32_t))
    if first == NULL:
        raise MemoryError()
    c = 0
    for b in range(nbuckets):
        while c < nchunks - 1 and bounds[c + 1] <= (<int64_t>b << shift):
            c += 1
        first[b] = <int32_t>c
    with nogil:
        for j in range(n):
            r = rows[j]
            if r < 0 or r >= total:
                bad = j
                break
            c = first[r >> shift]
            while bounds[c + 1] <= r:
                c += 1
            which[j] = <int32_t>c
            local[j] = r - bounds[c]
    free(first)
    if bad >= 0:
        raise IndexError(f"row {rows[bad]} is outside a column of {total}")


cdef const uint8_t **chunk_pointers(list chunks, const int64_t[::1] counts,
                                    Py_ssize_t unit) except NULL:
    """The first byte of each chunk's buffer (uint8 arrays; None for an empty one), each
    checked to hold ``counts[c] * unit`` bytes. The caller frees the array and keeps
    ``chunks`` alive."""
    cdef Py_ssize_t c, nchunks = len(chunks)
    cdef const uint8_t[::1] view
    cdef const uint8_t **pointers
    if counts.shape[0] != nchunks:
        raise ValueError("one count a chunk")
    pointers = <const uint8_t **>malloc((nchunks if nchunks else 1) * sizeof(uint8_t *))
    if pointers == NULL:
        raise MemoryError()
    try:
        for c in range(nchunks):
            pointers[c] = NULL
            if chunks[c] is None:
                if counts[c] * unit:
                    raise ValueError(f"chunk {c} has no buffer")
                continue
            view = chunks[c]
            if counts[c] < 0 or view.shape[0] < counts[c] * unit:
                raise ValueError(f"chunk {c} holds {view.shape[0]} bytes, not "
                                 f"{counts[c] * unit}")
            if view.shape[0]:
                pointers[c] = &view[0]
    except BaseException:
        free(pointers)
        raise
    return pointers


cdef inline bint outside(const int32_t *which, const int64_t *local, Py_ssize_t j,
                         Py_ssize_t nchunks, const int64_t[::1] sizes) noexcept nogil:
    # (one unsigned compare each: a negative value is a large one)
    return <uint32_t>which[j] >= <uint32_t>nchunks \
        or <uint64_t>local[j] >= <uint64_t>sizes[which[j]]


def gather_fixed_chunks(list chunks, const int64_t[::1] sizes, Py_ssize_t width,
                        const int32_t[::1] which, const int64_t[::1] local,
                        uint8_t[::1] out) -> None:
    """Copy the ``width``-byte value of row ``local[j]`` of chunk ``which[j]`` (uint8
    arrays of ``sizes`` values each) to value j of ``out``: the rows ``chunk_rows``
    gave."""
    cdef Py_ssize_t n = which.shape[0], j, nchunks = len(chunks), bad = -1
    cdef const uint8_t **source
    cdef uint8_t *target = &out[0] if out.shape[0] else NULL
    if width < 1 or local.shape[0] != n or out.shape[0] < n * width:
        raise ValueError("gather_fixed_chunks: out must hold len(which) values")
    source = chunk_pointers(chunks, sizes, width)
    try:
        with nogil:
            for j in range(n):
                if outside(&which[0], &local[0], j, nchunks, sizes):
                    bad = j
                    break
                if j + AHEAD < n and <uint32_t>which[j + AHEAD] < <uint32_t>nchunks:
                    prefetch(source[which[j + AHEAD]] + local[j + AHEAD] * width)
                if width == 8:
                    memcpy(target + j * 8, source[which[j]] + local[j] * 8, 8)
                elif width == 4:
                    memcpy(target + j * 4, source[which[j]] + local[j] * 4, 4)
                else:
                    memcpy(target + j * width, source[which[j]] + local[j] * width,
                           <size_t>width)
    finally:
        free(source)
    if bad >= 0:
        raise IndexError(f"chunk {which[bad]} row {local[bad]} is outside the chunks")


def gather_offsets_chunks(list chunk_offsets, const int64_t[::1] sizes,
                          const int32_t[::1] which, const int64_t[::1] local,
                          offset_t[::1] out, int64_t[::1] starts) -> int:
    """``gather_offsets`` over chunks: chunk c's offsets from its own first row, its
    ``sizes[c] + 1`` offsets as a uint8 array of their bytes; the rows ``chunk_rows``
    gave. ``starts`` get where each value starts in its chunk's data. Returns the total,
    or -1 past what ``offset_t`` holds."""
    cdef Py_ssize_t n = which.shape[0], j, c, nchunks = len(chunk_offsets), bad = -1
    cdef const uint8_t **source
    cdef const offset_t *offs
    cdef int64_t at = 0, limit = (1 << 31) - 1 if offset_t is int32_t else (1 << 62)
    cdef int64_t[::1] counts
    if local.shape[0] != n or out.shape[0] != n + 1 or starts.shape[0] != n \
            or sizes.shape[0] != nchunks:
        raise ValueError("gather_offsets_chunks: out must hold len(which) + 1 offsets, "
                         "starts len(which)")
    counts = cvarray(shape=(nchunks if nchunks else 1,), itemsize=sizeof(int64_t), format="q")
    for c in range(nchunks):
        counts[c] = sizes[c] + 1
    source = chunk_pointers(chunk_offsets, counts[:nchunks], sizeof(offset_t))
    try:
        with nogil:
            out[0] = 0
            for j in range(n):
                if outside(&which[0], &local[0], j, nchunks, sizes):
                    bad = j
                    break
                if j + AHEAD < n and <uint32_t>which[j + AHEAD] < <uint32_t>nchunks:
                    prefetch(source[which[j + AHEAD]]
                                    + local[j + AHEAD] * <Py_ssize_t>sizeof(offset_t))
                offs = <const offset_t *>source[which[j]]
                starts[j] = offs[local[j]]
                at += offs[local[j] + 1] - starts[j]
                if at > limit:
                    at = -1
                    break
                out[j + 1] = <offset_t>at
    finally:
        free(source)
    if bad >= 0:
        raise IndexError(f"chunk {which[bad]} row {local[bad]} is outside the chunks")
    return at


def gather_bytes_chunks(list chunk_data, const int64_t[::1] data_sizes,
                        const int32_t[::1] which, const int64_t[::1] starts,
                        const offset_t[::1] out_offsets, uint8_t[::1] out) -> None:
    """``gather_bytes`` over chunks: value j starts at ``starts[j]`` in chunk
    ``which[j]``'s data (``data_sizes[c]`` bytes; None for none), its length from
    ``out_offsets`` (``gather_offsets_chunks``')."""
    cdef Py_ssize_t n = which.shape[0], j, nchunks = len(chunk_data), bad = -1
    cdef const uint8_t **source
    cdef int64_t length
    cdef uint8_t *target = &out[0] if out.shape[0] else NULL
    if starts.shape[0] != n or out_offsets.shape[0] != n + 1 or out.shape[0] < out_offsets[n]:
        raise ValueError("gather_bytes_chunks: out is smaller than the values")
    source = chunk_pointers(chunk_data, data_sizes, 1)
    try:
        with nogil:
            for j in range(n):
                length = out_offsets[j + 1] - out_offsets[j]
                if length == 0:
                    continue
                if which[j] < 0 or which[j] >= nchunks or starts[j] < 0 or length < 0 \
                        or starts[j] + length > data_sizes[which[j]]:
                    bad = j
                    break
                if j + AHEAD < n and 0 <= which[j + AHEAD] < nchunks and 0 <= starts[j + AHEAD] \
                        and starts[j + AHEAD] < data_sizes[which[j + AHEAD]]:
                    prefetch(source[which[j + AHEAD]] + starts[j + AHEAD])
                memcpy(target + out_offsets[j], source[which[j]] + starts[j], <size_t>length)
    finally:
        free(source)
    if bad >= 0:
        raise ValueError(f"gather_bytes_chunks: value {bad} lies outside its chunk's data")


def gather_bits_chunks(list bitmaps, const int64_t[::1] bit_offsets,
                       const int64_t[::1] sizes, const int32_t[::1] which,
                       const int64_t[::1] local, uint8_t[::1] out) -> int:
    """``gather_bits`` over chunks: chunk c's bits from bit ``bit_offsets[c]`` of
    ``bitmaps[c]`` (a uint8 array, or None: every bit 1), into ``out`` (zeroed); how
    many bits were 0."""
    cdef Py_ssize_t n = which.shape[0], j, c, nchunks = len(bitmaps), nulls = 0, bad = -1
    cdef const uint8_t **source
    cdef const uint8_t *bits
    cdef int64_t bit
    cdef int64_t[::1] counts
    if bit_offsets.shape[0] != nchunks or sizes.shape[0] != nchunks \
            or local.shape[0] != n or out.shape[0] * 8 < n:
        raise ValueError("gather_bits_chunks: one bitmap a chunk, out of one bit a row")
    # the bytes each bitmap must hold: through its chunk's last bit (none without one)
    counts = cvarray(shape=(nchunks if nchunks else 1,), itemsize=sizeof(int64_t), format="q")
    for c in range(nchunks):
        if bit_offsets[c] < 0:
            raise ValueError(f"chunk {c}'s bitmap starts before its first bit")
        counts[c] = 0 if bitmaps[c] is None else (bit_offsets[c] + sizes[c] + 7) >> 3
    source = chunk_pointers(bitmaps, counts[:nchunks], 1)
    try:
        with nogil:
            for j in range(n):
                if outside(&which[0], &local[0], j, nchunks, sizes):
                    bad = j
                    break
                bits = source[which[j]]
                if bits == NULL:   # (no bitmap: every row valid)
                    out[j >> 3] |= <uint8_t>(1 << (j & 7))
                    continue
                bit = bit_offsets[which[j]] + local[j]
                if (bits[bit >> 3] >> (bit & 7)) & 1:
                    out[j >> 3] |= <uint8_t>(1 << (j & 7))
                else:
                    nulls += 1
    finally:
        free(source)
    if bad >= 0:
        raise IndexError(f"chunk {which[bad]} row {local[bad]} is outside the chunks")
    return nulls
