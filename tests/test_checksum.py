"""zorder.parquet.checksum.row_checksum: equal for any order or chunking of the same rows,
different when a row is lost, doubled or altered, for every Arrow type a table holds."""

import decimal

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from zorder.parquet import checksum  # noqa: E402
from zorder.parquet.checksum import row_checksum  # noqa: E402


def every_type(n, seed=0):
    rng = np.random.default_rng(seed)
    words = ["", "a", "ab", "abc", "ü", "x" * 40]
    cols = {
        "b": pa.array(rng.integers(0, 2, n).astype(bool)),
        "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
        "l": pa.array(rng.integers(-10**12, 10**12, n)),
        "f": pa.array(rng.normal(size=n).astype(np.float32)),
        "d": pa.array(rng.normal(size=n)),
        "ts": pa.array(rng.integers(0, 10**15, n)).cast(pa.timestamp("us", tz="UTC")),
        "day": pa.array(rng.integers(0, 20000, n).astype(np.int32)).cast(pa.date32()),
        "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(0, 10**6, n)],
                        pa.decimal128(12, 2)),
        "s": pa.array([words[k] for k in rng.integers(0, len(words), n)]),
        "ls": pa.array([words[k] for k in rng.integers(0, len(words), n)], pa.large_string()),
        "bin": pa.array([bytes(rng.integers(0, 256, k % 7, dtype=np.uint8)) for k in range(n)]),
        "fx": pa.array([bytes(r) for r in rng.integers(0, 256, (n, 3), dtype=np.uint8)], pa.binary(3)),
        "dict": pa.array([words[k] for k in rng.integers(0, 3, n)]).dictionary_encode(),
        "st": pa.StructArray.from_arrays([pa.array(rng.integers(0, 5, n)),
                                          pa.array([words[k] for k in rng.integers(0, 6, n)])],
                                         names=["x", "y"]),
        "li": pa.array([list(rng.integers(0, 4, k % 4)) for k in range(n)], pa.list_(pa.int64())),
        "m": pa.array([[("k", int(v))] if v % 3 else [] for v in rng.integers(0, 9, n)],
                      pa.map_(pa.string(), pa.int64())),
        "nul": pa.nulls(n),
    }
    for name in ("b", "l", "d", "s", "ls", "bin", "fx", "dict", "st", "li", "m"):
        mask = pa.array(rng.random(n) < 0.15)
        cols[name] = pa.compute.if_else(mask, pa.scalar(None, cols[name].type), cols[name]) \
            if name not in ("dict", "st", "li", "m") else _null_out(cols[name], mask)
    return pa.table(cols)


def _null_out(arr, mask):
    """arr with nulls where mask is set (take with null indices, for nested types)."""
    idx = [None if m else k for k, m in enumerate(mask.to_pylist())]
    return arr.take(pa.array(idx, pa.int64()))


def test_any_order_and_chunking_gives_the_same_checksum():
    table = every_type(300)
    base = row_checksum(table)
    perm = np.random.default_rng(1).permutation(table.num_rows)
    assert row_checksum(table.take(perm)) == base
    # Sliced and re-chunked arrays (offsets into shared buffers) hash by their values.
    pieces = [table.slice(a, b - a) for a, b in [(0, 7), (7, 150), (150, 300)]]
    assert row_checksum(pa.concat_tables(pieces[::-1])) == base
    assert sum(row_checksum(p) for p in pieces) % 2**64 == base
    assert row_checksum(table.slice(0, 0)) == 0


@pytest.mark.parametrize("column", ["b", "i8", "l", "f", "d", "ts", "day", "dec", "s", "ls",
                                    "bin", "fx", "dict", "st", "li", "m"])
def test_a_lost_doubled_moved_or_altered_value_changes_it(column):
    table = every_type(200, seed=2)
    base = row_checksum(table)
    col = table.column(column).combine_chunks()
    values = col.to_pylist()
    # Two rows differing in this column: find them.
    i = next(k for k in range(len(values)) if values[k] is not None)
    j = next(k for k in range(len(values)) if values[k] != values[i])
    # A row lost and another doubled: same count.
    idx = list(range(table.num_rows))
    idx[i] = j
    assert row_checksum(table.take(idx)) != base
    # This column's values of two rows swapped (each row altered, the column's multiset kept).
    idx = list(range(table.num_rows))
    idx[i], idx[j] = j, i
    swapped = table.set_column(table.schema.get_field_index(column), column, col.take(idx))
    assert row_checksum(swapped) != base


