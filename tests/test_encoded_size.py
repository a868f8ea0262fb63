"""``parquet_size_bound``: what Arrow's Parquet writer writes never exceeds it, on the
columns that cost it most (all-distinct values that fill and overflow a dictionary,
incompressible bytes, nulls in the runs that cost levels most, values near the widest
statistic, tiny pages), and it is near the size where nothing compresses."""

import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder.parquet.encoded_size import parquet_size_bound  # noqa: E402

ROWS = 30_000


def random_binary(rng, n, shortest, longest):
    lengths = rng.integers(shortest, longest + 1, n)
    data = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), n,
                                            [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def null_runs_of_eight(n):
    return np.repeat(np.arange(-(-n // 8)) % 2 == 0, 8)[:n]


def tables(n=ROWS):
    rng = np.random.default_rng(7)
    mask = null_runs_of_eight(n)
    return {
        "distinct int32": pa.table({"a": pa.array(rng.permutation(n).astype(np.int32))}),
        "random int64 and doubles": pa.table({"a": rng.integers(0, 2**63, n),
                                              "b": rng.random(n)}),
        "random bytes": pa.table({"a": random_binary(rng, n, 0, 20)}),
        "nulls in runs of eight": pa.table({
            "s": pa.array([""] * n, mask=mask),
            "b": pa.array(rng.random(n) < 0.5, mask=mask),
            "i": pa.array(rng.integers(0, 2**31, n).astype(np.int32), mask=mask)}),
        "values near the widest statistic": pa.table({"a": random_binary(
            rng, min(n, 2_000), 3_000, 5_000)}),
        "values wider than a page": pa.table({"a": random_binary(rng, 3, 1_500_000,
                                                                 1_500_000)}),
        "booleans": pa.table({"b": rng.random(n) < 0.5}),
        "few distinct": pa.table({"i": rng.integers(0, 4, n).astype(np.int32),
                                  "s": pa.array(rng.choice(["ab", "cd"], n))}),
        "fixed and decimal": pa.table({
            "f": pa.array([rng.bytes(16) for _ in range(n)], pa.binary(16)),
            "d": pa.array([None] * n, pa.decimal128(38, 2))}),
        "dates and timestamps": pa.table({
            "d": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32()),
            "t": pa.array(rng.integers(0, 2**60, n), pa.timestamp("us"))}),
        "no rows": pa.table({"a": pa.array([], pa.int64())}),
    }


SETTINGS = [
    # codec, dictionary bytes, page bytes, write batch rows, row group rows
    ("snappy", 2 << 20, 1 << 20, 20_000, 1 << 20),
    ("zstd", 4096, 1 << 20, 100, 5_000),
    ("none", 4096, 1 << 20, 100, 1 << 20),
    ("none", 2 << 20, 1024, 20_000, 5_000),
    ("lz4", 2 << 20, 1024, 100, 1 << 20),
    # pages closed after every small batch: a page a batch, each with its header and
    # padding (a boolean page takes a byte; a dictionary page's size is estimated high)
    ("none", 2 << 20, 1, 1, 1 << 20),
    ("none", 2 << 20, 64, 1, 1 << 20),
    ("zstd", 2 << 20, 1024, 8, 1 << 20),
    ("none", 2 << 20, 0, 4, 1_000),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s)))
def test_what_the_writer_writes_never_exceeds_the_bound(settings, tmp_path):
    codec, dictionary, page, batch, group = settings
    path = tmp_path / "t.parquet"
    # (a page a row: fewer rows, or each case writes 30,000 pages)
    for name, table in tables(ROWS if batch >= 100 else 3_000).items():
        with pq.ParquetWriter(path, table.schema, compression=codec,
                              dictionary_pagesize_limit=dictionary, data_page_size=page,
                              write_batch_size=batch) as writer:
            writer.write_table(table, row_group_size=group)
        bound = parquet_size_bound(table, compressed=codec != "none",
                                   dictionary_bytes=dictionary, page_bytes=page,
                                   batch_rows=batch, group_rows=group)
        assert os.path.getsize(path) <= bound, name


def test_the_bound_is_near_the_size_of_values_that_do_not_compress(tmp_path):
    rng = np.random.default_rng(8)
    table = pa.table({"a": rng.integers(0, 2**63, 200_000), "b": random_binary(
        rng, 200_000, 0, 40)})
    pq.write_table(table, tmp_path / "t.parquet", compression="none")
    written = os.path.getsize(tmp_path / "t.parquet")
    assert written <= parquet_size_bound(table, compressed=False) <= 1.15 * written


def test_wide_tables_with_long_names_are_bounded(tmp_path):
    table = pa.table({"c" * 200 + str(i): np.arange(3.0) for i in range(300)})
    pq.write_table(table, tmp_path / "t.parquet")
    assert os.path.getsize(tmp_path / "t.parquet") <= parquet_size_bound(table)


def test_a_long_name_counts_in_every_row_group(tmp_path):
    # (its path is in each column chunk's metadata)
    table = pa.table({"n" * 2_000 + str(i): np.arange(10_000.0) for i in range(4)})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=100)
    assert os.path.getsize(tmp_path / "t.parquet") <= parquet_size_bound(table, group_rows=100)


def test_what_the_writer_adds_to_the_footer_is_counted(tmp_path):
    rows = pa.table({f"c{i}": np.arange(1_000) for i in range(4)})
    doc = b"a long column description " * 800   # PyIceberg writes each field's doc
    written = rows.cast(pa.schema([pa.field(f.name, f.type, metadata={b"doc": doc})
                                   for f in rows.schema]))
    pq.write_table(written, tmp_path / "t.parquet")
    size = os.path.getsize(tmp_path / "t.parquet")
    assert size > parquet_size_bound(rows)
    assert size <= parquet_size_bound(rows, footer_bytes=2 * 4 * len(doc))


@pytest.mark.parametrize("column", [
    pa.array([[1, 2], [3]]),
    pa.array([{"x": 1}, {"x": 2}]),
    pa.array(["a", "b", "a"]).dictionary_encode(),
], ids=["list", "struct", "dictionary"])
def test_nested_and_dictionary_columns_have_no_bound(column):
    assert parquet_size_bound(pa.table({"a": column, "b": np.arange(len(column))})) is None


def test_a_uuid_is_its_sixteen_bytes():
    import uuid

    values = pa.array([uuid.uuid4().bytes for _ in range(1000)], pa.uuid())
    as_uuid = parquet_size_bound(pa.table({"u": values}))
    as_bytes = parquet_size_bound(pa.table({"u": values.storage}))
    assert as_uuid == as_bytes is not None
