"""Fixed-width columns (integers, floats, booleans, dates, timestamps) as ordered bytes,
vectorized over numpy arrays; shared by the numpy and Arrow adapters."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy

from zorder.ordered._numbers import ordered_doubles, ordered_longs
from zorder.ordered.errors import ColumnTypeError, ColumnValueError




# Ticks per second of each datetime64 unit (sub-second units), and seconds per tick.
TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9, "ps": 10**12,
                     "fs": 10**15, "as": 10**18}
SECONDS_PER_TICK = {"m": 60, "h": 3600, "D": 86400}
DATE_UNITS = ("Y", "M", "W", "D")


def be8(u: numpy.ndarray) -> numpy.ndarray:
    """(N,) 64-bit words -> (N, 8) uint8, big-endian."""
    return u.astype(">u8").view(numpy.uint8).reshape(-1, 8)  # always a fresh array


def whole_numbers(v: numpy.ndarray) -> numpy.ndarray:
    """(N,) integers -> (N, 8) ordered bytes of longs: sign bit flipped, big-endian."""
    out = numpy.empty((v.shape[0], 8), dtype=numpy.uint8)
    ordered_longs(v.astype(numpy.int64, copy=False), out)
    return out


def floats(v: numpy.ndarray, mode: str) -> numpy.ndarray:
    """(N,) floats -> (N, 8) ordered bytes of doubles, as Iceberg's release ``mode``
    computes them: released versions shift the bits right by 31, not 63 as ``main`` does,
    which leaves negative doubles only partly in order (zorder.ordered.scalar)."""
    with numpy.errstate(invalid="ignore"):  # a signalling NaN widens quietly, as in Java
        d = v.astype(numpy.float64, copy=False)  # exact for float16/float32
    out = numpy.empty((v.shape[0], 8), dtype=numpy.uint8)
    ordered_doubles(d, out, 63 if mode == "main" else 31)
    return out


def booleans(v: numpy.ndarray) -> numpy.ndarray:
    out = numpy.zeros((v.shape[0], 8), dtype=numpy.uint8)
    out[:, 0] = v.astype(bool, copy=False).view(numpy.uint8) * numpy.uint8(0x81)
    return out


def floor_div(v: numpy.ndarray, d: int) -> numpy.ndarray:
    return v // numpy.int64(d) if d != 1 else v


def _checked_mul(v: numpy.ndarray, m: int, valid: Optional[numpy.ndarray], what: str) -> numpy.ndarray:
    if m == 1:
        return v
    # v * m within [-2**63, 2**63 - 1]
    bad = (v > ((1 << 63) - 1) // m) | (v < -((1 << 63) // m))
    if valid is not None:
        bad &= valid
    if bad.any():
        raise ColumnValueError(f"a timestamp is out of the range Spark can hold as {what}",
                               first=int(numpy.argmax(bad)))
    return v * numpy.int64(m)


def timestamps(ticks: numpy.ndarray, ticks_per_second: Optional[int], seconds_per_tick: int,
               kind: str, valid: Optional[numpy.ndarray]) -> numpy.ndarray:
    """int64 ticks of a unit -> Spark's long: microseconds (ntz) or floored seconds (tz).

    Spark holds both kinds as microseconds in a long, so a value past that range is a
    ColumnValueError with either kind (the seconds of such a value would fit, but no
    Spark table can hold it). Floored seconds of floored microseconds are the floored
    seconds of the ticks."""
    if ticks_per_second is not None and ticks_per_second >= 10**6:
        micros = floor_div(ticks, ticks_per_second // 10**6)
    elif ticks_per_second is not None:
        micros = _checked_mul(ticks, 10**6 // ticks_per_second, valid, "microseconds")
    else:
        micros = _checked_mul(ticks, seconds_per_tick * 10**6, valid, "microseconds")
    return floor_div(micros, 10**6) if kind == "tz" else micros


#: Spark's DATE is an int of days since 1970-01-01.
DAYS_MIN, DAYS_MAX = -(1 << 31), (1 << 31) - 1


def _refuse_dates(bad: numpy.ndarray, valid: Optional[numpy.ndarray]) -> None:
    if valid is not None:
        bad &= valid
    if bad.any():
        raise ColumnValueError("a date is out of the range Spark can hold as days, an int",
                               first=int(numpy.argmax(bad)))


def spark_days(days: numpy.ndarray, valid: Optional[numpy.ndarray]) -> numpy.ndarray:
    """int64 days, refused (ColumnValueError) where Spark's int DATE cannot hold them."""
    _refuse_dates((days < DAYS_MIN) | (days > DAYS_MAX), valid)
    return days


