# cython: boundscheck=False, wraparound=False, cdivision=True
"""Decode Z-values: the inverse of Iceberg's interleaveBits.

Iceberg has no decoder. Interleaving is a fixed permutation of bits once the column
widths are known (bit 7 of byte 0 of every column, then bit 6, ..., then byte 1; a
column without a byte at the current index is skipped), so decoding reads the bits
back in the same order. Ragged widths work the same way as uniform ones.

The Z-value is read in groups: byte index i of the k columns that have one fills exactly
k Z bytes. Up to 8 columns, a 256-entry table of 64-bit words per (k, byte of the group)
gives the bits each byte value puts in each column, one lane per column; a group costs k
lookups (70 ms for 1M rows of 4 x 8 bytes here). A wider group is read 8 columns at a
time, bit plane by bit plane (plane t holds bit 7 - t of every column: k consecutive
bits), 8 lookups per 8 columns. The plan (where each group's lanes
go) is built from the widths in linear memory and cached within a byte budget.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memset

import threading
from collections import OrderedDict

import numpy

from zorder.ordered.column import is_unordered
from zorder.values.codec import as_matrix

__all__ = ["deinterleave_bits", "deinterleave_rows"]


# A column of Iceberg's is a Java byte array: at most 2**31 - 1 bytes.
MAX_WIDTH = 2**31 - 1


def _check_widths(widths):
    if isinstance(widths, (str, bytes, bytearray)) or not hasattr(widths, "__iter__"):
        raise TypeError(
            f"widths must be a sequence of ints (bytes per column), not {type(widths).__name__}"
        )
    if is_unordered(widths):
        raise TypeError(
            f"widths must be a sequence in the columns' order, not {type(widths).__name__}: "
            f"a set's or mapping's order is not one you chose"
        )
    if getattr(widths, "ndim", 1) != 1:
        raise ValueError(f"widths must be 1-D (bytes per column), got shape {widths.shape}")
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


# Plans are cached by (widths, size), least recently used first out, within a byte budget:
# a plan costs about 8 bytes per output byte, so a count of entries would not bound it.
PLAN_CACHE_BYTES = 16 << 20
_plan_cache = OrderedDict()
_plan_cache_bytes = 0
_plan_lock = threading.Lock()


def _plan_nbytes(plan):
    return sum(a.nbytes for a in plan)


def _plan(widths, Py_ssize_t size):
    """Per group g (byte index g, shared by the ks[g] columns at least g + 1 bytes wide):
    how many of its Z bytes exist (avail, fewer in a truncated last group), its first Z
    byte, and where dest[dstart[g]:dstart[g] + ks[g]] its lanes go in an output row.

    Linear memory: one entry per output byte (the lane order is a stable sort of the
    output positions by byte index), and only the groups that ``size`` reaches."""
    global _plan_cache_bytes
    key = (tuple(widths), size)
    with _plan_lock:
        hit = _plan_cache.get(key)
        if hit is not None:
            _plan_cache.move_to_end(key)
            return hit
    # A column's bytes past index size - 1 are never in a Z-value of size bytes.
    clipped = numpy.minimum(numpy.asarray(widths, dtype=numpy.intp), size)
    position = numpy.arange(int(clipped.sum()), dtype=numpy.intp)
    starts = numpy.repeat(numpy.cumsum(clipped) - clipped, clipped)
    full_starts = numpy.repeat(numpy.cumsum(widths) - numpy.asarray(widths, numpy.intp), clipped)
    byte_index = position - starts
    order = numpy.argsort(byte_index, kind="stable")   # by byte index, then column order
    dest = (full_starts + byte_index)[order]
    ks = numpy.bincount(byte_index, minlength=1).astype(numpy.intp)
    ends = numpy.cumsum(ks)
    ngroups = int(numpy.searchsorted(ends, size, side="left")) + 1
    ks = ks[:ngroups]
    zstart = ends[:ngroups] - ks
    avail = numpy.minimum(ks, size - zstart)
    dest = numpy.ascontiguousarray(dest[:int(ends[ngroups - 1])])
    plan = (ks, avail, numpy.ascontiguousarray(zstart), dest)
    nbytes = _plan_nbytes(plan)
    if nbytes <= PLAN_CACHE_BYTES // 4:
        with _plan_lock:
            if key not in _plan_cache:
                _plan_cache[key] = plan
                _plan_cache_bytes += nbytes
            while _plan_cache_bytes > PLAN_CACHE_BYTES:
                _, old = _plan_cache.popitem(last=False)
                _plan_cache_bytes -= _plan_nbytes(old)
    return plan


# GROUP[k - 1][j][v]: the bits that byte value v at position j of a k-byte group (the
# byte index shared by k columns) gives each column: column lane c in byte c of the word.
cdef uint64_t GROUP[8][8][256]
# SPREAD[v]: bit 7 - c of v moved to bit 0 of byte c (lane c), for the wider groups.
cdef uint64_t SPREAD[256]


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
    for v in range(256):
        w = 0
        for q in range(8):
            if v & (0x80 >> q):
                w |= (<uint64_t>1) << (8 * q)
        SPREAD[v] = w


_fill_group_tables()


cdef inline uint64_t _wide_lanes(const uint8_t* z, Py_ssize_t k, Py_ssize_t avail,
                                 Py_ssize_t first, Py_ssize_t lanes) noexcept nogil:
    """Lanes first .. first + lanes - 1 (at most 8) of a group of k > 8 columns: bit
    plane t holds bit 7 - t of every column, k bits from group bit t * k, so each plane
    gives these lanes one 8-bit field (from two bytes at most), spread by SPREAD.
    Kept in a register: OR-ing lanes into memory a Z byte at a time was 5x slower."""
    cdef Py_ssize_t t, s, q
    cdef unsigned int window, field
    cdef unsigned int keep = (0xFF00 >> lanes) & 0xFF
    cdef uint64_t w = 0
    for t in range(8):
        s = t * k + first
        q = s >> 3
        window = (<unsigned int>z[q] << 8) if q < avail else 0
        if q + 1 < avail:
            window |= z[q + 1]
        field = ((window << (s & 7)) >> 8) & keep
        w |= SPREAD[field] << (7 - t)
    return w


cdef void decode_plan(const uint8_t[:, :] values, const Py_ssize_t[::1] ks,
                      const Py_ssize_t[::1] avail, const Py_ssize_t[::1] zstart,
                      const Py_ssize_t[::1] dest, uint8_t[:, ::1] out) noexcept nogil:
    """Each group's bytes into its lanes, one table lookup per Z byte: by GROUP (lanes as
    one 64-bit word) for up to 8 columns, 8 lanes per 8 bit planes (_wide_lanes) for more."""
    cdef Py_ssize_t r, g, j, c, k, d, m, lanes, nrows = values.shape[0], ngroups = ks.shape[0]
    cdef Py_ssize_t width = out.shape[1]
    cdef uint64_t w
    cdef uint8_t* row
    cdef const uint8_t* z
    for r in range(nrows):
        row = &out[r, 0]
        memset(row, 0, width)
        d = 0
        for g in range(ngroups):
            k = ks[g]
            z = &values[r, zstart[g]]
            if k <= 8:
                w = 0
                for j in range(avail[g]):
                    w |= GROUP[k - 1][j][z[j]]
                for c in range(k):
                    row[dest[d + c]] = <uint8_t>(w >> (8 * c))
            else:
                for m in range(0, k, 8):
                    lanes = k - m if k - m < 8 else 8
                    w = _wide_lanes(z, k, avail[g], m, lanes)
                    for c in range(lanes):
                        row[dest[d + m + c]] = <uint8_t>(w >> (8 * c))
            d += k


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
                arr = numpy.ascontiguousarray(arr)  # the decoder walks a row by pointer
            ks, avail, zstart, dest = _plan(w, size)
            decode_plan(arr, ks, avail, zstart, dest, out)
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
    # (the encoders' rule, interleave's is_byte_format: uint8 or char, any byte order)
    if view.itemsize != 1 or view.format.lstrip("@=<>!") not in ("B", "c"):
        raise TypeError(f"value must hold uint8 bytes, not item format {view.format!r}")
    row = numpy.frombuffer(view.tobytes(), dtype=numpy.uint8).reshape(1, -1)
    return [c[0].tobytes() for c in deinterleave_rows(row, widths)]
