"""Iceberg's scalar conversions, one per ``ZOrderByteUtils`` method.

Each mirrors a ``*ToOrderedBytes`` method (or ``byteTruncateOrFill``) for one value:
the bytes whose unsigned order is the value's order.
"""

from __future__ import annotations

import operator
import re
import struct
from typing import Any, Optional

import numpy

from zorder.ordered.options import ICEBERG_DEFAULT, check_length, iceberg_mode


SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
CANONICAL_NAN = 0x7FF8000000000000


_PACK_Q = struct.Struct(">Q").pack
_DOUBLE_BITS = struct.Struct(">d")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_INT_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "short": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "long": (-(1 << 63), (1 << 63) - 1),
}


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
    if isinstance(value, numpy.floating) and value.dtype.itemsize > 8:
        # (as ordered_bytes refuses a long double column: rounding would give different
        # values the same bytes)
        raise TypeError(
            f"{fn}: value is a {value.dtype} (long double), wider than Iceberg's 64-bit "
            f"DOUBLE; convert it to float yourself if rounding is what you mean")
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
    return _PACK_Q((v & _MASK64) ^ SIGN)


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
        bits = CANONICAL_NAN  # doubleToLongBits: every NaN, before the sign test
    if mode == "main":
        mask = _MASK64 if bits & SIGN else SIGN
    else:
        # 1.11.0 and earlier: lval ^= ((lval >> 31) | Long.MIN_VALUE), arithmetic shift.
        signed = bits - (1 << 64) if bits & SIGN else bits
        mask = ((signed >> 31) | SIGN) & _MASK64
    return _PACK_Q(bits ^ mask)


def _double(value: float, mode: str) -> bytes:
    return _float_bits(int.from_bytes(_DOUBLE_BITS.pack(value), "big"), mode)


def floating_point_ordered_bytes(value: float, *, iceberg: str = ICEBERG_DEFAULT) -> bytes:
    """Iceberg's ``floatingPointOrderedBytes``: the same as ``double_to_ordered_bytes``.

    >>> floating_point_ordered_bytes(1.0, iceberg="main").hex()
    'bff0000000000000'
    """
    mode = iceberg_mode(iceberg)
    return _double(_real(value, "floating_point_ordered_bytes"), mode)


def double_to_ordered_bytes(value: float, *, iceberg: str = ICEBERG_DEFAULT) -> bytes:
    """Iceberg's ``doubleToOrderedBytes``: 8 bytes whose order is ``Double.compare``'s
    (from Iceberg 1.12 and on main; earlier releases get it wrong in the low 32 bits, see
    below).

    With ``iceberg="1.12"`` (the default, the newest release) or ``"main"``, every NaN (any sign or payload) becomes
    ``fff8000000000000``, above +Infinity (``fff0000000000000``); -Infinity is
    ``000fffffffffffff``; -0.0 is ``7fffffffffffffff``, just below +0.0
    (``8000000000000000``). Earlier releases give the same top 32 bits. A Python int is
    converted to the nearest double, as Java widens it. bool, str and None are TypeErrors.

    ``iceberg="1.11"`` (also ``"legacy"``, or any release "1.0" .. "1.11.x") reproduces
    1.11.0 and every earlier release, whose mask mixes bits 31-62 into the low 32 bits:
    its order is wrong among values that share their top 32 bits. 1.12 and main have PR
    17071's fix: a negative value has all 64 bits inverted, a positive one only its sign
    bit.

    >>> double_to_ordered_bytes(-0.0).hex()
    '7fffffffffffffff'
    >>> double_to_ordered_bytes(1.0).hex()
    'bff0000000000000'
    >>> double_to_ordered_bytes(1.0, iceberg="1.11").hex()
    'bff000007fe00000'
    """
    mode = iceberg_mode(iceberg)
    return _double(_real(value, "double_to_ordered_bytes"), mode)


def float_to_ordered_bytes(value: float, *, iceberg: str = ICEBERG_DEFAULT) -> bytes:
    """Iceberg's ``floatToOrderedBytes``: the float widened (exactly) to double, 8 bytes.

    ``value`` is a Java float: a Python float or int is first rounded to the nearest
    float32, as Java's ``(float)`` cast does (so ``0.1`` means ``0.1f``, and values beyond
    the float range become infinities). A float and the double of the same value give
    the same bytes. ``iceberg=`` as for ``double_to_ordered_bytes``.

    >>> float_to_ordered_bytes(1.0).hex() == double_to_ordered_bytes(1.0).hex()
    True
    """
    mode = iceberg_mode(iceberg)
    v = _real(value, "float_to_ordered_bytes")
    with numpy.errstate(over="ignore"):
        v = float(numpy.float32(v))
    return _double(v, mode)


def utf8_prefix(s: str) -> bytes:
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
    n = check_length(length, "string_to_ordered_bytes")
    if value is None:
        return bytes(n)
    if not isinstance(value, str):
        raise TypeError(
            f"string_to_ordered_bytes: value must be str or None, not {type(value).__name__}"
        )
    written = _utf8_fit(utf8_prefix(value), n)
    return written + bytes(n - len(written))


def byte_truncate_or_fill(value: Any, length: int) -> bytes:
    """Iceberg's ``byteTruncateOrFill``: the first ``length`` bytes, zero-padded if shorter.

    ``value`` is bytes-like (bytes, bytearray, memoryview, a uint8 array) or ``None``,
    which gives zeros (Iceberg since PR 10026; before, a null threw). str is a TypeError.

    >>> byte_truncate_or_fill(b"\\x01\\x02", 4).hex()
    '01020000'
    """
    n = check_length(length, "byte_truncate_or_fill")
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
    if view.ndim > 1:   # (one value: a 2-D buffer's rows would be run together)
        raise ValueError(
            f"byte_truncate_or_fill: value must be one bytes-like value (1-D), not of shape "
            f"{view.shape}"
        )
    data = view.tobytes()[:n]   # (in order, whatever the view's strides)
    return data + bytes(n - len(data))