def datetime64(v: numpy.ndarray, spark: str, kind: Optional[str],
               given_nulls: Optional[numpy.ndarray] = None) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(bytes, null mask) of a numpy datetime64 array; NaT and ``given_nulls`` rows are
    nulls, whose range is not checked."""
    unit, count = numpy.datetime_data(v.dtype)
    if unit == "generic":
        raise ColumnTypeError("datetime64 without a unit is not supported")
    if not v.dtype.isnative:   # (the ticks are read through an int64 view below)
        v = v.astype(v.dtype.newbyteorder("="))
    nat = numpy.isnat(v)
    absent = nat if given_nulls is None else (nat | given_nulls)
    valid = ~absent if absent.any() else None
    if unit in DATE_UNITS:
        if spark == "3.5":
            return numpy.zeros((v.shape[0], 8), dtype=numpy.uint8), nat
        # Coarse units (Y, M, W, or a multiple) are converted by numpy, which wraps past
        # the long range: ticks past Spark's day range are refused before that (a tick is
        # at least a day), so the conversion is exact and the days are checked after it.
        ticks, limit = v.view(numpy.int64), DAYS_MAX // count
        _refuse_dates((ticks > limit) | (ticks < -limit - 1), valid)
        days = v.astype("datetime64[D]").view(numpy.int64)
        return whole_numbers(spark_days(days, valid)), nat
    ticks = v.view(numpy.int64)
    if count != 1:
        ticks = _checked_mul(ticks, count, valid, "its own unit")
    longs = timestamps(ticks, TICKS_PER_SECOND.get(unit), SECONDS_PER_TICK.get(unit, 0),
                        kind or "ntz", valid)
    return whole_numbers(longs), nat


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def python_ints(items: list, nulls: Optional[numpy.ndarray] = None) -> numpy.ndarray:
    """Python ints (a BIGINT column) as an int64 array, exactly: never through float64.

    An int outside the long range is a ColumnValueError naming it (Iceberg has no
    unsigned 64-bit type); entries flagged in ``nulls`` become 0.
    """
    out = numpy.zeros(len(items), dtype=numpy.int64)
    for i, v in enumerate(items):
        if nulls is not None and nulls[i]:
            continue
        if not _LONG_MIN <= v <= _LONG_MAX:
            raise ColumnValueError(
                f"value {v} at index {i} is outside the long range [-2**63, 2**63 - 1] "
                f"(Iceberg has no unsigned 64-bit type)"
            )
        out[i] = v
    return out


def bigint_objects(items: list) -> bool:
    """Whether the items are a BIGINT column: integers, Python's or numpy's (bool excluded:
    BOOLEAN has its own bytes), not all numpy unsigned ones (whose unsigned type is
    exact), whatever numpy or Arrow would make of them together."""
    return bool(items) and all(isinstance(v, (int, numpy.integer)) and not isinstance(v, bool)
                               for v in items) \
        and not all(isinstance(v, numpy.unsignedinteger) for v in items)


def number_list(items: list) -> Optional[numpy.ndarray]:
    """The column of a list of integers, or of integers and floats, typed by the list's own
    values and never by numpy's promotion (which makes ``[np.int64(-1), 2**63]`` float64
    and rounds ``[2**53 + 1, 0.5]``); None for any other list (floats, booleans, strings,
    an all numpy-unsigned list, whose widest unsigned dtype is exact), which numpy types.

    Integers (Python or numpy) are BIGINT, each in the long range; integers with floats
    are DOUBLE, each integer exactly a double. A value that does not fit is a
    ColumnValueError naming it.
    """
    kinds = set()
    for v in items:
        if isinstance(v, (bool, numpy.bool_)):
            return None
        if isinstance(v, numpy.unsignedinteger):
            kinds.add("u")
        elif isinstance(v, (int, numpy.integer)):
            kinds.add("i")
        elif isinstance(v, float) or (isinstance(v, numpy.floating) and v.itemsize <= 8):
            kinds.add("f")
        else:
            return None  # (long double is refused as an array: numpy's asarray keeps it)
    if not kinds & {"i", "u"} or kinds == {"u"}:
        return None
    if "f" in kinds:
        return _exact_doubles(items)
    as_array = numpy.asarray(items)
    if as_array.dtype.kind == "i":  # every value converted exactly
        return as_array
    return python_ints([int(v) for v in items])


def _exact_doubles(items: list) -> numpy.ndarray:
    """Integers and floats as float64, each integer refused unless it is exactly a double."""
    doubles = []
    for i, v in enumerate(items):
        if isinstance(v, (int, numpy.integer)):
            n = int(v)
            try:
                d = float(n)
            except OverflowError:
                d = None
            if d is None or d != n:
                became = "overflow" if d is None else f"round to {d!r}"
                raise ColumnValueError(
                    f"value {n} at index {i} is not exactly a double (a list mixing integers "
                    f"with floats is a DOUBLE column, where it would {became}); pass a typed "
                    f"array if that is what you mean"
                )
            v = d
        doubles.append(v)
    with numpy.errstate(invalid="ignore"):  # a signalling float32 NaN widens quietly
        return numpy.array(doubles, dtype=numpy.float64)
