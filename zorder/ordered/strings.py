"""String and binary columns as ordered bytes, with the compiled kernels and their
plain-Python twin chosen in one place (``_kernels``; None runs the twin, which is also the
kernels' oracle in the tests)."""

from __future__ import annotations

from typing import Any, Tuple

import numpy

from zorder.ordered.errors import ColumnTypeError, ColumnValueError
from zorder.ordered.scalar import byte_truncate_or_fill, utf8_prefix

try:
    from zorder.ordered import _strings as _kernels
except ImportError:  # not built (yet): the plain-Python string path gives the same bytes
    _kernels = None  # type: ignore[assignment]


_ROW_CHUNK = 1 << 16  # rows per gather step for strings: bounds the index matrix


def gather(data: numpy.ndarray, starts: numpy.ndarray, lens: numpy.ndarray, length: int,
           utf8: bool) -> numpy.ndarray:
    """Rows ``data[starts[i] : starts[i] + lens[i]]`` truncated or zero-filled to ``length``.

    With ``utf8``, a character cut by the truncation is dropped whole (its lead byte and
    continuation bytes become zeros), as Java's encoder drops one that does not fit.
    """
    n = starts.shape[0]
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    if n == 0 or length == 0 or data.shape[0] == 0:
        return out
    if _kernels is not None:
        # gather reads only inside each slice (the byte after a cut is still in it)
        if ((lens > 0) & ((starts < 0) | (starts + lens > data.shape[0]))).any():
            raise ColumnValueError("string offsets outside the data buffer")
        _kernels.gather(data, numpy.ascontiguousarray(starts, dtype=numpy.int64),
                        numpy.ascontiguousarray(lens, dtype=numpy.int64), length, utf8, out)
        return out
    cols = numpy.arange(length, dtype=numpy.int64)
    for lo in range(0, n, _ROW_CHUNK):
        hi = min(lo + _ROW_CHUNK, n)
        s = starts[lo:hi, None]
        take = numpy.minimum(lens[lo:hi], length)
        inside = cols[None, :] < take[:, None]
        idx = numpy.where(inside, s + cols[None, :], 0)
        block = numpy.where(inside, data[idx], numpy.uint8(0))
        if utf8:
            cut = lens[lo:hi] > length
            if cut.any():
                rows = numpy.nonzero(cut)[0]
                nxt = data[starts[lo:hi][rows] + length]
                rows = rows[(nxt & 0xC0) == 0x80]  # the next byte continues a character
                if rows.shape[0]:
                    sub = block[rows]
                    lead = (sub & 0xC0) != 0x80
                    # position of the last lead byte: the character that did not fit
                    last = length - 1 - numpy.argmax(lead[:, ::-1], axis=1)
                    sub[cols[None, :] >= last[:, None]] = 0
                    block[rows] = sub
        out[lo:hi] = block
    return out


def from_encoded(pieces: list, length: int, utf8: bool) -> numpy.ndarray:
    lens = numpy.fromiter(map(len, pieces), dtype=numpy.int64, count=len(pieces))
    starts = numpy.zeros(len(pieces), dtype=numpy.int64)
    if len(pieces) > 1:
        numpy.cumsum(lens[:-1], out=starts[1:])
    data = numpy.frombuffer(b"".join(pieces), dtype=numpy.uint8)
    return gather(data, starts, lens, length, utf8)


def is_null_object(x: Any) -> bool:
    if x is None:
        return True
    if isinstance(x, float):
        return x != x  # pandas' NaN for a missing string
    return type(x).__name__ in ("NAType", "NaTType")


def _object_type_error(index: int, obj: Any) -> TypeError:
    return ColumnTypeError(
        f"an object array must hold str (STRING) or bytes "
        f"(BINARY), with None/NaN/pandas.NA for nulls; found {type(obj).__name__} "
        f"at index {index}. For numbers, dates or booleans with nulls pass a typed array "
        f"and mask=, a numpy.ma array or a pyarrow array"
    )


_MIXED = ("an object array must hold str or bytes, "
          "not both (a column has one type: STRING or BINARY)")


def objects(v: numpy.ndarray, length: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """str/bytes object array -> (bytes, null mask)."""
    if _kernels is None:
        return objects_py(v, length)
    items = v.tolist()
    n = len(items)
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    other = numpy.zeros(n, dtype=numpy.uint8)
    n_str, n_bytes = _kernels.encode_objects(items, length, out, other)
    nulls = other.view(bool)
    if n_str + n_bytes < n:
        for i in numpy.nonzero(other)[0].tolist():
            x = items[i]
            if is_null_object(x):
                continue
            if not isinstance(x, (bytearray, memoryview)):
                raise _object_type_error(i, x)
            n_bytes += 1
            nulls[i] = False
            out[i] = numpy.frombuffer(byte_truncate_or_fill(x, length), dtype=numpy.uint8)
    if n_str and n_bytes:
        raise ColumnTypeError(_MIXED)
    return out, nulls


def unicode(v: numpy.ndarray, length: int) -> numpy.ndarray:
    """numpy 'U' array (UCS-4 code points) -> STRING bytes."""
    if _kernels is None:
        return objects_py(v.astype(object), length)[0]
    if not v.dtype.isnative:
        v = v.astype(v.dtype.newbyteorder("="))
    n, width = v.shape[0], v.dtype.itemsize // 4
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    if n and width:
        chars = numpy.ascontiguousarray(v).view(numpy.uint32).reshape(n, width)
        _kernels.encode_ucs4(chars, length, out)
    return out


def objects_py(v: numpy.ndarray, length: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """str/bytes object array -> (bytes, null mask) in plain Python (the kernels' oracle)."""
    items = v.tolist()
    kinds = set(map(type, items))
    if kinds == {str}:  # the common case: no nulls, no subclasses
        try:
            pieces = [s.encode("utf-8") for s in items]
        except UnicodeEncodeError:
            pieces = [utf8_prefix(s) for s in items]
        return from_encoded(pieces, length, True), numpy.zeros(len(items), dtype=bool)
    nulls = numpy.fromiter(map(is_null_object, items), dtype=bool, count=len(items))
    kinds = {type(x) for x, null in zip(items, nulls) if not null}
    binary = (bytes, bytearray, memoryview)
    has_str = any(issubclass(k, str) for k in kinds)
    has_bytes = any(issubclass(k, binary) for k in kinds)
    other = [k for k in kinds if not issubclass(k, (str,) + binary)]
    if other:
        bad = next(i for i, (x, null) in enumerate(zip(items, nulls))
                   if not null and type(x) in other)
        raise _object_type_error(bad, items[bad])
    if has_str and has_bytes:
        raise ColumnTypeError(_MIXED)
    if has_bytes:
        pieces = [b"" if null else bytes(x) for x, null in zip(items, nulls)]
        return from_encoded(pieces, length, False), nulls
    # str, or nothing but nulls (which count as strings: `length` zero bytes)
    pieces = [b"" if null else utf8_prefix(x) for x, null in zip(items, nulls)]
    return from_encoded(pieces, length, True), nulls


def fixed_bytes(v: numpy.ndarray, length: int) -> numpy.ndarray:
    """numpy 'S' array (fixed-width bytes, trailing zeros stripped) -> BINARY."""
    n, width = v.shape[0], v.dtype.itemsize
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    if n and width and length:
        raw = numpy.ascontiguousarray(v).view(numpy.uint8).reshape(n, width)
        k = min(width, length)
        out[:, :k] = raw[:, :k]
    return out
