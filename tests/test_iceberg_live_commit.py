"""Iceberg rewrites of live tables (issue 37, requirements 1, 4, 5 and part of 6):
conflicts validated as Iceberg's RewriteFiles validates them, bounded retries, partial
progress in batches, branches, and interrupts around the catalog call."""

import os
import sys
import threading
import uuid

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_iceberg import (  # noqa: E402
    arrow_batch, catalog, data_files_on_disk, local, make_table, multiset, unreferenced_files,
)

from zorder.engines import iceberg as engine  # noqa: E402
from zorder.engines import iceberg_write  # noqa: E402
from zorder.iceberg import IcebergRewriteError, rewrite  # noqa: E402

__all__ = ["catalog"]   # (the fixture, imported for pytest)


def add_position_deletes(table, data_file, positions):
    """Commit a DELETE snapshot adding one position delete file for ``data_file`` (PyIceberg
    0.12 writes none itself: its delete falls back to copy-on-write)."""
    from pyiceberg.manifest import (
        DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
        ManifestEntryStatus, ManifestWriterV2)
    from pyiceberg.table import Transaction
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    path = f"{table.location()}/data/deletes-{uuid.uuid4()}.parquet"
    schema = pa.schema([pa.field("file_path", pa.string(), False,
                                 {b"PARQUET:field_id": b"2147483546"}),
                        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
    pq.write_table(pa.table({"file_path": [data_file.file_path] * len(positions),
                             "pos": list(positions)}, schema=schema), local(path))
    name = data_file.file_path.encode()
    delete = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=path,
        file_format=FileFormat.PARQUET, partition=data_file.partition,
        record_count=len(positions), file_size_in_bytes=len(open(local(path), "rb").read()),
        lower_bounds={2147483546: name}, upper_bounds={2147483546: name})
    delete.spec_id = data_file.spec_id

    class DeletesWriter(ManifestWriterV2):
        def content(self):
            return ManifestContent.DELETES

        @property
        def _meta(self):
            return {**super()._meta, "content": "deletes"}

    class AddDeletes(_FastAppendFiles):
        def _manifests(self):
            out = self.new_manifest_output()
            with DeletesWriter(self.spec(data_file.spec_id), self.schema(), out,
                               self._snapshot_id, "deflate") as writer:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                                   snapshot_id=self._snapshot_id,
                                                   data_file=delete))
            return [writer.to_manifest_file()] + self._existing_manifests()

    table.refresh()
    txn = Transaction(table)
    producer = AddDeletes(operation=Operation.DELETE, transaction=txn, io=table.io)
    txn._apply(*producer._commit())
    txn.commit_transaction()
    return table.current_snapshot().snapshot_id


def first_group_hook(action):
    """A progress= hook running ``action`` once, as the first file group finishes."""
    calls = []

    def hook(done, total, entry):
        if not calls:
            calls.append(done)
            action()
    return hook


# ---------------------------------------------------------------------------------------
# Requirement 1: conflicts.

def test_appends_to_the_same_and_other_partitions_stay_under_the_rewrite(catalog):
    table = make_table(catalog, name="appends", spec="identity", appends=2, rows=150)
    before = multiset(table.scan().to_arrow())
    other = catalog.load_table("db.appends")
    extras = [arrow_batch(np.random.default_rng(s), 30) for s in (1, 2)]
    result = rewrite(table, ["l"], progress=first_group_hook(
        lambda: [other.append(e) for e in extras]))
    table.refresh()
    assert table.current_snapshot().snapshot_id == result.snapshot_id
    assert multiset(table.scan().to_arrow()) == before + multiset(extras[0]) + multiset(extras[1])
    assert unreferenced_files(table) == set()


