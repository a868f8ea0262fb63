"""zorder.iceberg.rewrite on merge-on-read tables: position deletes applied while reading,
the delete files that referenced only rewritten files removed in the same commit, the
starting sequence number kept, equality deletes refused. Every check is by content,
through PyIceberg (the reader the rewrite uses) and DuckDB's iceberg_scan (an independent
reader), on tables whose delete files are made by hand (tests/iceberg_readers.py)."""

import os
import sys
from collections import Counter
from urllib.parse import urlparse

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import DoubleType, LongType, NestedField, StringType  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iceberg_readers import (  # noqa: E402
    add_delete_files, add_position_deletes, delete_files_of, duckdb_available, duckdb_rows)
from zorder.engines import iceberg_commit, iceberg_deletes  # noqa: E402
from zorder.iceberg import IcebergRewriteError, rewrite  # noqa: E402

SCHEMA = Schema(NestedField(1, "k", LongType(), required=False),
                NestedField(2, "x", DoubleType(), required=False),
                NestedField(3, "y", DoubleType(), required=False),
                NestedField(4, "cat", StringType(), required=False))
BY_CAT = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "cat"))

needs_duckdb = pytest.mark.skipif(not duckdb_available(),
                                  reason="duckdb with duckdb-ext-iceberg not installed")


@pytest.fixture
def catalog(tmp_path):
    cat = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                     warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    return cat


def make_table(catalog, name="t", spec=None, appends=3, rows=200, seed=0):
    """A v2 table of ``appends`` files of ``rows`` rows, key ``k`` unique, two
    categories (a partition each when ``spec`` is BY_CAT)."""
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec or PartitionSpec(),
                                 properties={"format-version": "2"})
    rng = np.random.default_rng(seed)
    for a in range(appends):
        k = np.arange(a * rows, (a + 1) * rows, dtype=np.int64)
        table.append(pa.table({
            "k": k, "x": rng.normal(size=rows), "y": rng.normal(size=rows),
            "cat": pa.array(np.where(k % 2 == 0, "even", "odd").astype(object), pa.string()),
        }))
    return table


def keys_by_file(table):
    """{data file path: its rows' keys, in file order} (positions are indices here)."""
    import pyarrow.parquet as pq

    return {t.file.file_path: pq.read_table(urlparse(t.file.file_path).path,
                                            columns=["k"])["k"].to_pylist()
            for t in table.scan().plan_files()}


