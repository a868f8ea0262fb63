"""What `sort` and `cluster` read and what they keep: every row, every column, the
metadata that stays true. Each case here lost or corrupted data without a word (found by
a review that attacked the commands with real-world files)."""

import datetime as dt
import json
import os
import re

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder.__main__ import main  # noqa: E402
from zorder.parquet.sort import sort_parquet  # noqa: E402


def rows(table):
    """The rows of a table as a sorted list (a multiset)."""
    return sorted(map(repr, table.to_pylist()))


def cluster(*args, **kwargs):
    pytest.importorskip("dask.dataframe")
    from zorder.dask import cluster as run

    return run(*args, scheduler="sync", **kwargs)


def read_folder(path):
    files = sorted(f for f in os.listdir(path) if f.endswith(".parquet"))
    return pa.concat_tables([pq.read_table(os.path.join(path, f)) for f in files])


def test_cluster_reads_the_files_not_a_stale_metadata_file(tmp_path):
    """Dask trusts a _metadata file; one written before a file was added lost that
    file's rows (100 of 150 written), and the row check compared Dask with itself."""
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd
    import pandas as pd

    data = tmp_path / "md"
    dd.from_pandas(pd.DataFrame({"a": range(100), "b": [1.0] * 100}), npartitions=2).to_parquet(
        data, write_metadata_file=True, write_index=False)
    pq.write_table(pa.table({"a": range(100, 150), "b": [1.0] * 50}), data / "part.late.parquet")
    result = cluster(str(data), str(tmp_path / "out"), ["a", "b"])
    assert result.rows == 150
    assert sorted(read_folder(tmp_path / "out").column("a").to_pylist()) == list(range(150))


@pytest.mark.parametrize("order", ["narrow first", "wide first"])
def test_cluster_refuses_files_with_different_columns(tmp_path, order):
    """A column only some files have was dropped (the first file's schema was written),
    or a task failed with a KeyError traceback."""
    data = tmp_path / "evolved"
    data.mkdir()
    narrow = pa.table({"a": [1, 2], "b": [1.0, 2.0]})
    wide = narrow.append_column("c", pa.array(["x", "y"]))
    first, second = (narrow, wide) if order == "narrow first" else (wide, narrow)
    pq.write_table(first, data / "p0.parquet")
    pq.write_table(second, data / "p1.parquet")
    with pytest.raises(ValueError, match=r"have different columns: 'c' is (absent|string) in "
                                         r"'p0.parquet' and (string|absent) in 'p1.parquet'"):
        cluster(str(data), str(tmp_path / "out"), ["a"])
    assert not (tmp_path / "out").exists()


def test_cluster_refuses_hive_partition_folders(tmp_path):
    """The partition column lives in the folder names: it was dropped, even when sorted
    on."""
    data = tmp_path / "hive"
    for key in "xy":
        (data / f"key={key}").mkdir(parents=True)
        pq.write_table(pa.table({"a": range(5), "b": [1.0] * 5}), data / f"key={key}" / "p.parquet")
    with pytest.raises(ValueError, match=r"partitioned in key=value folders \('key=x' holds"):
        cluster(str(data), str(tmp_path / "out"), ["a"])