def test_a_removed_input_file_refuses_the_rewrite_and_names_the_snapshot(catalog):
    table = make_table(catalog, name="removed", spec="identity", appends=2, rows=150)
    other = catalog.load_table("db.removed")
    on_disk = data_files_on_disk(table)
    removers = []

    def remove_a():
        other.delete("cat == 'a'")   # copy-on-write: removes partition a's files
        removers.append(other.current_snapshot().snapshot_id)

    with pytest.raises(IcebergRewriteError, match="removed input file") as info:
        rewrite(table, ["l"], progress=first_group_hook(remove_a))
    assert f"snapshot {removers[0]} (delete)" in str(info.value)
    assert not info.value.outcome_unknown and info.value.leftovers == []
    table.refresh()
    assert table.current_snapshot().snapshot_id == removers[0]
    assert data_files_on_disk(table) == on_disk | {
        local(t.file.file_path) for t in table.scan().plan_files()}
    assert unreferenced_files(table) == set()


def test_a_new_position_delete_on_an_input_file_refuses_the_rewrite(catalog):
    table = make_table(catalog, name="posdel", spec="identity", appends=1, rows=150)
    target = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "b")
    other = catalog.load_table("db.posdel")
    added = []
    with pytest.raises(IcebergRewriteError, match="added delete file") as info:
        rewrite(table, ["l"], progress=first_group_hook(
            lambda: added.append(add_position_deletes(other, target, [0, 3]))))
    assert f"snapshot {added[0]} (delete)" in str(info.value)
    assert target.file_path in str(info.value)
    table.refresh()
    assert table.current_snapshot().snapshot_id == added[0]
    assert unreferenced_files(table) == set()


def test_a_position_delete_on_a_file_not_rewritten_is_no_conflict(catalog):
    table = make_table(catalog, name="elsewhere", spec="identity", appends=1, rows=150)
    target = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "c")
    other = catalog.load_table("db.elsewhere")
    added = []
    result = rewrite(table, ["l"], row_filter="cat == 'a'", progress=first_group_hook(
        lambda: added.append(add_position_deletes(other, target, [1]))))
    table.refresh()
    assert table.current_snapshot().parent_snapshot_id == added[0]
    assert table.current_snapshot().snapshot_id == result.snapshot_id


@pytest.mark.parametrize("change", ["promote", "add_optional"])
def test_a_schema_change_the_files_do_not_match_is_refused(catalog, change):
    from pyiceberg.types import LongType, StringType

    table = make_table(catalog, name=f"schema_{change}", appends=2, rows=100)
    before = multiset(table.scan().to_arrow())
    planned = table.current_snapshot().snapshot_id

    def evolve():
        with catalog.load_table(f"db.schema_{change}").update_schema() as update:
            if change == "promote":
                update.update_column("i", LongType())
            else:
                update.add_column("note", StringType())

    if change == "add_optional":   # (the new files lack it, as the old ones did)
        result = rewrite(table, ["l"], progress=first_group_hook(evolve))
        assert table.current_snapshot().snapshot_id == result.snapshot_id
        return
    with pytest.raises(IcebergRewriteError, match="its schema changed: column 'i' changed "
                                                  "from int to long"):
        rewrite(table, ["l"], progress=first_group_hook(evolve))
    table.refresh()
    assert table.current_snapshot().snapshot_id == planned
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()


@pytest.mark.parametrize("retries", [0, 2])
def test_retries_are_bounded_by_the_tables_commit_retry_properties(catalog, monkeypatch,
                                                                   retries):
    """A writer that commits before every attempt: PyIceberg retries as many times as
    commit.retry.num-retries says, then the rewrite is refused and its files deleted."""
    from pyiceberg.table import Transaction

    table = make_table(catalog, name=f"retry{retries}", appends=2, rows=80, properties={
        "commit.retry.num-retries": str(retries), "commit.retry.min-wait-ms": "1"})
    other = catalog.load_table(f"db.retry{retries}")
    real = type(table.catalog).commit_table
    attempts = []

    def always_behind(self, tbl, requirements, updates):
        if isinstance(tbl, type(table)) or any(type(u).__name__ == "AddSnapshotUpdate"
                                               and u.snapshot.summary.operation.value
                                               == "replace" for u in updates):
            attempts.append(1)
            monkeypatch.setattr(type(table.catalog), "commit_table", real)
            other.append(arrow_batch(np.random.default_rng(len(attempts)), 5))
            monkeypatch.setattr(type(table.catalog), "commit_table", always_behind)
        return real(self, tbl, requirements, updates)

    monkeypatch.setattr(type(table.catalog), "commit_table", always_behind)
    with pytest.raises(IcebergRewriteError, match=rf"refused the commit {retries + 1} time"):
        rewrite(table, ["l"])
    monkeypatch.undo()
    assert len(attempts) == retries + 1
    assert Transaction  # (PyIceberg's own loop did the retries)
    table.refresh()
    assert table.current_snapshot().summary.operation.value == "append"
    assert unreferenced_files(table) == set()


