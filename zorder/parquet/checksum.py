"""An order-independent checksum of an Arrow table's rows: what a rewrite that reorders
rows checks its output against, so that a lost, doubled or altered row stops it.

Each value is hashed from its bytes (so ``-0.0`` and ``0.0``, or two NaN payloads, differ;
a null is its own value), the values of a row are combined in column order, and the
row hashes are summed modulo 2**64: any reordering of the rows gives the same checksum,
any change of a row almost surely another. Vectorized with numpy over Arrow's buffers
(fixed-width values, strings and binary through a polynomial hash of their bytes,
structs, lists and maps through their children, dictionaries through their values); a
type with no such path (unions, run-end encoded arrays) is hashed value by value.

Needs pyarrow. Used by ``zorder.engines.iceberg``.

>>> import pyarrow as pa
>>> t = pa.table({"a": [1, 2, None], "s": ["x", None, "yz"]})
>>> row_checksum(t) == row_checksum(t.take([2, 0, 1]))
True
>>> row_checksum(t) == row_checksum(pa.table({"a": [1, 2, None], "s": ["x", "yz", None]}))
False
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional, Tuple

import numpy

from zorder.parquet import _checksum
from zorder.values.stages import CHECKSUM, stage

__all__ = ["row_checksum"]

_U = numpy.uint64
_M1 = _U(0xBF58476D1CE4E5B9)
_M2 = _U(0x94D049BB133111EB)
_K = _U(0x9E3779B97F4A7C15)   # the golden ratio: spreads small integers (positions, lengths)
_P = 0x100000001B3            # FNV's prime: the byte polynomial's base (odd)
_NULL = _U(0x6A09E667F3BCC909)
#: Bytes of string or binary data hashed per step: bounds the temporary arrays, and
#: 256 KiB (2 MiB widened) stays in cache, 1.5x faster than 1 MiB on 4M short strings.
_CHUNK_BYTES = 1 << 18
_powers: Optional[Tuple[numpy.ndarray, numpy.ndarray]] = None


def _spread(k: int) -> numpy.uint64:
    """``k * _K`` modulo 2**64, as a numpy scalar (computed on Python ints: numpy warns
    when scalars overflow, arrays wrap silently)."""
    return _U(k * int(_K) % 2**64)


def _mix(x: numpy.ndarray) -> numpy.ndarray:
    """splitmix64's finalizer, elementwise (uint64 arithmetic wraps)."""
    x = x ^ (x >> _U(30))
    x = x * _M1
    x = x ^ (x >> _U(27))
    x = x * _M2
    return x ^ (x >> _U(31))


def _power_tables() -> "tuple[numpy.ndarray, numpy.ndarray]":
    """``_P ** j`` and ``_P ** -j`` modulo 2**64 for ``j < _CHUNK_BYTES`` (built once)."""
    global _powers
    powers = _powers
    if powers is None:
        # Both tables are built, then published in one assignment: threads checksum at once
        # (a rewrite's writer threads), and one that found a half-filled dict failed with a
        # KeyError. Two threads may both build them; either result is the same.
        tables = []
        for base in (_P, pow(_P, -1, 2**64)):
            table = numpy.full(_CHUNK_BYTES, base, dtype=numpy.uint64)
            table[0] = 1
            tables.append(numpy.cumprod(table, dtype=numpy.uint64))
        powers = _powers = (tables[0], tables[1])
    return powers


def _valid(arr: Any) -> numpy.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _with_nulls(arr: Any, h: numpy.ndarray) -> numpy.ndarray:
    if arr.null_count:
        h = numpy.where(_valid(arr), h, _NULL)
    return h