def test_cluster_names_a_file_that_is_not_parquet_before_any_work(tmp_path, capsys):
    """A checksum file beside the data (part-0.parquet.crc) failed the report after the
    output had been written (and with --overwrite, had replaced the old one)."""
    data = tmp_path / "crc"
    data.mkdir()
    pq.write_table(pa.table({"a": [3, 1, 2]}), data / "part-0.parquet")
    (data / "part-0.parquet.crc").write_text("#\n")
    pytest.importorskip("dask.dataframe")
    assert main(["cluster", str(data), str(tmp_path / "out"), "--columns", "a", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {str(data / 'part-0.parquet.crc')!r} in ") and \
        "is not a readable Parquet file" in err, err
    assert not (tmp_path / "out").exists()


def int96_file(path):
    ts = pa.array([dt.datetime(2020, 1, 1), dt.datetime(9999, 12, 31), dt.datetime(1500, 1, 1)],
                  pa.timestamp("us"))
    pq.write_table(pa.table({"id": [3, 1, 2], "ts": ts}), path,
                   use_deprecated_int96_timestamps=True, store_schema=False)
    return ts


def test_sort_reads_int96_timestamps_without_wrapping_them(tmp_path):
    """INT96 (Spark's legacy timestamps) read in nanoseconds wrapped 9999-12-31 to 1816."""
    ts = int96_file(tmp_path / "int96.parquet")
    sort_parquet(str(tmp_path / "int96.parquet"), str(tmp_path / "out.parquet"), ["id"])
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("id").to_pylist() == [1, 2, 3]
    assert sorted(out.column("ts").to_pylist()) == sorted(ts.to_pylist())


def test_cluster_refuses_int96_timestamps(tmp_path):
    """Dask reads INT96 in nanoseconds with no option to do otherwise: refused, not
    corrupted."""
    data = tmp_path / "spark"
    data.mkdir()
    int96_file(data / "part-0.parquet")
    with pytest.raises(ValueError, match=r"column 'ts' of 'part-0.parquet' holds INT96"):
        cluster(str(data), str(tmp_path / "out"), ["id"])


def test_metadata_is_kept_and_a_range_index_left_out(tmp_path):
    """cluster wrote pandas' metadata of its own frames in place of the input's (custom
    keys lost, a dictionary column unreadable by pandas); both commands kept a pandas
    RangeIndex, whose labels then named other rows."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [30, 10, 20], "name": ["thirty", "ten", "twenty"]})
    frame.index.name = "row_id"
    table = pa.Table.from_pandas(frame)
    table = table.append_column("color", pa.array(["red", "blue", "red"]).dictionary_encode())
    table = table.replace_schema_metadata({**table.schema.metadata, b"custom": b"keep me"})
    data = tmp_path / "in"
    data.mkdir()
    pq.write_table(table, data / "part-0.parquet")

    sort_parquet(str(data / "part-0.parquet"), str(tmp_path / "sorted.parquet"), ["a"])
    cluster(str(data), str(tmp_path / "clustered"), ["a"])
    for out in (pq.read_table(tmp_path / "sorted.parquet"), read_folder(tmp_path / "clustered")):
        assert out.schema.metadata[b"custom"] == b"keep me"
        pandas = json.loads(out.schema.metadata[b"pandas"])
        assert pandas["index_columns"] == []
        assert out.schema.remove_metadata() == table.schema.remove_metadata()
        assert rows(out) == rows(table)
        back = out.to_pandas()   # (the dictionary column as a category)
        assert back.set_index("a")["name"].to_dict() == {30: "thirty", 10: "ten", 20: "twenty"}
        assert list(back.index) == [0, 1, 2] and back.index.name is None
    assert json.loads(table.schema.metadata[b"pandas"])["index_columns"][0]["kind"] == "range"
    assert np.array_equal(pd.read_parquet(tmp_path / "sorted.parquet")["a"], [10, 20, 30])


def test_deeply_nested_pandas_metadata_is_kept_as_it_is(tmp_path):
    """Metadata pandas did not write is left as it is: json's RecursionError on a deeply
    nested value escaped sort_parquet instead."""
    deep = b"[" * 100_000
    table = pa.table({"a": [3, 1, 2]}).replace_schema_metadata({b"pandas": deep})
    pq.write_table(table, tmp_path / "in.parquet")
    sort_parquet(str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"), ["a"])
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.metadata[b"pandas"] == deep and out.column("a").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("command", ["sort", "cluster"])
def test_view_type_columns_are_refused_in_one_line(tmp_path, capsys, command):
    """pyarrow has no take for string_view/binary_view (at any depth): both commands
    ended in its NotImplementedError traceback."""
    if not hasattr(pa, "string_view"):
        pytest.skip("this pyarrow has no view types")
    if command == "cluster":
        pytest.importorskip("dask.dataframe")
    data = tmp_path / "in"
    data.mkdir()
    nested = pa.array([{"q": "x"}, {"q": "y"}, {"q": "z"}], pa.struct([("q", pa.string_view())]))
    pq.write_table(pa.table({"a": [3, 1, 2], "st": nested}), data / "part-0.parquet")
    source = data / "part-0.parquet" if command == "sort" else data
    out = tmp_path / ("out.parquet" if command == "sort" else "out")
    quiet = ["--quiet"] if command == "cluster" else []
    assert main([command, str(source), str(out), "--columns", "a", *quiet]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "column 'st' of " in err and "cannot reorder" in err, err
    assert not out.exists()


def test_cluster_keeps_only_the_metadata_every_file_shares(tmp_path):
    """Each file's own GeoParquet bounding box was written over all output files (the
    first file's), false of the rows of the others."""
    data = tmp_path / "geo"
    data.mkdir()
    for k, bbox in enumerate(([0, 0, 1, 1], [10, 10, 11, 11])):
        table = pa.table({"a": [2 * k, 2 * k + 1]}).replace_schema_metadata(
            {b"geo": json.dumps({"bbox": bbox}).encode(), b"shared": b"same", b"src": b"f%d" % k})
        pq.write_table(table, data / f"p{k}.parquet")
    cluster(str(data), str(tmp_path / "out"), ["a"])
    out = read_folder(tmp_path / "out")
    assert out.schema.metadata[b"shared"] == b"same"
    assert b"geo" not in out.schema.metadata and b"src" not in out.schema.metadata
    assert sorted(out.column("a").to_pylist()) == [0, 1, 2, 3]


def test_cluster_adds_no_metadata_the_files_did_not_have(tmp_path):
    """Files with no schema metadata (pyarrow's own writes) came out with pandas' metadata of
    cluster's frames, whose ArrowDtypes (int64[pyarrow], string NA) changed what
    pandas.read_parquet gives back; so did files whose metadata had nothing in common."""
    pd = pytest.importorskip("pandas")
    for name, metadata in (("bare", None), ("apart", [{b"src": b"f0"}, {b"src": b"f1"}])):
        data = tmp_path / name
        data.mkdir()
        for k in range(2):
            table = pa.table({"a": [2 * k + 1, 2 * k], "s": ["x", None],
                              "t": pa.array([0, 1], pa.timestamp("us"))})
            if metadata is not None:
                table = table.replace_schema_metadata(metadata[k])
            pq.write_table(table, data / f"p{k}.parquet")
        cluster(str(data), str(tmp_path / f"out-{name}"), ["a"])
        out = read_folder(tmp_path / f"out-{name}")
        assert out.schema.metadata in (None, {}), name
        assert sorted(out.column("a").to_pylist()) == [0, 1, 2, 3]
        written = sorted(p for p in os.listdir(tmp_path / f"out-{name}") if p.endswith(".parquet"))
        assert dict(pd.read_parquet(tmp_path / f"out-{name}" / written[0]).dtypes) == \
            dict(pd.read_parquet(data / "p0.parquet").dtypes), name


def test_cluster_accepts_files_that_differ_in_type_width_or_nullability(tmp_path):
    """Files of one dataset written by different writers (timestamp units, a column not
    null in one file and holding nulls in another) were clustered before the footer check
    and must still be; every row kept."""
    data = tmp_path / "mixed"
    data.mkdir()
    when = [dt.datetime(2020, 1, 1), dt.datetime(2021, 6, 1)]
    strict = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.float64(), nullable=False),
                        pa.field("t", pa.timestamp("ns"))])
    pq.write_table(pa.table({"a": [1, 2], "b": [1.0, 2.0], "t": when}, schema=strict),
                   data / "p0.parquet")
    pq.write_table(pa.table({"a": [3, 4], "b": [None, 4.0],
                             "t": pa.array(when, pa.timestamp("us"))}), data / "p1.parquet")
    cluster(str(data), str(tmp_path / "out"), ["a"])
    out = read_folder(tmp_path / "out")
    assert sorted(out.column("a").to_pylist()) == [1, 2, 3, 4]
    assert sorted(map(repr, out.column("b").to_pylist())) == ["1.0", "2.0", "4.0", "None"]
    assert out.schema.field("b").nullable and out.schema.field("t").type == pa.timestamp("ns")


