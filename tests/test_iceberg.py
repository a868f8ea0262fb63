"""zorder.iceberg.rewrite on real PyIceberg: a SqlCatalog on a SQLite file with a local
warehouse. Every rewrite is read back through PyIceberg and compared row for row (as
multisets), each new file is checked to be in Z-order (with Z-values computed here,
independently of the engine's column conversion), and the snapshot and history are
checked as Spark's rewrite leaves them."""

import datetime as dt
import json
import inspect
import os
import pathlib
import tempfile
import time
import uuid
from collections import Counter
from urllib.parse import urlparse

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.exceptions import CommitFailedException  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType, FloatType,
    IntegerType, LongType, NestedField, StringType, StructType, TimestampType,
    TimestamptzType, TimeType, UUIDType,
)

import zorder  # noqa: E402
from zorder.engines import iceberg as engine  # noqa: E402
from zorder.engines import iceberg_columns  # noqa: E402
from zorder.engines import iceberg_read, iceberg_write  # noqa: E402
from zorder.iceberg import IcebergRewriteError, rewrite  # noqa: E402
from zorder.parquet.encoded_size import parquet_size_bound  # noqa: E402
from zorder.values.ordering import Ordering  # noqa: E402

HAS_TRANSFORMS = True
try:
    import pyiceberg_core  # noqa: F401  (day and bucket partitions on append)
except ImportError:
    HAS_TRANSFORMS = False

# Every type Iceberg's Z-order accepts, each optional (nulls in every column).
COLUMNS = [
    ("b", BooleanType()), ("i", IntegerType()), ("l", LongType()), ("f", FloatType()),
    ("d", DoubleType()), ("day", DateType()), ("ts", TimestampType()),
    ("tstz", TimestamptzType()), ("s", StringType()), ("u", UUIDType()),
    ("fx", FixedType(4)), ("bin", BinaryType()), ("cat", StringType()),
]
SCHEMA = Schema(*[NestedField(k + 1, name, typ, required=False)
                  for k, (name, typ) in enumerate(COLUMNS)])
FIELD_ID = {name: k + 1 for k, (name, _) in enumerate(COLUMNS)}

SPECS = {
    "unpartitioned": PartitionSpec(),
    "identity": PartitionSpec(PartitionField(FIELD_ID["cat"], 1000, IdentityTransform(), "cat")),
    "day": PartitionSpec(PartitionField(FIELD_ID["tstz"], 1000, DayTransform(), "tstz_day")),
    "bucket": PartitionSpec(PartitionField(FIELD_ID["l"], 1000, BucketTransform(3), "l_bucket")),
}


def arrow_batch(rng, n, with_nulls=True):
    """n rows of every type; about 10% nulls except in the partition sources."""
    base = dt.datetime(2026, 1, 1)
    micros = rng.integers(0, 2 * 86_400 * 10**6, n)
    cols = {
        "b": pa.array(rng.integers(0, 2, n).astype(bool)),
        "i": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
        "l": pa.array(rng.integers(-10**12, 10**12, n)),
        "f": pa.array(rng.normal(size=n).astype(np.float32)),
        "d": pa.array(rng.normal(size=n) * 1e3),
        "day": pa.array([dt.date(2025, 1, 1) + dt.timedelta(days=int(x))
                         for x in rng.integers(0, 400, n)], pa.date32()),
        "ts": pa.array([base + dt.timedelta(microseconds=int(x)) for x in micros],
                       pa.timestamp("us")),
        "tstz": pa.array([(base + dt.timedelta(microseconds=int(x))).replace(tzinfo=dt.timezone.utc)
                          for x in micros[::-1]], pa.timestamp("us", tz="UTC")),
        "s": pa.array([f"{'xyz'[x % 3]}{x}" for x in rng.integers(0, 10**6, n)]),
        "u": pa.array([uuid.UUID(int=int(x) << 64 | int(y)).bytes
                       for x, y in rng.integers(0, 2**62, (n, 2))], pa.binary(16)),
        "fx": pa.array([bytes(r) for r in rng.integers(0, 256, (n, 4), dtype=np.uint8)],
                       pa.binary(4)),
        "bin": pa.array([bytes(r[: r[0] % 12]) for r in rng.integers(0, 256, (n, 12), dtype=np.uint8)]),
        "cat": pa.array(["abc"[x] for x in rng.integers(0, 3, n)]),
    }
    if with_nulls:
        for name in ("b", "i", "f", "d", "day", "ts", "s", "u", "fx", "bin"):
            mask = pa.array(rng.random(n) < 0.1)
            cols[name] = pa.compute.if_else(mask, pa.scalar(None, cols[name].type), cols[name])
    return pa.table(cols)


@pytest.fixture
def catalog(tmp_path):
    cat = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("db")
    return cat


def make_table(catalog, name="t", spec="unpartitioned", version=2, appends=3, rows=400,
               seed=0, properties=None, with_nulls=True):
    props = {"format-version": str(version), **(properties or {})}
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_spec=SPECS[spec], properties=props)
    rng = np.random.default_rng(seed)
    for _ in range(appends):
        table.append(arrow_batch(rng, rows, with_nulls))
    return table


def multiset(arrow_table):
    def plain(v):  # a uuid reads back as uuid.UUID, is written as 16 bytes
        return v.bytes if isinstance(v, uuid.UUID) else v

    return Counter(tuple(sorted((k, plain(v)) for k, v in row.items()))
                   for row in arrow_table.to_pylist())


def local(path):
    return urlparse(path).path


def zvalues_of_file(path, columns, **encoding):
    """Z-values of a data file's rows, converted here from the Iceberg types (uuid text
    through Python's uuid module; timestamp kinds named), not by the engine."""
    data = pq.read_table(local(path))
    kinds = {"ts": "ntz", "tstz": "tz"}
    cols = {}
    for name in columns:
        col = data.column(name)
        if name == "u":
            col = pa.array([None if v is None else str(v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=v))
                            for v in col.to_pylist()],
                           pa.string())
        cols[name] = col
    ts = {k: v for k, v in kinds.items() if k in columns} or None
    z = zorder.zorder_values(cols, columns=list(columns), timestamp=ts, **encoding)
    return np.asarray(z.to_pylist() if hasattr(z, "to_pylist") else [bytes(r) for r in z], dtype=object)


def assert_zordered(path, columns, **encoding):
    z = zvalues_of_file(path, columns, **encoding)
    assert all(z[k] <= z[k + 1] for k in range(len(z) - 1)), f"{path} is not in Z-order"


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("spec", list(SPECS))
def test_rewrite_keeps_rows_orders_files_and_commits_one_replace(catalog, spec, version):
    if spec in ("day", "bucket") and not HAS_TRANSFORMS:
        pytest.skip("PyIceberg needs pyiceberg-core to append to day/bucket partitions")
    table = make_table(catalog, spec=spec, version=version)
    before = table.scan().to_arrow()
    before_snapshot = table.current_snapshot()
    old_files = {t.file.file_path for t in table.scan().plan_files()}
    columns = ["l", "tstz", "s", "u"]

    result = rewrite(table, columns, target_file_size="40KB")

    snap = table.current_snapshot()
    assert snap.snapshot_id == result.snapshot_id
    assert snap.parent_snapshot_id == before_snapshot.snapshot_id
    assert snap.summary.operation.value == "replace"
    summary = snap.summary.additional_properties
    assert int(summary["deleted-data-files"]) == result.rewritten_files == len(old_files)
    assert int(summary["added-data-files"]) == result.added_files
    assert int(summary["added-records"]) == int(summary["deleted-records"]) == before.num_rows
    assert int(summary["total-records"]) == before.num_rows
    # Every row, as a multiset, through PyIceberg.
    after = table.scan().to_arrow()
    assert multiset(after) == multiset(before)
    # Each new file is in Z-order and sits in its partition; no old file is kept.
    new_files = [t.file for t in table.scan().plan_files()]
    assert {f.file_path for f in new_files} == set(result.added_paths)
    assert not old_files & set(result.added_paths)
    for f in new_files:
        assert_zordered(f.file_path, columns)
        if spec != "unpartitioned":
            part = table.spec().partition_to_path(f.partition, table.schema())
            assert f"/{part}/" in f.file_path
            rows = pq.read_table(local(f.file_path))
            if spec == "identity":
                assert set(rows.column("cat").to_pylist()) == {f.partition[0]}
        # Full column metrics, so readers can prune on the new files.
        assert set(f.lower_bounds) >= {FIELD_ID[c] for c in ("l", "tstz", "s")}
        assert f.null_value_counts[FIELD_ID["s"]] == pq.read_table(local(f.file_path)).column("s").null_count
    # History: the previous snapshot still reads the old data; nothing is "new" data.
    old = table.scan(snapshot_id=before_snapshot.snapshot_id).to_arrow()
    assert multiset(old) == multiset(before)
    assert {t.file.file_path for t in table.scan(snapshot_id=before_snapshot.snapshot_id).plan_files()} == old_files
    appended = table.incremental_append_scan(from_snapshot_id_exclusive=before_snapshot.snapshot_id).to_arrow()
    assert appended.num_rows == 0
    # One file group per partition.
    partitions = {(t.file.spec_id, tuple(t.file.partition)) for t in table.scan().plan_files()}
    assert len(result.report["groups"]) == len(partitions)


