"""ParallelParquetWriter: row groups encoded on threads, stitched into the file pyarrow's
own ParquetWriter writes, byte for byte; and the compact-protocol codec it edits the
footer with."""

import datetime
import decimal
import errno
import gc
import io
import os
import sys

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder.parquet import thrift_compact as tc  # noqa: E402
from zorder.parquet.parallel_writer import ParallelParquetWriter, StitchError  # noqa: E402


def _table(rows=1000, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    ints = rng.integers(-10**12, 10**12, rows)
    notes = [None if k % 17 == 0 else "x" * int(k % 41) + str(k) for k in range(rows)]
    return pa.table({
        "i": pa.array(ints, pa.int64()),
        "f": pa.array(rng.normal(size=rows)),
        "b": pa.array([k % 3 == 0 for k in range(rows)]),
        "s": pa.array(notes),
        "d": pa.array([f"city-{k % 7}" for k in range(rows)]).dictionary_encode(),
        "ts": pa.array([datetime.datetime(2025, 1, 1) + datetime.timedelta(seconds=int(k))
                        for k in ints % 10**6], pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(int(k % 10**6)) / 100 for k in ints],
                        pa.decimal128(12, 2)),
        "lst": pa.array([[k, k + 1] if k % 5 else None for k in range(rows)],
                        pa.list_(pa.int32())),
        "st": pa.array([{"a": k, "b": str(k)} for k in range(rows)]),
    }).replace_schema_metadata({"owner": "test"})


def _serial(path, table, rows, **options):
    with pq.ParquetWriter(path, table.schema, **options) as writer:
        for start in range(0, table.num_rows, rows):
            writer.write_table(table.slice(start, rows), row_group_size=rows)


