"""Iceberg's ordered bytes: each value as bytes whose unsigned order is the value's order.

Scalar functions mirror the ``*ToOrderedBytes`` methods of Iceberg's ``ZOrderByteUtils``
one for one. ``ordered_bytes`` converts a whole column at once, following the per-type
rules of Iceberg's Spark UDF (``SparkZOrderUDF``), including its nulls, booleans, dates
and timestamps. Two things changed between Iceberg and Spark versions, and both are
parameters here:

- ``iceberg=``: the float/double formula. ``"main"`` (default) is Iceberg ``main`` after
  PR 17071; ``"1.11"`` (alias ``"legacy"``, or any release ``"1.0"`` .. ``"1.11.x"``) is
  the formula of 1.11.0 and every earlier release.
- ``spark=``: DATE columns. ``"4"`` (default; also ``"4.0"``, ``"4.1"``) gives days since
  the epoch; ``"3.5"`` gives 8 zero bytes for every date, as Spark 3.5's cast does.

>>> long_to_ordered_bytes(1).hex()
'8000000000000001'
>>> ordered_bytes(numpy.array([-1, 0, 1], dtype=numpy.int32)).tolist()[1]
[128, 0, 0, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

import operator
import re
import struct
from typing import Any, Optional, Tuple

import numpy

try:
    from zorder import _ordered_kernels as _kernels
except ImportError:  # not built (yet): the plain-Python string path gives the same bytes
    _kernels = None  # type: ignore[assignment]

__all__ = [
    "ICEBERG_VERSIONS",
    "PRIMITIVE_BUFFER_SIZE",
    "SPARK_VERSIONS",
    "TIMESTAMP_KINDS",
    "byte_truncate_or_fill",
    "double_to_ordered_bytes",
    "float_to_ordered_bytes",
    "floating_point_ordered_bytes",
    "int_to_ordered_bytes",
    "long_to_ordered_bytes",
    "ordered_bytes",
    "short_to_ordered_bytes",
    "string_to_ordered_bytes",
    "tinyint_to_ordered_bytes",
    "whole_number_ordered_bytes",
]

#: Iceberg's ``ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE``: bytes per number, and the default
#: contribution of a string or binary column.
PRIMITIVE_BUFFER_SIZE = 8

#: Accepted ``iceberg=`` names, each with the formula it selects. Any release number
#: "1.0" .. "1.11" (with or without a patch number, e.g. "1.10.1") also selects "1.11".
ICEBERG_VERSIONS = {
    "main": "main",
    "1.11": "1.11",
    "legacy": "1.11",
}

#: Accepted ``spark=`` names and the DATE behaviour they select.
SPARK_VERSIONS = {
    "4": "4",
    "4.0": "4",
    "4.1": "4",
    "3.5": "3.5",
}

#: Accepted ``timestamp=`` values: "ntz" (TIMESTAMP_NTZ, microseconds) and "tz"
#: (TIMESTAMP with zone, whole seconds); None infers from the input.
TIMESTAMP_KINDS = ("ntz", "tz")

_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_CANONICAL_NAN = 0x7FF8000000000000
_RELEASE = re.compile(r"1\.(\d+)(\.\d+)?\Z")
_PACK_Q = struct.Struct(">Q").pack
_DOUBLE_BITS = struct.Struct(">d")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_INT_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "short": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "long": (-(1 << 63), (1 << 63) - 1),
}


# --------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------

def _iceberg_mode(iceberg: Any) -> str:
    """'main' or '1.11' for a user's ``iceberg=`` value; ValueError listing the valid ones."""
    if isinstance(iceberg, str):
        name = iceberg.strip().lower()
        if name in ICEBERG_VERSIONS:
            return ICEBERG_VERSIONS[name]
        match = _RELEASE.match(name)
        if match and int(match.group(1)) <= 11:
            return "1.11"
    raise ValueError(
        f"iceberg must be 'main' (the default: Iceberg main, with the PR 17071 float fix), "
        f"'1.11' or 'legacy' (Iceberg 1.11.0 and every earlier release; a release number "
        f"such as '1.10' or '1.9.2' is accepted too); got {iceberg!r}"
    )


def _spark_mode(spark: Any) -> str:
    """'4' or '3.5' for a user's ``spark=`` value (a string, or a number such as 3.5)."""
    name = spark
    if isinstance(spark, (int, float)) and not isinstance(spark, bool):
        name = str(spark)
    if isinstance(name, str) and name.strip() in SPARK_VERSIONS:
        return SPARK_VERSIONS[name.strip()]
    raise ValueError(
        f"spark must be '4' (the default; also '4.0', '4.1': a DATE is its days since "
        f"1970-01-01) or '3.5' (every DATE becomes 8 zero bytes); got {spark!r}"
    )


def _timestamp_kind(timestamp: Any) -> Optional[str]:
    if timestamp is None:
        return None
    if isinstance(timestamp, str) and timestamp.strip().lower() in TIMESTAMP_KINDS:
        return timestamp.strip().lower()
    raise ValueError(
        "timestamp must be None (infer: numpy datetime64 and zone-less Arrow timestamps "
        "are TIMESTAMP_NTZ, Arrow timestamps with a time zone are TIMESTAMP), 'ntz' "
        f"(microseconds since the epoch) or 'tz' (whole seconds, floored); got {timestamp!r}"
    )