def test_identity_partition_columns_are_dropped_and_types_come_from_the_schema(catalog):
    table = make_table(catalog, spec="identity", appends=2, rows=300)
    result = rewrite(table, ["CAT", "TS", "tsTZ"])  # case-insensitive, as Spark
    assert result.report["columns"] == ["ts", "tstz"]
    for path in result.added_paths:
        assert_zordered(path, ["ts", "tstz"])
    # Wrong kinds would order differently: micros for a timestamptz is not Spark's order.
    data = pq.read_table(local(result.added_paths[0]))
    wrong = zorder.zorder_values({"ts": data.column("ts"), "tstz": data.column("tstz")},
                                 timestamp={"ts": "ntz", "tstz": "ntz"}).to_pylist()
    assert any(a > b for a, b in zip(wrong, wrong[1:]))


def test_uuid_is_its_canonical_text_as_spark_reads_it():
    values = [uuid.UUID(int=k * 0x0123456789ABCDEF0123456789ABCDEF % 2**128) for k in range(50)]
    arr = pa.array([v.bytes for v in values] + [None], pa.binary(16))
    text = iceberg_columns._uuid_text(arr.slice(1))
    assert text.to_pylist() == [str(v) for v in values[1:]] + [None]


def test_refusals_use_icebergs_errors(catalog):
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "amount", DecimalType(10, 2), required=False),
                    NestedField(3, "at", TimeType(), required=False),
                    NestedField(4, "point", StructType(NestedField(5, "x", DoubleType(), required=False)),
                                required=False),
                    NestedField(6, "part", StringType(), required=False))
    spec = PartitionSpec(PartitionField(6, 1000, IdentityTransform(), "part"))
    table = catalog.create_table("db.refuse", schema, partition_spec=spec)
    with pytest.raises(TypeError, match=r"Cannot use column amount of type decimal\(10, 2\) in ZOrdering"):
        rewrite(table, ["id", "amount"])
    with pytest.raises(TypeError, match="Cannot use column at of type time in ZOrdering"):
        rewrite(table, ["at"])
    with pytest.raises(TypeError, match="Cannot use column point of type struct"):
        rewrite(table, ["point"])
    with pytest.raises(TypeError, match=r"Cannot use column point\.x of type nested field"):
        rewrite(table, ["point.x"])
    with pytest.raises(ValueError, match="Cannot ZOrder, all columns provided were identity partition"):
        rewrite(table, ["PART"])
    with pytest.raises(ValueError, match="Cannot find column 'ID' in table schema"):
        rewrite(table, ["ID"], case_sensitive=True)
    with pytest.raises(ValueError, match="Cannot ZOrder when no columns"):
        rewrite(table, [])
    with pytest.raises(ValueError, match="curve must be"):
        rewrite(table, ["id"], curve="peano")
    with pytest.raises(TypeError, match="options must be a zorder.IcebergOptions"):
        rewrite(table, ["id"], options={"iceberg": "main"})
    clash = catalog.create_table("db.clash", Schema(NestedField(1, "id", LongType(), required=False),
                                                    NestedField(2, "icezvalue", BinaryType(), required=False)))
    with pytest.raises(ValueError, match="has a column named 'ICEZVALUE'"):
        rewrite(clash, ["id"])
    # Columns that differ only in case: ambiguous unless named case-sensitively (PyIceberg's
    # case-insensitive lookup picked 'lat' for 'Lat', a different column, silently).
    twins = catalog.create_table("db.twins", Schema(NestedField(1, "Lat", LongType(), required=False),
                                                    NestedField(2, "lat", LongType(), required=False)))
    for name in ("Lat", "LAT", "lat"):
        with pytest.raises(ValueError, match=r"column '\w+' is ambiguous: the table has 'Lat', 'lat'"):
            iceberg_columns.curve_columns(twins, [name])
    assert iceberg_columns.curve_columns(twins, ["Lat"], case_sensitive=True) == ["Lat"]
    assert iceberg_columns.curve_columns(twins, ["lat", "Lat"], case_sensitive=True) == ["lat", "Lat"]


def test_row_filter_rewrites_only_matching_partitions(catalog):
    table = make_table(catalog, name="f", spec="identity", appends=2, rows=300)
    files = {t.file.file_path: t.file.partition[0] for t in table.scan().plan_files()}
    result = rewrite(table, ["l", "d"], row_filter="cat = 'b'")
    assert set(result.removed_paths) == {p for p, c in files.items() if c == "b"}
    kept = {t.file.file_path for t in table.scan().plan_files()} - set(result.added_paths)
    assert kept == {p for p, c in files.items() if c != "b"}
    assert len(result.report["groups"]) == 1


def test_target_size_groups_and_write_properties(catalog):
    table = make_table(catalog, name="p", appends=4, rows=2000, with_nulls=False)
    with table.transaction() as tx:  # after the appends, so they wrote one file each
        tx.set_properties({"write.parquet.compression-codec": "snappy",
                           "write.parquet.row-group-limit": "1000",
                           "write.target-file-size-bytes": "60000"})
    result = rewrite(table, ["l", "d"], max_file_group_size=1)  # one group per input file
    assert result.report["target_file_size"] == 60000
    assert len(result.report["groups"]) == 4
    sizes = []
    for path in result.added_paths:
        md = pq.ParquetFile(local(path)).metadata
        assert md.row_group(0).column(0).compression == "SNAPPY"
        assert all(md.row_group(g).num_rows <= 1000 for g in range(md.num_row_groups))
        sizes.append(os.path.getsize(local(path)))
    # Each group of ~4 files' worth is cut into files of about the target size.
    assert len(sizes) > 4
    assert all(0.6 * 60000 <= s <= 1.4 * 60000 for s in sizes), sizes


def test_files_after_the_first_correct_a_wrong_size_estimate(catalog, monkeypatch):
    # The estimate 40% high: planned once, files would all come out ~30% small.
    table = make_table(catalog, name="est", appends=1, rows=20000, with_nulls=False)
    with table.transaction() as tx:
        tx.set_properties({"write.parquet.row-group-limit": "500"})
    sizes = {}
    real = iceberg_write._calibration
    for wrong in (1.0, 1.4):
        monkeypatch.setattr(iceberg_write, "_calibration", lambda *a, w=wrong: real(*a) * w)
        # (rewrite_all: the second run finds the table clustered already)
        result = rewrite(table, ["l", "d"], target_file_size="40KB", rewrite_all=True)
        sizes[wrong] = [os.path.getsize(local(p)) for p in result.added_paths]
        table = catalog.load_table(table.name())
    assert len(sizes[1.4]) >= 4
    # the first file bears the error; the rest are planned with what it really took
    assert all(0.75 * 40000 <= s <= 1.25 * 40000 for s in sizes[1.4][1:]), sizes
    assert sizes[1.4][0] < 0.85 * 40000, sizes


