# cython: boundscheck=False, wraparound=False, cdivision=True
"""Decode Z-values: the inverse of Iceberg's interleaveBits.

Iceberg has no decoder. Interleaving is a fixed permutation of bits once the column
widths are known (bit 7 of byte 0 of every column, then bit 6, ..., then byte 1; a
column without a byte at the current index is skipped), so decoding reads the bits
back in the same order. Ragged widths work the same way as uniform ones.

Up to 8 columns, the Z-value is read in groups: byte index i of the k columns that
have one fills exactly k Z bytes, and a 256-entry table of 64-bit words per (k, byte of
the group) gives the bits each byte value puts in each column, one lane per column; a
group costs k lookups (70 ms for 1M rows of 4 x 8 bytes here). With more columns, each
Z byte's bits go to at most 8 (column, byte) targets through one 256-entry table per
target. The plans are built from the widths once and cached.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memset

import numpy

from zorder.values.codec import as_matrix

__all__ = ["deinterleave_bits", "deinterleave_rows"]


# A column of Iceberg's is a Java byte array: at most 2**31 - 1 bytes.
MAX_WIDTH = 2**31 - 1


def _check_widths(widths):
    if isinstance(widths, (str, bytes, bytearray)) or not hasattr(widths, "__iter__"):
        raise TypeError(
            f"widths must be a sequence of ints (bytes per column), not {type(widths).__name__}"
        )
    checked = []
    for i, w in enumerate(widths):
        if isinstance(w, bool) or not hasattr(w, "__index__"):
            raise TypeError(f"widths[{i}] must be an int, not {type(w).__name__}")
        w = w.__index__()
        if w < 0:
            raise ValueError(f"widths[{i}] must be >= 0, got {w}")
        if w > MAX_WIDTH:
            raise ValueError(f"widths[{i}] must be at most {MAX_WIDTH} bytes, got {w}")
        checked.append(w)
    if not checked:
        raise ValueError("widths is empty: at least one column is needed")
    return checked


cdef dict _table_cache = {}
cdef Py_ssize_t TABLE_CACHE_SIZE = 64


def _tables(widths, Py_ssize_t size):
    """Per interleaved byte j: targets[starts[j]:starts[j+1]] (flat offsets into an
    output row of sum(widths) bytes) and each target's 256-entry table of output bits."""
    key = (tuple(widths), size)
    hit = _table_cache.get(key)
    if hit is not None:
        return hit
    cdef Py_ssize_t ncols = len(widths), c, j, k, t, v, dest, byte_index = 0, produced = 0
    cdef Py_ssize_t longest = max(widths)
    cdef int bit
    offsets = numpy.zeros(ncols, dtype=numpy.intp)
    cdef Py_ssize_t[::1] off = offsets
    cdef Py_ssize_t[::1] wid = numpy.asarray(widths, dtype=numpy.intp)
    for c in range(1, ncols):
        off[c] = off[c - 1] + wid[c - 1]
    # dest[k], bitpos[k] for interleaved bit k: Iceberg's source order.
    dests = numpy.empty(size * 8, dtype=numpy.intp)
    bits = numpy.empty(size * 8, dtype=numpy.intp)
    cdef Py_ssize_t[::1] d = dests
    cdef Py_ssize_t[::1] b = bits
    while produced < size * 8 and byte_index < longest:
        bit = 7
        while bit >= 0 and produced < size * 8:
            for c in range(ncols):
                if byte_index < wid[c] and produced < size * 8:
                    d[produced] = off[c] + byte_index
                    b[produced] = bit
                    produced += 1
            bit -= 1
        byte_index += 1
    starts_arr = numpy.zeros(size + 1, dtype=numpy.intp)
    targets_arr = numpy.empty(size * 8, dtype=numpy.intp)
    table_arr = numpy.zeros((size * 8, 256), dtype=numpy.uint8)
    cdef Py_ssize_t[::1] starts = starts_arr
    cdef Py_ssize_t[::1] targets = targets_arr
    cdef uint8_t[:, ::1] table = table_arr
    cdef Py_ssize_t ntargets = 0, first
    for j in range(size):
        first = ntargets
        for k in range(8):
            dest = d[j * 8 + k]
            t = first
            while t < ntargets and targets[t] != dest:
                t += 1
            if t == ntargets:
                targets[t] = dest
                ntargets += 1
            for v in range(256):
                if v & (0x80 >> k):
                    table[t, v] |= <uint8_t>(1 << b[j * 8 + k])
        starts[j + 1] = ntargets
    result = (starts_arr, targets_arr[:ntargets].copy(), table_arr[:ntargets].copy())
    if len(_table_cache) >= TABLE_CACHE_SIZE:
        _table_cache.clear()
    _table_cache[key] = result
    return result