#: Iceberg's lengths and sizes are Java ints.
JAVA_INT_MAX = 2**31 - 1


def _length(length: Any, fn: str, *, default: Optional[int] = None) -> int:
    if length is None and default is not None:
        return default
    if isinstance(length, (bool, numpy.bool_)):
        raise TypeError(f"{fn}: length must be an integer, not bool")
    try:
        n = operator.index(length)
    except TypeError:
        raise TypeError(
            f"{fn}: length must be an integer, not {type(length).__name__}"
        ) from None
    if n < 0:
        raise ValueError(f"{fn}: length must be >= 0, got {n}")
    if n > JAVA_INT_MAX:
        raise ValueError(f"{fn}: length must be at most {JAVA_INT_MAX} (a Java int, as in Iceberg), got {n}")
    return n


def _integer(value: Any, fn: str, type_name: str) -> int:
    if isinstance(value, (bool, numpy.bool_)):
        raise TypeError(
            f"{fn}: value must be an integer, not bool (Spark's BOOLEAN has its own bytes: "
            f"use ordered_bytes on a bool array)"
        )
    try:
        v = operator.index(value)
    except TypeError:
        hint = " (Spark writes a null as 8 zero bytes; ordered_bytes does that)" if value is None else ""
        raise TypeError(
            f"{fn}: value must be an integer, not {type(value).__name__}{hint}"
        ) from None
    lo, hi = _INT_RANGES[type_name]
    if not lo <= v <= hi:
        raise ValueError(f"{fn}: value {v} is out of range for {type_name} [{lo}, {hi}]")
    return v


def _real(value: Any, fn: str) -> float:
    if isinstance(value, (bool, numpy.bool_)):
        raise TypeError(f"{fn}: value must be a real number, not bool")
    if isinstance(value, (str, bytes, bytearray)) or value is None or isinstance(value, complex):
        raise TypeError(f"{fn}: value must be a real number, not {type(value).__name__}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{fn}: value must be a real number, not {type(value).__name__}"
        ) from None
    except OverflowError:
        raise ValueError(f"{fn}: value {value!r} is too large for a double") from None


# --------------------------------------------------------------------------------------
# Scalar conversions, one per ZOrderByteUtils method
# --------------------------------------------------------------------------------------

def _whole(v: int) -> bytes:
    return _PACK_Q((v & _MASK64) ^ _SIGN)


def whole_number_ordered_bytes(value: int) -> bytes:
    """Iceberg's ``wholeNumberOrderedBytes``: a long's 8 bytes, big-endian, sign bit flipped.

    Every integer type goes through this, so equal numbers give equal bytes whatever
    their type. ``value`` must be an integer in the long range (bool is a TypeError).

    >>> whole_number_ordered_bytes(-1).hex()
    '7fffffffffffffff'
    """
    return _whole(_integer(value, "whole_number_ordered_bytes", "long"))


def tinyint_to_ordered_bytes(value: int) -> bytes:
    """Iceberg's ``tinyintToOrderedBytes``: 8 bytes (not 1), as ``long_to_ordered_bytes``.

    ``value`` must be in [-128, 127]; a bool, float or str is a TypeError.

    >>> tinyint_to_ordered_bytes(-128).hex()
    '7fffffffffffff80'
    """
    return _whole(_integer(value, "tinyint_to_ordered_bytes", "tinyint"))


def short_to_ordered_bytes(value: int) -> bytes:
    """Iceberg's ``shortToOrderedBytes``: 8 bytes; ``value`` in [-32768, 32767].

    >>> short_to_ordered_bytes(255).hex()
    '80000000000000ff'
    """
    return _whole(_integer(value, "short_to_ordered_bytes", "short"))


def int_to_ordered_bytes(value: int) -> bytes:
    """Iceberg's ``intToOrderedBytes``: 8 bytes; ``value`` in the 32-bit signed range.

    >>> int_to_ordered_bytes(-2**31).hex()
    '7fffffff80000000'
    """
    return _whole(_integer(value, "int_to_ordered_bytes", "int"))


def long_to_ordered_bytes(value: int) -> bytes:
    """Iceberg's ``longToOrderedBytes``: 8 bytes; ``value`` in the 64-bit signed range.

    >>> long_to_ordered_bytes(-2**63).hex()
    '0000000000000000'
    """
    return _whole(_integer(value, "long_to_ordered_bytes", "long"))


