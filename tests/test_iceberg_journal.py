"""Iceberg tables and installs as users have them (issue 37, requirement 6): every partition
transform with the [iceberg] extra, format-v3 tables refused before anything is read,
unreadable data files as failures, and the journal of written files that lets a later run
or ``zorder iceberg clean`` delete what a SIGKILL left."""

import json
import os
import pathlib
import socket
import sqlite3
import sys
import time

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.transforms import BucketTransform, DayTransform, MonthTransform  # noqa: E402

from test_iceberg import (  # noqa: E402
    FIELD_ID, SCHEMA, arrow_batch, catalog, data_files_on_disk, local, make_table, multiset,
    unreferenced_files)
from zorder.cli import main  # noqa: E402
from zorder.engines import iceberg_journal  # noqa: E402
from zorder.iceberg import IcebergRewriteError, clean, rewrite  # noqa: E402

__all__ = ["catalog"]   # (the fixture, imported for its use here)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def catalog_flags(tmp_path):
    return ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
            "--warehouse", f"file://{tmp_path}/wh"]


def journal_files(table):
    """The files and folders of the table's journal, but its root."""
    out = set()
    for root, folders, names in os.walk(local(table.location()) + "/zorder-journal"):
        out.update(os.path.join(root, n) for n in names + folders)
    return out


# ---------------------------------------------------------------------------------------
# The [iceberg] extra: every partition transform.

