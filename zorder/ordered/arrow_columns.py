"""pyarrow arrays as ordered bytes, read from their buffers without a copy where possible."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy

from zorder.ordered.errors import ColumnTypeError, ColumnValueError
from zorder.ordered.numbers import (
    TICKS_PER_SECOND, be8, booleans, floats, floor_div, spark_days, timestamps, whole_numbers,
)
from zorder.ordered.strings import gather


def arrow_module():
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - only without the extra
        return None
    return pyarrow


def is_arrow(values: Any) -> bool:
    return type(values).__module__.startswith("pyarrow")


def _arrow_fixed(arr, dtype) -> numpy.ndarray:
    """The values buffer of a fixed-width Arrow array, zero-copy (nulls hold garbage)."""
    buf = arr.buffers()[1]
    if buf is None or len(arr) == 0:
        return numpy.zeros(len(arr), dtype=dtype)
    return numpy.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def arrow_column(arr, length: int, mode: str, spark: str, kind: Optional[str],
                 given: Optional[numpy.ndarray] = None
                 ) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    """(bytes, nulls) of an Arrow column. ``given``: the caller's nulls (``mask=``), whose
    rows are not range-checked either (the caller ORs them into the nulls)."""
    pa = arrow_module()
    import pyarrow.types as t

    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:  # no copy of the bytes, and no null mask when none is null
            return arrow_column(arr.chunk(0), length, mode, spark, kind, given)
        parts, masks = [], []
        start = 0
        for chunk in arr.chunks:
            part_given = None if given is None else given[start:start + len(chunk)]
            try:
                b, m = arrow_column(chunk, length, mode, spark, kind, part_given)
            except ColumnValueError as exc:
                if exc.first is not None:   # (a row of the column, not of the chunk)
                    exc.first += start
                raise
            start += len(chunk)
            parts.append(b)
            masks.append(m)
        if not parts:
            width = arrow_width(arr.type, length)
            return numpy.zeros((0, width), dtype=numpy.uint8), None
        if all(m is None for m in masks):
            return numpy.concatenate(parts), None
        return numpy.concatenate(parts), numpy.concatenate(
            [m if m is not None else numpy.zeros(b.shape[0], dtype=bool)
             for m, b in zip(masks, parts)])
    typ = arr.type
    if t.is_dictionary(typ):
        try:
            decoded = arr.dictionary_decode()
        except pa.ArrowNotImplementedError:
            # pyarrow has no take for some value types (string_view, binary_view): encode
            # each dictionary value once and pick rows by index.
            return _dictionary_by_index(arr, length, mode, spark, kind)
        return arrow_column(decoded, length, mode, spark, kind, given)
    n = len(arr)
    if t.is_null(typ):  # no values at all: as an all-null STRING column
        return numpy.zeros((n, length), dtype=numpy.uint8), None
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    # the rows whose values are not read: a date or timestamp's range is not checked there
    skipped = nulls if given is None else (given if nulls is None else nulls | given)
    if t.is_integer(typ) or t.is_floating(typ):
        dtype = typ.to_pandas_dtype()
        v = _arrow_fixed(arr, dtype)
        if t.is_floating(typ):
            return floats(v, mode), nulls
        if t.is_unsigned_integer(typ):
            return be8(v.astype(numpy.uint64)), nulls
        return whole_numbers(v), nulls
    if t.is_boolean(typ):
        v = arr.fill_null(False).to_numpy(zero_copy_only=False) if nulls is not None \
            else arr.to_numpy(zero_copy_only=False)
        return booleans(v), nulls
    if t.is_date(typ):
        if spark == "3.5":
            return numpy.zeros((n, 8), dtype=numpy.uint8), nulls
        if t.is_date32(typ):
            days = _arrow_fixed(arr, numpy.int32).astype(numpy.int64)
        else:
            days = spark_days(floor_div(_arrow_fixed(arr, numpy.int64), 86_400_000),
                              ~skipped if skipped is not None else None)
        return whole_numbers(days), nulls
    if t.is_timestamp(typ):
        ticks = _arrow_fixed(arr, numpy.int64)
        valid = ~skipped if skipped is not None else None
        inferred = "tz" if typ.tz is not None else "ntz"
        longs = timestamps(ticks, TICKS_PER_SECOND[typ.unit], 0, kind or inferred, valid)
        return whole_numbers(longs), nulls
    if (t.is_string(typ) or t.is_large_string(typ)) and not _valid_utf8(arr):
        # Spark decodes a string column's bytes before Iceberg encodes them again: each
        # malformed sequence becomes U+FFFD (the replacement Python's decoder makes too).
        texts = [None if b is None else b.decode("utf-8", "replace")
                 for b in arr.cast(pa.large_binary()).to_pylist()]
        return arrow_column(pa.array(texts, pa.large_string()), length, mode, spark, kind, given)
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
        return gather(data, starts, lens, length, utf8), nulls
    if t.is_fixed_size_binary(typ):
        width = typ.byte_width
        buf = arr.buffers()[1]
        data = numpy.frombuffer(buf, dtype=numpy.uint8) if buf is not None \
            else numpy.zeros(0, dtype=numpy.uint8)
        starts = (numpy.arange(n, dtype=numpy.int64) + arr.offset) * width
        lens = numpy.full(n, width, dtype=numpy.int64)
        if nulls is not None:
            lens[nulls] = 0
        return gather(data, starts, lens, length, False), nulls
    view = view_kind(typ)
    if view is not None:
        plain = pa.large_string() if view == "string" else pa.large_binary()
        return arrow_column(arr.cast(plain), length, mode, spark, kind, given)
    raise ColumnTypeError(
        f"unsupported Arrow type {typ}; Iceberg's Spark UDF takes "
        f"integers, floats, booleans, dates, timestamps, strings and binary"
    )


def _valid_utf8(arr: Any) -> bool:
    """Whether a string array's bytes are valid UTF-8 (Arrow and Parquet can hold any)."""
    pa = arrow_module()
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _dictionary_by_index(arr, length: int, mode: str, spark: str, kind: Optional[str]):
    """(bytes, nulls) of a dictionary array whose values pyarrow cannot take."""
    values, value_nulls = arrow_column(arr.dictionary, length, mode, spark, kind)
    index_nulls = arr.indices.is_null().to_numpy(zero_copy_only=False)
    positions = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(numpy.intp)
    if len(values) == 0:   # (only null indices can point into an empty dictionary)
        return numpy.zeros((len(arr), values.shape[1]), dtype=numpy.uint8), index_nulls
    out = values[positions]
    out[index_nulls] = 0
    nulls = index_nulls if value_nulls is None else index_nulls | value_nulls[positions]
    return out, (nulls if nulls.any() else None)


def arrow_width(typ, length: int) -> int:
    import pyarrow.types as t
    if t.is_dictionary(typ):
        typ = typ.value_type
    if (t.is_null(typ) or t.is_string(typ) or t.is_large_string(typ) or t.is_binary(typ)
            or t.is_large_binary(typ) or t.is_fixed_size_binary(typ)
            or view_kind(typ) is not None):
        return length
    return 8


def view_kind(typ: Any) -> Optional[str]:
    """"string" for a string_view type, "binary" for a binary_view, else None (also with
    a pyarrow too old to have view types)."""
    import pyarrow.types as t

    for kind, test in (("string", "is_string_view"), ("binary", "is_binary_view")):
        if getattr(t, test, lambda _: False)(typ):
            return kind
    return None