def _float_bits(bits: int, mode: str) -> bytes:
    """Ordered bytes of a double given as its 64 raw bits (unsigned int)."""
    if (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and bits & 0x000FFFFFFFFFFFFF:
        bits = _CANONICAL_NAN  # doubleToLongBits: every NaN, before the sign test
    if mode == "main":
        mask = _MASK64 if bits & _SIGN else _SIGN
    else:
        # 1.11.0: lval ^= ((lval >> 31) | Long.MIN_VALUE), with an arithmetic shift.
        signed = bits - (1 << 64) if bits & _SIGN else bits
        mask = ((signed >> 31) | _SIGN) & _MASK64
    return _PACK_Q(bits ^ mask)


def _double(value: float, mode: str) -> bytes:
    return _float_bits(int.from_bytes(_DOUBLE_BITS.pack(value), "big"), mode)


def floating_point_ordered_bytes(value: float, *, iceberg: str = "main") -> bytes:
    """Iceberg's ``floatingPointOrderedBytes``: the same as ``double_to_ordered_bytes``.

    >>> floating_point_ordered_bytes(1.0).hex()
    'bff0000000000000'
    """
    mode = _iceberg_mode(iceberg)
    return _double(_real(value, "floating_point_ordered_bytes"), mode)


def double_to_ordered_bytes(value: float, *, iceberg: str = "main") -> bytes:
    """Iceberg's ``doubleToOrderedBytes``: 8 bytes whose order is ``Double.compare``'s.

    Every NaN (any sign or payload) becomes ``fff8000000000000``, above +Infinity
    (``fff0000000000000``); -Infinity is ``000fffffffffffff``; -0.0 is
    ``7fffffffffffffff``, just below +0.0 (``8000000000000000``). A Python int is
    converted to the nearest double, as Java widens it. bool, str and None are TypeErrors.

    ``iceberg="main"`` (default) is Iceberg main (PR 17071): a negative value has all
    64 bits inverted, a positive one only its sign bit. ``iceberg="1.11"`` (or
    ``"legacy"``, or any release "1.0" .. "1.11.x") reproduces 1.11.0 and every earlier
    release, whose mask mixes bits 31-62 into the low 32 bits: its order is wrong among
    values that share their top 32 bits.

    >>> double_to_ordered_bytes(-0.0).hex()
    '7fffffffffffffff'
    >>> double_to_ordered_bytes(1.0, iceberg="1.11").hex()
    'bff000007fe00000'
    """
    mode = _iceberg_mode(iceberg)
    return _double(_real(value, "double_to_ordered_bytes"), mode)


def float_to_ordered_bytes(value: float, *, iceberg: str = "main") -> bytes:
    """Iceberg's ``floatToOrderedBytes``: the float widened (exactly) to double, 8 bytes.

    ``value`` is a Java float: a Python float or int is first rounded to the nearest
    float32, as Java's ``(float)`` cast does (so ``0.1`` means ``0.1f``, and values beyond
    the float range become infinities). A float and the double of the same value give
    the same bytes. ``iceberg=`` as for ``double_to_ordered_bytes``.

    >>> float_to_ordered_bytes(1.0).hex() == double_to_ordered_bytes(1.0).hex()
    True
    """
    mode = _iceberg_mode(iceberg)
    v = _real(value, "float_to_ordered_bytes")
    with numpy.errstate(over="ignore"):
        v = float(numpy.float32(v))
    return _double(v, mode)


def _utf8_prefix(s: str) -> bytes:
    """UTF-8 of ``s`` up to (not including) its first unpaired surrogate.

    Java's strings are UTF-16, so two surrogate code points in a row that form a valid
    pair are one character here too, as in Java.
    """
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        pass
    # Join adjacent high+low surrogates into one code point, as Java's UTF-16 sees them.
    s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    match = _LONE_SURROGATE.search(s)
    if match is not None:
        s = s[: match.start()]
    return s.encode("utf-8")


def _utf8_fit(encoded: bytes, length: int) -> bytes:
    """The longest prefix of whole UTF-8 characters of ``encoded`` within ``length`` bytes."""
    if len(encoded) <= length:
        return encoded
    end = length
    while end > 0 and (encoded[end] & 0xC0) == 0x80:
        end -= 1  # encoded[end] continues a character that does not fit: drop it whole
    return encoded[:end]


def string_to_ordered_bytes(value: Optional[str], length: int) -> bytes:
    """Iceberg's ``stringToOrderedBytes`` with Spark's UTF-8 encoder: ``length`` bytes.

    The UTF-8 bytes of ``value``, whole characters only: a character whose UTF-8 form
    does not fit in the remaining space is dropped, and everything after it, so zeros can
    appear before ``length``. Encoding stops silently at the first unpaired surrogate
    (what was written stays, the rest is zeros; Python's own ``encode`` would raise). A
    valid pair, written as one code point or as two surrogate code points, is one 4-byte
    character. The rest is zero-filled. ``None``, ``""`` and ``"\\0"`` all give zeros, and
    ``length`` 0 gives ``b""``. bytes is a TypeError (use ``byte_truncate_or_fill``).

    >>> string_to_ordered_bytes("xy\\U0001F600", 4).hex()
    '78790000'
    >>> string_to_ordered_bytes("a\\ud800b", 3).hex()
    '610000'
    """
    n = _length(length, "string_to_ordered_bytes")
    if value is None:
        return bytes(n)
    if not isinstance(value, str):
        raise TypeError(
            f"string_to_ordered_bytes: value must be str or None, not {type(value).__name__}"
        )
    written = _utf8_fit(_utf8_prefix(value), n)
    return written + bytes(n - len(written))


def byte_truncate_or_fill(value: Any, length: int) -> bytes:
    """Iceberg's ``byteTruncateOrFill``: the first ``length`` bytes, zero-padded if shorter.

    ``value`` is bytes-like (bytes, bytearray, memoryview, a uint8 array) or ``None``,
    which gives zeros (Iceberg since PR 10026; before, a null threw). str is a TypeError.

    >>> byte_truncate_or_fill(b"\\x01\\x02", 4).hex()
    '01020000'
    """
    n = _length(length, "byte_truncate_or_fill")
    if value is None:
        return bytes(n)
    if isinstance(value, str):
        raise TypeError("byte_truncate_or_fill: value must be bytes-like or None, not str")
    try:
        view = memoryview(value)
    except TypeError:
        raise TypeError(
            f"byte_truncate_or_fill: value must be bytes-like or None, not {type(value).__name__}"
        ) from None
    if view.itemsize != 1:
        raise TypeError(
            "byte_truncate_or_fill: value must hold bytes (item size 1), not items of "
            f"{view.itemsize} bytes (format {view.format!r})"
        )
    data = view.cast("B").tobytes() if view.ndim == 1 or view.c_contiguous else bytes(view)
    data = data[:n]
    return data + bytes(n - len(data))


# --------------------------------------------------------------------------------------
# Whole columns
# --------------------------------------------------------------------------------------

_INT64_MIN = numpy.int64(-(1 << 63))
_INT64_CANONICAL_NAN = numpy.int64(_CANONICAL_NAN)
_ROW_CHUNK = 1 << 16  # rows per gather step for strings: bounds the index matrix

# Ticks per second of each datetime64 unit (sub-second units), and seconds per tick.
_TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9, "ps": 10**12,
                     "fs": 10**15, "as": 10**18}