cdef void decode_rows(const uint8_t[:, :] values, const Py_ssize_t[:] starts,
                      const Py_ssize_t[:] targets, const uint8_t[:, :] table,
                      uint8_t[:, ::1] out) noexcept nogil:
    cdef Py_ssize_t r, j, t, nrows = values.shape[0], size = values.shape[1]
    cdef Py_ssize_t width = out.shape[1]
    cdef uint8_t v
    cdef uint8_t* row
    for r in range(nrows):
        row = &out[r, 0] if width else NULL
        if width:
            memset(row, 0, width)
        for j in range(size):
            v = values[r, j]
            if v == 0:
                continue
            for t in range(starts[j], starts[j + 1]):
                row[targets[t]] |= table[t, v]


# GROUP[k - 1][j][v]: the bits that byte value v at position j of a k-byte group (the
# byte index shared by k columns) gives each column: column lane c in byte c of the word.
cdef uint64_t GROUP[8][8][256]


cdef void _fill_group_tables() noexcept:
    cdef int k, j, v, q, p, lane, bit
    cdef uint64_t w
    for k in range(1, 9):
        for j in range(k):
            for v in range(256):
                w = 0
                for q in range(8):
                    if v & (0x80 >> q):
                        p = 8 * j + q          # bit p of the group, from its MSB
                        lane = p % k
                        bit = 7 - p // k
                        w |= (<uint64_t>1) << (8 * lane + bit)
                GROUP[k - 1][j][v] = w


_fill_group_tables()


def _group_plan(widths, Py_ssize_t size):
    """Per byte index i (a group): its column count k, the Z bytes it has (fewer in a
    truncated last group), its first Z byte, and where each lane goes in an output row."""
    key = ("groups", tuple(widths), size)
    hit = _table_cache.get(key)
    if hit is not None:
        return hit
    offsets = []
    running = 0
    for w in widths:
        offsets.append(running)
        running += w
    ks, avail, zstart, dest = [], [], [], []
    start = 0
    i = 0
    while start < size:
        cols = [c for c, w in enumerate(widths) if w > i]
        ks.append(len(cols))
        avail.append(min(len(cols), size - start))
        zstart.append(start)
        dest.extend([offsets[c] + i for c in cols] + [0] * (8 - len(cols)))
        start += len(cols)
        i += 1
    result = (numpy.asarray(ks, dtype=numpy.intp), numpy.asarray(avail, dtype=numpy.intp),
              numpy.asarray(zstart, dtype=numpy.intp), numpy.asarray(dest, dtype=numpy.intp))
    if len(_table_cache) >= TABLE_CACHE_SIZE:
        _table_cache.clear()
    _table_cache[key] = result
    return result


cdef void decode_groups(const uint8_t[:, :] values, const Py_ssize_t[::1] ks,
                        const Py_ssize_t[::1] avail, const Py_ssize_t[::1] zstart,
                        const Py_ssize_t[::1] dest, uint8_t[:, ::1] out) noexcept nogil:
    """At most 8 columns: each group's bytes looked up as one 64-bit word of lanes."""
    cdef Py_ssize_t r, g, j, c, k, nrows = values.shape[0], ngroups = ks.shape[0]
    cdef Py_ssize_t width = out.shape[1]
    cdef uint64_t w
    cdef uint8_t* row
    for r in range(nrows):
        row = &out[r, 0]
        memset(row, 0, width)
        for g in range(ngroups):
            k = ks[g]
            w = 0
            for j in range(avail[g]):
                w |= GROUP[k - 1][j][values[r, zstart[g] + j]]
            for c in range(k):
                row[dest[g * 8 + c]] = <uint8_t>(w >> (8 * c))


