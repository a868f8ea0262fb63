# cython: boundscheck=False, wraparound=False
"""Per-element string kernels for ``zorder.ordered.strings``: Java's UTF-8 encoder, without
building intermediate ``bytes`` objects.

Both write whole UTF-8 characters from the start of each output row, stopping at the first
character that does not fit in the row and at the first unpaired surrogate, exactly as
``string_to_ordered_bytes``. A high surrogate followed by a low one is one character, as
in Java's UTF-16. Output rows must be zero on entry; bytes after the last character are
left alone.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) nogil
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    bint PyUnicode_Check(object o)


# What _next returns for an unpaired surrogate (no code point is this large).
cdef uint32_t UNPAIRED = 0xFFFFFFFFU


cdef inline Py_ssize_t _put(uint8_t* row, Py_ssize_t pos, Py_ssize_t length,
                            uint32_t cp) noexcept nogil:
    """Write code point ``cp`` at ``pos`` if it fits whole; the new position, or -1."""
    if cp < 0x80:
        if pos + 1 > length:
            return -1
        row[pos] = <uint8_t>cp
        return pos + 1
    if cp < 0x800:
        if pos + 2 > length:
            return -1
        row[pos] = <uint8_t>(0xC0 | (cp >> 6))
        row[pos + 1] = <uint8_t>(0x80 | (cp & 0x3F))
        return pos + 2
    if cp < 0x10000:
        if pos + 3 > length:
            return -1
        row[pos] = <uint8_t>(0xE0 | (cp >> 12))
        row[pos + 1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
        row[pos + 2] = <uint8_t>(0x80 | (cp & 0x3F))
        return pos + 3
    if pos + 4 > length:
        return -1
    row[pos] = <uint8_t>(0xF0 | (cp >> 18))
    row[pos + 1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
    row[pos + 2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
    row[pos + 3] = <uint8_t>(0x80 | (cp & 0x3F))
    return pos + 4


cdef inline uint32_t _next(uint32_t cp, uint32_t following, bint has_following,
                           Py_ssize_t* step) noexcept nogil:
    """The character at a position: a code point, a joined surrogate pair (step 2), or
    UNPAIRED for an unpaired surrogate (where Java's encoder stops)."""
    step[0] = 1
    if cp < 0xD800 or cp > 0xDFFF:
        return cp
    if cp <= 0xDBFF and has_following and 0xDC00 <= following <= 0xDFFF:
        step[0] = 2
        return 0x10000 + ((cp - 0xD800) << 10) + (following - 0xDC00)
    return UNPAIRED


def encode_objects(list items, Py_ssize_t length, uint8_t[:, ::1] out, uint8_t[::1] other):
    """Rows of ``out`` for a list of str (STRING) and exact bytes (BINARY) objects.

    Any other object (None, NaN, bytearray, ...; subclasses of str and bytes are fine) is not written and
    flagged in ``other`` for the caller to classify. Returns (strings, bytes) counts.
    """
    cdef Py_ssize_t n = PyList_GET_SIZE(items)
    cdef Py_ssize_t i, j, m, pos, step, size
    cdef Py_ssize_t n_str = 0, n_bytes = 0
    cdef int kind
    cdef void* data
    cdef uint32_t cp, following
    cdef uint8_t* row
    cdef object item
    if out.shape[0] != n or other.shape[0] != n:
        raise ValueError("encode_objects: out and other must have one row per item")
    for i in range(n):
        item = <object>PyList_GET_ITEM(items, i)
        row = &out[i, 0] if length else NULL
        if PyUnicode_Check(item):
            n_str += 1
            if length == 0:
                continue
            kind = PyUnicode_KIND(item)
            data = PyUnicode_DATA(item)
            m = PyUnicode_GET_LENGTH(item)
            pos = 0
            j = 0
            while j < m:
                cp = PyUnicode_READ(kind, data, j)
                following = PyUnicode_READ(kind, data, j + 1) if j + 1 < m else 0
                cp = _next(cp, following, j + 1 < m, &step)
                if cp == UNPAIRED:
                    break
                pos = _put(row, pos, length, cp)
                if pos < 0 or pos == length:
                    break
                j += step
        elif PyBytes_Check(item):
            n_bytes += 1
            size = PyBytes_GET_SIZE(item)
            if size > length:
                size = length
            if size:
                memcpy(row, PyBytes_AS_STRING(item), size)
        else:
            other[i] = 1
    return n_str, n_bytes


def encode_ucs4(const uint32_t[:, ::1] chars, Py_ssize_t length, uint8_t[:, ::1] out):
    """Rows of ``out`` for a numpy 'U' array seen as (N, width) UCS-4 code points.

    numpy strips trailing NULs, which is harmless: a NUL encodes as a zero byte.
    """
    cdef Py_ssize_t n = chars.shape[0], width = chars.shape[1]
    cdef Py_ssize_t i, j, pos, step
    cdef uint32_t cp, following
    cdef uint8_t* row
    if out.shape[0] != n:
        raise ValueError("encode_ucs4: out must have one row per string")
    if length == 0 or width == 0:
        return
    with nogil:
        for i in range(n):
            row = &out[i, 0]
            pos = 0
            j = 0
            while j < width:
                cp = chars[i, j]
                following = chars[i, j + 1] if j + 1 < width else 0
                cp = _next(cp, following, j + 1 < width, &step)
                if cp == UNPAIRED or cp > 0x10FFFF:
                    break
                pos = _put(row, pos, length, cp)
                if pos < 0 or pos == length:
                    break
                j += step


def gather(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] lens,
           Py_ssize_t length, bint utf8, uint8_t[:, ::1] out):
    """Row i of ``out`` = ``data[starts[i] : starts[i] + lens[i]]``, truncated to ``length``.

    The layout of Arrow's string and binary arrays. With ``utf8`` a character cut by the
    truncation is dropped whole, as Java's encoder drops one that does not fit. The
    caller checks that every slice lies inside ``data``.
    """
    cdef Py_ssize_t n = starts.shape[0], i, take
    cdef const uint8_t* src
    if out.shape[0] != n or lens.shape[0] != n:
        raise ValueError("gather: starts, lens and out must have one row per value")
    if length == 0:
        return
    with nogil:
        for i in range(n):
            if lens[i] <= 0:
                continue
            src = &data[0] + starts[i]
            take = lens[i]
            if take > length:
                take = length
                if utf8:
                    # src[take] is the first byte left out; while it continues a
                    # character, that character does not fit: back off to its lead byte
                    while take > 0 and (src[take] & 0xC0) == 0x80:
                        take -= 1
            if take:
                memcpy(&out[i, 0], src, take)
