"""Iceberg's ordered bytes of a whole column, as Iceberg's Spark Z-order UDF makes them.

``ordered_bytes`` takes a numpy array (or list), a pyarrow array or a pandas Series and
hands it to the adapter for its kind (``numpy_columns``, ``arrow_columns``,
``pandas_columns``), which follow the per-type rules of ``SparkZOrderUDF``: its nulls,
booleans, dates and timestamps, and the release differences of ``options``.

>>> ordered_bytes(numpy.array([-1, 0, 1], dtype=numpy.int32)).tolist()[1]
[128, 0, 0, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

from collections.abc import Mapping, Set, ValuesView
from typing import Any, Optional

import numpy

from zorder.ordered.arrow_columns import arrow_column, arrow_module, is_arrow
from zorder.ordered.errors import ColumnTypeError, ColumnValueError
from zorder.ordered.numbers import number_list
from zorder.ordered.numpy_columns import numpy_column
from zorder.ordered.options import (
    FIRST_NTZ_RELEASE, FIRST_NULL_BOOLEAN_RELEASE, ICEBERG_DEFAULT, PRIMITIVE_BUFFER_SIZE,
    check_length, date_mode, iceberg_mode, iceberg_release, timestamp_kind,
)
from zorder.ordered.pandas_columns import is_pandas, pandas_to_column

__all__ = ["ordered_bytes"]


def ordered_bytes(values: Any, length: Optional[int] = None, *, iceberg: str = ICEBERG_DEFAULT,
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
      date64: DATE, days since 1970-01-01 as a long; all zeros with ``spark="3.5"``. A
      date past Spark's DATE, an int of days, is a ColumnValueError.
    - datetime64 with a time unit (h, m, s, ms, us, ns, ...): numpy has no time zone, so
      TIMESTAMP_NTZ, microseconds since the epoch (finer units floored), as a long;
      ``timestamp="tz"`` reads the values as UTC instants instead.
    - Arrow timestamp without a zone: TIMESTAMP_NTZ, microseconds. With a zone (any zone;
      the values are UTC instants): TIMESTAMP, whole seconds (floored), as Spark's cast
      to BIGINT gives them. ``timestamp=`` overrides either. Spark holds both kinds as
      microseconds in a long: a value past that is a ColumnValueError with either.
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
    as ``""``). A null boolean gives 8 zero bytes (the same as false) with the default,
    1.12, and main (PRs 17669 / 18077); with 1.11 or earlier it is a ValueError, since
    those releases throw a NullPointerException there. Nulls are: Arrow nulls,
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
        iceberg: the Iceberg whose bytes to give. ``"1.12"`` (default,
            ``ICEBERG_DEFAULT``: the newest release) and ``"main"``: PR 17071's float
            fix, null booleans as zeros. ``"1.11"`` (also ``"legacy"`` or a release number
            "1.0" .. "1.11.x"): the float formula of Iceberg 1.11.0 and every earlier
            release, whose order is wrong among floats that share their top 32 bits
            (matched on purpose, so the clustering is that version's); a null boolean
            raises; TIMESTAMP_NTZ is refused before 1.11.
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
    >>> bytes(ordered_bytes(numpy.array([1.0]))[0]).hex()
    'bff0000000000000'
    >>> bytes(ordered_bytes(numpy.array([1.0]), iceberg="1.11")[0]).hex()
    'bff000007fe00000'
    """
    n_length = check_length(length, "ordered_bytes", default=PRIMITIVE_BUFFER_SIZE)
    float_mode = iceberg_mode(iceberg)
    dates = date_mode(iceberg, spark)
    release = iceberg_release(iceberg)
    kind = timestamp_kind(timestamp)

    inherent = None
    if is_pandas(values):
        values, inherent = pandas_to_column(values)
    if is_arrow(values):
        pa = arrow_module()
        if not isinstance(values, (pa.Array, pa.ChunkedArray)):
            raise ColumnTypeError(
                f"must be a pyarrow Array or ChunkedArray, not "
                f"{type(values).__name__} (pass one column)"
            )
        if release is not None and release < FIRST_NTZ_RELEASE:
            _refuse_ntz(_arrow_is_ntz(values.type, kind), release)
        given = _given_nulls((inherent, mask), len(values))
        out, nulls = arrow_column(values, n_length, float_mode, dates, kind, given)
    else:
        if isinstance(values, numpy.ma.MaskedArray):
            inherent = numpy.ma.getmaskarray(values)
            values = values.data
        elif not isinstance(values, numpy.ndarray):
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise ColumnTypeError(
                    f"must be a 1-D array or sequence, not "
                    f"{type(values).__name__} (use the scalar *_to_ordered_bytes functions)"
                )
            if is_unordered(values):
                raise ColumnTypeError(
                    f"must be an ordered sequence, one value per row, not "
                    f"{type(values).__name__}: sets and mappings have no row order (a "
                    f"set's changes from run to run)"
                )
            items = list(values)
            if mixes_booleans(items):
                raise ColumnTypeError(
                    "mixes booleans with numbers: a column has one type (BOOLEAN's bytes "
                    "are not the number's)"
                )
            numbers = number_list(items)
            if numbers is not None:
                # integers (BIGINT) or integers with floats (DOUBLE), exact or refused
                values = numbers
            else:
                try:
                    as_array = numpy.asarray(items)
                except ValueError as exc:  # ragged nesting, e.g. [[1, 2], [3]]
                    raise ColumnValueError(
                        f"must be a flat sequence of values, one per row, not ragged or "
                        f"nested lists ({exc})"
                    ) from None
                if as_array.dtype.kind in "US":
                    # numpy turns [1, "a"] into strings: keep the objects, so mixed types
                    # are an error rather than the string "1".
                    values = numpy.asarray(items, dtype=object)
                else:
                    values = as_array
        if values.ndim != 1:
            raise ColumnTypeError(
                f"must be 1-D (one column), got shape {values.shape}"
            )
        if release is not None and release < FIRST_NTZ_RELEASE:
            _refuse_ntz(values.dtype.kind == "M" and numpy.datetime_data(values.dtype)[0]
                        not in ("Y", "M", "W", "D", "generic") and kind != "tz", release)
        # (the nulls given, before the values are read: a date or timestamp's range is not
        # checked where the row is a null)
        given = _given_nulls((inherent, mask), values.shape[0])
        out, nulls = numpy_column(values, n_length, float_mode, dates, kind, given)
    if given is not None:
        nulls = given if nulls is None else (nulls | given)
    if nulls is not None and nulls.any():
        if release is not None and release < FIRST_NULL_BOOLEAN_RELEASE and _is_boolean(values):
            first = int(numpy.argmax(nulls))
            raise ColumnValueError(
                f"a null BOOLEAN (first at index {first}): Iceberg's Spark UDF throws there "
                f"in every release before 1.12 (a NullPointerException that fails the "
                f"rewrite), and iceberg={iceberg!r} is one; the default, {ICEBERG_DEFAULT!r}, "
                f"and 'main' give 8 zero bytes (PR 17669 / 18077)"
            )
        out[nulls] = 0
    return numpy.ascontiguousarray(out)


