"""``table.take(rows)``, with string and binary columns gathered by ``_gather``.

A rewrite puts every row in a new order, a row group at a time, and on a table with
text columns most of that reorder was Arrow's ``take`` of those columns, which appends
one value at a time through a builder (NOTES, "Reorder: strings"). The columns of other
types are Arrow's ``take``; so is any column the gather does not cover (an extension
type, or values too many bytes in all for its offsets).

A column of several chunks (a table read from several files or row groups) is gathered
from its chunks in place where its type is fixed-width, string or binary
(``gathers_chunks``): a combined copy of the whole table first cost as much as the
reorder itself (NOTES, "Reorder: columns of several chunks"). The rows' chunks are found
once per call for every column of the same layout. Readers keep a column in its chunks
only where ``keeps_chunks`` says so, at most ``MAX_CHUNKS`` of them.
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy

from zorder.parquet import _gather

__all__ = ["take_rows"]


def _wide_offsets(typ: Any) -> Optional[bool]:
    """Whether a column of ``typ`` has 64-bit offsets (None: not string or binary)."""
    import pyarrow as pa

    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        return False
    if pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
        return True
    return None


def _take_var(arr: Any, rows: numpy.ndarray, wide: bool) -> Any:
    """``arr.take(rows)`` for a string or binary array (one chunk)."""
    import pyarrow as pa

    if len(arr) == 0 or len(rows) == 0:   # (an empty array may have no offsets at all)
        return arr.take(pa.array(rows, pa.int64()))
    offset_type = numpy.int64 if wide else numpy.int32
    validity, offsets_buffer, data_buffer = arr.buffers()[:3]
    offsets = numpy.frombuffer(offsets_buffer, dtype=offset_type,
                               count=arr.offset + len(arr) + 1)
    out_offsets_buffer = _arrow_buffer((len(rows) + 1) * offsets.itemsize)
    out_offsets = numpy.frombuffer(out_offsets_buffer, dtype=offset_type)
    starts = numpy.empty(len(rows), dtype=numpy.int64)
    total = _gather.gather_offsets(offsets, arr.offset, rows, out_offsets, starts)
    if total < 0:   # (more bytes than 32-bit offsets hold: Arrow's take says what to do)
        return arr.take(pa.array(rows))
    data = (numpy.frombuffer(data_buffer, dtype=numpy.uint8) if data_buffer is not None
            else numpy.zeros(0, numpy.uint8))
    out_buffer = _arrow_buffer(total)
    _gather.gather_bytes(data, starts, out_offsets, numpy.frombuffer(out_buffer, numpy.uint8))
    del starts
    bitmap, nulls = None, 0
    if arr.null_count:
        bitmap = _arrow_buffer((len(rows) + 7) // 8)
        bits = numpy.frombuffer(bitmap, dtype=numpy.uint8)
        bits[:] = 0
        nulls = _gather.gather_bits(numpy.frombuffer(validity, dtype=numpy.uint8),
                                    arr.offset, rows, bits)
    return pa.Array.from_buffers(arr.type, len(rows), [bitmap, out_offsets_buffer, out_buffer],
                                 null_count=nulls)


def _arrow_buffer(size: int) -> Any:
    """A writable buffer of ``size`` bytes from Arrow's memory pool, where the rest of a
    rewrite's rows live (numpy's would come from the C heap, whose per-thread arenas keep
    what a row group freed)."""
    import pyarrow as pa

    return pa.allocate_buffer(size)


def _fixed_width(typ: Any) -> Optional[int]:
    """Bytes a value of ``typ`` takes where its values are one buffer of that many bytes
    each (integers, floats, dates, times, timestamps, durations, decimals, fixed-size
    binary); None otherwise (booleans are bits)."""
    import pyarrow as pa

    if pa.types.is_boolean(typ) or pa.types.is_dictionary(typ) or pa.types.is_null(typ) \
            or isinstance(typ, pa.BaseExtensionType):   # (uuid, json, user types: Arrow's)
        return None
    try:
        bits = typ.bit_width
    except ValueError:   # (variable width, nested)
        return None
    return bits // 8 if bits % 8 == 0 and bits > 0 else None


def gathers_chunks(typ: Any) -> bool:
    """Whether ``take_rows`` gathers a column of ``typ`` from its chunks in place (else
    it is better combined into one chunk first: Arrow's ``take`` of a chunked column
    concatenates it on every call)."""
    return _fixed_width(typ) is not None or _wide_offsets(typ) is not None


#: The most chunks a column is gathered from in place (``keeps_chunks``). Each call
#: visits every chunk of every column (about 2.5 us each, in Python), and a sort makes
#: about as many calls as its input has row groups: a file of 1,000 row groups of 300
#: rows took 35 s kept in chunks against 1.4 s combined. Up to 64 chunks the visits
#: cost at most about a millisecond a call.
MAX_CHUNKS = 64


def keeps_chunks(column: Any) -> bool:
    """Whether a reader should leave ``column`` (a ChunkedArray) in its chunks for
    ``take_rows``, rather than combine it: a type it gathers in place, in at most
    ``MAX_CHUNKS`` chunks."""
    return column.num_chunks <= MAX_CHUNKS and gathers_chunks(column.type)


def combined_for_take(holder: List[Any], keep_chunks: bool = True) -> Any:
    """The table taken out of ``holder`` (a one-item list, its only reference), ready for
    ``take_rows``: each column in one chunk, but those it gathers in place where
    ``keep_chunks`` (``keeps_chunks``). Each column's chunks are let go once combined, so
    the table and its combined copy are never both whole in memory."""
    import pyarrow as pa

    table = holder.pop()
    schema, columns = table.schema, list(table.columns)
    del table
    for i, name in enumerate(schema.names):
        if not (keep_chunks and keeps_chunks(columns[i])):
            # (a one-column table: its combine splits binary data past 2 GB into chunks)
            columns[i] = pa.table([columns[i]], names=[name]).combine_chunks().column(0)
    return pa.Table.from_arrays(columns, schema=schema)


class _ChunkRows:
    """Which chunk holds each of the rows, and the row there, for one chunk layout."""

    def __init__(self, lengths: Any, rows: numpy.ndarray) -> None:
        self.lengths = numpy.asarray(lengths, dtype=numpy.int64)
        bounds = numpy.zeros(len(lengths) + 1, dtype=numpy.int64)
        numpy.cumsum(self.lengths, out=bounds[1:])
        self.which = numpy.empty(len(rows), dtype=numpy.int32)
        self.local = numpy.empty(len(rows), dtype=numpy.int64)
        _gather.chunk_rows(bounds, rows, self.which, self.local)


def _buffer_bytes(buffer: Any, start: int, size: int) -> Optional[numpy.ndarray]:
    """``size`` bytes of an Arrow buffer from ``start`` as a uint8 array (None: none)."""
    if buffer is None:
        return None
    return numpy.frombuffer(buffer, dtype=numpy.uint8, count=size, offset=start)


def _validity(chunks: Any, where: _ChunkRows, n: int) -> "tuple[Any, int]":
    """The gathered validity bitmap (None: no nulls) and the null count."""
    if not any(chunk.null_count for chunk in chunks):
        return None, 0
    views = [numpy.frombuffer(chunk.buffers()[0], dtype=numpy.uint8) if chunk.null_count
             else None for chunk in chunks]
    bitmap = _arrow_buffer((n + 7) // 8)
    bits = numpy.frombuffer(bitmap, dtype=numpy.uint8)
    bits[:] = 0
    offsets = numpy.array([chunk.offset for chunk in chunks], dtype=numpy.int64)
    nulls = _gather.gather_bits_chunks(views, offsets, where.lengths, where.which,
                                       where.local, bits)
    return bitmap, nulls


def _take_chunks(column: Any, rows: numpy.ndarray, where: _ChunkRows) -> Any:
    """``column.take(rows)`` from its chunks in place (a type ``gathers_chunks`` takes;
    ``where``: the rows' chunks)."""
    import pyarrow as pa

    chunks = column.chunks
    n = len(where.which)
    width = _fixed_width(column.type)
    bitmap, nulls = _validity(chunks, where, n)
    if width is not None:
        values = [_buffer_bytes(c.buffers()[1], c.offset * width, len(c) * width)
                  for c in chunks]
        out = _arrow_buffer(n * width)
        _gather.gather_fixed_chunks(values, where.lengths, width, where.which, where.local,
                                    numpy.frombuffer(out, dtype=numpy.uint8))
        return pa.Array.from_buffers(column.type, n, [bitmap, out], null_count=nulls)
    wide = bool(_wide_offsets(column.type))
    unit = 8 if wide else 4
    offsets = [_buffer_bytes(c.buffers()[1], c.offset * unit, (len(c) + 1) * unit)
               for c in chunks]
    data = [c.buffers()[2] for c in chunks]
    data_views = [None if d is None else numpy.frombuffer(d, dtype=numpy.uint8) for d in data]
    data_sizes = numpy.array([0 if d is None else len(d) for d in data_views], dtype=numpy.int64)
    offset_type = numpy.int64 if wide else numpy.int32
    out_offsets_buffer = _arrow_buffer((n + 1) * unit)
    out_offsets = numpy.frombuffer(out_offsets_buffer, dtype=offset_type)
    starts = numpy.empty(n, dtype=numpy.int64)
    total = _gather.gather_offsets_chunks(offsets, where.lengths, where.which, where.local,
                                          out_offsets, starts)
    if total < 0:   # (more bytes than 32-bit offsets hold: Arrow's take says what to do)
        return column.take(pa.array(rows))
    out = _arrow_buffer(total)
    _gather.gather_bytes_chunks(data_views, data_sizes, where.which, starts, out_offsets,
                                numpy.frombuffer(out, dtype=numpy.uint8))
    return pa.Array.from_buffers(column.type, n, [bitmap, out_offsets_buffer, out],
                                 null_count=nulls)


def take_rows(table: Any, rows: Any) -> Any:
    """The rows ``rows`` (integers, each in range) of the pyarrow Table or RecordBatch
    ``table``, in that order: ``table.take(rows)``, with the same schema and values."""
    import pyarrow as pa

    rows = numpy.asarray(rows)
    if rows.dtype.kind not in "iu":
        raise TypeError(f"rows must be integers, not {rows.dtype}")
    rows = numpy.ascontiguousarray(rows, dtype=numpy.int64)
    batch = isinstance(table, pa.RecordBatch)
    layouts: dict = {}
    columns = []
    for column in table.columns:
        wide = _wide_offsets(column.type)
        if wide is not None and (batch or column.num_chunks == 1):
            columns.append(_take_var(column if batch else column.chunk(0), rows, wide))
        elif not batch and column.num_chunks > 1 and keeps_chunks(column):
            lengths = tuple(len(chunk) for chunk in column.chunks)
            if lengths not in layouts:
                layouts[lengths] = _ChunkRows(lengths, rows)
            columns.append(_take_chunks(column, rows, layouts[lengths]))
        else:
            columns.append(column.take(rows))
    kind = pa.RecordBatch if batch else pa.Table
    return kind.from_arrays(columns, schema=table.schema)