def test_metadata_pandas_did_not_write_is_left_as_it_is(tmp_path):
    odd = pa.table({"a": [2, 1]}).replace_schema_metadata(
        {b"pandas": json.dumps({"index_columns": None, "columns": []}).encode()})
    pq.write_table(odd, tmp_path / "odd.parquet")
    sort_parquet(str(tmp_path / "odd.parquet"), str(tmp_path / "out.parquet"), ["a"])
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.metadata == odd.schema.metadata and out.column("a").to_pylist() == [1, 2]


def test_a_per_column_codec_is_checked_before_any_work(tmp_path):
    pq.write_table(pa.table({"a": [2, 1]}), tmp_path / "in.parquet")
    with pytest.raises(ValueError, match=r"compression \{'a': 'lzo'\} is not a Parquet codec"):
        sort_parquet(str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"), ["a"],
                     compression={"a": "lzo"})
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("first, second, values", [
    (pa.bool_(), pa.int64(), [0, 2, 5, -3]),                       # 2, 5, -3 -> True
    (pa.string(), pa.int64(), [0, 7, 8, 9]),                       # 7 -> "7"
    (pa.date32(), pa.timestamp("us"), [0, 10**11, 2 * 10**11, 3]),  # the time of day lost
    (pa.int64(), pa.bool_(), [True, False, True, False]),          # True -> 1
])
def test_cluster_refuses_a_file_whose_column_is_of_another_kind(tmp_path, first, second,
                                                                 values):
    """A cast across kinds changes values without an error: the in-process path turned a
    second file's 2, 5, -3 into True and finished (found by a review)."""
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "c": pa.array([None, None], first)}),
                   data / "p0.parquet")
    pq.write_table(pa.table({"a": [3, 4, 5, 6], "c": pa.array(values, second)}),
                   data / "p1.parquet")
    with pytest.raises(ValueError, match=re.escape(f"disagree on column 'c': {first} in "
                                                   f"'p0.parquet' and {second} in 'p1.parquet'")):
        cluster(str(data), str(tmp_path / "out"), ["a"])
    assert sorted(os.listdir(tmp_path)) == ["data"]
