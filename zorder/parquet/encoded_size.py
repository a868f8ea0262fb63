"""An upper bound of the bytes an Arrow table's rows take written as Parquet, in any
order: what lets a rewrite know, without encoding a row, that a group's rows fit in one
file.

Each term is what Arrow's Parquet writer can spend at most:

- the values as plain encoding stores them: a fixed-width value in at most its Arrow
  width, a string or binary value in its bytes and a 4-byte length, booleans in bits;
- definition levels: at most 2 bits a value (runs of eight, each with its header), where
  there are nulls;
- dictionaries: a dictionary page holds each value at most once, and an index needs no
  more bits than the values it tells apart. So a column chunk written with a dictionary
  (until it outgrows its limit, then plain) takes at most its values plain and either the
  dictionary page (at most the values themselves, and at most the limit plus one write
  batch: the writer checks the limit after each batch) or the indices (bits enough to
  number the chunk's rows, and one more for the runs' headers);
- the codec: at most 1/6 larger than its input (snappy's bound, the widest of Parquet's
  codecs: zstd, lz4 and gzip stay under 1%);
- pages: the writer closes one only after a write batch (when it has ``page_bytes`` or
  more, by its own estimate), at 20,000 rows (Arrow's page row limit), on falling back
  from a dictionary and at the end of a column chunk. Each has a header with its
  statistics (at most 4,096 bytes a value, Arrow's ``max_statistics_size``), and pads its
  bits (a boolean page takes at least a byte, levels and indices runs of eight);
- the footer: each column chunk's metadata, its name in each, the schema, and what the
  writer adds beside it (``footer_bytes``: PyIceberg writes each field's doc).

Flat columns only: nested and dictionary-typed columns get no bound (None).

>>> import pyarrow as pa
>>> parquet_size_bound(pa.table({"a": [1, 2, 3]}), compressed=True) > 3 * 8
True
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

__all__ = ["parquet_size_bound"]

#: Arrow's Parquet writer: rows a data page holds at most (``max_rows_per_page``), and the
#: widest statistic it writes (``max_statistics_size``).
_PAGE_ROW_LIMIT = 20_000
_MAX_STATISTIC = 4_096
#: a page header without its statistics, with its levels' length prefixes and the
#: padding of its bits
_PAGE_HEADER = 128
#: a column chunk's metadata in the footer, without its statistics and name
_CHUNK_METADATA = 512
#: the footer's own (key-value metadata: zorder's), and each column's entries in it
#: besides its chunks (its name in the Parquet schema and in Arrow's, base64)
_FOOTER = 64 << 10
_FOOTER_COLUMN = 1 << 10
#: snappy's worst case, 32 + n + n / 6, the widest of the codecs
_CODEC_GROWTH = 7 / 6
_CODEC_PAGE = 32


def _plain(column: Any) -> Optional[Tuple[int, int, bool]]:
    """(bytes of ``column``'s values in plain encoding at most, its widest value's,
    whether it may be dictionary-encoded), or None for a type without a bound."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if isinstance(t, pa.BaseExtensionType):   # (a uuid: its 16 bytes)
        t = t.storage_type
        column = pa.chunked_array([c.storage for c in column.chunks], t)
    n = len(column)
    if pa.types.is_null(t):
        return 0, 0, False
    if pa.types.is_boolean(t):
        return -(-n // 8), 1, False
    if (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):
        lengths = pc.binary_length(column)
        total = pc.sum(lengths).as_py() or 0
        widest = pc.max(lengths).as_py() or 0
        return 4 * n + total, 4 + widest, True
    if pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t):
        return n * t.byte_width, t.byte_width, True
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        # (1- and 2-byte integers are stored as 4-byte INT32, half floats as 2 bytes)
        width = max(4, t.bit_width // 8)
        return n * width, width, True
    return None


def parquet_size_bound(table: Any, *, compressed: bool = True,
                       dictionary_bytes: int = 2 * 1024 * 1024,
                       page_bytes: int = 1024 * 1024, batch_rows: int = 20_000,
                       group_rows: int = 1 << 20, footer_bytes: int = 0) -> Optional[int]:
    """Bytes that ``table`` (a pyarrow Table) written as one Parquet file takes at most,
    in any row order, by a writer with these settings (PyIceberg's names:
    ``write.parquet.dict-size-bytes``, ``page-size-bytes``, ``page-row-limit``, which it
    passes as the write batch, and ``row-group-limit``) that adds ``footer_bytes`` of its
    own to the footer; None where a column is nested or dictionary-typed."""
    rows = table.num_rows
    groups = max(1, -(-rows // max(1, group_rows)))
    # pages closed after a batch or at the row limit, and at most 4 more a chunk: its
    # dictionary, the fallback's, the size check's own and the chunk's end
    batches = (-(-rows // max(1, min(batch_rows, _PAGE_ROW_LIMIT)))
               + -(-rows // _PAGE_ROW_LIMIT))
    index_bits = min(rows, group_rows).bit_length() + 1
    total = _FOOTER + footer_bytes
    for name, column in zip(table.column_names, table.columns):
        name_bytes = len(name.encode("utf-8"))
        total += _FOOTER_COLUMN + 4 * name_bytes
        plain = _plain(column)
        if plain is None:
            return None
        values, widest, dictionary = plain
        statistic = 2 * min(widest, _MAX_STATISTIC)
        dictionary_extra = (min(values, groups * (dictionary_bytes + batch_rows * widest),
                                -(-rows * index_bits // 8))
                            if dictionary else 0)
        levels = rows // 4 if column.null_count else 0
        encoded = values + levels + dictionary_extra
        pages = -(-encoded // max(1, page_bytes)) + batches + 4 * groups
        if compressed:
            encoded = int(encoded * _CODEC_GROWTH) + pages * _CODEC_PAGE
        total += (encoded + pages * (_PAGE_HEADER + statistic)
                  + groups * (_CHUNK_METADATA + statistic + name_bytes))
    return total