_SECONDS_PER_TICK = {"m": 60, "h": 3600, "D": 86400}
_DATE_UNITS = ("Y", "M", "W", "D")


def _be8(u: numpy.ndarray) -> numpy.ndarray:
    """(N,) 64-bit words -> (N, 8) uint8, big-endian."""
    return u.astype(">u8").view(numpy.uint8).reshape(-1, 8)  # always a fresh array


def _whole_numbers(v: numpy.ndarray) -> numpy.ndarray:
    words = v.astype(numpy.int64, copy=False).view(numpy.uint64) ^ numpy.uint64(_SIGN)
    return _be8(words)


def _floats(v: numpy.ndarray, mode: str) -> numpy.ndarray:
    with numpy.errstate(invalid="ignore"):  # a signalling NaN widens quietly, as in Java
        d = v.astype(numpy.float64)  # exact for float16/float32; always a fresh array
    bits = d.view(numpy.int64)
    bits[numpy.isnan(d)] = _INT64_CANONICAL_NAN
    shift = 63 if mode == "main" else 31
    bits ^= (bits >> shift) | _INT64_MIN
    return _be8(bits)


def _booleans(v: numpy.ndarray) -> numpy.ndarray:
    out = numpy.zeros((v.shape[0], 8), dtype=numpy.uint8)
    out[:, 0] = v.astype(bool, copy=False).view(numpy.uint8) * numpy.uint8(0x81)
    return out


def _floor_div(v: numpy.ndarray, d: int) -> numpy.ndarray:
    return v // numpy.int64(d) if d != 1 else v


def _checked_mul(v: numpy.ndarray, m: int, valid: Optional[numpy.ndarray], what: str) -> numpy.ndarray:
    if m == 1:
        return v
    limit = (1 << 63) // m
    bad = (v >= limit) | (v < -limit)
    if valid is not None:
        bad &= valid
    if bad.any():
        raise ValueError(
            f"ordered_bytes: values: a timestamp is out of the range Spark can hold as {what} "
            f"(first at index {int(numpy.argmax(bad))})"
        )
    return v * numpy.int64(m)