def _parallel(path, table, rows, workers=None, **options):
    with ParallelParquetWriter(path, table.schema, workers=workers, **options) as writer:
        for start in range(0, table.num_rows, rows):
            writer.write_table(table.slice(start, rows))
    return writer


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("compression", ["zstd", "snappy", "none"])
@pytest.mark.parametrize("rows", [97, 400, 1000, 5000])
def test_same_bytes_as_one_parquet_writer(tmp_path, workers, compression, rows):
    table = _table()
    _serial(tmp_path / "serial.parquet", table, rows, compression=compression)
    writer = _parallel(tmp_path / "parallel.parquet", table, rows, workers=workers,
                       compression=compression)
    assert _bytes(tmp_path / "parallel.parquet") == _bytes(tmp_path / "serial.parquet")
    assert pq.read_table(tmp_path / "parallel.parquet").equals(table)
    assert pq.read_metadata(tmp_path / "parallel.parquet").num_row_groups == \
        -(-table.num_rows // rows) == writer.placed


def test_a_row_group_per_row(tmp_path):
    table = _table(40)
    _serial(tmp_path / "serial.parquet", table, 1)
    _parallel(tmp_path / "parallel.parquet", table, 1, workers=3)
    assert _bytes(tmp_path / "parallel.parquet") == _bytes(tmp_path / "serial.parquet")


def test_row_groups_of_different_sizes_in_order(tmp_path):
    table = _table(3000, seed=3)
    sizes = [1, 700, 13, 1200, 0, 1086]
    with ParallelParquetWriter(tmp_path / "p.parquet", table.schema, workers=2) as w:
        start = 0
        for n in sizes:
            w.write_table(table.slice(start, n))
            start += n
    md = pq.read_metadata(tmp_path / "p.parquet")
    assert [md.row_group(g).num_rows for g in range(md.num_row_groups)] == \
        [n for n in sizes if n]
    assert pq.read_table(tmp_path / "p.parquet").equals(table)
    # every row group reads on its own, from where the footer says it is
    f = pq.ParquetFile(tmp_path / "p.parquet")
    start = 0
    for g, n in enumerate(n for n in sizes if n):
        assert f.read_row_group(g).equals(table.slice(start, n))
        start += n


def test_another_reader_reads_the_stitched_file(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    table = _table(2000, seed=5).select(["i", "s", "ts", "dec"])
    _parallel(tmp_path / "p.parquet", table, 300, workers=2, compression="zstd")
    got = duckdb.sql(f"SELECT i, s, ts, dec FROM '{tmp_path / 'p.parquet'}'").arrow()
    if not isinstance(got, pa.Table):
        got = got.read_all()
    assert got.column("i").to_pylist() == table.column("i").to_pylist()
    assert got.column("s").to_pylist() == table.column("s").to_pylist()
    assert got.column("dec").to_pylist() == table.column("dec").to_pylist()


def test_no_rows_gives_pyarrows_empty_file(tmp_path):
    table = _table(10)
    with pq.ParquetWriter(tmp_path / "serial.parquet", table.schema):
        pass
    with ParallelParquetWriter(tmp_path / "parallel.parquet", table.schema) as w:
        w.write_table(table.slice(0, 0))
    assert _bytes(tmp_path / "parallel.parquet") == _bytes(tmp_path / "serial.parquet")
    assert pq.read_table(tmp_path / "parallel.parquet").schema.equals(table.schema)


@pytest.mark.parametrize("options", [
    {"bloom_filter_options": {"s": True}},
    {"write_page_index": True},
], ids=["bloom-filter", "page-index"])
@pytest.mark.parametrize("workers", [1, 2])
def test_what_cannot_be_stitched_is_written_by_one_writer(tmp_path, options, workers):
    table = _table(1200)
    try:
        _serial(tmp_path / "serial.parquet", table, 400, **options)
    except TypeError:
        pytest.skip("this pyarrow has no such option")
    _parallel(tmp_path / "parallel.parquet", table, 400, workers=workers, **options)
    assert _bytes(tmp_path / "parallel.parquet") == _bytes(tmp_path / "serial.parquet")


def test_a_bloom_filter_is_refused_by_the_layout_check():
    table = _table(300)
    sink = pa.BufferOutputStream()
    try:
        with pq.ParquetWriter(sink, table.schema, bloom_filter_options={"s": True}) as w:
            w.write_table(table)
    except TypeError:
        pytest.skip("this pyarrow has no bloom filters")
    from zorder.parquet.parallel_writer import _check_layout, _footer
    footer, end = _footer(memoryview(sink.getvalue()))
    with pytest.raises(StitchError):
        _check_layout(footer, end)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_row_group_ends_the_write_and_closes_the_file(tmp_path, workers):
    table = _table(100)
    other = pa.table({"x": [1, 2, 3]})
    path = tmp_path / "p.parquet"
    with pytest.raises((ValueError, pa.ArrowException)):
        with ParallelParquetWriter(path, table.schema, workers=workers) as w:
            w.write_table(table)
            w.write_table(other)
            w.write_table(table)
    os.remove(path)   # (closed: removable everywhere)
    with pytest.raises(ValueError, match="closed"):
        w.write_table(table)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_positive_count(tmp_path, workers):
    with pytest.raises(ValueError, match="workers"):
        ParallelParquetWriter(tmp_path / "p.parquet", _table(1).schema, workers=workers)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sink_it_did_not_open_stays_open(tmp_path, workers):
    table = _table(200)
    with open(tmp_path / "p.parquet", "wb") as f:
        _parallel(f, table, 64, workers=workers)
        assert not f.closed
    assert pq.read_table(tmp_path / "p.parquet").equals(table)


class _FullDisk(io.RawIOBase):
    """A sink that fails with ENOSPC once ``armed``, as a full disk does."""

    def __init__(self):
        self.data, self.armed = bytearray(), False

    def writable(self):
        return True

    def write(self, b):
        if self.armed:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.data += bytes(b)
        return len(b)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_close_closes_everything(workers, monkeypatch):
    table = _table(600)
    sink = _FullDisk()
    w = ParallelParquetWriter(sink, table.schema, workers=workers)
    w.write_table(table.slice(0, 300))
    w.drain()
    sink.armed = True
    w.write_table(table.slice(300))
    with pytest.raises(OSError):
        w.close()
    assert w._pool is None
    assert w._serial is None or not w._serial.is_open
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    del w
    gc.collect()   # (a ParquetWriter left open would fail again here, unreported)
    assert not unraisable


def test_an_interrupt_while_closing_closes_the_writer(tmp_path, monkeypatch):
    table = _table(300)
    w = ParallelParquetWriter(tmp_path / "p.parquet", table.schema, workers=1)
    w.write_table(table)

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(w, "drain", interrupted)
    with pytest.raises(KeyboardInterrupt):
        w.close()
    assert not w._serial.is_open and w._pool is None
    with pytest.raises(ValueError, match="closed"):
        w.write_table(table)


def test_progress_counts_row_groups_in_the_file(tmp_path):
    table = _table(1000)
    with ParallelParquetWriter(tmp_path / "p.parquet", table.schema, workers=2) as w:
        for start in range(0, 1000, 100):
            w.write_table(table.slice(start, 100))
            assert (start // 100 + 1) - w.placed <= 2   # (at most two in flight)
        w.drain()
        assert w.placed == 10


# -- the compact protocol ------------------------------------------------------------

def test_footers_round_trip_byte_for_byte(tmp_path):
    table = _table(3000)
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=200,
                   compression="zstd")
    data = _bytes(tmp_path / "t.parquet")
    length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - length:-8]
    parsed, used = tc.read_struct(footer)
    assert used == length
    assert tc.write_struct(parsed) == footer
    assert parsed.get(3) == 3000                      # num_rows
    assert len(parsed.get(4)[1]) == 15                # row groups (a long list)


def test_every_type_round_trips():
    s = tc.Struct()
    s.set(1, tc.TRUE, tc.TRUE)
    s.set(2, tc.FALSE, tc.FALSE)
    s.set(3, tc.BYTE, 200)
    s.set(4, tc.I16, -32768)
    s.set(5, tc.I32, -(2**31))
    s.set(6, tc.I64, -(2**63))
    s.set(7, tc.I64, 2**63 - 1)
    s.set(8, tc.DOUBLE, -1.5e300)
    s.set(9, tc.BINARY, b"\x00\xffabc")
    s.set(10, tc.LIST, (tc.I32, list(range(-20, 20))))
    s.set(11, tc.SET, (tc.BINARY, [b"a", b""]))
    s.set(12, tc.MAP, (tc.BINARY, tc.I64, [(b"k", 1), (b"l", -2)]))
    s.set(13, tc.MAP, (0, 0, []))
    s.set(40, tc.STRUCT, tc.Struct([[1, tc.I32, 7], [-3, tc.I16, 1]]))  # long headers
    s.set(41, tc.LIST, (tc.TRUE, [1, 2, 1]))
    data = tc.write_struct(s)
    back, used = tc.read_struct(data + b"trailing")
    assert used == len(data)
    assert tc.write_struct(back) == data
    assert [f[0] for f in back.fields] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 40, 41]
    assert back.get(6) == -(2**63) and back.get(7) == 2**63 - 1
    assert back.get(8) == -1.5e300 and back.get(9) == b"\x00\xffabc"
    assert back.get(10) == (tc.I32, list(range(-20, 20)))
    assert back.get(12) == (tc.BINARY, tc.I64, [(b"k", 1), (b"l", -2)])
    assert back.get(40).get(-3) == 1
    assert back.get(1) == tc.TRUE and back.get(2) == tc.FALSE