def rows_encoded(monkeypatch):
    """A list that gets the row count of every table pyarrow encodes from now on (the
    size profiles encode theirs with ``pq.write_table``)."""
    encoded = []
    real = pq.write_table

    def counting(data, where, **kwargs):
        encoded.append(data.num_rows)
        return real(data, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", counting)
    return encoded


def test_size_profiles_encode_each_row_of_a_group_at_most_once(catalog, monkeypatch):
    # 16 slices of 8,192 rows laid over 20,000 rows overlap: each profile would encode
    # the group 6.5 times over (the first rewrite of 365 partitions of 11,000 rows each
    # spent most of its time so).
    table = make_table(catalog, name="prof", appends=1, rows=20000, with_nulls=False)
    encoded = rows_encoded(monkeypatch)
    result = rewrite(table, ["l", "d"], target_file_size="40KB")
    assert result.added_files >= 4   # cut by the profiles, so they were made
    # two profiles (the rows read, the sorted rows), each slice with and without dictionaries
    assert 0 < sum(encoded) <= 2 * 2 * 20000, (len(encoded), sum(encoded))


def test_groups_far_below_the_target_are_one_file_without_size_profiles(catalog, monkeypatch):
    table = make_table(catalog, name="small", spec="identity", appends=2, rows=400)
    encoded = rows_encoded(monkeypatch)
    result = rewrite(table, ["l", "d"], target_file_size="8MB")
    assert [g["output_files"] for g in result.report["groups"]] == [1, 1, 1]
    assert encoded == []
    # a target within 8 times a group's input bytes: the group is measured
    table = catalog.load_table(table.name())
    result = rewrite(table, ["l", "d"], target_file_size=table.scan().plan_files()[0]
                     .file.file_size_in_bytes * 2, rewrite_all=True)
    assert encoded


def test_groups_whose_rows_fit_one_file_in_any_order_are_not_measured(catalog, monkeypatch):
    # input bytes over an eighth of the target, so the small-group rule does not apply;
    # but however the rows are ordered they take under 1.5 targets: one file, no profile
    table = make_table(catalog, name="fits", appends=2, rows=20000, with_nulls=False)
    rows = table.scan().to_arrow()
    bound = parquet_size_bound(rows)
    input_bytes = sum(t.file.file_size_in_bytes for t in table.scan().plan_files())
    target = int(bound / 1.4)
    assert input_bytes > target / 8
    assert iceberg_write.fits_one_file(rows, table.metadata, target)
    assert not iceberg_write.fits_one_file(rows, table.metadata, int(bound / 1.6))
    encoded = rows_encoded(monkeypatch)
    result = rewrite(table, ["l", "d"], target_file_size=target)
    assert [g["output_files"] for g in result.report["groups"]] == [1]
    assert encoded == []
    # and the written file is within the bound
    assert os.path.getsize(local(result.added_paths[0])) <= bound
    # a target the bound does not fit: the rows are measured (and, far under the bound,
    # still written as one file)
    table = catalog.load_table(table.name())
    result = rewrite(table, ["l", "d"], target_file_size=int(bound / 1.6), rewrite_all=True)
    assert encoded
    assert [g["output_files"] for g in result.report["groups"]] == [1]


def test_dry_run_plans_and_changes_nothing(catalog):
    table = make_table(catalog, name="dry", spec="identity", appends=2, rows=100)
    snapshot = table.current_snapshot().snapshot_id
    files = sorted(os.listdir(local(table.location()) + "/data"))
    result = rewrite(table, ["l"], dry_run=True)
    assert result.snapshot_id is None and result.added_files == 0
    assert result.rewritten_files == 6 and len(result.report["groups"]) == 3
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert sorted(os.listdir(local(table.location()) + "/data")) == files


def data_files_on_disk(table):
    out = set()
    for root, _, names in os.walk(local(table.location()) + "/data"):
        out.update(os.path.join(root, n) for n in names)
    return out


def test_a_writer_appending_between_plan_and_commit_is_kept_under_the_rewrite(catalog):
    """An append committed mid-rewrite is no conflict (as Iceberg's RewriteFiles): the
    REPLACE commits on top of it and its rows stay, in its own file."""
    table = make_table(catalog, name="race", spec="identity", appends=2, rows=200)
    before = multiset(table.scan().to_arrow())
    planned = table.current_snapshot().snapshot_id
    extra = arrow_batch(np.random.default_rng(9), 50)
    other = catalog.load_table("db.race")
    calls = []

    def append_once(done, total, entry):
        if not calls:
            other.append(extra)  # a concurrent writer commits mid-rewrite
        calls.append(done)

    result = rewrite(table, ["l", "s"], progress=append_once)
    table.refresh()
    head = table.current_snapshot()
    assert head.snapshot_id == result.snapshot_id and head.summary.operation.value == "replace"
    appended = head.parent_snapshot_id
    assert appended != planned and table.snapshot_by_id(appended).parent_snapshot_id == planned
    assert multiset(table.scan().to_arrow()) == before + multiset(extra)
    other.refresh()
    appended_files = {t.file.file_path for t in other.scan(snapshot_id=appended).plan_files()} \
        - set(result.removed_paths)
    assert appended_files <= {t.file.file_path for t in table.scan().plan_files()}
    assert unreferenced_files(table) == set()


def unreferenced_files(table):
    """Files under the table's location that none of its metadata names (orphans)."""
    table.refresh()
    on_disk = set()
    for root, _, names in os.walk(local(table.location())):
        on_disk.update(os.path.join(root, n) for n in names)
    return on_disk - {local(p) for p in engine.referenced_files(table)}


def test_a_writer_committing_after_the_last_look_is_retried_over(catalog, monkeypatch):
    """A concurrent append between the rewrite's last look at the table and its commit:
    the catalog refuses the commit, PyIceberg's commit retries it on the new head after
    validating again, and both commits' rows are there."""
    from pyiceberg.table import Transaction

    table = make_table(catalog, name="late_race", appends=2, rows=100)
    before = multiset(table.scan().to_arrow())
    extra = arrow_batch(np.random.default_rng(5), 20)
    real = Transaction.commit_transaction

    def after_another(txn):
        monkeypatch.setattr(Transaction, "commit_transaction", real)   # (the append's own)
        catalog.load_table("db.late_race").append(extra)
        return real(txn)

    monkeypatch.setattr(Transaction, "commit_transaction", after_another)
    result = rewrite(table, ["l"])
    monkeypatch.undo()
    assert result.report["commit_retries"] == 1
    assert table.current_snapshot().summary.operation.value == "replace"
    assert multiset(table.scan().to_arrow()) == before + multiset(extra)
    assert unreferenced_files(table) == set()


@pytest.mark.parametrize("change", ["branch", "undone"])
def test_a_commit_elsewhere_that_leaves_main_as_planned_does_not_stop_the_rewrite(catalog, change):
    """A commit to another branch, or one to main that was rolled back, between plan and
    commit: main's head is still the planned snapshot, so the rewrite commits (its
    snapshot was staged with the planned sequence number, which the catalog then refused
    as older, and it was reported as an unknown outcome with orphans left)."""
    table = make_table(catalog, name=f"seq_{change}", appends=2, rows=100)
    planned = table.current_snapshot().snapshot_id
    if change == "branch":
        table.manage_snapshots().create_branch(planned, "audit").commit()
    before = multiset(table.scan().to_arrow())
    extra = arrow_batch(np.random.default_rng(6), 10)
    calls = []

    def commit_elsewhere(done, total, entry):
        if calls:
            return
        calls.append(done)
        other = catalog.load_table(f"db.seq_{change}")
        if change == "branch":
            other.append(extra, branch="audit")
        else:
            other.append(extra)
            other.manage_snapshots().set_current_snapshot(planned).commit()

    result = rewrite(table, ["l", "s"], progress=commit_elsewhere)
    assert calls
    assert table.current_snapshot().snapshot_id == result.snapshot_id
    assert table.current_snapshot().parent_snapshot_id == planned
    assert table.current_snapshot().summary.operation.value == "replace"
    assert multiset(table.scan().to_arrow()) == before
    if change == "branch":
        assert multiset(table.scan(snapshot_id=table.metadata.refs["audit"].snapshot_id)
                        .to_arrow()) == before + multiset(extra)
    assert not unreferenced_files(table) & set(result.added_paths)


@pytest.mark.parametrize("change", ["swap", "add", "remove"])
def test_a_partition_spec_changed_between_plan_and_commit_refuses_the_rewrite(catalog, change):
    """The files were written under the planned spec; staged on the new one they were
    listed as its files, their partition values read as the new fields' (a filtered scan
    then lost rows), or staging failed with an IndexError."""
    from pyiceberg.transforms import BucketTransform, IdentityTransform

    spec = "unpartitioned" if change == "add" else "bucket"
    table = make_table(catalog, name=f"spec_{change}", spec=spec, appends=2, rows=100)
    before = multiset(table.scan().to_arrow())
    planned = table.current_snapshot().snapshot_id
    calls = []

    def evolve(done, total, entry):
        if calls:
            return
        calls.append(done)
        with catalog.load_table(f"db.spec_{change}").update_spec() as update:
            if change == "add":
                update.add_field("cat", IdentityTransform(), "cat")
            else:
                update.remove_field("l_bucket")
                if change == "swap":
                    update.add_field("i", BucketTransform(3), "i_bucket")

    with pytest.raises(IcebergRewriteError, match=r"its partition spec changed from 0 to 1, "
                                                  r"and the files were written under the first"
                       ) as info:
        rewrite(table, ["l", "s"], progress=evolve)
    assert not info.value.outcome_unknown and info.value.leftovers == []
    assert table.current_snapshot().snapshot_id == planned
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()


def test_a_table_replaced_between_plan_and_commit_refuses_the_rewrite(catalog):
    table = make_table(catalog, name="replaced", appends=2, rows=50)
    calls = []

    def replace(done, total, entry):
        if not calls:
            calls.append(done)
            catalog.drop_table("db.replaced")
            make_table(catalog, name="replaced", appends=1, rows=10, seed=4)

    # (PyIceberg's refresh refuses another uuid itself; zorder checks it too)
    with pytest.raises(IcebergRewriteError, match="Table UUID does not match|it was replaced "
                                                  "by another table of the same name") as info:
        rewrite(table, ["l"], progress=replace)
    assert not info.value.outcome_unknown and info.value.leftovers == []
    now = catalog.load_table("db.replaced")
    assert now.current_snapshot().summary.operation.value == "append"
    assert sum(multiset(now.scan().to_arrow()).values()) == 10


@pytest.mark.parametrize("properties, error, match", [
    ("x", TypeError, "snapshot_properties must be a mapping of str to str, not str"),
    ({"n": 1}, TypeError, "must map str to str"),
    ({"operation": "replace"}, ValueError, "'operation' is a summary key Iceberg computes"),
    ({"total-records": "5"}, ValueError, "'total-records' is a summary key Iceberg computes"),
    ({"zorder.curve": "hilbert"}, ValueError, "'zorder.curve' is a summary key zorder computes"),
])
def test_snapshot_properties_are_checked_before_anything_is_written(catalog, properties,
                                                                    error, match):
    table = make_table(catalog, name="props", appends=1, rows=50)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    with pytest.raises(error, match=match):
        rewrite(table, ["l"], snapshot_properties=properties)
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk


def test_a_bad_dry_run_or_target_size_property_is_named(catalog):
    table = make_table(catalog, name="named", appends=1, rows=20)
    with table.transaction() as txn:   # (PyIceberg's own writes refuse it as well)
        txn.set_properties({"write.target-file-size-bytes": "512MB"})
    with pytest.raises(TypeError, match="dry_run must be a bool, not str"):
        rewrite(table, ["l"], dry_run="no")
    with pytest.raises(ValueError, match="write.target-file-size-bytes must be a whole number "
                                         "of bytes, not '512MB'"):
        rewrite(table, ["l"])
    assert rewrite(table, ["l"], target_file_size="1MB").snapshot_id is not None


def test_a_snapshot_that_cannot_be_staged_is_no_unknown_outcome(catalog, monkeypatch):
    """A failure while the snapshot is staged, before the catalog is asked, surely did not
    commit: its files are deleted, not kept as if the outcome were unknown."""
    from zorder.engines import iceberg_commit

    table = make_table(catalog, name="stage", appends=2, rows=100)
    snapshot = table.current_snapshot().snapshot_id
    real = iceberg_commit._replace_producer_class

    def failing_producer():
        class Failing(real()):
            def _commit(self):
                raise OSError("no space left on device")
        return Failing

    monkeypatch.setattr(iceberg_commit, "_replace_producer_class", failing_producer)
    with pytest.raises(IcebergRewriteError, match="could not be staged") as info:
        rewrite(table, ["l"], snapshot_properties={"job": "nightly"})
    assert not info.value.outcome_unknown and info.value.leftovers == []
    assert table.current_snapshot().snapshot_id == snapshot
    assert unreferenced_files(table) == set()


def test_the_summary_keeps_the_callers_properties(catalog):
    table = make_table(catalog, name="summary", appends=2, rows=50)
    rewrite(table, ["l"], snapshot_properties={"job": "nightly"})
    summary = table.current_snapshot().summary
    assert summary["job"] == "nightly" and summary["zorder.curve"] == "zorder"


def test_a_failed_catalog_call_keeps_and_names_the_files(catalog, monkeypatch):
    """A catalog call that fails without saying the commit was refused (down, a timeout)
    leaves the table as it was now, deletes nothing and names the files."""
    table = make_table(catalog, name="down", appends=2, rows=100)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)

    def down(*args, **kwargs):
        raise ConnectionError("catalog down")

    monkeypatch.setattr(type(table.catalog), "commit_table", down)
    with pytest.raises(IcebergRewriteError, match="outcome is unknown") as info:
        rewrite(table, ["l"])
    monkeypatch.undo()
    assert info.value.outcome_unknown and info.value.leftovers == []
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    new = data_files_on_disk(table) - on_disk
    assert new and all(p in str(info.value) for p in new)