def test_a_writer_thread_appending_while_the_rewrite_runs(catalog):
    """The issue's target in small: a writer thread appends a file every few hundredths of
    a second while the rewrite runs; it commits within its retries and every appended row
    is readable afterwards. The writer stops after a bounded number of appends and the
    retries outlast it, so that a slow machine (qemu-user) cannot lose every race."""
    table = make_table(catalog, name="stream", spec="identity", appends=3, rows=300,
                       properties={"commit.retry.min-wait-ms": "10",
                                   "commit.retry.max-wait-ms": "500",
                                   "commit.retry.num-retries": "30"})
    before = multiset(table.scan().to_arrow())
    writer_table = catalog.load_table("db.stream")
    stop = threading.Event()
    appended = []

    def writer():
        rng = np.random.default_rng(11)
        for _ in range(8):
            if stop.is_set():
                return
            batch = arrow_batch(rng, 10)
            writer_table.append(batch)
            appended.append(batch)
            stop.wait(0.03)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        result = rewrite(table, ["l", "s"])
    finally:
        stop.set()
        thread.join()
    table.refresh()
    assert appended and table.snapshot_by_id(result.snapshot_id) is not None
    expected = before
    for batch in appended:
        expected = expected + multiset(batch)
    assert multiset(table.scan().to_arrow()) == expected


# ---------------------------------------------------------------------------------------
# Requirement 5: branches.

def test_a_branch_is_rewritten_and_no_other_ref_moves(catalog):
    table = make_table(catalog, name="branchy", appends=2, rows=100)
    start = table.current_snapshot().snapshot_id
    table.manage_snapshots().create_branch(start, "audit").create_tag(start, "v1").commit()
    extra = arrow_batch(np.random.default_rng(3), 40)
    table.append(extra, branch="audit")
    table.append(arrow_batch(np.random.default_rng(4), 10))   # main moves on
    table.refresh()
    refs = {n: r.snapshot_id for n, r in table.metadata.refs.items()}
    audit_rows = multiset(table.scan(snapshot_id=refs["audit"]).to_arrow())
    result = rewrite(table, ["l"], branch="audit")
    table.refresh()
    after = {n: r.snapshot_id for n, r in table.metadata.refs.items()}
    assert after == {**refs, "audit": result.snapshot_id}
    assert result.previous_snapshot_id == refs["audit"]
    snap = table.snapshot_by_id(result.snapshot_id)
    assert snap.parent_snapshot_id == refs["audit"] and snap.summary.operation.value == "replace"
    assert multiset(table.scan(snapshot_id=result.snapshot_id).to_arrow()) == audit_rows
    assert result.rewritten_files == 3   # the branch's files, not main's
    with pytest.raises(ValueError, match="'v1' is a tag"):
        rewrite(table, ["l"], branch="v1")
    with pytest.raises(ValueError, match="no branch 'nope'.*audit, main"):
        rewrite(table, ["l"], branch="nope")


def test_a_branch_rewrite_keeps_appends_to_that_branch(catalog):
    table = make_table(catalog, name="branch_race", appends=2, rows=100)
    table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, "b").commit()
    main_head = table.current_snapshot().snapshot_id
    before = multiset(table.scan().to_arrow())
    extra = arrow_batch(np.random.default_rng(8), 20)
    other = catalog.load_table("db.branch_race")
    result = rewrite(table, ["l"], branch="b", progress=first_group_hook(
        lambda: other.append(extra, branch="b")))
    table.refresh()
    assert table.metadata.refs["b"].snapshot_id == result.snapshot_id
    assert table.current_snapshot().snapshot_id == main_head
    assert multiset(table.scan(snapshot_id=result.snapshot_id).to_arrow()) == \
        before + multiset(extra)