def test_set_keeps_field_order():
    s = tc.Struct([[1, tc.I32, 1], [5, tc.I32, 5]])
    s.set(3, tc.I32, 3)
    s.set(9, tc.I32, 9)
    s.set(5, tc.I64, 50)
    assert [f[0] for f in s.fields] == [1, 3, 5, 9]
    assert s.get(5) == 50 and s.get(4, "none") == "none"


@pytest.mark.parametrize("data", [b"", b"\x15", b"\x18\x05ab", b"\x19\xf5", b"\x1d",
                                  b"\x16" + b"\xff" * 11], ids=[
    "empty", "no-value", "short-binary", "short-list", "unknown-type", "long-varint"])
def test_bad_bytes_raise_thrift_error(data):
    with pytest.raises(tc.ThriftError):
        tc.read_struct(data)


def test_nesting_is_bounded():
    data = b"\x1c" * 100 + b"\x00" * 101
    with pytest.raises(tc.ThriftError, match="deeper"):
        tc.read_struct(data)


def test_moving_a_row_group_moves_every_offset_and_renumbers_it():
    from zorder.parquet.parallel_writer import _moved

    meta = tc.Struct([[7, tc.I64, 100], [9, tc.I64, 40], [11, tc.I64, 4]])
    chunk = tc.Struct([[2, tc.I64, 4], [3, tc.STRUCT, meta]])
    unset = tc.Struct([[2, tc.I64, 0], [3, tc.STRUCT, tc.Struct([[7, tc.I64, 5],
                                                                 [9, tc.I64, 104]])]])
    group = tc.Struct([[1, tc.LIST, (tc.STRUCT, [chunk, unset])], [5, tc.I64, 4],
                       [7, tc.I16, 0]])
    moved = _moved(group, 1000, 3)
    assert moved.get(5) == 1004 and moved.get(7) == 3
    assert chunk.get(2) == 1004 and meta.get(9) == 1040 and meta.get(11) == 1004
    assert meta.get(10) is None          # (absent stays absent)
    assert unset.get(2) == 0             # (0: not set, by old writers' convention)
    assert unset.get(3).get(9) == 1104