def test_bits_matter():
    a = pa.table({"d": pa.array([0.0, 1.0])})
    assert row_checksum(a) != row_checksum(pa.table({"d": pa.array([-0.0, 1.0])}))
    assert row_checksum(pa.table({"s": ["ab", "c"]})) != row_checksum(pa.table({"s": ["a", "bc"]}))
    assert row_checksum(pa.table({"s": ["", "x"]})) != row_checksum(pa.table({"s": [None, "x"]}))
    with pytest.raises(TypeError, match="table must be a pyarrow Table"):
        row_checksum({"a": [1]})


def test_a_value_longer_than_a_chunk(monkeypatch):
    from zorder.parquet import checksum

    arr = pa.table({"s": pa.array([b"x" * 5000 + bytes(range(256)), b"ab", b""])})
    whole = row_checksum(arr)
    monkeypatch.setattr(checksum, "_CHUNK_BYTES", 1024)
    monkeypatch.setattr(checksum, "_powers", None)
    assert row_checksum(arr) == whole


def test_docstring_examples():
    import doctest

    from zorder.parquet import checksum

    assert doctest.testmod(checksum).failed == 0


@pytest.mark.parametrize("arr", [
    pa.array([1, None, -3, 2**62], type=pa.int64()),
    pa.array([1, None, 3, 255], type=pa.uint8()),
    pa.array([1, 2, None, -7], type=pa.int16()),
    pa.array([1.5, None, -0.0, float("nan")], type=pa.float32()),
    pa.array([1.5, None, -0.0, float("nan"), float("inf")]),
    pa.array([0, None, 19000], type=pa.date32()),
    pa.array([0, None, 10**15], type=pa.timestamp("us", tz="UTC")),
    pa.array([b"ab", None, b"", b"\x00\xff" * 40], type=pa.binary()),
    pa.array(["", None, "x", "yz" * 1000, "é"]),
    pa.array(["", None, "x", "yz" * 1000], type=pa.large_string()),
    pa.array([b"ab", None, b"cd"], type=pa.binary(2)),
    pa.array([b"abcdefgh", None], type=pa.binary(8)),
])
def test_the_one_pass_hashes_equal_the_numpy_ones(arr):
    # the compiled fold (checksum._fold_in) must give _hash's numbers, slices included
    for piece in (arr, arr.slice(1), arr.slice(1, 2), arr.slice(len(arr))):
        h = np.arange(len(piece), dtype=np.uint64) * np.uint64(977)
        expected = (h + checksum._hash(piece)) * checksum._K
        assert checksum._fold_in(h, piece)
        assert h.tolist() == expected.tolist()


def test_the_one_pass_string_hash_equals_numpy_at_every_length():
    # eight bytes a step and a shifted last word: every length 0..41 (whole words, every
    # remainder, shorter than a word), at the data's start and end, and in a slice
    rng = np.random.default_rng(3)
    values = [bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in range(42)]
    arr = pa.array(values + values[::-1], type=pa.binary())
    for piece in (arr, arr.slice(5), arr.slice(40, 3)):
        h = np.zeros(len(piece), dtype=np.uint64)
        expected = (h + checksum._hash(piece)) * checksum._K
        assert checksum._fold_in(h, piece)
        assert h.tolist() == expected.tolist()


def test_the_mixed_sum_is_numpys():
    from zorder.parquet import _checksum
    h = np.random.default_rng(4).integers(0, 2**63, 1000, dtype=np.uint64) * np.uint64(3)
    assert _checksum.mixed_sum(h) == int(np.sum(checksum._mix(h), dtype=np.uint64))
    assert _checksum.mixed_sum(h[:0]) == 0


def test_the_one_pass_hashes_refuse_offsets_outside_the_data():
    from zorder.parquet import _checksum
    h = np.zeros(2, dtype=np.uint64)
    with pytest.raises(ValueError, match="outside the data"):
        _checksum.add_var(h, np.array([0, 3, 99], dtype=np.int32), np.zeros(4, np.uint8), 0)
    with pytest.raises(ValueError, match="shorter"):
        _checksum.add_fixed(h, np.zeros(15, np.uint8), 0, 8)


def test_the_power_tables_are_built_safely_by_racing_threads(monkeypatch):
    """A rewrite checksums on several threads at once; the first calls build the tables.
    One thread found them half built (a KeyError) when they were published key by key."""
    import sys
    import threading

    from zorder.parquet import checksum

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible
    try:
        for _ in range(20):
            monkeypatch.setattr(checksum, "_powers", None)
            start, errors, results = threading.Barrier(4), [], []

            def build():
                start.wait()
                try:
                    results.append(checksum._power_tables())
                except Exception as exc:  # noqa: BLE001 - any failure is the finding
                    errors.append(exc)
            threads = [threading.Thread(target=build) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert errors == []
            assert all(np.array_equal(p, results[0][0]) and np.array_equal(q, results[0][1])
                       for p, q in results)
    finally:
        sys.setswitchinterval(old)
