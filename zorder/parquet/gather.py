"""``table.take(rows)``, with string and binary columns gathered by ``_gather``.

A rewrite puts every row in a new order, a row group at a time, and on a table with
text columns most of that reorder was Arrow's ``take`` of those columns, which appends
one value at a time through a builder (NOTES, "Reorder: strings"). The columns of other
types are Arrow's ``take``; so is any column the gather does not cover (several chunks,
an extension type, or values too many bytes in all for its offsets).
"""

from __future__ import annotations

from typing import Any, Optional

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


def take_rows(table: Any, rows: Any) -> Any:
    """The rows ``rows`` (integers, each in range) of the pyarrow Table or RecordBatch
    ``table``, in that order: ``table.take(rows)``, with the same schema and values."""
    import pyarrow as pa

    rows = numpy.asarray(rows)
    if rows.dtype.kind not in "iu":
        raise TypeError(f"rows must be integers, not {rows.dtype}")
    rows = numpy.ascontiguousarray(rows, dtype=numpy.int64)
    batch = isinstance(table, pa.RecordBatch)
    columns = []
    for column in table.columns:
        wide = _wide_offsets(column.type)
        if wide is not None and (batch or column.num_chunks == 1):
            columns.append(_take_var(column if batch else column.chunk(0), rows, wide))
        else:
            columns.append(column.take(rows))
    kind = pa.RecordBatch if batch else pa.Table
    return kind.from_arrays(columns, schema=table.schema)