def _fixed(arr: Any, width: int) -> numpy.ndarray:
    """Hashes of the ``width``-byte values of a fixed-width array."""
    n = len(arr)
    buffer = arr.buffers()[1]
    if width in (1, 2, 4, 8):  # one little-endian word per value: widened, mixed
        words = numpy.frombuffer(buffer, dtype=f"<u{width}", count=arr.offset + n)[arr.offset:]
        return _mix(words.astype(numpy.uint64))
    raw = numpy.frombuffer(buffer, dtype=numpy.uint8,
                           count=(arr.offset + n) * width)[arr.offset * width:]
    padded = numpy.zeros((n, -(-width // 8) * 8), dtype=numpy.uint8)
    padded[:, :width] = raw.reshape(n, width)
    h = numpy.full(n, _spread(width), dtype=numpy.uint64)
    for j, w in enumerate(padded.view("<u8").T):
        h = _mix(h ^ (w + _spread(j)))
    return h


def _bits(arr: Any) -> numpy.ndarray:
    n = len(arr)
    bits = numpy.unpackbits(numpy.frombuffer(arr.buffers()[1], dtype=numpy.uint8),
                            bitorder="little")[arr.offset:arr.offset + n]
    return _mix(bits.astype(numpy.uint64) + _K)


def _segments(values: numpy.ndarray, offsets: numpy.ndarray) -> numpy.ndarray:
    """Per segment ``[offsets[i], offsets[i+1])`` of ``values`` (bytes or uint64 hashes,
    widened to uint64 a chunk at a time): the sum of
    ``values[j] * _P ** (j - start)``, so position within the segment counts, mixed with
    the segment's length. One cumulative sum over the values weighted by their position
    in a chunk, differenced at the segments' ends and shifted back by ``_P ** -start``."""
    n = len(offsets) - 1
    powers, inverse = _power_tables()
    out = numpy.empty(n, dtype=numpy.uint64)
    row = 0
    while row < n:
        # as many rows as fit in a chunk of values (at least one)
        stop = int(numpy.searchsorted(offsets, offsets[row] + _CHUNK_BYTES, side="right")) - 1
        stop = min(n, max(stop, row + 1))
        base, end = int(offsets[row]), int(offsets[stop])
        if end - base <= _CHUNK_BYTES:
            starts = offsets[row:stop] - base
            ends = offsets[row + 1:stop + 1] - base
            weighted = values[base:end].astype(numpy.uint64) * powers[:end - base]
            sums = numpy.concatenate(([_U(0)], numpy.cumsum(weighted, dtype=numpy.uint64)))
            out[row:stop] = (sums[ends] - sums[starts]) * inverse[starts]
        else:  # one value longer than a chunk: its own pieces, each shifted into place
            total, shift = _U(0), _U(1)
            for lo in range(base, end, _CHUNK_BYTES):
                hi = min(end, lo + _CHUNK_BYTES)
                piece = numpy.sum(values[lo:hi].astype(numpy.uint64) * powers[:hi - lo],
                                  dtype=numpy.uint64)
                total = _U((int(total) + int(piece) * int(shift)) % 2**64)
                shift = _U(int(shift) * pow(_P, hi - lo, 2**64) % 2**64)
            out[row] = total
        row = stop
    return _mix(out + numpy.diff(offsets).astype(numpy.uint64) * _K)


def _var(arr: Any, offset_type: Any) -> numpy.ndarray:
    """Hashes of the values of a string or binary array (its bytes, and its length)."""
    n = len(arr)
    _, offs_buf, data_buf = arr.buffers()[:3]
    offsets = numpy.frombuffer(offs_buf, dtype=offset_type, count=arr.offset + n + 1)[arr.offset:]
    offsets = offsets.astype(numpy.int64)
    data = (numpy.frombuffer(data_buf, dtype=numpy.uint8) if data_buf is not None
            else numpy.zeros(0, numpy.uint8))
    lo, hi = int(offsets[0]), int(offsets[-1])
    return _segments(data[lo:hi], offsets - lo)


def _by_value(arr: Any) -> numpy.ndarray:
    """Hashes of any array, one Python value at a time (types with no buffer path)."""
    out = numpy.empty(len(arr), dtype=numpy.uint64)
    for i, v in enumerate(arr.to_pylist()):
        digest = hashlib.blake2b(repr(v).encode("utf-8", "surrogatepass"), digest_size=8)
        out[i] = int.from_bytes(digest.digest(), "little")
    return out


def _hash(arr: Any) -> numpy.ndarray:
    """One uint64 per value of an Arrow array (not chunked)."""
    import pyarrow as pa

    t = arr.type
    n = len(arr)
    if n == 0:
        return numpy.zeros(0, dtype=numpy.uint64)
    if isinstance(t, pa.ExtensionType):
        return _hash(arr.storage)
    if pa.types.is_null(t):
        return numpy.full(n, _NULL, dtype=numpy.uint64)
    if pa.types.is_dictionary(t):
        values = _hash(arr.dictionary)
        indices = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(numpy.int64)
        return _with_nulls(arr, values[indices] if len(values) else numpy.zeros(n, numpy.uint64))
    if pa.types.is_boolean(t):
        return _with_nulls(arr, _bits(arr))
    if pa.types.is_fixed_size_binary(t):
        return _with_nulls(arr, _fixed(arr, t.byte_width))
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return _with_nulls(arr, _var(arr, numpy.int32))
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return _with_nulls(arr, _var(arr, numpy.int64))
    if pa.types.is_struct(t):
        h = numpy.full(n, _spread(t.num_fields), dtype=numpy.uint64)
        for k, child in enumerate(arr.flatten()):
            h = _mix(h * _K + _hash(child) + _U(k))
        return _with_nulls(arr, h)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(numpy.int64)
        lo, hi = int(offsets[0]), int(offsets[-1])
        children = _hash(arr.values.slice(lo, hi - lo))
        return _with_nulls(arr, _segments(children, offsets - lo))
    try:
        width = t.bit_width
    except ValueError:
        width = 0
    if width and width % 8 == 0 and len(arr.buffers()) == 2:
        return _with_nulls(arr, _fixed(arr, width // 8))
    return _by_value(arr)


def _bytes_of(buffer: Any) -> numpy.ndarray:
    return (numpy.frombuffer(buffer, dtype=numpy.uint8) if buffer is not None
            else numpy.zeros(0, numpy.uint8))


def _fold_in(h: numpy.ndarray, arr: Any) -> bool:
    """``h = (h + _hash(arr)) * _K`` in one pass (``_checksum``) for the common types:
    fixed-width values of 1, 2, 4 or 8 bytes, strings and binary; False for the others."""
    import pyarrow as pa

    t = arr.type
    if isinstance(t, pa.ExtensionType):
        return _fold_in(h, arr.storage)
    buffers = arr.buffers()
    bitmap = _bytes_of(buffers[0]) if arr.null_count and buffers[0] is not None else None
    if (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
            or pa.types.is_large_binary(t)):
        wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = numpy.frombuffer(buffers[1], dtype=numpy.int64 if wide else numpy.int32)
        _checksum.add_var(h, offsets, _bytes_of(buffers[2]), arr.offset, bitmap)
        return True
    if (pa.types.is_boolean(t) or pa.types.is_dictionary(t) or pa.types.is_null(t)
            or len(buffers) != 2):
        return False
    try:
        width = t.bit_width
    except ValueError:
        return False
    if width not in (8, 16, 32, 64):
        return False
    _checksum.add_fixed(h, _bytes_of(buffers[1]), arr.offset, width // 8, bitmap)
    return True


def row_checksum(table: Any) -> int:
    """The order-independent checksum of ``table``'s rows (a pyarrow Table or
    RecordBatch): the sum modulo 2**64 of one 64-bit hash per row, each combining the
    row's values in column order. Equal for any permutation of the same rows; a lost,
    doubled or altered row (a changed bit, a value moved to another row) changes it
    (but for a chance of 2**-64)."""
    import pyarrow as pa

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TypeError(f"table must be a pyarrow Table or RecordBatch, not {type(table).__name__}")
    total = 0
    with stage(CHECKSUM):
        for batch in table.to_batches(max_chunksize=1 << 20):
            # The column hashes are mixed already: combined in column order by a
            # polynomial, and the row's sum mixed once.
            h = numpy.full(batch.num_rows, _spread(batch.num_columns), dtype=numpy.uint64)
            for column in batch.columns:
                if not _fold_in(h, column):
                    h += _hash(column)
                    h *= _K
            total = (total + _checksum.mixed_sum(h)) % 2**64
    return total