@pytest.mark.parametrize("cores, workers", [(1, 2), (2, 2), (6, 6), (64, 8)])
def test_default_workers_follow_the_cores_this_process_may_use(monkeypatch, cores, workers):
    from zorder.cpu import cores as cpu_cores
    from zorder.parquet import parallel_writer

    monkeypatch.setattr(parallel_writer.os, "sched_getaffinity", lambda pid: set(range(cores)),
                        raising=False)
    monkeypatch.setattr(cpu_cores, "cgroup_cpu_quota", lambda: None)
    assert parallel_writer.default_workers() == workers
    # a cgroup quota of 1.5 CPUs caps them at 2
    monkeypatch.setattr(cpu_cores, "cgroup_cpu_quota", lambda: 1.5)
    assert parallel_writer.default_workers() == 2


@pytest.fixture(scope="module")
def more_types():
    import numpy as np

    n = 3000
    return pa.table({
        "m": pa.array([[("a", k), ("b", k + 1)] if k % 3 else None for k in range(n)],
                      pa.map_(pa.string(), pa.int64())),
        "fsb": pa.array([bytes([k % 256]) * 5 for k in range(n)], pa.binary(5)),
        "h": pa.array(np.arange(n, dtype=np.float16)),
        "ls": pa.array([[{"x": k, "y": [str(k)]}] for k in range(n)]),
        "u8": pa.array(np.arange(n, dtype=np.uint8)),
        "d": pa.array(np.arange(n, dtype=np.int32)).cast(pa.date32()),
        "t": pa.array(np.arange(n)).cast(pa.time64("ns")),
        "dur": pa.array(np.arange(n)).cast(pa.duration("ms")),
        "nul": pa.nulls(n),
        "lv": pa.array([["a"] * (k % 4) for k in range(n)], pa.large_list(pa.string())),
    })


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("options", [{}, {"use_dictionary": False}, {"data_page_version": "2.0"},
                                     {"compression": "lz4"},
                                     {"column_encoding": {"h": "BYTE_STREAM_SPLIT"},
                                      "use_dictionary": ["m"]}],
                         ids=["default", "plain", "page-v2", "lz4", "byte-stream-split"])
def test_more_types_and_writer_options(tmp_path, more_types, workers, options):
    _serial(tmp_path / "serial.parquet", more_types, 700, **options)
    _parallel(tmp_path / "parallel.parquet", more_types, 700, workers=workers, **options)
    assert _bytes(tmp_path / "parallel.parquet") == _bytes(tmp_path / "serial.parquet")
    assert pq.read_table(tmp_path / "parallel.parquet").equals(more_types)