def delete_tenth(table, per_file=True, seed=1, files=None):
    """Delete about 10% of the rows of ``files`` (default all) by position; returns the
    deleted keys."""
    rng = np.random.default_rng(seed)
    chosen, deleted = {}, set()
    for path, keys in keys_by_file(table).items():
        if files is not None and path not in files:
            continue
        pos = sorted(rng.choice(len(keys), size=max(1, len(keys) // 10), replace=False).tolist())
        chosen[path] = pos
        deleted.update(keys[p] for p in pos)
    add_position_deletes(table, chosen, per_file=per_file)
    return deleted


def rows_of(arrow):
    return Counter(tuple(sorted(r.items())) for r in arrow.to_pylist())


def referenced(table, delete_file):
    import pyarrow.parquet as pq

    return set(pq.read_table(urlparse(delete_file.file_path).path,
                             columns=["file_path"])["file_path"].to_pylist())


def check_readers_agree(table, before, deleted):
    """The table reads as ``before`` through PyIceberg and DuckDB, no deleted key back."""
    after = table.scan().to_arrow()
    assert rows_of(after) == rows_of(before)
    assert not deleted & set(after["k"].to_pylist())
    if duckdb_available():
        seen = duckdb_rows(table, "k, x, y, cat")
        assert rows_of(seen) == rows_of(before.select(["k", "x", "y", "cat"]))
        assert not deleted & set(seen["k"].to_pylist())


@pytest.mark.parametrize("per_file", [True, False])
@pytest.mark.parametrize("scheduler", [None, "sync"])
def test_position_deletes_are_applied_and_their_files_removed(catalog, per_file, scheduler):
    table = make_table(catalog, spec=BY_CAT)
    deleted = delete_tenth(table, per_file=per_file)
    before = table.scan().to_arrow()
    assert before.num_rows == 600 - len(deleted) and len(deleted) >= 60
    start = table.current_snapshot()
    old = {t.file.file_path for t in table.scan().plan_files()}
    result = rewrite(table, ["x", "y"], scheduler=scheduler)
    table = catalog.load_table("db.t")
    check_readers_agree(table, before, deleted)
    # every delete file referenced only rewritten files: all gone, in the same commit
    assert delete_files_of(table) == []
    assert len(result.report["removed_delete_files"]) == len(delete_files_of(table, start.snapshot_id))
    summary = table.current_snapshot().summary
    assert summary["operation"].value == "replace"
    assert summary["total-delete-files"] == "0" and summary["total-position-deletes"] == "0"
    assert int(summary["total-records"]) == before.num_rows
    assert int(summary["removed-position-deletes"]) == len(deleted)
    assert sum(e["deleted_rows"] for e in result.report["groups"]) == len(deleted)
    assert not old & {t.file.file_path for t in table.scan().plan_files()}
    # the previous snapshot still reads as it did (history stays true)
    assert rows_of(table.scan(snapshot_id=start.snapshot_id).to_arrow()) == rows_of(before)


def test_a_delete_file_that_also_references_a_kept_file_stays(catalog):
    table = make_table(catalog, appends=4, rows=100)   # unpartitioned, keys 0..399
    deleted = delete_tenth(table, per_file=False)      # one delete file for all four
    single = delete_tenth(table, per_file=True, seed=2,
                          files={p for p, k in keys_by_file(table).items() if k[0] < 200})
    deleted |= single
    before = table.scan().to_arrow()
    result = rewrite(table, ["x", "y"], row_filter="k < 200")   # the first two files
    table = catalog.load_table("db.t")
    check_readers_agree(table, before, deleted)
    live = {t.file.file_path for t in table.scan().plan_files()}
    left = delete_files_of(table)
    # the shared delete file stays (it still deletes rows of the kept files); the
    # per-file ones of rewritten files are gone; none left references only removed files
    assert len(left) == 1 and referenced(table, left[0]) & live
    assert len(result.report["removed_delete_files"]) == 2
    for d in left:
        assert referenced(table, d) & live


def test_new_files_keep_the_starting_sequence_number(catalog):
    table = make_table(catalog, appends=2, rows=100)
    delete_tenth(table)
    start = table.current_snapshot()
    result = rewrite(table, ["x", "y"])
    table = catalog.load_table("db.t")
    added = set(result.added_paths)
    entries = [e for m in table.current_snapshot().manifests(table.io)
               for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
               if e.data_file.file_path in added]
    assert len(entries) == len(added)
    assert {e.sequence_number for e in entries} == {start.sequence_number}
    assert {e.file_sequence_number for e in entries} == {table.current_snapshot().sequence_number}


def equality_delete(table, like):
    """An equality delete file (on ``k``) in the partition of ``like``: enough for the
    planner to see; its rows are never read."""
    import pyarrow.parquet as pq

    location = table.location_provider().new_data_location("eq-deletes.parquet")
    with table.io.new_output(location).create() as out:
        pq.write_table(pa.table({"k": pa.array([1], pa.int64())}), out)
    made = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES, file_path=location,
        file_format=FileFormat.PARQUET, partition=like.partition, record_count=1,
        file_size_in_bytes=len(table.io.new_input(location)), equality_ids=[1])
    made.spec_id = like.spec_id
    add_delete_files(table, [made])
    return location


def test_equality_deletes_refuse_their_partition_before_anything_is_written(catalog, tmp_path):
    table = make_table(catalog, spec=BY_CAT)
    odd = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "odd")
    location = equality_delete(table, odd)
    table = catalog.load_table("db.t")
    head = table.current_snapshot().snapshot_id
    on_disk = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(ValueError, match=f"partition cat=odd has equality delete files.*"
                                         f"{os.path.basename(location)}"):
        rewrite(table, ["x", "y"])
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == on_disk
    assert catalog.load_table("db.t").current_snapshot().snapshot_id == head
    # the other partition can still be rewritten
    result = rewrite(table, ["x", "y"], row_filter="cat = 'even'")
    assert result.snapshot_id is not None


def test_the_rows_checks_count_the_deleted_rows(catalog):
    table = make_table(catalog, appends=2, rows=100)
    files = [t.file for t in table.scan().plan_files()]

    class Short:
        record_count = files[0].record_count - 5

    iceberg_commit.check_counts(files[:1], [Short()], "here", deleted=5)
    with pytest.raises(IcebergRewriteError, match="hold 95 rows, the files they replace "
                                                  "100 less 4 deleted"):
        iceberg_commit.check_counts(files[:1], [Short()], "here", deleted=4)


def test_dangling_deletes_reference_only_rewritten_files():
    a, b = object(), object()
    refs = [(a, frozenset({"f1", "f2"})), (b, frozenset({"f2", "f3"}))]
    assert iceberg_deletes.dangling_deletes(refs, ["f1", "f2"]) == [a]
    assert iceberg_deletes.dangling_deletes(refs, ["f1", "f2", "f3"]) == [a, b]
    assert iceberg_deletes.dangling_deletes([(a, frozenset())], ["f1"]) == []


@needs_duckdb
def test_merge_on_read_target_ten_percent_deleted(catalog):
    """The issue's target, small: 10% of the rows deleted by position deletes; after the
    rewrite the row set is identical by content, as both readers see it, and no delete
    file references a removed data file."""
    table = make_table(catalog, spec=BY_CAT, appends=4, rows=200)
    deleted = delete_tenth(table, per_file=False)
    assert len(deleted) == 80   # of 800
    before_duck = duckdb_rows(table, "k, x, y, cat")
    before = table.scan().to_arrow()
    assert rows_of(before_duck) == rows_of(before)
    removed = {t.file.file_path for t in table.scan().plan_files()}
    rewrite(table, ["x", "y"])
    table = catalog.load_table("db.t")
    check_readers_agree(table, before, deleted)
    for d in delete_files_of(table):
        assert not referenced(table, d) <= removed


def test_cli_says_what_it_did_with_deletes_and_refuses_equality_deletes_in_one_line(
        catalog, tmp_path, capsys):
    from zorder.cli import main

    table = make_table(catalog, spec=BY_CAT)
    deleted = delete_tenth(table)
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
             "--warehouse", f"file://{tmp_path}/wh"]
    assert main(["iceberg", "rewrite", "db.t", "--columns", "x,y", *flags]) == 0
    out = capsys.readouterr().out
    assert (f"position deletes: {len(deleted)} deleted rows left out, 6 delete files that "
            f"referenced only rewritten files removed") in out
    table = catalog.load_table("db.t")
    odd = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "odd")
    equality_delete(table, odd)
    assert main(["iceberg", "rewrite", "db.t", "--columns", "x,y", *flags]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "equality delete files" in lines[0] and "--where" in lines[0]
    assert "Traceback" not in captured.err
    # the other partition (clustered by the first run: --rewrite-all), with the skipping
    # report of the whole table
    assert main(["iceberg", "rewrite", "db.t", "--columns", "x,y", "--where", "cat = 'even'",
                 "--rewrite-all", *flags]) == 0
    assert "committed snapshot" in capsys.readouterr().out


def test_partial_progress_removes_each_batchs_dangling_deletes(catalog):
    """Two batches over a merge-on-read table: each commit removes the delete files that
    the batches so far left dangling (the one spanning both batches goes with the second),
    every new file keeps the planned snapshot's sequence number, and no deleted row is
    readable after either commit, through PyIceberg or DuckDB."""
    table = make_table(catalog, appends=4, rows=100)   # unpartitioned, four files
    deleted = delete_tenth(table, per_file=False)      # one delete file for all four
    deleted |= delete_tenth(table, per_file=True, seed=2)   # and one for each
    table = catalog.load_table("db.t")
    before = table.scan().to_arrow()
    start = table.current_snapshot()
    at_start = delete_files_of(table)
    assert len(at_start) == 5
    sizes = sorted(t.file.file_size_in_bytes for t in table.scan().plan_files())
    result = rewrite(table, ["x", "y"], partial_progress=True, max_commits=2,
                     max_file_group_size=2 * sizes[-1] + 1)   # two groups of two files
    assert len(result.report["groups"]) == 2 and result.report["failed_groups"] == []
    first, second = (c["snapshot_id"] for c in result.report["commits"])
    table = catalog.load_table("db.t")
    # after the first batch: the shared delete file stays (it still deletes rows of the
    # second batch's files), none left references only removed files
    live = {t.file.file_path for t in table.scan(snapshot_id=first).plan_files()}
    left = delete_files_of(table, first)
    assert len(left) == 3
    assert any(len(referenced(table, d)) == 4 for d in left)
    for d in left:
        assert referenced(table, d) & live
    assert rows_of(table.scan(snapshot_id=first).to_arrow()) == rows_of(before)
    # after the second: every delete file gone, counted once
    assert delete_files_of(table) == []
    assert table.current_snapshot().snapshot_id == second
    assert sorted(result.report["removed_delete_files"]) == sorted(d.file_path for d in at_start)
    check_readers_agree(table, before, deleted)
    added = set(result.added_paths)
    entries = [e for m in table.current_snapshot().manifests(table.io)
               for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
               if e.data_file.file_path in added]
    assert len(entries) == len(added)
    assert {e.sequence_number for e in entries} == {start.sequence_number}


def test_an_equality_delete_committed_meanwhile_is_no_conflict(catalog):
    """The new files keep the planned snapshot's sequence number, so an equality delete
    committed while the rewrite ran still applies to them: the commit is not refused."""
    table = make_table(catalog, spec=BY_CAT)
    delete_tenth(table)
    start = table.current_snapshot()
    other = catalog.load_table("db.t")
    odd = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "odd")
    calls = []

    def equality_delete_once(done, total, entry):
        if not calls:
            calls.append(equality_delete(other, odd))

    result = rewrite(table, ["x", "y"], progress=equality_delete_once)
    table = catalog.load_table("db.t")
    assert table.current_snapshot().snapshot_id == result.snapshot_id
    equality = [(e.sequence_number, e.data_file.file_path)
                for m in table.current_snapshot().manifests(table.io)
                for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
                if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    assert [p for _, p in equality] == calls
    added = {e.sequence_number for m in table.current_snapshot().manifests(table.io)
             for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
             if e.data_file.file_path in set(result.added_paths)}
    assert added == {start.sequence_number} and equality[0][0] > start.sequence_number


def test_the_curve_columns_are_read_first_and_the_rest_beside_with_the_same_deletes(
        catalog, monkeypatch):
    """A group's curve columns are read, and its rows ordered, while its other columns
    are read beside them with the same deletes (read once); the files hold the rows a
    whole read gives, in curve order."""
    import pyarrow.parquet as pq

    import zorder
    from zorder.engines import iceberg_read

    calls = []
    real = iceberg_read.read_group

    def recording(table_metadata, io, group, columns=None, positions=None):
        calls.append((None if columns is None else sorted(columns), positions is not None))
        return real(table_metadata, io, group, columns, positions)

    monkeypatch.setattr(iceberg_read, "read_group", recording)
    reads_of_delete_files = []
    real_positions = iceberg_deletes.delete_positions

    def counting(io, tasks):
        reads_of_delete_files.append(len(tasks))
        return real_positions(io, tasks)

    monkeypatch.setattr(iceberg_read, "delete_positions", counting)
    table = make_table(catalog, spec=BY_CAT)
    deleted = delete_tenth(table)
    before = table.scan().to_arrow()
    rewrite(table, ["x", "y"])
    table = catalog.load_table("db.t")
    check_readers_agree(table, before, deleted)
    # two partitions: each read as its curve columns, then its other two (and the first
    # curve column again, to check the rows came in the same order), deletes shared
    assert sorted(calls) == [(["cat", "k", "x"], True)] * 2 + [(["x", "y"], True)] * 2
    assert reads_of_delete_files == [3, 3]
    for task in table.scan().plan_files():
        data = pq.read_table(urlparse(task.file.file_path).path)
        assert list(zorder.sort_indices(data, columns=["x", "y"])) == list(range(data.num_rows))
    # read apart only where the curve columns are top-level and others remain
    assert iceberg_read.columns_apart(SCHEMA, ["y", "x"]) == (["y", "x"], ["k", "cat"])
    assert iceberg_read.columns_apart(SCHEMA, ["k", "x", "y", "cat"]) is None


def test_two_reads_that_give_the_rows_in_different_orders_are_refused(catalog, monkeypatch):
    """The curve columns and the rest are joined only if both reads gave the rows in the
    same order: a rest read whose rows came reversed fails the group, nothing committed
    and nothing left on disk."""
    from zorder.engines import iceberg_read

    table = make_table(catalog)
    delete_tenth(table)
    before = table.scan().to_arrow()
    snapshot = table.current_snapshot().snapshot_id
    data_folder = urlparse(table.location()).path + "/data"
    files_before = {os.path.join(r, n) for r, _, names in os.walk(data_folder) for n in names}
    real = iceberg_read.read_group

    def reversed_rest(table_metadata, io, group, columns=None, positions=None):
        data, deleted = real(table_metadata, io, group, columns, positions)
        if columns is not None and "k" in columns:   # the read of the other columns
            data = data.take(pa.array(np.arange(data.num_rows)[::-1]))
        return data, deleted

    monkeypatch.setattr(iceberg_read, "read_group", reversed_rest)
    with pytest.raises(IcebergRewriteError, match="gave different rows"):
        rewrite(table, ["x", "y"])
    table = catalog.load_table("db.t")
    assert table.current_snapshot().snapshot_id == snapshot
    assert rows_of(table.scan().to_arrow()) == rows_of(before)
    assert {os.path.join(r, n) for r, _, names in os.walk(data_folder)
            for n in names} == files_before


def test_the_split_read_equals_a_whole_read_across_schema_evolution(catalog, tmp_path,
                                                                     monkeypatch):
    """The curve columns and the rest, read apart and joined, are the rows and types a
    whole read gives, on files of several schemas: a curve column promoted (float to
    double) and another column (int to long), a column renamed, one added after some
    files (nulls there), the columns reordered, a file added without field ids (name
    mapping, its own column order and row groups), one delete file over all of them."""
    import pyarrow.parquet as pq
    from pyiceberg.types import FloatType, IntegerType

    import zorder
    from zorder.engines import iceberg_read, iceberg_write

    schema = Schema(NestedField(1, "k", IntegerType(), required=False),
                    NestedField(2, "x", FloatType(), required=False),
                    NestedField(3, "y", DoubleType(), required=False),
                    NestedField(4, "cat", StringType(), required=False))
    table = catalog.create_table("db.t", schema, properties={"format-version": "2"})
    rng = np.random.default_rng(0)
    for a in range(2):
        table.append(pa.table({
            "k": pa.array(np.arange(a * 100, a * 100 + 100, dtype=np.int32)),
            "x": pa.array(rng.normal(size=100).astype(np.float32)),
            "y": rng.normal(size=100), "cat": pa.array([f"c{a}"] * 100)}))
    with table.update_schema() as update:
        update.update_column("k", LongType())
        update.update_column("x", DoubleType())
        update.rename_column("cat", "category")
        update.add_column("extra", StringType())
        update.move_first("y")
    table.append(pa.table({
        "y": rng.normal(size=100), "k": pa.array(np.arange(200, 300, dtype=np.int64)),
        "x": rng.normal(size=100), "category": pa.array(["c2"] * 100),
        "extra": pa.array([f"e{i}" for i in range(100)])}))
    added = str(tmp_path / "added.parquet")
    pq.write_table(pa.table({"extra": pa.array(["z"] * 100), "x": rng.normal(size=100),
                             "k": pa.array(np.arange(300, 400, dtype=np.int64)),
                             "category": pa.array(["c3"] * 100), "y": rng.normal(size=100)}),
                   added, row_group_size=30)
    table.add_files([added])
    deleted = set()
    chosen = {}
    for path, keys in keys_by_file(table).items():
        chosen[path] = sorted(rng.choice(len(keys), size=10, replace=False).tolist())
        deleted.update(keys[p] for p in chosen[path])
    add_position_deletes(table, chosen, per_file=False)
    table = catalog.load_table("db.t")
    before = table.scan().to_arrow()
    joined = []
    real = iceberg_read.read_rest

    def compared(table_metadata, io, group, *rest):
        data = real(table_metadata, io, group, *rest)
        whole, _ = iceberg_read.read_group(table_metadata, io, group)
        joined.append(data.schema.equals(whole.schema, check_metadata=True) and all(
            iceberg_read.same_values(data.column(n), whole.column(n))
            for n in whole.column_names))
        return data

    monkeypatch.setattr(iceberg_write, "read_rest", compared)
    rewrite(table, ["x", "y"], min_input_files=1)
    assert joined == [True]
    table = catalog.load_table("db.t")
    after = table.scan().to_arrow()
    assert after.schema.names == ["y", "k", "x", "category", "extra"]
    assert rows_of(after) == rows_of(before) and not deleted & set(after["k"].to_pylist())
    for task in table.scan().plan_files():
        data = pq.read_table(urlparse(task.file.file_path).path)
        assert list(zorder.sort_indices(data, columns=["x", "y"])) == list(range(data.num_rows))


def test_the_order_check_reads_again_the_curve_column_that_best_tells_rows_apart():
    """A column of one value (or two) would hide rows that moved among those sharing it:
    the anchor is the curve column with the most distinct values, uuid's too."""
    from zorder.engines.iceberg_read import anchor_column

    n = 5000
    table = pa.table({"flag": pa.array([True] * n), "day": pa.array(np.arange(n) % 7),
                      "x": pa.array(np.random.default_rng(0).normal(size=n))})
    assert anchor_column(table) == "x"
    uuids = pa.array([i.to_bytes(16, "big") for i in range(n)], pa.binary(16))
    assert anchor_column(pa.table({"day": table["day"],
                                   "u": pa.ExtensionArray.from_storage(pa.uuid(), uuids)})) == "u"


def test_a_failure_before_the_writing_starts_leaves_no_read_running(catalog, monkeypatch):
    """The rest of a group is read only inside the block that waits for it: a failure
    between the curve columns' read and the writing leaves no reader thread behind."""
    import threading

    from zorder.engines import iceberg_write

    started = []
    monkeypatch.setattr(iceberg_write, "read_rest", lambda *a: started.append(a))

    def failing(*args):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(iceberg_write, "_pieces", failing)
    table = make_table(catalog)
    with pytest.raises(RuntimeError, match="planted failure"):
        rewrite(table, ["x", "y"])
    assert started == []
    assert not [t for t in threading.enumerate() if t.name.startswith("zorder-reader")]