@pytest.mark.parametrize("interrupt, status", [(KeyboardInterrupt, 130), ("terminated", 143)])
def test_an_interrupt_during_the_commit_keeps_the_files_and_its_status(
        catalog, monkeypatch, tmp_path, capsys, interrupt, status):
    """Ctrl-C or SIGTERM inside the catalog call: the outcome is unknown, so the files are
    kept and named, and the command still exits 130 or 143 (it exited 1)."""
    from zorder.cli import main
    from zorder.parquet.safety import Terminated

    table = make_table(catalog, name=f"intc{status}", appends=1, rows=50)
    on_disk = data_files_on_disk(table)
    error = Terminated if interrupt == "terminated" else interrupt

    def interrupted(*args, **kwargs):
        raise error()

    monkeypatch.setattr(type(table.catalog), "commit_table", interrupted)
    assert main(["iceberg", "rewrite", f"db.intc{status}", "--columns", "l", "--catalog",
                 "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
                 f"file://{tmp_path}/wh", "--quiet", "--no-report"]) == status
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "outcome is unknown" in err, err
    monkeypatch.undo()
    new = data_files_on_disk(table) - on_disk
    assert new and all(p in err for p in new)


@pytest.mark.parametrize("interrupt, status", [(KeyboardInterrupt, 130), ("terminated", 143)])
def test_an_interrupt_during_the_report_after_the_commit_says_it_was_committed(
        catalog, monkeypatch, tmp_path, capsys, interrupt, status):
    """Ctrl-C or SIGTERM while the skipping report is read, after the commit: the line says
    the table was rewritten (it said "the output was left as it was")."""
    from zorder.cli import main
    from zorder.parquet.safety import Terminated

    table = make_table(catalog, name=f"rep{status}", appends=2, rows=50)
    error = Terminated if interrupt == "terminated" else interrupt

    def interrupted(*args, **kwargs):
        raise error()

    monkeypatch.setattr(engine, "skipping", interrupted)
    assert main(["iceberg", "rewrite", f"db.rep{status}", "--columns", "l", "--catalog",
                 "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
                 f"file://{tmp_path}/wh", "--quiet"]) == status
    out, err = capsys.readouterr()
    table.refresh()
    snapshot = table.current_snapshot()
    assert snapshot.summary.operation.value == "replace"
    assert err.strip().splitlines() == [
        f"error: {'terminated (SIGTERM)' if status == 143 else 'interrupted'} after the "
        f"rewrite was committed as snapshot {snapshot.snapshot_id}: the table is rewritten, "
        f"only the report was cut short"]
    assert f"committed snapshot {snapshot.snapshot_id}" in out


def test_a_commit_the_catalog_applies_after_reporting_a_timeout_keeps_its_files(
        catalog, monkeypatch):
    """A REST catalog behind a gateway that timed out: the call fails, the table does not
    have the snapshot yet, and the catalog applies it afterwards. The files it references
    must still be there (they were deleted: the table then pointed at missing files)."""
    table = make_table(catalog, name="late", appends=2, rows=100)
    before = multiset(table.scan().to_arrow())
    real = type(table.catalog).commit_table
    held = []

    def timed_out(self, *args, **kwargs):
        held.append((self, args, kwargs))
        raise TimeoutError("504 Gateway Timeout")

    monkeypatch.setattr(type(table.catalog), "commit_table", timed_out)
    with pytest.raises(IcebergRewriteError, match="outcome is unknown"):
        rewrite(table, ["l", "s"])
    monkeypatch.undo()
    self, args, kwargs = held[0]
    real(self, *args, **kwargs)   # the catalog applies the commit after all
    table.refresh()
    assert table.current_snapshot().summary.operation.value == "replace"
    assert multiset(table.scan().to_arrow()) == before


def test_a_write_failing_mid_group_leaves_the_table_and_no_files(catalog, monkeypatch):
    # Files are written on a thread while the next is taken: the failure of the second
    # write surfaces, nothing is committed, and the first file and any path planned after
    # the failed one are cleaned up.
    from zorder.engines.iceberg_write import DataFileWriter

    table = make_table(catalog, name="wfail", appends=1, rows=20000, with_nulls=False)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    real, calls = DataFileWriter.write, []

    def failing(self, rows):
        # the second file's first row group (after the first file's first is written)
        if self.path not in calls:
            calls.append(self.path)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, rows)

    monkeypatch.setattr(DataFileWriter, "write", failing)
    with pytest.raises(OSError, match="disk full"):
        rewrite(table, ["l", "d"], target_file_size="40KB")
    monkeypatch.undo()
    assert len(calls) >= 2
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk


def test_an_unreachable_catalog_keeps_and_names_the_files(catalog, monkeypatch):
    table = make_table(catalog, name="gone", appends=1, rows=100)
    on_disk = data_files_on_disk(table)

    def down(*args, **kwargs):
        raise ConnectionError("catalog down")

    def gone(*args, **kwargs):  # the commit's call: the catalog goes away during it
        monkeypatch.setattr(type(table.catalog), "load_table", down)
        down()

    def unreachable(done, total, entry):
        monkeypatch.setattr(type(table.catalog), "commit_table", gone)

    with pytest.raises(IcebergRewriteError, match="cannot say whether it landed") as info:
        rewrite(table, ["l"], progress=unreachable)
    monkeypatch.undo()
    new = data_files_on_disk(table) - on_disk
    assert new and all(p in str(info.value) for p in new)