def _timestamps(ticks: numpy.ndarray, ticks_per_second: Optional[int], seconds_per_tick: int,
                kind: str, valid: Optional[numpy.ndarray]) -> numpy.ndarray:
    """int64 ticks of a unit -> Spark's long: microseconds (ntz) or floored seconds (tz)."""
    if kind == "tz":
        if ticks_per_second is not None:
            return _floor_div(ticks, ticks_per_second)
        return _checked_mul(ticks, seconds_per_tick, valid, "seconds")
    if ticks_per_second is not None:
        if ticks_per_second >= 10**6:
            return _floor_div(ticks, ticks_per_second // 10**6)
        return _checked_mul(ticks, 10**6 // ticks_per_second, valid, "microseconds")
    return _checked_mul(ticks, seconds_per_tick * 10**6, valid, "microseconds")


def _datetime64(v: numpy.ndarray, spark: str, kind: Optional[str]) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(bytes, null mask) of a numpy datetime64 array."""
    unit, count = numpy.datetime_data(v.dtype)
    if unit == "generic":
        raise TypeError("ordered_bytes: values: datetime64 without a unit is not supported")
    nat = numpy.isnat(v)
    valid = ~nat if nat.any() else None
    if unit in _DATE_UNITS:
        if spark == "3.5":
            return numpy.zeros((v.shape[0], 8), dtype=numpy.uint8), nat
        days = v.astype("datetime64[D]").view(numpy.int64)
        return _whole_numbers(days), nat
    ticks = v.view(numpy.int64)
    if count != 1:
        ticks = _checked_mul(ticks, count, valid, "its own unit")
    longs = _timestamps(ticks, _TICKS_PER_SECOND.get(unit), _SECONDS_PER_TICK.get(unit, 0),
                        kind or "ntz", valid)
    return _whole_numbers(longs), nat


def _gather(data: numpy.ndarray, starts: numpy.ndarray, lens: numpy.ndarray, length: int,
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
            raise ValueError("ordered_bytes: values: string offsets outside the data buffer")
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


def _from_encoded(pieces: list, length: int, utf8: bool) -> numpy.ndarray:
    lens = numpy.fromiter(map(len, pieces), dtype=numpy.int64, count=len(pieces))
    starts = numpy.zeros(len(pieces), dtype=numpy.int64)
    if len(pieces) > 1:
        numpy.cumsum(lens[:-1], out=starts[1:])
    data = numpy.frombuffer(b"".join(pieces), dtype=numpy.uint8)
    return _gather(data, starts, lens, length, utf8)


def _is_null_object(x: Any) -> bool:
    if x is None:
        return True
    if isinstance(x, float):
        return x != x  # pandas' NaN for a missing string
    return type(x).__name__ in ("NAType", "NaTType")


def _object_type_error(index: int, obj: Any) -> TypeError:
    return TypeError(
        f"ordered_bytes: values: an object array must hold str (STRING) or bytes "
        f"(BINARY), with None/NaN/pandas.NA for nulls; found {type(obj).__name__} "
        f"at index {index}. For numbers, dates or booleans with nulls pass a typed array "
        f"and mask=, a numpy.ma array or a pyarrow array"
    )


_MIXED = ("ordered_bytes: values: an object array must hold str or bytes, "
          "not both (a column has one type: STRING or BINARY)")


def _objects(v: numpy.ndarray, length: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """str/bytes object array -> (bytes, null mask)."""
    if _kernels is None:
        return _objects_py(v, length)
    items = v.tolist()
    n = len(items)
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    other = numpy.zeros(n, dtype=numpy.uint8)
    n_str, n_bytes = _kernels.encode_objects(items, length, out, other)
    nulls = other.view(bool)
    if n_str + n_bytes < n:
        for i in numpy.nonzero(other)[0].tolist():
            x = items[i]
            if _is_null_object(x):
                continue
            if not isinstance(x, (bytearray, memoryview)):
                raise _object_type_error(i, x)
            n_bytes += 1
            nulls[i] = False
            out[i] = numpy.frombuffer(byte_truncate_or_fill(x, length), dtype=numpy.uint8)
    if n_str and n_bytes:
        raise TypeError(_MIXED)
    return out, nulls


def _unicode(v: numpy.ndarray, length: int) -> numpy.ndarray:
    """numpy 'U' array (UCS-4 code points) -> STRING bytes."""
    if _kernels is None:
        return _objects_py(v.astype(object), length)[0]
    if not v.dtype.isnative:
        v = v.astype(v.dtype.newbyteorder("="))
    n, width = v.shape[0], v.dtype.itemsize // 4
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    if n and width:
        chars = numpy.ascontiguousarray(v).view(numpy.uint32).reshape(n, width)
        _kernels.encode_ucs4(chars, length, out)
    return out


def _objects_py(v: numpy.ndarray, length: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """str/bytes object array -> (bytes, null mask) in plain Python (the kernels' oracle)."""
    items = v.tolist()
    kinds = set(map(type, items))
    if kinds == {str}:  # the common case: no nulls, no subclasses
        try:
            pieces = [s.encode("utf-8") for s in items]
        except UnicodeEncodeError:
            pieces = [_utf8_prefix(s) for s in items]
        return _from_encoded(pieces, length, True), numpy.zeros(len(items), dtype=bool)
    nulls = numpy.fromiter(map(_is_null_object, items), dtype=bool, count=len(items))
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
        raise TypeError(_MIXED)
    if has_bytes:
        pieces = [b"" if null else bytes(x) for x, null in zip(items, nulls)]
        return _from_encoded(pieces, length, False), nulls
    # str, or nothing but nulls (which count as strings: `length` zero bytes)
    pieces = [b"" if null else _utf8_prefix(x) for x, null in zip(items, nulls)]
    return _from_encoded(pieces, length, True), nulls


def _fixed_bytes(v: numpy.ndarray, length: int) -> numpy.ndarray:
    """numpy 'S' array (fixed-width bytes, trailing zeros stripped) -> BINARY."""
    n, width = v.shape[0], v.dtype.itemsize
    out = numpy.zeros((n, length), dtype=numpy.uint8)
    if n and width and length:
        raw = numpy.ascontiguousarray(v).view(numpy.uint8).reshape(n, width)
        k = min(width, length)
        out[:, :k] = raw[:, :k]
    return out


def _numpy_column(v: numpy.ndarray, length: int, mode: str, spark: str,
                  kind: Optional[str]) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    """(bytes, inherent null mask or None) for a 1-D numpy array."""
    k = v.dtype.kind
    if k == "i":
        return _whole_numbers(v), None
    if k == "u":
        return _be8(v.astype(numpy.uint64, copy=False)), None
    if k == "f":
        return _floats(v, mode), None
    if k == "b":
        return _booleans(v), None
    if k == "M":
        return _datetime64(v, spark, kind)
    if k == "U":
        return _unicode(v, length), None
    if k == "S":
        return _fixed_bytes(v, length), None
    if k == "O":
        return _objects(v, length)
    if k == "T":  # numpy 2 StringDType
        return _objects(v.astype(object), length)
    raise TypeError(
        f"ordered_bytes: values: unsupported dtype {v.dtype}; Iceberg's Spark UDF takes "
        f"integers, floats, booleans, dates, timestamps, strings and binary"
    )


def _arrow_module():
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - only without the extra
        return None
    return pyarrow


def _is_arrow(values: Any) -> bool:
    return type(values).__module__.startswith("pyarrow")


def _is_pandas(values: Any) -> bool:
    return type(values).__module__.startswith("pandas")


def _arrow_fixed(arr, dtype) -> numpy.ndarray:
    """The values buffer of a fixed-width Arrow array, zero-copy (nulls hold garbage)."""
    buf = arr.buffers()[1]
    if buf is None or len(arr) == 0:
        return numpy.zeros(len(arr), dtype=dtype)
    return numpy.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def _arrow_column(arr, length: int, mode: str, spark: str,
                  kind: Optional[str]) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    pa = _arrow_module()
    import pyarrow.types as t

    if isinstance(arr, pa.ChunkedArray):
        width = None
        parts, masks = [], []
        for chunk in arr.chunks:
            b, m = _arrow_column(chunk, length, mode, spark, kind)
            parts.append(b)
            masks.append(m if m is not None else numpy.zeros(b.shape[0], dtype=bool))
            width = b.shape[1]
        if not parts:
            width = _arrow_width(arr.type, length)
            return numpy.zeros((0, width), dtype=numpy.uint8), None
        return numpy.concatenate(parts), numpy.concatenate(masks)
    typ = arr.type
    if t.is_dictionary(typ):
        return _arrow_column(arr.dictionary_decode(), length, mode, spark, kind)
    n = len(arr)
    if t.is_null(typ):  # no values at all: as an all-null STRING column
        return numpy.zeros((n, length), dtype=numpy.uint8), None
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    if t.is_integer(typ) or t.is_floating(typ):
        dtype = typ.to_pandas_dtype()
        v = _arrow_fixed(arr, dtype)
        if t.is_floating(typ):
            return _floats(v, mode), nulls
        if t.is_unsigned_integer(typ):
            return _be8(v.astype(numpy.uint64)), nulls
        return _whole_numbers(v), nulls
    if t.is_boolean(typ):
        v = arr.fill_null(False).to_numpy(zero_copy_only=False) if nulls is not None \
            else arr.to_numpy(zero_copy_only=False)
        return _booleans(v), nulls
    if t.is_date(typ):
        if spark == "3.5":
            return numpy.zeros((n, 8), dtype=numpy.uint8), nulls
        if t.is_date32(typ):
            days = _arrow_fixed(arr, numpy.int32).astype(numpy.int64)
        else:
            days = _floor_div(_arrow_fixed(arr, numpy.int64), 86_400_000)
        return _whole_numbers(days), nulls
    if t.is_timestamp(typ):
        ticks = _arrow_fixed(arr, numpy.int64)
        valid = ~nulls if nulls is not None else None
        inferred = "tz" if typ.tz is not None else "ntz"
        longs = _timestamps(ticks, _TICKS_PER_SECOND[typ.unit], 0, kind or inferred, valid)
        return _whole_numbers(longs), nulls
    if t.is_string(typ) or t.is_large_string(typ) or t.is_binary(typ) or t.is_large_binary(typ):
        utf8 = t.is_string(typ) or t.is_large_string(typ)
        large = t.is_large_string(typ) or t.is_large_binary(typ)
        _, obuf, dbuf = arr.buffers()
        odtype = numpy.int64 if large else numpy.int32
        offsets = numpy.frombuffer(obuf, dtype=odtype, count=arr.offset + n + 1)[arr.offset:] \
            .astype(numpy.int64) if n else numpy.zeros(1, dtype=numpy.int64)
        data = numpy.frombuffer(dbuf, dtype=numpy.uint8) if dbuf is not None \
            else numpy.zeros(0, dtype=numpy.uint8)
        starts = offsets[:-1]
        lens = offsets[1:] - starts
        if nulls is not None:
            lens = numpy.where(nulls, 0, lens)
        return _gather(data, starts, lens, length, utf8), nulls
    if t.is_fixed_size_binary(typ):
        width = typ.byte_width
        buf = arr.buffers()[1]
        data = numpy.frombuffer(buf, dtype=numpy.uint8) if buf is not None \
            else numpy.zeros(0, dtype=numpy.uint8)
        starts = (numpy.arange(n, dtype=numpy.int64) + arr.offset) * width
        lens = numpy.full(n, width, dtype=numpy.int64)
        if nulls is not None:
            lens[nulls] = 0
        return _gather(data, starts, lens, length, False), nulls
    view_types = [getattr(t, name, None) for name in ("is_string_view", "is_binary_view")]
    if view_types[0] is not None and view_types[0](typ):
        return _arrow_column(arr.cast(pa.large_string()), length, mode, spark, kind)
    if view_types[1] is not None and view_types[1](typ):
        return _arrow_column(arr.cast(pa.large_binary()), length, mode, spark, kind)
    raise TypeError(
        f"ordered_bytes: values: unsupported Arrow type {typ}; Iceberg's Spark UDF takes "
        f"integers, floats, booleans, dates, timestamps, strings and binary"
    )


def _arrow_width(typ, length: int) -> int:
    import pyarrow.types as t
    if t.is_dictionary(typ):
        typ = typ.value_type
    if (t.is_null(typ) or t.is_string(typ) or t.is_large_string(typ) or t.is_binary(typ)
            or t.is_large_binary(typ) or t.is_fixed_size_binary(typ)
            or getattr(t, "is_string_view", lambda _: False)(typ)
            or getattr(t, "is_binary_view", lambda _: False)(typ)):
        return length
    return 8


def _pandas_to_column(values: Any):
    """A pandas Series/Index/ExtensionArray as (array for the numpy or Arrow path, mask).

    Whatever pandas calls missing (``isna``: NaN, None, NA, NaT) is a null, as when the
    frame is written to an Iceberg table through Arrow.
    """
    if getattr(values, "ndim", 1) != 1:
        raise TypeError(
            f"ordered_bytes: values must be one column, not a {type(values).__name__} "
            f"(pass a Series, or use zorder_values for a DataFrame)"
        )
    import pandas

    dtype = values.dtype
    if isinstance(dtype, numpy.dtype) and dtype.kind == "O":
        objects = numpy.asarray(values)
        first = next((x for x in objects if not _is_null_object(x)), None)
        pa = _arrow_module()
        if first is None or isinstance(first, (str, bytes)) or pa is None:
            # Strings and binary: the object path finds None/NaN/NA/NaT itself, and lone
            # surrogates keep Iceberg's behaviour (Arrow could not hold them).
            return objects, None
        # Other Python objects (what to_pandas() gives for Arrow dates, nullable booleans,
        # datetimes): Arrow infers the type (date32, bool, timestamp) and keeps the nulls.
        try:
            return pa.array(values, from_pandas=True), None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TypeError(
                f"ordered_bytes: values: a pandas object column of {type(first).__name__} "
                f"values could not be read as one type ({exc})"
            ) from None
    if isinstance(dtype, numpy.dtype):
        # numpy-backed: the numpy path, with pandas' missing values as the mask
        mask = numpy.asarray(pandas.isna(values), dtype=bool)
        return numpy.asarray(values), (mask if mask.any() else None)
    pa = _arrow_module()
    if pa is not None:
        try:
            return pa.array(values, from_pandas=True), None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TypeError(
                f"ordered_bytes: values: pandas dtype {dtype} could not be read ({exc})"
            ) from None
    numpy_dtype = getattr(dtype, "numpy_dtype", None)  # masked Int64/Float64/boolean
    if numpy_dtype is not None:
        mask = numpy.asarray(pandas.isna(values), dtype=bool)
        fill = False if numpy_dtype.kind == "b" else 0
        return values.to_numpy(dtype=numpy_dtype, na_value=fill), (mask if mask.any() else None)
    raise TypeError(
        f"ordered_bytes: values: pandas dtype {dtype} needs pyarrow (pip install pyarrow)")


def ordered_bytes(values: Any, length: Optional[int] = None, *, iceberg: str = "main",
                  spark: str = "4", timestamp: Optional[str] = None,
                  mask: Any = None) -> numpy.ndarray:
    """Iceberg's ordered bytes of a whole column, as Iceberg's Spark Z-order UDF makes them.

    Returns a C-contiguous ``(N, width)`` uint8 array, row i the bytes of value i. The
    input type picks the Spark type and so the bytes (width 8 unless stated):

    - int8/16/32/64: TINYINT .. BIGINT, ``long_to_ordered_bytes`` (equal values, equal
      bytes, whatever the width).
    - uint8/16/32/64 (Iceberg has no unsigned types): the value as 8 big-endian bytes with
      **no sign flip**, so unsigned order is kept and 0 is all zeros. Below 2**63 this
      differs from the long bytes only in the top bit, which is then the same in every
      row, so the Z-order sort is the one Spark gives the column stored as a long (except
      that 0 and null tie).
    - float16/32/64: FLOAT/DOUBLE, widened exactly to double (``iceberg=`` applies).
    - bool: BOOLEAN, true ``81 00 .. 00``, false 8 zero bytes.
    - datetime64[D] (and the coarser Y, M, W units, converted exactly), Arrow date32 and
      date64: DATE, days since 1970-01-01 as a long; all zeros with ``spark="3.5"``.
    - datetime64 with a time unit (h, m, s, ms, us, ns, ...): numpy has no time zone, so
      TIMESTAMP_NTZ, microseconds since the epoch (finer units floored), as a long;
      ``timestamp="tz"`` reads the values as UTC instants instead.
    - Arrow timestamp without a zone: TIMESTAMP_NTZ, microseconds. With a zone (any zone;
      the values are UTC instants): TIMESTAMP, whole seconds (floored), as Spark's cast
      to BIGINT gives them. ``timestamp=`` overrides either.
    - str (numpy 'U' or StringDType, str objects, Arrow string/large_string/string_view):
      STRING, ``string_to_ordered_bytes`` at ``length`` bytes.
    - bytes (numpy 'S', bytes-like objects, Arrow binary/large_binary/binary_view/
      fixed_size_binary): BINARY, ``byte_truncate_or_fill`` at ``length`` bytes.
    - Arrow null type (a column with no values, e.g. an all-None pandas object column):
      ``length`` zero bytes, as an all-null string column.
    - Anything else (complex, timedelta, decimal, time of day, nested types) is a
      TypeError, as Spark's UDF throws for types it does not know.

    Nulls give what Spark's UDF gives: 8 zero bytes for numbers, dates and timestamps
    (the same bytes as long MIN), ``length`` zero bytes for strings and binary (the same
    as ``""``), and 8 zero bytes for a boolean (the same as false; Iceberg main throws a
    NullPointerException there, open PR 17669 gives zeros). Nulls are: Arrow nulls,
    ``mask`` True, masked entries of a ``numpy.ma`` array, NaT, None/NaN/pandas.NA in an
    object array of strings or bytes, and whatever pandas calls missing in a pandas
    Series (converted through pyarrow, so NaN in a float Series is a null, as when the
    frame is written to Iceberg through Arrow). NaN in a numpy float array is a value:
    it sorts last (``fff8000000000000``).

    Args:
        values: a 1-D numpy array (or list), a pyarrow Array or ChunkedArray (dictionary
            arrays are decoded), or a pandas Series/Index/ExtensionArray.
        length: bytes per string or binary value (Spark's ``var-length-contribution``);
            default 8. Numbers, dates and timestamps always give 8 bytes, whatever
            ``length`` is, so one ``length`` can be passed for every column.
        iceberg: float/double formula. ``"main"`` (default): Iceberg main with PR 17071.
            ``"1.11"`` or ``"legacy"`` (or a release number "1.0" .. "1.11.x"): Iceberg
            1.11.0 and every earlier release, whose order is wrong among floats that
            share their top 32 bits (matched on purpose, so the clustering is that
            version's).
        spark: DATE behaviour. ``"4"`` (default; ``"4.0"``, ``"4.1"``): days since the
            epoch. ``"3.5"``: every date is 8 zero bytes (Spark 3.5 casts DATE to BIGINT,
            which is null outside ANSI mode).
        timestamp: ``None`` (infer as above), ``"ntz"`` or ``"tz"`` to say which Spark
            timestamp type a column of timestamps is; ignored for other columns.
        mask: optional bool array of N flags, True for a null (combined with the input's
            own nulls).

    Raises:
        TypeError: an unsupported dtype or Arrow type, an object array holding anything
            but str or bytes, a multi-dimensional array, or a bad argument type.
        ValueError: a bad ``length``, ``iceberg``, ``spark`` or ``timestamp`` value, a
            ``mask`` of the wrong length, or a timestamp outside Spark's range.

    >>> ordered_bytes(numpy.array([True, False])).tolist()
    [[129, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]
    >>> bytes(ordered_bytes(numpy.array(["xy\\U0001F600"]), 4)[0]).hex()
    '78790000'
    >>> bytes(ordered_bytes(numpy.array([1.0]), iceberg="1.11")[0]).hex()
    'bff000007fe00000'
    """
    n_length = _length(length, "ordered_bytes", default=PRIMITIVE_BUFFER_SIZE)
    mode = _iceberg_mode(iceberg)
    spark_mode = _spark_mode(spark)
    kind = _timestamp_kind(timestamp)

    inherent = None
    if _is_pandas(values):
        values, inherent = _pandas_to_column(values)
    if _is_arrow(values):
        pa = _arrow_module()
        if not isinstance(values, (pa.Array, pa.ChunkedArray)):
            raise TypeError(
                f"ordered_bytes: values must be a pyarrow Array or ChunkedArray, not "
                f"{type(values).__name__} (pass one column)"
            )
        out, nulls = _arrow_column(values, n_length, mode, spark_mode, kind)
    else:
        if isinstance(values, numpy.ma.MaskedArray):
            inherent = numpy.ma.getmaskarray(values)
            values = values.data
        elif not isinstance(values, numpy.ndarray):
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise TypeError(
                    f"ordered_bytes: values must be a 1-D array or sequence, not "
                    f"{type(values).__name__} (use the scalar *_to_ordered_bytes functions)"
                )
            as_array = numpy.asarray(values)
            # numpy turns [1, "a"] into strings: keep the objects, so mixed types are
            # an error rather than the string "1".
            values = (numpy.asarray(values, dtype=object) if as_array.dtype.kind in "US"
                      else as_array)
        if values.ndim != 1:
            raise TypeError(
                f"ordered_bytes: values must be 1-D (one column), got shape {values.shape}"
            )
        out, nulls = _numpy_column(values, n_length, mode, spark_mode, kind)
    for extra in (inherent, mask):
        if extra is None:
            continue
        extra = numpy.asarray(extra)
        if extra.dtype != bool:
            raise TypeError(f"ordered_bytes: mask must be a bool array, not {extra.dtype}")
        if extra.shape != (out.shape[0],):
            raise ValueError(
                f"ordered_bytes: mask must have shape ({out.shape[0]},), got {extra.shape}"
            )
        nulls = extra if nulls is None else (nulls | extra)
    if nulls is not None and nulls.any():
        out[nulls] = 0
    return numpy.ascontiguousarray(out)
