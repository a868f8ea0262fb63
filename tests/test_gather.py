"""take_rows: Arrow's take, with string and binary columns gathered by our own kernel."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from zorder.parquet import _gather  # noqa: E402
from zorder.parquet.gather import take_rows  # noqa: E402

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
    chunked = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", None])])
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