# ---------------------------------------------------------------------------------------
# Requirement 4: partial progress.

def test_partial_progress_commits_in_batches(catalog):
    table = make_table(catalog, name="batches", spec="identity", appends=2, rows=150)
    before = multiset(table.scan().to_arrow())
    start = table.current_snapshot().snapshot_id
    result = rewrite(table, ["l"], partial_progress=True, max_commits=2)
    commits = result.report["commits"]
    assert [c["groups"] for c in commits] == [2, 1] and result.report["failed_groups"] == []
    table.refresh()
    chain = [commits[1]["snapshot_id"], commits[0]["snapshot_id"], start]
    assert [table.snapshot_by_id(s).parent_snapshot_id for s in chain[:2]] == chain[1:]
    assert result.snapshot_id == chain[0] and result.rewritten_files == 6
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()


def test_a_failed_group_leaves_the_other_batches_committed(catalog, monkeypatch):
    table = make_table(catalog, name="onefails", spec="identity", appends=2, rows=150)
    before = multiset(table.scan().to_arrow())
    real = iceberg_write.write_group

    def failing(metadata, io, group, *args):
        files, entry = real(metadata, io, group, *args)
        if group.partition[0] == "b":
            raise OSError("disk full")
        return files, entry

    monkeypatch.setattr(engine, "write_group", failing)
    result = rewrite(table, ["l"], partial_progress=True, max_commits=3)
    assert len(result.report["commits"]) == 2
    assert result.report["failed_groups"] == [
        {"partition": "cat=b", "batch": 2, "error": "OSError: disk full"}]
    table.refresh()
    assert multiset(table.scan().to_arrow()) == before
    b_files = [t.file for t in table.scan(row_filter="cat == 'b'").plan_files()]
    assert len(b_files) == 2   # left as they were
    assert unreferenced_files(table) == set()


@pytest.mark.parametrize("when", ["writing", "committing"])
def test_an_interrupt_stops_after_the_batch_and_names_the_landed_ones(catalog, monkeypatch,
                                                                      when):
    from zorder.engines import iceberg_commit

    table = make_table(catalog, name=f"stop_{when}", spec="identity", appends=2, rows=150)
    before = multiset(table.scan().to_arrow())
    real_write, real_commit = iceberg_write.write_group, iceberg_commit.commit_rewrite
    commits = []

    def write(metadata, io, group, *args):
        if when == "writing" and group.partition[0] == "b":
            raise KeyboardInterrupt()
        return real_write(metadata, io, group, *args)

    def commit(*args, **kwargs):
        snapshot = real_commit(*args, **kwargs)
        commits.append(snapshot)
        if when == "committing" and len(commits) == 2:
            import signal
            os.kill(os.getpid(), signal.SIGINT)   # held until the batch is recorded
        return snapshot

    monkeypatch.setattr(engine, "write_group", write)
    monkeypatch.setattr(engine, "commit_rewrite", commit)
    with pytest.raises(IcebergRewriteError) as info:
        rewrite(table, ["l"], partial_progress=True, max_commits=3)
    assert isinstance(info.value.__cause__, KeyboardInterrupt)
    landed = [c["snapshot_id"] for c in info.value.committed]
    assert landed == commits == [c for c in commits]
    assert len(landed) == (1 if when == "writing" else 2)
    assert "interrupted after" in str(info.value)
    assert all(f"snapshot {s}" in str(info.value) for s in landed)
    table.refresh()
    assert table.current_snapshot().snapshot_id == landed[-1]
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()


# ---------------------------------------------------------------------------------------
# Requirement 6: interrupts around the catalog call, files written before it.

