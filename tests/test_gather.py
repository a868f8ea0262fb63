"""take_rows: Arrow's take, with string and binary columns gathered by our own kernel."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from zorder.parquet import _gather  # noqa: E402
from zorder.parquet.gather import (  # noqa: E402
    MAX_CHUNKS, combined_for_take, gathers_chunks, keeps_chunks, take_rows)

TYPES = [pa.string(), pa.binary(), pa.large_string(), pa.large_binary()]


def _values(n, seed=0, nulls=True):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        if nulls and k % 11 == 3:
            out.append(None)
        else:
            out.append("".join(chr(97 + c) for c in rng.integers(0, 26, int(rng.integers(0, 40)))))
    return out


def _typed(values, typ):
    if typ in (pa.binary(), pa.large_binary()):
        values = [None if v is None else v.encode() for v in values]
    return pa.array(values, typ)


@pytest.mark.parametrize("typ", TYPES, ids=str)
@pytest.mark.parametrize("nulls", [True, False])
def test_same_as_arrows_take(typ, nulls):
    arr = _typed(_values(5000, nulls=nulls), typ)
    table = pa.table({"s": arr, "i": pa.array(np.arange(5000))})
    rng = np.random.default_rng(1)
    for rows in (rng.permutation(5000), rng.integers(0, 5000, 12000), np.arange(0),
                 np.array([4999, 0, 0, 4999])):
        got = take_rows(table, rows)
        want = table.take(rows)
        assert got.equals(want)
        assert got.schema == table.schema
        assert got.column("s").null_count == want.column("s").null_count
        got.validate(full=True)


@pytest.mark.parametrize("typ", TYPES, ids=str)
def test_a_slice_is_read_from_its_own_offset(typ):
    arr = _typed(_values(1000, seed=3), typ).slice(137, 600)
    table = pa.table({"s": arr})
    rows = np.random.default_rng(2).permutation(600)
    got = take_rows(table, rows)
    got.validate(full=True)
    assert got.equals(table.take(rows))


def test_columns_it_does_not_gather_are_arrows():
    chunked = pa.chunked_array([pa.array([[1], [2]]), pa.array([[], None], pa.list_(pa.int64()))])
    table = pa.table({"chunked": chunked,
                      "dict": pa.array(["x", "y", "x", "z"]).dictionary_encode(),
                      "list": pa.array([[1], [], None, [2, 3]]),
                      "empty": pa.array(["", "", "", ""])})
    rows = np.array([3, 1, 0, 2])
    got = take_rows(table, rows)
    assert got.equals(table.take(rows))


def test_record_batches_too():
    batch = pa.record_batch({"s": pa.array(_values(300)), "i": pa.array(np.arange(300))})
    rows = np.random.default_rng(4).permutation(300)
    got = take_rows(batch, rows)
    assert isinstance(got, pa.RecordBatch)
    assert got.equals(batch.take(pa.array(rows)))


@pytest.mark.parametrize("bad", [-1, 10, 2**40])
def test_a_row_out_of_range_is_an_index_error(bad):
    table = pa.table({"s": pa.array([str(k) for k in range(10)])})
    with pytest.raises(IndexError):
        take_rows(table, np.array([0, bad, 1]))


def test_too_many_bytes_for_32_bit_offsets_is_left_to_arrow():
    offsets = np.array([0, 2**30, 2**31 - 1], dtype=np.int32)
    out = np.empty(4, dtype=np.int32)
    starts = np.empty(3, dtype=np.int64)
    assert _gather.gather_offsets(offsets, 0, np.array([1, 1, 1], dtype=np.int64), out,
                                  starts) == -1
    wide = offsets.astype(np.int64)
    out64 = np.empty(4, dtype=np.int64)
    assert _gather.gather_offsets(wide, 0, np.array([1, 1, 1], dtype=np.int64), out64,
                                  starts) == 3 * (2**31 - 1 - 2**30)
    assert out64.tolist() == [0, 2**31 - 1 - 2**30, 2 * (2**31 - 1 - 2**30),
                              3 * (2**31 - 1 - 2**30)]
    assert starts.tolist() == [2**30] * 3


def test_kernel_checks_its_buffers():
    offsets = np.array([0, 1, 2], dtype=np.int32)
    with pytest.raises(ValueError, match="offsets"):
        _gather.gather_offsets(offsets, 0, np.array([0], dtype=np.int64),
                               np.empty(1, np.int32), np.empty(1, np.int64))
    with pytest.raises(ValueError, match="smaller"):
        _gather.gather_bytes(np.zeros(2, np.uint8), np.array([0, 1], dtype=np.int64),
                             np.array([0, 1, 2], dtype=np.int32), np.empty(1, np.uint8))


def test_too_many_bytes_end_to_end_is_arrows_take(monkeypatch):
    table = pa.table({"s": pa.array(_values(50))})
    rows = np.arange(49, -1, -1)
    monkeypatch.setattr(_gather, "gather_offsets", lambda *args: -1)
    assert take_rows(table, rows).equals(table.take(rows))


def test_rows_must_be_integers():
    table = pa.table({"s": pa.array(["a", "b"])})
    with pytest.raises(TypeError, match="integers"):
        take_rows(table, np.array([1.7, 0.0]))


def test_an_empty_array_without_offsets():
    empty = pa.Array.from_buffers(pa.string(), 0, [None, pa.py_buffer(b""), pa.py_buffer(b"")])
    table = pa.table({"s": empty})
    assert take_rows(table, np.array([], dtype=np.int64)).num_rows == 0
    with pytest.raises(IndexError):
        take_rows(table, np.array([0]))


# ---- columns of several chunks, gathered in place ---------------------------------------

CHUNKED_TYPES = [
    pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.uint64(), pa.float16(), pa.float32(),
    pa.float64(), pa.date32(), pa.date64(), pa.time32("ms"), pa.time64("ns"),
    pa.timestamp("us"), pa.timestamp("ns", tz="Europe/Paris"), pa.duration("s"),
    pa.decimal128(12, 3), pa.decimal256(40, 2), pa.binary(3), pa.binary(16),
    pa.month_day_nano_interval(),
] + TYPES


def _array(typ, n, seed):
    """n values of ``typ``, every seventh null, from ``seed``."""
    rng = np.random.default_rng(seed)
    if typ in TYPES:
        return _typed(_values(n, seed), typ)
    width = typ.bit_width // 8
    if pa.types.is_floating(typ):
        raw = (rng.random(n) * 1000).astype(f"<f{width}").view(np.uint8)
    else:   # small values, valid in every type (times within a day, decimals' range)
        raw = np.zeros((n, width), dtype=np.uint8)
        raw[:, :2] = rng.integers(0, 256, (n, min(2, width)), dtype=np.uint8)
        raw[:, min(1, width - 1)] &= 0x3F
        raw = raw.reshape(-1)
        if typ == pa.date64():   # (whole days of milliseconds)
            raw = (raw.view("<i8") * 86_400_000).view(np.uint8)
    valid = np.ones(n, dtype=bool)
    valid[::7] = False
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(raw.tobytes())],
                                 null_count=int((~valid).sum()))


def _chunked(arr, cuts):
    return pa.chunked_array([arr.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])],
                            type=arr.type)


@pytest.mark.parametrize("typ", CHUNKED_TYPES, ids=str)
def test_chunked_columns_are_gathered_in_place(typ):
    assert gathers_chunks(typ)
    n = 3000
    # empty chunks, one-row chunks, slices starting inside their buffers
    column = _chunked(_array(typ, n, 5), [0, 0, 1, 700, 700, 1901, 2999, 3000])
    table = pa.table({"c": column, "i": _chunked(pa.array(np.arange(n)), [0, 1500, n])})
    rng = np.random.default_rng(6)
    for rows in (rng.permutation(n), rng.integers(0, n, 7000), np.arange(0),
                 np.array([n - 1, 0, 0, n - 1, 700, 699, 1])):
        got = take_rows(table, rows)
        got.validate(full=True)
        want = table.take(rows)
        assert got.schema == table.schema
        assert got.equals(want), typ
        assert got.column("c").null_count == want.column("c").null_count


def test_chunked_columns_of_other_layouts_and_no_nulls():
    n = 1000
    table = pa.table({
        "a": _chunked(pa.array(np.arange(n, dtype=np.int64)), [0, 10, 500, n]),
        "b": _chunked(pa.array([str(k) for k in range(n)]), [0, 333, 666, n]),
        "c": _chunked(pa.array(np.arange(n, dtype=np.float64)), [0, 10, 500, n]),
        "d": _chunked(pa.array([k % 2 == 0 for k in range(n)]), [0, 1, n]),   # Arrow's
        "e": _chunked(pa.array([[k] for k in range(n)]), [0, 2, n]),          # Arrow's
    })
    assert not gathers_chunks(pa.bool_()) and not gathers_chunks(pa.list_(pa.int64()))
    assert not gathers_chunks(pa.uuid()) and not gathers_chunks(pa.dictionary(pa.int8(), pa.string()))
    rows = np.random.default_rng(7).permutation(n)
    got = take_rows(table, rows)
    got.validate(full=True)
    assert got.equals(table.take(rows))
    assert got.column("a").null_count == 0 and got.column("a").chunk(0).buffers()[0] is None


@pytest.mark.parametrize("bad", [-1, 10, 2**40])
def test_a_row_out_of_range_of_chunks_is_an_index_error(bad):
    table = pa.table({"a": _chunked(pa.array(np.arange(10)), [0, 4, 10])})
    with pytest.raises(IndexError, match="outside"):
        take_rows(table, np.array([0, bad, 1]))


def test_chunked_kernels_check_their_buffers():
    which, local = np.array([0, 1], dtype=np.int32), np.array([0, 0], dtype=np.int64)
    sizes = np.array([1, 1], dtype=np.int64)
    one = np.zeros(8, np.uint8)
    with pytest.raises(ValueError, match="holds"):     # a chunk shorter than its values
        _gather.gather_fixed_chunks([one, np.zeros(4, np.uint8)], sizes, 8, which, local,
                                    np.empty(16, np.uint8))
    with pytest.raises(IndexError, match="outside"):   # a row past its chunk
        _gather.gather_fixed_chunks([one, one], sizes, 8, which, np.array([0, 1]),
                                    np.empty(16, np.uint8))
    with pytest.raises(IndexError, match="outside"):   # a chunk that is not there
        _gather.gather_fixed_chunks([one], sizes[:1], 8, which, local, np.empty(16, np.uint8))
    offsets = np.array([0, 5], dtype=np.int32).view(np.uint8)
    with pytest.raises(ValueError, match="holds"):     # offsets of one row, two counted
        _gather.gather_offsets_chunks([offsets], np.array([2]), which[:1], local[:1],
                                      np.empty(2, np.int32), np.empty(1, np.int64))
    with pytest.raises(ValueError, match="outside its chunk"):   # a value past the data
        _gather.gather_bytes_chunks([np.zeros(3, np.uint8)], np.array([3]), which[:1],
                                    np.array([0]), np.array([0, 5], dtype=np.int32),
                                    np.empty(5, np.uint8))
    with pytest.raises(ValueError, match="holds 1 bytes, not 2"):   # a bitmap short of its rows
        _gather.gather_bits_chunks([np.zeros(1, np.uint8)], np.array([4]), np.array([8]),
                                   which[:1], local[:1], np.zeros(1, np.uint8))
    with pytest.raises(IndexError, match="outside"):
        _gather.chunk_rows(np.array([0, 5]), np.array([5]), np.empty(1, np.int32),
                           np.empty(1, np.int64))


def test_chunked_strings_past_32_bit_offsets_are_arrows_take(monkeypatch):
    table = pa.table({"s": _chunked(pa.array(_values(50)), [0, 20, 50])})
    rows = np.arange(49, -1, -1)
    monkeypatch.setattr(_gather, "gather_offsets_chunks", lambda *args: -1)
    assert take_rows(table, rows).equals(table.take(rows))


def test_reads_keep_the_chunks_they_gather_and_combine_the_rest(tmp_path):
    import pyarrow.parquet as pq

    from zorder.parquet.sort import read_columns

    table = pa.table({"i": np.arange(100), "s": [str(k) for k in range(100)],
                      "l": [[k] for k in range(100)]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=30)
    read = read_columns([pq.ParquetFile(path)], None)
    assert [read.column(c).num_chunks for c in ("i", "s", "l")] == [4, 4, 1]
    combined = combined_for_take([pq.read_table(path)])
    assert [combined.column(c).num_chunks for c in ("i", "s", "l")] == [4, 4, 1]
    assert read.equals(table) and combined.equals(table)
    # more chunks than MAX_CHUNKS: every column combined, as each call would visit them all
    many = tmp_path / "many.parquet"
    pq.write_table(table, many, row_group_size=1)
    read = read_columns([pq.ParquetFile(many)], None)
    assert [read.column(c).num_chunks for c in ("i", "s", "l")] == [1, 1, 1]
    assert combined_for_take([pq.read_table(many)]).column("i").num_chunks == 1
    assert read_columns([pq.ParquetFile(path)], None, keep_chunks=False).column("i").num_chunks == 1


def test_many_chunks_are_arrows_take():
    n = MAX_CHUNKS + 1
    column = pa.chunked_array([pa.array([k]) for k in range(n)])
    assert not keeps_chunks(column) and keeps_chunks(column.slice(0, MAX_CHUNKS))
    table = pa.table({"i": column, "s": pa.chunked_array([pa.array([str(k)]) for k in range(n)])})
    rows = np.arange(n)[::-1]
    assert take_rows(table, rows).equals(table.take(rows))