def test_a_catalog_unreachable_before_the_commit_deletes_the_files(catalog, monkeypatch):
    """The catalog gone when the table is loaded again just before the commit: nothing was
    sent, so the rewrite surely did not commit, and its files are deleted."""
    table = make_table(catalog, name="gone_early", appends=1, rows=100)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)

    def down(*args, **kwargs):
        raise ConnectionError("catalog down")

    def unreachable(done, total, entry):
        monkeypatch.setattr(type(table.catalog), "load_table", down)

    with pytest.raises(IcebergRewriteError, match="could not be loaded again before the "
                                                  "commit: catalog down") as info:
        rewrite(table, ["l"], progress=unreachable)
    monkeypatch.undo()
    assert not info.value.outcome_unknown and info.value.leftovers == []
    assert data_files_on_disk(table) == on_disk
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot


@pytest.mark.skipif("curve" not in inspect.signature(zorder.sort_indices).parameters,
                    reason="zorder.sort_indices has no curve= yet")
def test_hilbert_curve(catalog):
    table = make_table(catalog, name="h", appends=2, rows=200)
    before = multiset(table.scan().to_arrow())
    result = rewrite(table, ["l", "d", "tstz"], curve="hilbert")
    assert multiset(table.scan().to_arrow()) == before
    assert result.report["curve"] == "hilbert"
    assert table.current_snapshot().summary.additional_properties["zorder.curve"] == "hilbert"
    for path in result.added_paths:
        data = pq.read_table(local(path))
        h = zorder.hilbert_values({"l": data.column("l"), "d": data.column("d"),
                                   "tstz": data.column("tstz")}, timestamp={"tstz": "tz"})
        h = h.to_pylist() if hasattr(h, "to_pylist") else [bytes(r) for r in h]
        assert all(a <= b for a, b in zip(h, h[1:])), f"{path} is not in Hilbert order"


def test_cli_rewrites_and_reports(catalog, tmp_path, capsys):
    from zorder.cli import main

    make_table(catalog, name="cli", appends=3, rows=300)
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
             "--warehouse", f"file://{tmp_path}/wh"]
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d", "--dry-run", *flags]) == 0
    assert "would rewrite 3 data files" in capsys.readouterr().out
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l,d", "--quiet", *flags]) == 0
    out = capsys.readouterr().out
    assert "committed snapshot" in out and "(replace)" in out
    # (the files' bounds in the manifests, and their row groups' in the footers)
    assert "files and row groups a reader can skip with min/max statistics" in out
    assert catalog.load_table("db.cli").current_snapshot().summary.operation.value == "replace"
    assert main(["iceberg", "rewrite", "db.nope", "--columns", "l", *flags]) == 2


@pytest.mark.parametrize("scheduler", ["sync", "processes"])
def test_file_groups_as_dask_tasks(catalog, scheduler):
    pytest.importorskip("dask")
    table = make_table(catalog, name=f"dask_{scheduler}", spec="identity", appends=2, rows=200)
    before = multiset(table.scan().to_arrow())
    result = rewrite(table, ["l", "tstz"], scheduler=scheduler)
    assert table.current_snapshot().summary.operation.value == "replace"
    assert multiset(table.scan().to_arrow()) == before
    assert len(result.report["groups"]) == 3
    for path in result.added_paths:
        assert_zordered(path, ["l", "tstz"])


@pytest.fixture
def sigint_heard():
    """SIGINT raising KeyboardInterrupt in this test, as at a terminal: a test run started
    in the background (``.ci/run &``) ignores SIGINT, and ``interrupt_main`` then does
    nothing."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("scheduler", [None, "sync", "threads"])
def test_an_interrupt_leaves_the_table_and_no_files(catalog, monkeypatch, tmp_path, scheduler,
                                                     sigint_heard):
    """Ctrl-C after some files are written: the table is as it was and every file written
    is gone. With a Dask scheduler the finished tasks' results never come back (and the
    files of tasks that had finished stayed behind: 10 to 20 of them); they are known
    from the tasks' journal instead."""
    import _thread
    import threading

    from zorder.engines.iceberg_write import DataFileWriter

    if scheduler is not None:
        pytest.importorskip("dask")
    table = make_table(catalog, name=f"intr_{scheduler}", spec="identity", appends=2,
                       rows=3000, with_nulls=False)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    real, calls, lock = DataFileWriter.close, [], threading.Lock()

    def interrupting(self, footer=None):
        data_file = real(self, footer)
        with lock:
            calls.append(1)
            if len(calls) == 4:   # files of finished groups exist by now
                _thread.interrupt_main()
        return data_file

    journals = tmp_path / "tmp"
    journals.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(journals))
    monkeypatch.setattr(DataFileWriter, "close", interrupting)
    with pytest.raises(KeyboardInterrupt):
        rewrite(table, ["l", "d"], target_file_size="20KB", scheduler=scheduler)
        time.sleep(30)   # (the interrupt lands in the sleep if the rewrite was done first)
    monkeypatch.undo()
    assert len(calls) >= 4
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk
    assert os.listdir(journals) == []   # (the journal is removed too)


def test_a_file_still_being_written_after_the_cleanup_is_deleted_by_its_task(
        catalog, monkeypatch, sigint_heard):
    """The threads scheduler's pool waits a few seconds for its threads when stopped; a
    task whose last file finished after the client had deleted the journaled files left
    that file behind. The task now deletes its own files when it sees the interrupt."""
    import signal
    import threading

    from zorder.engines import interrupts
    from zorder.engines.iceberg_write import DataFileWriter

    pytest.importorskip("dask")
    table = make_table(catalog, name="late_file", appends=2, rows=100, with_nulls=False)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    real, calls = DataFileWriter.close, []
    stop = interrupts.StoppablePool.stop

    def slow(self, footer=None):
        calls.append(1)
        # a real Ctrl-C: a signal wakes the client's wait (interrupt_main would be seen
        # only after the task is done)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)             # still writing when the stopped pool gave up waiting
        return real(self, footer)

    monkeypatch.setattr(DataFileWriter, "close", slow)
    monkeypatch.setattr(interrupts.StoppablePool, "stop",
                        lambda self, timeout=5.0: stop(self, 0.1))
    with pytest.raises(KeyboardInterrupt):
        rewrite(table, ["l"], scheduler="threads")
        time.sleep(30)
    # wait for the pool's threads (named zorder*) to end: the late file is written then
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(
            t.name.startswith("zorder") for t in threading.enumerate()):
        time.sleep(0.05)
    monkeypatch.undo()
    assert calls and data_files_on_disk(table) == on_disk
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot


SIGTERM_ICEBERG = """
import os, signal, sys, threading
from zorder.engines.iceberg_write import DataFileWriter
real, calls = DataFileWriter.close, []
def close(*a, **k):
    data_file = real(*a, **k)
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGTERM)   # a `kill` arriving mid-rewrite
    return data_file
DataFileWriter.close = close
from zorder.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_leaves_the_table_and_no_files_and_says_so(catalog, tmp_path, run_python):
    """`kill` mid-rewrite: the same cleanup as Ctrl-C, one line, status 143. (The process
    died of the signal, with the files written so far left in the table's folder.)"""
    table = make_table(catalog, name="term", spec="identity", appends=2, rows=3000,
                       with_nulls=False)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    proc = run_python("-c", SIGTERM_ICEBERG, "iceberg", "rewrite", "db.term", "--columns",
                      "l,d", "--target-file-size", "20KB", "--catalog", "test", "--uri",
                      f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
                      f"file://{tmp_path}/wh", "--quiet", "--no-report", timeout=300)
    assert proc.returncode == 143, proc.stderr[-500:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: terminated (SIGTERM); the output was left as it was"), proc.stderr[-500:]
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk


SIGTERM_AFTER_COMMIT = """
import os, signal, sys, time
import zorder.engines.iceberg as engine
def skipping(*a, **k):
    os.kill(os.getpid(), signal.SIGTERM)   # a `kill` arriving while the report is read
    time.sleep(30)
engine.skipping = skipping
from zorder.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_after_the_commit_says_the_table_was_rewritten(catalog, tmp_path, run_python):
    """A real SIGTERM during the report, after rewrite() returned: the process died of the
    signal without a word (the handler was rewrite's own, gone by then)."""
    make_table(catalog, name="term_late", appends=2, rows=50)
    proc = run_python("-c", SIGTERM_AFTER_COMMIT, "iceberg", "rewrite", "db.term_late",
                      "--columns", "l", "--catalog", "test", "--uri",
                      f"sqlite:///{tmp_path}/catalog.db", "--warehouse", f"file://{tmp_path}/wh",
                      "--quiet", timeout=300)
    assert proc.returncode == 143, proc.stderr[-500:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: terminated (SIGTERM) after the rewrite was committed as "
                           "snapshot "), proc.stderr[-500:]
    table = catalog.load_table("db.term_late")
    assert table.current_snapshot().summary.operation.value == "replace"
    assert str(table.current_snapshot().snapshot_id) in last


def test_a_failed_dask_task_leaves_nothing(catalog, monkeypatch):
    pytest.importorskip("dask")
    table = make_table(catalog, name="dask_fail", spec="identity", appends=1, rows=300)
    on_disk = data_files_on_disk(table)
    snapshot = table.current_snapshot().snapshot_id
    real = iceberg_write.write_group

    def fail_on_b(metadata, io, group, *args):
        files, entry = real(metadata, io, group, *args)
        if group.partition[0] == "b":
            raise OSError("disk full")
        return files, entry

    monkeypatch.setattr(iceberg_write, "write_group", fail_on_b)
    with pytest.raises(IcebergRewriteError, match="1 of 3 file groups failed.*disk full"):
        rewrite(table, ["l"], scheduler="sync")
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk


def test_the_job_checks_rows_values_and_nulls_against_the_manifests(catalog):
    table = make_table(catalog, name="counts", appends=2, rows=100)
    files = [t.file for t in table.scan().plan_files()]
    engine.check_counts(files, list(reversed(files)), "here")  # same totals: fine

    class Lost:  # one file's metrics with a null gone missing
        def __init__(self, f, field):
            self.record_count = f.record_count
            self.value_counts = dict(f.value_counts)
            self.null_value_counts = dict(f.null_value_counts)
            self.null_value_counts[field] -= 1

    with pytest.raises(IcebergRewriteError, match="here: column 2's null value counts"):
        engine.check_counts(files, [Lost(files[0], 2), files[1]], "here")

    class Short:
        record_count = files[0].record_count - 1

    with pytest.raises(IcebergRewriteError, match="hold .* rows"):
        engine.check_counts(files[:1], [Short()], "here")


def test_cli_refuses_a_timestamp_kind_the_schema_already_gives(catalog, tmp_path, capsys):
    from zorder.cli import main

    make_table(catalog, name="cli_ts", appends=1, rows=20)
    code = main(["iceberg", "rewrite", "db.cli_ts", "--columns", "ts", "--timestamp", "tz",
                 "--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db"])
    assert code == 2
    assert "--timestamp does not apply" in capsys.readouterr().err
    # so the command's help does not offer it, where sort's and cluster's do
    for command, offered in (("iceberg", False), ("sort", True), ("cluster", True)):
        with pytest.raises(SystemExit):
            main([command, "rewrite", "--help"] if command == "iceberg" else [command, "--help"])
        assert ("--timestamp" in capsys.readouterr().out) is offered, command


def test_a_bad_row_filter_is_a_clear_error(catalog):
    table = make_table(catalog, name="bad_filter", appends=1, rows=20)
    with pytest.raises(ValueError, match="row_filter: cannot parse 'cat === 3'"):
        rewrite(table, ["l"], row_filter="cat === 3")
    with pytest.raises(TypeError, match="row_filter must be"):
        rewrite(table, ["l"], row_filter=3)


def test_every_accepted_type_at_once(catalog):
    table = make_table(catalog, name="all_types", spec="identity", appends=2, rows=200)
    columns = ["b", "i", "l", "f", "d", "day", "ts", "tstz", "s", "u", "fx", "bin"]
    before = multiset(table.scan().to_arrow())
    snapshot, files = table.current_snapshot().snapshot_id, data_files_on_disk(table)
    # the boolean has nulls: 1.11 refuses them, as its UDF throws there, and the table
    # and its files stay as they were
    with pytest.raises(ValueError, match="column 'b': a null BOOLEAN"):
        rewrite(table, columns, options=zorder.IcebergOptions(iceberg="1.11"))
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot and data_files_on_disk(table) == files
    # the default, 1.12, gives them zeros, as Iceberg main does
    result = rewrite(table, columns)
    assert multiset(table.scan().to_arrow()) == before
    for path in result.added_paths:
        assert_zordered(path, columns, iceberg="main")
    # without the boolean, the default's float bytes order the files
    table = make_table(catalog, name="no_boolean", spec="identity", appends=2, rows=200)
    result = rewrite(table, columns[1:])
    for path in result.added_paths:
        assert_zordered(path, columns[1:])


def test_rewrite_takes_the_iceberg_keywords_or_options(catalog):
    """rewrite() took only options=; it takes the keywords too, as every public function
    does, and refuses both at once."""
    columns = ["b", "l", "d", "s"]
    by_keyword = make_table(catalog, name="by_keyword", spec="identity", appends=2, rows=200)
    by_options = make_table(catalog, name="by_options", spec="identity", appends=2, rows=200)
    with pytest.raises(TypeError, match="pass either options= or the keyword iceberg"):
        rewrite(by_keyword, columns, options=zorder.IcebergOptions(), iceberg="main")
    keywords = {"iceberg": "main", "var_length_contribution": 4, "max_output_size": 20}
    result = rewrite(by_keyword, columns, **keywords)
    for path in result.added_paths:
        assert_zordered(path, columns, **keywords)
    twin = rewrite(by_options, columns, options=zorder.IcebergOptions(**keywords))
    assert result.added_paths and len(twin.added_paths) == len(result.added_paths)
    for path in twin.added_paths:
        assert_zordered(path, columns, **keywords)
    with pytest.raises(ValueError, match="Z-order options"):
        rewrite(by_keyword, columns, curve="hilbert", var_length_contribution=16)


def test_rank_encoding_learns_boundaries_in_one_pass_and_reuses_them(catalog, monkeypatch):
    from zorder.values.rank import RankBoundaries

    table = make_table(catalog, name="rank", spec="identity", appends=2, rows=300)
    twin = make_table(catalog, name="rank_twin", spec="identity", appends=2, rows=300)
    before = multiset(table.scan().to_arrow())
    columns = ["l", "tstz", "s"]
    samples = []
    real = iceberg_read._sample_group

    def counted(*args):
        samples.append(args[2].partition)
        return real(*args)

    monkeypatch.setattr(iceberg_read, "_sample_group", counted)
    result = rewrite(table, columns, encoding="rank", rank_bits=8)
    # One sampling pass (one read per group), then the rewrite with the same boundaries.
    assert len(samples) == len(result.report["groups"]) == 3
    b = result.boundaries
    assert isinstance(b, RankBoundaries) and b.rank_bits == 8 and list(b.names) == columns
    assert RankBoundaries.from_dict(result.report["rank_boundaries"]) == b
    assert result.report["encoding"] == "rank"
    summary = table.current_snapshot().summary.additional_properties
    assert summary["zorder.encoding"] == "rank" and summary["zorder.rank-bits"] == "8"
    assert multiset(table.scan().to_arrow()) == before
    for path in result.added_paths:  # sorted by the ranks of the shared boundaries
        assert_zordered(path, columns, encoding="rank", boundaries=b)
    # The sample is deterministic: the same data gives the same boundaries.
    assert rewrite(twin, columns, encoding="rank", rank_bits=8).boundaries == b
    # Reused: no sampling, the given boundaries order the new files.
    samples.clear()
    table.append(arrow_batch(np.random.default_rng(5), 200))
    again = rewrite(table, columns, encoding="rank",
                    boundaries=RankBoundaries.from_dict(result.report["rank_boundaries"]))
    assert samples == [] and again.boundaries == b
    for path in again.added_paths:
        assert_zordered(path, columns, encoding="rank", boundaries=b)
    with pytest.raises(ValueError, match=r"boundaries: made for columns \['l', 'tstz', 's'\]"):
        rewrite(table, ["l", "d"], encoding="rank", boundaries=b)
    with pytest.raises(ValueError, match="boundaries: column s has 8-byte split points"):
        rewrite(table, columns, encoding="rank", boundaries=b,
                options=zorder.IcebergOptions(var_length_contribution=4))
    with pytest.raises(ValueError, match="encoding must be"):
        rewrite(table, columns, encoding="ranks")


def test_rank_sample_encodes_only_its_rows_and_gets_their_bytes(catalog, monkeypatch):
    """A group's sample takes its rows before it computes their ordered bytes: the bytes
    are those of the same rows taken from every row's, for every type (uuids as text,
    strings, binaries, timestamps with and without a zone, nulls)."""
    from zorder.engines.dask_stages import sample_parts

    table = make_table(catalog, name="rank_sample", spec="identity", appends=2, rows=300)
    columns = ["u", "s", "bin", "fx", "tstz", "ts", "d", "b", "day"]
    calls = []
    real = iceberg_read._sample_group
    monkeypatch.setattr(iceberg_read, "_sample_group",
                        lambda *args: calls.append(args) or real(*args))
    rewrite(table, columns, encoding="rank", rank_bits=8)
    assert calls
    encoded = []
    real_parts = iceberg_read.curve_parts
    monkeypatch.setattr(iceberg_read, "curve_parts",
                        lambda data, *rest: encoded.append(data.num_rows) or real_parts(data, *rest))
    for metadata, io, group, names, ordering, index, _ in calls:
        n, every = real(metadata, io, group, names, ordering, index, 10**9)
        encoded.clear()
        taken, sample = real(metadata, io, group, names, ordering, index, 37)
        assert encoded == [37]
        assert taken == n > 37 and all(len(p) == n for p in every)
        want = sample_parts(every, index, 37)
        assert len(sample) == len(want) == len(columns)
        for got, expected in zip(sample, want):
            assert got.shape == (37, expected.shape[1]) and got.flags.c_contiguous
            assert np.array_equal(got, expected)


def test_rank_encoding_on_dask_and_from_the_cli(catalog, tmp_path, capsys):
    pytest.importorskip("dask")
    from zorder.cli import main

    table = make_table(catalog, name="rank_cli", spec="identity", appends=2, rows=200)
    sync = rewrite(table, ["l", "d"], encoding="rank", rank_bits=16, scheduler="sync")
    assert sync.boundaries is not None
    for path in sync.added_paths:
        assert_zordered(path, ["l", "d"], encoding="rank", boundaries=sync.boundaries)
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--quiet",
             "--no-report"]
    report = tmp_path / "report.json"
    # (--rewrite-all: the table is clustered by these columns and options already)
    assert main(["iceberg", "rewrite", "db.rank_cli", "--columns", "l,d", "--encoding", "rank",
                 "--rank-bits", "16", "--report-json", str(report), "--rewrite-all",
                 *flags]) == 0
    # Learned from the same data as the Dask run: the same boundaries.
    from zorder.cli.args import load_boundaries

    assert load_boundaries(str(report)) == sync.boundaries
    assert f"rank boundaries (16 bits per column): recorded in {report}" in capsys.readouterr().out
    assert main(["iceberg", "rewrite", "db.rank_cli", "--columns", "l,d", "--encoding", "rank",
                 "--boundaries", str(report), "--rewrite-all", *flags]) == 0
    capsys.readouterr()
    assert main(["iceberg", "rewrite", "db.rank_cli", "--columns", "l,s", "--encoding", "rank",
                 "--boundaries", str(report), *flags]) == 2
    assert "boundaries: made for columns" in capsys.readouterr().err


def test_skipping_report_reads_the_data_file_bounds_in_the_manifests(catalog):
    from zorder.parquet.skipping import skipping_report

    table = make_table(catalog, name="skip", appends=3, rows=400, with_nulls=False)
    with table.transaction() as tx:  # one row group per file; no bounds kept for d
        tx.set_properties({"write.parquet.row-group-limit": "100000",
                           "write.metadata.metrics.column.d": "none"})
    columns = ["l", "tstz", "day", "d"]
    result = rewrite(table, columns, target_file_size="12KB")
    assert result.added_files >= 6
    report = engine.skipping(table, result)
    assert report["level"] == "files"
    assert report == engine.skipping(table, result.previous_snapshot_id, result.snapshot_id,
                                     columns)
    footers = skipping_report([local(p) for p in result.removed_paths],
                              [local(p) for p in result.added_paths], columns)
    for column in ("l", "tstz", "day"):
        ours, theirs = report["columns"][column], footers["columns"][column]
        # Random rows in every old file: nothing to skip before; then what the files'
        # bounds allow, the same as their one row group's Parquet statistics.
        assert ours["before"]["files"] == 3 and ours["before"]["files_skipped"] == 0
        assert ours["after"]["files"] == result.added_files
        assert ours["after"]["files_skipped_mean"] == theirs["after"]["files_skipped_mean"]
    assert report["columns"]["l"]["after"]["files_skipped"] > 0.3
    # No bounds in the manifests for d: a planner cannot skip on it, whatever the footers say.
    assert report["columns"]["d"]["after"]["files_skipped"] == 0
    assert footers["columns"]["d"]["after"]["files_skipped"] > 0
    # Every file of each snapshot, not only the changed ones.
    whole = engine.skipping(table, result, changed_only=False, columns=["l"])
    assert whole["columns"]["l"]["after"]["files"] == result.added_files


def test_skipping_report_reads_each_footer_and_snapshot_once(catalog, monkeypatch):
    from zorder.engines import iceberg_report

    table = make_table(catalog, name="once", spec="identity", appends=2, rows=400,
                       with_nulls=False)
    result = rewrite(table, ["l", "d", "i"], target_file_size="12KB")
    footers, plans = [], []
    real_footer, real_plan = pq.read_metadata, iceberg_report.report_tasks
    monkeypatch.setattr(pq, "read_metadata", lambda *a, **k: footers.append(1)
                        or real_footer(*a, **k))
    monkeypatch.setattr(iceberg_report, "report_tasks", lambda *a: plans.append(a[1])
                        or real_plan(*a))
    report = engine.skipping(table, result, level="row_groups")
    assert report["columns"]["l"]["after"]["row_groups"] >= result.added_files
    # three columns, two sides: each file's footer read once, each snapshot planned once
    assert len(footers) == result.rewritten_files + result.added_files
    assert sorted(plans) == sorted([result.previous_snapshot_id, result.snapshot_id])


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_curve_values_slice_by_slice_equal_the_whole_groups(catalog, monkeypatch, curve):
    table = make_table(catalog, name=f"slices_{curve}", appends=2, rows=300)
    data = table.scan().to_arrow()
    names = ["l", "s", "tstz"]
    ordering = iceberg_columns.curve_ordering(table.schema(), names, Ordering(curve=curve))
    whole = ordering.values(iceberg_columns.curve_parts(data, names, table.schema(), ordering))
    monkeypatch.setattr(iceberg_columns, "_VALUES_CHUNK_ROWS", 64)   # 600 rows: 10 slices
    sliced = iceberg_columns._curve_values(data, names, table.schema(), ordering)
    assert sliced.shape == whole.shape and np.array_equal(sliced, whole)


@pytest.mark.parametrize("scheduler", [None, "sync"])
def test_a_row_lost_and_another_doubled_stops_the_job_before_the_commit(catalog, monkeypatch,
                                                                       scheduler):
    if scheduler:
        pytest.importorskip("dask")
    table = make_table(catalog, name=f"twice_{scheduler}", appends=2, rows=150, with_nulls=False)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    real = iceberg_write.curve_order

    def doubled(*args):
        order, values = real(*args)
        order[0] = order[1]  # same row count, same value and null counts: only content differs
        return order, values

    monkeypatch.setattr(iceberg_write, "curve_order", doubled)
    with pytest.raises(IcebergRewriteError, match="rows written differ from the rows read"):
        rewrite(table, ["l", "s"], scheduler=scheduler)
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk
    monkeypatch.undo()
    result = rewrite(table, ["l", "s"], scheduler=scheduler)
    entry = result.report["groups"][0]
    assert entry["checksum"] == entry["written_checksum"]
    from zorder.parquet.checksum import row_checksum

    assert int(entry["checksum"], 16) == row_checksum(table.scan().to_arrow())


def test_files_of_an_older_partition_spec_are_rewritten_into_the_current_spec(catalog):
    table = make_table(catalog, name="evolved", appends=2, rows=300)  # unpartitioned: spec 0
    with table.update_spec() as update:
        update.add_identity("cat")
    table.append(arrow_batch(np.random.default_rng(7), 300))          # spec 1: cat=a/b/c
    before = multiset(table.scan().to_arrow())
    specs = Counter(t.file.spec_id for t in table.scan().plan_files())
    assert specs == {0: 2, 1: 3}
    dry = rewrite(table, ["l", "d"], dry_run=True)
    assert [g["partition"] for g in dry.report["groups"]][-1] == \
        "(older specs 0, into the current spec)"
    result = rewrite(table, ["l", "d"], target_file_size="1MB")
    assert result.rewritten_files == 5
    # Three current partitions and one group of the old files, split by the current spec.
    assert len(result.report["groups"]) == 4
    assert multiset(table.scan().to_arrow()) == before
    files = [t.file for t in table.scan().plan_files()]
    assert {f.spec_id for f in files} == {1}
    by_partition = Counter(f.partition[0] for f in files)
    assert by_partition == {"a": 2, "b": 2, "c": 2}  # each: its own file and the old rows'
    for f in files:
        assert f"/cat={f.partition[0]}/" in f.file_path
        assert set(pq.read_table(local(f.file_path)).column("cat").to_pylist()) == {f.partition[0]}
        assert_zordered(f.file_path, ["l", "d"])
    # The old spec's files are deleted through manifests of their own spec.
    old = table.scan(snapshot_id=result.previous_snapshot_id)
    assert multiset(old.to_arrow()) == before


def test_files_are_cut_where_the_curve_enters_a_new_cell():
    from zorder.engines.cuts import aligned_cuts, first_differing_bits

    a = np.array([[0b1000_0000, 0], [0, 1], [7, 7]], np.uint8)
    b = np.array([[0b0100_0000, 0], [0, 3], [7, 7]], np.uint8)
    assert first_differing_bits(a, b).tolist() == [0, 14, 16]
    # Sorted curve values of 4,000 rows: four cells (top two bits) of 1,000 rows each,
    # with random low bits inside a cell.
    rng = np.random.default_rng(0)
    keys = np.sort(np.repeat(np.arange(4, dtype=np.uint16) << 14, 1000)
                   | rng.integers(0, 1 << 14, 4000).astype(np.uint16))
    values = keys.astype(">u2").view(np.uint8).reshape(-1, 2)

    def bits(rows):
        return values[rows]

    # 4,000 bytes to 1,300-byte files: three files would cut two cells in half; four
    # files of 1,000 (within 25% of the target) follow the cells.
    assert aligned_cuts(4000, 1.0, 1300, bits) == [0, 1000, 2000, 3000, 4000]
    # Files must stay within the tolerance: 2,000-byte files allow only two, at the middle.
    assert aligned_cuts(4000, 1.0, 2000, bits) == [0, 2000, 4000]
    # A cut moves at most an eighth of a file from where equal files would cut it.
    cuts = aligned_cuts(4000, 1.0, 4000 / 3, bits, tolerance=0.01)
    assert len(cuts) == 4 and all(abs(c - i * 4000 / 3) <= 4000 / 24 for i, c in enumerate(cuts))
    assert aligned_cuts(1, 1.0, 10, bits) == [0, 1]


def test_cli_checks_its_report_file_before_the_commit_and_says_what_was_done(
        catalog, tmp_path, capsys, monkeypatch):
    """--report-json is checked before the catalog is opened; if it still cannot be
    written after the commit, the error says the rewrite was committed (exit 1)."""
    from zorder.cli import main
    from zorder.parquet import safety

    make_table(catalog, name="cli_rj", appends=2, rows=50)
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
             "--warehouse", f"file://{tmp_path}/wh", "--quiet", "--no-report"]
    before = catalog.load_table("db.cli_rj").current_snapshot().snapshot_id
    missing = str(tmp_path / "missing" / "r.json")
    assert main(["iceberg", "rewrite", "db.cli_rj", "--columns", "l", "--report-json",
                 missing, *flags]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: --report-json: the folder for {missing!r} does not exist: "
        f"{str(tmp_path / 'missing')!r}")
    assert catalog.load_table("db.cli_rj").current_snapshot().snapshot_id == before

    def full_disk(step):
        if step == "replace":
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(safety, "fault_hook", full_disk)
    report = tmp_path / "r.json"
    assert main(["iceberg", "rewrite", "db.cli_rj", "--columns", "l", "--report-json",
                 str(report), *flags]) == 1
    after = catalog.load_table("db.cli_rj").current_snapshot().snapshot_id
    assert after != before
    assert capsys.readouterr().err.startswith(
        f"error: the rewrite was committed as snapshot {after}, but --report-json "
        f"{str(report)!r} could not be written: ")
    assert not report.exists() and [n for n in os.listdir(tmp_path) if ".zorder-" in n] == []


def test_cli_report_never_replaces_a_file_of_the_table_or_catalog(catalog, tmp_path, capsys,
                                                                 monkeypatch):
    """--report-json is refused (exit 2, nothing written, nothing committed) where it would
    replace the table's data or metadata, the catalog's database, anything in the
    warehouse, or a file the table references from elsewhere (add_files), under any name;
    with and without --dry-run. (It overwrote whatever it named: a data file, the current
    metadata or the SQLite catalog, leaving the table or every table unreadable.)"""
    from zorder.cli import main

    table = make_table(catalog, name="cli_safe", appends=2, rows=50)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    added = outside / "added.parquet"
    pq.write_table(pa.table({"l": pa.array([7, 8], pa.int64())}), added)
    table.add_files([f"file://{added}"])
    table.refresh()
    before = table.current_snapshot().snapshot_id
    data_file = next(iter(table.scan().plan_files())).file.file_path
    data_file = data_file[len("file://"):] if data_file.startswith("file://") else data_file
    (tmp_path / "link.json").symlink_to(data_file)
    (tmp_path / "link_added.json").symlink_to(added)
    targets = [data_file, table.metadata_location[len("file://"):]
               if table.metadata_location.startswith("file://") else table.metadata_location,
               str(tmp_path / "catalog.db"), str(tmp_path / "wh" / "new.json"),
               str(added), str(tmp_path / "link.json"), str(tmp_path / "link_added.json")]
    contents = {t: pathlib.Path(t).read_bytes() for t in targets if os.path.exists(t)}
    flags = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
             "--warehouse", f"file://{tmp_path}/wh", "--quiet", "--no-report"]
    for target in targets:
        for dry in ([], ["--dry-run"]):
            code = main(["iceberg", "rewrite", "db.cli_safe", "--columns", "l",
                         "--report-json", target, *dry, *flags])
            err = capsys.readouterr().err.strip()
            assert code == 2 and len(err.splitlines()) == 1, (target, err)
            assert err.startswith(f"error: --report-json {target!r} ") and \
                err.endswith("; write it somewhere else"), err
    assert not (tmp_path / "wh" / "new.json").exists()
    assert {t: pathlib.Path(t).read_bytes() for t in contents} == contents
    table.refresh()
    assert table.current_snapshot().snapshot_id == before
    assert table.scan().to_arrow().num_rows == 100 + 2
    report = tmp_path / "report.json"
    assert main(["iceberg", "rewrite", "db.cli_safe", "--columns", "l",
                 "--report-json", str(report), *flags]) == 0
    assert json.loads(report.read_text())["snapshot_id"] != before
    # Run again onto its own report (JSON, not Parquet, ORC or Avro): replaced without
    # reading every manifest of every snapshot.
    def unread(table):
        raise AssertionError("the manifests were read for a report file")
    monkeypatch.setattr(engine, "referenced_files", unread)
    assert main(["iceberg", "rewrite", "db.cli_safe", "--columns", "l", "--dry-run",
                 "--report-json", str(report), *flags]) == 0
    assert "snapshot_id" in json.loads(report.read_text())