def test_an_interrupt_in_a_catalog_call_that_lands_is_never_a_success(catalog, monkeypatch,
                                                                     tmp_path, capsys):
    from zorder.cli import main

    table = make_table(catalog, name="landed", appends=2, rows=60)
    real = type(table.catalog).commit_table

    def lands_then_interrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        raise KeyboardInterrupt()

    monkeypatch.setattr(type(table.catalog), "commit_table", lands_then_interrupted)
    assert main(["iceberg", "rewrite", "db.landed", "--columns", "l", "--catalog", "test",
                 "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
                 f"file://{tmp_path}/wh", "--quiet", "--no-report"]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the commit may have landed" in err, err
    monkeypatch.undo()
    table.refresh()
    assert table.current_snapshot().summary.operation.value == "replace"
    # The files it kept are the commit's. Its outcome unknown, the journal kept their
    # entries (a commit may land later): a clean finds the files referenced, drops only
    # the entries, and then nothing is left that no snapshot references.
    journal = local(table.location()) + "/zorder-journal/"
    assert {p for p in unreferenced_files(table) if not p.startswith(journal)} == set()
    added = sorted(t.file.file_path for t in table.scan().plan_files())
    assert sorted(engine.clean(table, older_than=0).referenced) == added
    assert unreferenced_files(table) == set()


@pytest.mark.parametrize("where", ["summary", "staging"])
def test_files_written_before_the_catalog_call_are_deleted_on_an_interrupt(
        catalog, monkeypatch, where):
    from zorder.engines import iceberg_commit

    table = make_table(catalog, name=f"gap_{where}", appends=2, rows=60)
    snapshot = table.current_snapshot().snapshot_id

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt()

    if where == "summary":
        monkeypatch.setattr(engine, "zorder_summary", interrupted)
    else:
        monkeypatch.setattr(iceberg_commit, "_replace_producer_class", lambda: interrupted)
    with pytest.raises(KeyboardInterrupt):
        rewrite(table, ["l"])
    monkeypatch.undo()
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert unreferenced_files(table) == set()


def test_a_dropped_ctrl_c_stops_the_rewrite_before_its_commit(catalog, monkeypatch):
    # A Ctrl-C whose KeyboardInterrupt Python raised inside a weakref callback, where it
    # is printed and dropped: the rewrite still stops before the catalog call.
    import signal

    from dropped_signal import drop_a_signal

    table = make_table(catalog, name="dropped", appends=2, rows=60)
    snapshot = table.current_snapshot().snapshot_id
    real = engine.zorder_summary

    def dropped_then_summary(*args, **kwargs):
        drop_a_signal()
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "zorder_summary", dropped_then_summary)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)   # Python's own
    try:
        with pytest.raises(KeyboardInterrupt):
            rewrite(table, ["l"])
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.undo()
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert unreferenced_files(table) == set()


def test_cli_branch_and_partial_progress(catalog, tmp_path, capsys, monkeypatch):
    from zorder.cli import main

    table = make_table(catalog, name="cli", spec="identity", appends=2, rows=100)
    table.manage_snapshots().create_branch(table.current_snapshot().snapshot_id, "b").commit()
    main_head = table.current_snapshot().snapshot_id
    where = ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
             f"file://{tmp_path}/wh", "--quiet", "--no-report"]
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l", "--max-commits", "2"]
                + where) == 2
    assert "--max-commits applies only with --partial-progress" in capsys.readouterr().err
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l", "--branch", "b",
                 "--partial-progress", "--max-commits", "2"] + where) == 0
    out = capsys.readouterr().out
    assert "committed 2 snapshots (replace) on branch b" in out and "  batch 2: snapshot" in out
    table.refresh()
    assert table.current_snapshot().snapshot_id == main_head
    real = iceberg_write.write_group

    def failing(metadata, io, group, *args):
        if group.partition[0] == "c":
            raise OSError("disk full")
        return real(metadata, io, group, *args)

    monkeypatch.setattr(engine, "write_group", failing)
    assert main(["iceberg", "rewrite", "db.cli", "--columns", "l", "--partial-progress"]
                + where) == 1
    out, err = capsys.readouterr()
    assert "committed 2 snapshots" in out
    assert err.strip().splitlines() == [
        "error: 1 file group(s) failed and were not committed (the other batches were); "
        "the first, batch 3, partition cat=c: OSError: disk full"]