def test_the_iceberg_extra_names_pyiceberg_core():
    """Without pyiceberg-core, PyIceberg cannot compute month, day or bucket partitions of
    the rewritten rows: the extra must bring it."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["iceberg"]
    assert any("pyiceberg-core" in e.replace("_", "-").lower() for e in extras), extras


@pytest.mark.parametrize("fields", [
    ("month",), ("day",), ("bucket",), ("month", "bucket"),
])
def test_rewrite_of_month_day_and_bucket_partitions(catalog, fields):
    pytest.importorskip("pyiceberg_core")
    transforms = {"month": (FIELD_ID["ts"], MonthTransform(), "ts_month"),
                  "day": (FIELD_ID["tstz"], DayTransform(), "tstz_day"),
                  "bucket": (FIELD_ID["l"], BucketTransform(4), "l_bucket")}
    spec = PartitionSpec(*[PartitionField(transforms[f][0], 1000 + k, transforms[f][1],
                                          transforms[f][2]) for k, f in enumerate(fields)])
    name = "_".join(fields)
    table = catalog.create_table(f"db.{name}", SCHEMA, partition_spec=spec,
                                 properties={"format-version": "2"})
    import numpy as np

    rng = np.random.default_rng(3)
    for _ in range(2):
        table.append(arrow_batch(rng, 200, with_nulls=False))
    before = multiset(table.scan().to_arrow())
    partitions = {tuple(t.file.partition) for t in table.scan().plan_files()}
    result = rewrite(table, "i,d")
    assert result.snapshot_id is not None
    table.refresh()
    assert multiset(table.scan().to_arrow()) == before
    assert {tuple(t.file.partition) for t in table.scan().plan_files()} == partitions
    assert journal_files(table) == set()


# ---------------------------------------------------------------------------------------
# Format v3: refused before any file is read.

def make_v3(catalog, tmp_path, name):
    """A v3 table: PyIceberg 0.12 creates none (it writes no v3 metadata), so a v2 table's
    metadata is rewritten as v3 (with row lineage's fields) and the catalog pointed at it."""
    table = make_table(catalog, name=name, appends=2, rows=100)
    location = table.metadata_location
    metadata = json.loads(pathlib.Path(local(location)).read_text())
    metadata["format-version"] = 3
    metadata["next-row-id"] = 200
    for k, snapshot in enumerate(metadata["snapshots"]):
        snapshot["first-row-id"], snapshot["added-rows"] = 100 * k, 100
    v3 = location.replace(".metadata.json", "-v3.metadata.json")
    pathlib.Path(local(v3)).write_text(json.dumps(metadata))
    with sqlite3.connect(f"{tmp_path}/catalog.db") as db:
        db.execute("update iceberg_tables set metadata_location = ? where table_name = ?",
                   (v3, name))
    table = catalog.load_table(f"db.{name}")
    assert table.format_version == 3
    return table


def test_pyiceberg_cannot_write_a_v3_table(catalog):
    """What the refusal rests on: PyIceberg 0.12 writes no v3 metadata (if a later release
    does, the refusal's reason changes: zorder does not carry row lineage)."""
    from pyiceberg.table.metadata import SUPPORTED_TABLE_FORMAT_VERSION

    if SUPPORTED_TABLE_FORMAT_VERSION >= 3:
        pytest.skip("this PyIceberg writes v3 tables")
    with pytest.raises(NotImplementedError):
        catalog.create_table("db.v3_direct", SCHEMA, properties={"format-version": "3"})


def test_a_v3_table_is_refused_before_any_file_is_read(catalog, tmp_path, monkeypatch, capsys):
    from pyiceberg.io.pyarrow import PyArrowFileIO

    table = make_v3(catalog, tmp_path, "v3")
    on_disk = data_files_on_disk(table)
    opened = []
    real = PyArrowFileIO.new_input
    monkeypatch.setattr(PyArrowFileIO, "new_input",
                        lambda self, location: opened.append(location) or real(self, location))
    with pytest.raises(ValueError, match="format version 3.*nothing was read or written"):
        rewrite(table, "l")
    # (only the table's metadata file, as the rewrite refreshes the table: no manifest list,
    # manifest or data file)
    assert opened and all(o.endswith(".metadata.json") for o in opened), opened
    assert data_files_on_disk(table) == on_disk
    assert main(["iceberg", "rewrite", "db.v3", "--columns", "l", "--quiet",
                 *catalog_flags(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "format version 3" in err[0], err
    assert journal_files(table) == set()


# ---------------------------------------------------------------------------------------
# Unreadable data files: a failure to rewrite (1), not a usage error (2).

@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_an_unreadable_data_file_is_a_failure(catalog, tmp_path, capsys, damage):
    table = make_table(catalog, name=f"bad_{damage}", appends=2, rows=200)
    path = local(sorted(t.file.file_path for t in table.scan().plan_files())[0])
    if damage == "missing":
        os.unlink(path)
    else:
        data = pathlib.Path(path).read_bytes()
        pathlib.Path(path).write_bytes(data[: len(data) // 2])
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    code = main(["iceberg", "rewrite", f"db.bad_{damage}", "--columns", "l", "--quiet",
                 *catalog_flags(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1, err
    assert len(err) == 1 and "could not be read" in err[0] and "nothing was committed" in err[0]
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk and journal_files(table) == set()


def test_an_unreadable_data_file_in_the_rank_sampling_is_a_failure(catalog):
    table = make_table(catalog, name="bad_rank", appends=2, rows=200)
    os.unlink(local(sorted(t.file.file_path for t in table.scan().plan_files())[0]))
    with pytest.raises(IcebergRewriteError, match="the rank sampling: a data file could not"):
        rewrite(table, "l,d", encoding="rank")


# ---------------------------------------------------------------------------------------
# The journal and clean.

KILLED = """
import os, signal, sys
from pyiceberg.catalog.sql import SqlCatalog
from zorder.iceberg import rewrite
catalog = SqlCatalog("test", uri=sys.argv[1], warehouse=sys.argv[2])
table = catalog.load_table(sys.argv[3])
def progress(done, total, entry):
    if done == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup can run
rewrite(table, "l,d", target_file_size="20KB", progress=progress)
"""


def killed_rewrite(run_python, tmp_path, name, after_groups):
    proc = run_python("-c", KILLED, f"sqlite:///{tmp_path}/catalog.db", f"file://{tmp_path}/wh",
                      f"db.{name}", str(after_groups), timeout=300)
    assert proc.returncode == -9, proc.stderr[-800:]


@pytest.mark.parametrize("after_groups", [1, 3])
def test_clean_deletes_exactly_what_a_sigkilled_rewrite_left(catalog, tmp_path, run_python,
                                                              capsys, after_groups):
    table = make_table(catalog, name=f"killed{after_groups}", spec="identity", appends=2,
                       rows=1500, with_nulls=False)
    before = multiset(table.scan().to_arrow())
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    # a file no rewrite wrote: never touched, though no snapshot references it
    stranger = pathlib.Path(local(table.location())) / "data" / "not-zorders.parquet"
    stranger.write_bytes(b"PAR1")
    killed_rewrite(run_python, tmp_path, f"killed{after_groups}", after_groups)
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    left = data_files_on_disk(table) - on_disk - {str(stranger)}
    assert left, "the rewrite wrote nothing before it was killed"
    assert journal_files(table)

    flags = catalog_flags(tmp_path)
    assert main(["iceberg", "clean", f"db.killed{after_groups}", "--dry-run", *flags]) == 0
    out = capsys.readouterr().out
    assert {line.split(" ", 2)[2] for line in out.splitlines()
            if line.startswith("would delete ")} == {f"file://{p}" for p in left}
    assert data_files_on_disk(table) == on_disk | left | {str(stranger)}

    assert main(["iceberg", "clean", f"db.killed{after_groups}", *flags]) == 0
    out = capsys.readouterr().out
    assert f"deleted {len(left)} unreferenced file(s)" in out, out
    assert data_files_on_disk(table) == on_disk | {str(stranger)}
    assert journal_files(table) == set()
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert multiset(table.scan().to_arrow()) == before
    # a second clean finds nothing
    assert clean(table).deleted == []


def test_the_next_rewrite_cleans_what_a_killed_one_left(catalog, tmp_path, run_python):
    table = make_table(catalog, name="next", spec="identity", appends=2, rows=1500,
                       with_nulls=False)
    before = multiset(table.scan().to_arrow())
    on_disk = data_files_on_disk(table)
    killed_rewrite(run_python, tmp_path, "next", 2)
    left = data_files_on_disk(table) - on_disk
    assert left
    table.refresh()
    result = rewrite(table, "l,d")
    assert sorted(result.report["journal_cleaned"]) == sorted(f"file://{p}" for p in left)
    table.refresh()
    assert multiset(table.scan().to_arrow()) == before
    assert not left & data_files_on_disk(table)
    assert journal_files(table) == set()


def fake_run(table, run, paths, **heartbeat):
    """A journal as a rewrite leaves it: entries of ``paths``, and a heartbeat."""
    folder = f"{iceberg_journal.journal_root(table.location())}/{run}"
    writer = iceberg_journal.JournalWriter(table.io, folder, run)
    for path in paths:
        writer.record(path)
    if heartbeat:
        iceberg_journal._write_json(table.io, f"{folder}/{iceberg_journal.HEARTBEAT}",
                                    {"run": run, **heartbeat})
    if "renewed" in heartbeat:   # (its files as old as its heartbeat)
        for name in os.listdir(local(folder)):
            os.utime(os.path.join(local(folder), name),
                     (heartbeat["renewed"], heartbeat["renewed"]))
    return folder


def test_clean_leaves_a_run_in_progress_alone(catalog, tmp_path):
    table = make_table(catalog, name="live", appends=1, rows=50)
    data = pathlib.Path(local(table.location())) / "data"
    orphans = []
    for k in range(3):
        (data / f"orphan{k}.parquet").write_bytes(b"x")
        orphans.append(f"file://{data}/orphan{k}.parquet")
    now = time.time()
    # this process, running, its heartbeat fresh
    fake_run(table, "mine", orphans[:1], host=socket.gethostname(), pid=os.getpid(),
             renewed=now, state="running")
    # another host, renewed a minute ago: alive until silent for older_than
    fake_run(table, "elsewhere", orphans[1:2], host="another-host", pid=1, renewed=now - 60,
             state="running")
    # another host, silent for two hours: over
    fake_run(table, "silent", orphans[2:], host="another-host", pid=1,
             renewed=now - 2 * 3600, state="running")
    result = clean(table, dry_run=True)
    assert result.deleted == orphans[2:] and sorted(result.live_runs) == ["elsewhere", "mine"]
    assert all(os.path.exists(local(p)) for p in orphans)
    result = clean(table)
    assert result.deleted == orphans[2:] and result.runs == ["silent"]
    assert [os.path.exists(local(p)) for p in orphans] == [True, True, False]
    result = clean(table, older_than=30)
    assert result.deleted == orphans[1:2]
    assert os.path.exists(local(orphans[0]))


def test_clean_takes_the_spill_runs_a_lost_client_left(catalog):
    """A Dask group whose workers shared no folder spills through the table's FileIO into
    its run's journal folder; a lost client leaves them there, and clean deletes them
    (without reading them as entries) with the run."""
    table = make_table(catalog, name="spilled", appends=1, rows=50)
    data = pathlib.Path(local(table.location())) / "data"
    (data / "orphan.parquet").write_bytes(b"x")
    orphan = f"file://{data}/orphan.parquet"
    folder = fake_run(table, "lost", [orphan], host="another-host", pid=1,
                      renewed=time.time() - 2 * 3600, state="running")
    spill = iceberg_journal.spill_folder(folder)
    runs = [f"{spill}/in-000000.a1/run-000000.arrows", f"{spill}/in-000001.b2/run-000003.arrows"]
    for run in runs:
        with table.io.new_output(run).create() as out:
            out.write(b"ARROW1" + bytes(1000))   # (not JSON: never read as an entry)
        old = time.time() - 2 * 3600   # (written as long ago as the run's last heartbeat)
        os.utime(local(run), (old, old))
    result = clean(table, dry_run=True)
    assert result.deleted == [orphan] and sorted(result.spill_files) == runs
    assert all(os.path.exists(local(r)) for r in runs)
    result = clean(table)
    assert result.deleted == [orphan] and sorted(result.spill_files) == runs
    assert result.runs == ["lost"] and result.left == []
    assert journal_files(table) == set()


def test_clean_keeps_journaled_files_a_snapshot_references(catalog):
    """A run killed after its commit: its files are the table's now; only the entries go."""
    table = make_table(catalog, name="landed", appends=2, rows=100)
    paths = sorted(t.file.file_path for t in table.scan().plan_files())
    fake_run(table, "landed", paths, state="ended")
    result = clean(table)
    assert result.deleted == [] and sorted(result.referenced) == paths
    assert all(os.path.exists(local(p)) for p in paths)
    assert journal_files(table) == set()
    assert table.scan().to_arrow().num_rows == 200


def test_a_failed_rewrite_leaves_no_journal(catalog, monkeypatch):
    from zorder.engines import iceberg as engine

    table = make_table(catalog, name="failed", spec="identity", appends=2, rows=200)
    on_disk = data_files_on_disk(table)

    def refuse(*args, **kwargs):
        raise IcebergRewriteError("refused here")

    monkeypatch.setattr(engine, "check_counts", refuse)
    with pytest.raises(IcebergRewriteError, match="refused here"):
        rewrite(table, "l")
    assert data_files_on_disk(table) == on_disk and journal_files(table) == set()


def test_every_written_file_is_journaled_before_it_is_written(catalog, monkeypatch):
    from zorder.engines.iceberg_write import DataFileWriter

    table = make_table(catalog, name="order", spec="identity", appends=2, rows=300)
    real = DataFileWriter.__init__
    seen = []

    def opening(self, table_metadata, io, path, key):
        # (before the file is created: its path is in the journal already)
        folder = local(table.location()) + "/zorder-journal"
        entries = [json.loads(pathlib.Path(root, n).read_text())
                   for root, _, names in os.walk(folder) for n in names
                   if n != iceberg_journal.HEARTBEAT]
        assert path in {e["path"] for e in entries}
        seen.append(path)
        real(self, table_metadata, io, path, key)

    monkeypatch.setattr(DataFileWriter, "__init__", opening)
    result = rewrite(table, "l", target_file_size="20KB")
    assert seen and sorted(seen) == sorted(result.added_paths)
    assert journal_files(table) == set()


def test_clean_checks_its_arguments(catalog, tmp_path, capsys):
    table = make_table(catalog, name="args", appends=1, rows=10)
    with pytest.raises(ValueError, match="older_than"):
        clean(table, older_than=-1)
    with pytest.raises(TypeError, match="dry_run"):
        clean(table, dry_run="yes")
    assert main(["iceberg", "clean", "db.args", "--older-than", "-5",
                 *catalog_flags(tmp_path)]) == 2
    assert "--older-than" in capsys.readouterr().err
    assert main(["iceberg", "clean", "db.args", *catalog_flags(tmp_path)]) == 0
    assert "deleted 0 unreferenced file(s)" in capsys.readouterr().out


def test_dask_tasks_journal_their_files_and_a_commit_clears_the_journal(catalog, monkeypatch):
    pytest.importorskip("dask")
    from zorder.engines import iceberg_journal as journal_module

    table = make_table(catalog, name="dask_journal", spec="identity", appends=2, rows=200)
    recorded = []
    real = journal_module.JournalWriter.record
    monkeypatch.setattr(journal_module.JournalWriter, "record",
                        lambda self, path: recorded.append(path) or real(self, path))
    result = rewrite(table, "l", scheduler="threads")
    assert sorted(recorded) == sorted(result.added_paths)
    assert journal_files(table) == set()


# ---------------------------------------------------------------------------------------
# The journal with the live commit: partial progress, and the plan's validation window.

PARTIAL_KILLED = """
import os, signal, sys
from pyiceberg.catalog.sql import SqlCatalog
from zorder.iceberg import rewrite
catalog = SqlCatalog("test", uri=sys.argv[1], warehouse=sys.argv[2])
table = catalog.load_table(sys.argv[3])
def progress(done, total, entry):
    if done == -(-total // 2) + 1:   # the first group of the second batch is written
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup can run
rewrite(table, "l,d", target_file_size="20KB", progress=progress, partial_progress=True,
        max_commits=2)
"""


def test_a_sigkill_after_a_landed_batch_leaves_only_the_next_batchs_files(
        catalog, tmp_path, run_python, capsys):
    """Partial progress, killed between its two commits: the first batch's files are the
    table's (their journal entries went as it landed), the second's are journaled
    leftovers, and ``clean`` deletes exactly those."""
    table = make_table(catalog, name="partial_killed", spec="identity", appends=2, rows=1500,
                       with_nulls=False)
    before = multiset(table.scan().to_arrow())
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    proc = run_python("-c", PARTIAL_KILLED, f"sqlite:///{tmp_path}/catalog.db",
                      f"file://{tmp_path}/wh", "db.partial_killed", timeout=300)
    assert proc.returncode == -9, proc.stderr[-800:]
    table.refresh()
    landed = table.current_snapshot()
    assert landed.snapshot_id != snapshot and landed.summary.operation.value == "replace"
    first_batch = {local(t.file.file_path) for t in table.scan().plan_files()} - on_disk
    assert first_batch and first_batch <= data_files_on_disk(table)
    left = data_files_on_disk(table) - on_disk - first_batch
    assert left, "the second batch wrote nothing before it was killed"
    journaled = {local(p) for p in iceberg_journal.journaled_paths(
        table.io, os.path.dirname(next(iter(journal_files(table)))))}
    assert journaled == left   # (the landed batch's entries went as it committed)
    assert multiset(table.scan().to_arrow()) == before

    assert main(["iceberg", "clean", "db.partial_killed", *catalog_flags(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"deleted {len(left)} unreferenced file(s)" in out, out
    assert data_files_on_disk(table) == (on_disk | first_batch)
    assert journal_files(table) == set()
    table.refresh()
    assert table.current_snapshot().snapshot_id == landed.snapshot_id
    assert {local(t.file.file_path) for t in table.scan().plan_files()} >= first_batch
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()


def test_a_commit_during_the_starting_clean_is_validated_against_the_plan(catalog,
                                                                          monkeypatch):
    """The clean at the start refreshes the table: a commit that removed an input file
    just before it still refuses the rewrite, as validated from the planned snapshot."""
    from zorder.engines import iceberg as engine

    table = make_table(catalog, name="clean_race", spec="identity", appends=2, rows=150)
    other = catalog.load_table("db.clean_race")
    real = engine.clean
    removers = []

    def remove_then_clean(t, *args, **kwargs):
        other.delete("cat == 'a'")   # copy-on-write: removes partition a's files
        removers.append(other.current_snapshot().snapshot_id)
        return real(t, *args, **kwargs)

    monkeypatch.setattr(engine, "clean", remove_then_clean)
    with pytest.raises(IcebergRewriteError, match="removed input file") as info:
        rewrite(table, ["l"])
    assert f"snapshot {removers[0]} (delete)" in str(info.value)
    table.refresh()
    assert table.current_snapshot().snapshot_id == removers[0]
    assert unreferenced_files(table) == set()