def test_cli_report_protection_reads_paths_as_pyiceberg_does(tmp_path, capsys):
    """A warehouse URI with a percent sign (PyIceberg writes under the name as spelled,
    without decoding it) and a SQLite URI with a driver (sqlite+pysqlite): the metadata,
    data and database files are still refused as --report-json (they were replaced)."""
    from zorder.cli import main

    warehouse = tmp_path / "w%41h"
    uri = f"sqlite+pysqlite:///{tmp_path}/cat.db"
    cat = SqlCatalog("test", uri=uri, warehouse=f"file://{warehouse}")
    cat.create_namespace("db")
    table = make_table(cat, name="pct", appends=1, rows=20)
    metadata = table.metadata_location
    assert metadata.startswith(f"file://{warehouse}/") and os.path.exists(metadata[7:])
    flags = ["--catalog", "test", "--uri", uri, "--warehouse", f"file://{warehouse}",
             "--quiet", "--no-report", "--dry-run"]
    for target in (metadata[7:], str(tmp_path / "cat.db"), str(tmp_path / "cat.db-journal")):
        before = pathlib.Path(target).read_bytes() if os.path.exists(target) else None
        assert main(["iceberg", "rewrite", "db.pct", "--columns", "l", "--report-json", target,
                     *flags]) == 2, target
        assert "; write it somewhere else" in capsys.readouterr().err
        assert (pathlib.Path(target).read_bytes() if os.path.exists(target) else None) == before
    assert cat.load_table("db.pct").scan().to_arrow().num_rows == 20


def test_cli_names_a_catalog_it_cannot_open_in_one_line(tmp_path, capsys):
    from zorder.cli import main

    # (a database file that does not exist is refused before PyIceberg would create it)
    code = main(["iceberg", "rewrite", "db.t", "--columns", "a", "--quiet",
                 "--uri", f"sqlite:///{tmp_path}/no/such/folder/x.db"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("error: --uri sqlite:") and "no SQLite database" in err
    (tmp_path / "bad.db").write_text("not a database")
    code = main(["iceberg", "rewrite", "db.t", "--columns", "a", "--quiet",
                 "--uri", f"sqlite:///{tmp_path}/bad.db"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("error: cannot ") and "DatabaseError" in err