def deinterleave_rows(values, widths):
    """Split many Z-values back into their columns' bytes: the inverse of interleave_rows.

    Args:
        values: the Z-values, a 2-D uint8 array (N, size) (any strides), or a pyarrow
            FixedSizeBinary array such as ``zorder_values`` returns for Arrow input.
        widths: bytes per column, in the order the columns were interleaved (uniform or
            ragged), e.g. ``[8, 8, 16]`` for BIGINT, DOUBLE and a STRING at
            var_length_contribution=16.

    A truncated Z-value (``size`` below ``sum(widths)``, as Iceberg's ``max-output-size``
    gives) is accepted: the bits it lacks come back as 0, so each column gets the prefix
    of its bits that survived. ``size`` above ``sum(widths)`` is a ValueError, and so is a
    non-empty value with ``widths[0] == 0`` (interleave_bits rejects that input too).

    Returns:
        a list with one (N, widths[c]) uint8 array per column. They are views into one
        C-contiguous (N, sum(widths)) block, column after column.

    Example:
        >>> import numpy as np
        >>> z = np.array([[0x88, 0x80, 0x00]], dtype=np.uint8)
        >>> [c.tolist() for c in deinterleave_rows(z, [1, 1, 1])]
        [[[128]], [[64]], [[32]]]
    """
    w = _check_widths(widths)
    arr = as_matrix(values)
    nrows, size = arr.shape[0], arr.shape[1]
    total = sum(w)
    if size > total:
        raise ValueError(
            f"values have {size} bytes per row, more than sum(widths)={total}"
        )
    if size and w[0] == 0:
        raise ValueError("widths[0] must be >= 1 when values are not empty "
                         "(interleave_bits rejects an empty first column)")
    out = numpy.empty((nrows, total), dtype=numpy.uint8)
    if nrows:
        if size == 0:
            out[...] = 0
        else:
            if arr.shape[1] > 1 and arr.strides[1] != 1:
                arr = numpy.ascontiguousarray(arr)
            if len(w) <= 8:
                ks, avail, zstart, dest = _group_plan(w, size)
                decode_groups(arr, ks, avail, zstart, dest, out)
            else:
                starts, targets, table = _tables(w, size)
                decode_rows(arr, starts, targets, table, out)
    columns = []
    offset = 0
    for width in w:
        columns.append(out[:, offset:offset + width])
        offset += width
    return columns


def deinterleave_bits(value, widths):
    """Split one Z-value back into its columns' bytes: the inverse of interleave_bits.

    Args:
        value: a bytes-like Z-value (bytes, bytearray, memoryview, 1-D uint8 array).
        widths: bytes per column, in interleave order (uniform or ragged).

    A truncated value (fewer than ``sum(widths)`` bytes) decodes with its missing bits
    as 0; a longer one is a ValueError. See deinterleave_rows.

    Returns:
        a list of ``bytes``, one per column, of lengths ``widths``.

    Example:
        >>> deinterleave_bits(bytes.fromhex("888000"), [1, 1, 1])
        [b'\\x80', b'@', b' ']
    """
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(f"value must be bytes-like, not {type(value).__name__}") from None
    if view.ndim != 1:
        raise ValueError(f"value must be 1-D, got {view.ndim}-D")
    if view.itemsize != 1 or view.format not in ("B", "b", "c"):
        raise TypeError(f"value must hold bytes, not item format {view.format!r}")
    row = numpy.frombuffer(view.tobytes(), dtype=numpy.uint8).reshape(1, -1)
    return [c[0].tobytes() for c in deinterleave_rows(row, widths)]