def is_unordered(obj: Any) -> bool:
    """A set, a mapping or a dict's view: its iteration order is not one the caller chose
    (a set of strings changes order from run to run), so it is never taken as a sequence
    of rows or of columns, whose order decides every Z-value."""
    return isinstance(obj, (Set, Mapping, ValuesView))


def mixes_booleans(items: list) -> bool:
    """Whether Python values mix booleans with other numbers (numpy would make [True, 2] a
    BIGINT column silently)."""
    kinds = {isinstance(v, (bool, numpy.bool_)) for v in items
             if isinstance(v, (bool, numpy.bool_, int, float, numpy.number))}
    return len(kinds) == 2


def _is_boolean(values: Any) -> bool:
    """Whether a converted column is Spark's BOOLEAN (numpy bool, Arrow bool)."""
    if isinstance(values, numpy.ndarray):
        return values.dtype.kind == "b"
    typ = getattr(values, "type", None)
    if typ is None:
        return False
    import pyarrow.types as t

    return bool(t.is_boolean(typ.value_type if t.is_dictionary(typ) else typ))


def _arrow_is_ntz(typ: Any, kind: Optional[str]) -> bool:
    import pyarrow.types as t

    if t.is_dictionary(typ):
        typ = typ.value_type
    return bool(t.is_timestamp(typ) and (kind == "ntz" or (kind is None and typ.tz is None)))


def _given_nulls(masks: Any, n: int) -> Optional[numpy.ndarray]:
    """The OR of the null masks given (None where none is), each checked: bool, n long."""
    nulls = None
    for extra in masks:
        if extra is None:
            continue
        extra = numpy.asarray(extra)
        if extra.dtype != bool:
            raise TypeError(f"ordered_bytes: mask must be a bool array, not {extra.dtype}")
        if extra.shape != (n,):
            raise ValueError(f"ordered_bytes: mask must have shape ({n},), got {extra.shape}")
        nulls = extra if nulls is None else (nulls | extra)
    return nulls


def _refuse_ntz(is_ntz: bool, release: Any) -> None:
    if is_ntz:
        raise ColumnTypeError(
            f"a TIMESTAMP_NTZ column, which Iceberg {'.'.join(map(str, release))} refuses "
            f"in Z-order (it arrived in 1.11.0, apache/iceberg #15778); pass a newer iceberg= "
            f"or timestamp='tz' if the column is Spark's TIMESTAMP"
        )
