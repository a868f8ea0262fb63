"""The Iceberg rewrite at any partition size (issue 38, requirement 3): a file group
larger than the memory limit is rewritten out of core, here or with its ranges as tasks
on a Dask cluster, and a worker SIGKILLed mid-rewrite writes nothing twice.

Small tables and limits of a few MB make the out-of-core path run on a few thousand rows.
"""

import os
import sys
import threading
import time

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

from pyiceberg.io.pyarrow import PyArrowFileIO  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_iceberg import (  # noqa: E402
    arrow_batch, catalog, data_files_on_disk, local, make_table, multiset, unreferenced_files,
    zvalues_of_file,
)
from test_iceberg_live_commit import add_position_deletes  # noqa: E402
from worker_kill import sigkill_when_paused  # noqa: E402

from zorder.engines import cuts, iceberg_external, iceberg_write  # noqa: E402
from zorder.engines.iceberg_journal import clean  # noqa: E402
from zorder.iceberg import IcebergRewriteError, rewrite  # noqa: E402

__all__ = ["catalog"]   # (the fixture, imported for pytest)

COLUMNS = ["l", "d", "u", "ts"]
#: Target bytes of a data file: about 700 rows of make_table's rows.
TARGET = {"write.target-file-size-bytes": "60000"}
#: 12,000 rows take about 1.2 MB in Arrow (x4: past this limit), a file 74 kB.
LIMIT = "1MB"


@pytest.fixture
def spill(tmp_path):
    """An empty folder for the spill runs (the catalog's files are in tmp_path)."""
    folder = tmp_path / "spill"
    folder.mkdir()
    return folder


def sorted_rows(table, columns=COLUMNS, **encoding):
    """The table's rows as its files hold them, the files in curve order (by their first
    row's value), and each file's curve values: the rewrite's global order."""
    files = []
    for task in table.scan().plan_files():
        path = task.file.file_path
        z = zvalues_of_file(path, columns, **encoding)
        files.append((bytes(z[0]) if len(z) else b"", path, z))
    files.sort()
    return files


def assert_clustered(files):
    """Each file in curve order within itself, and the files one after the other."""
    last = b""
    for first, _, z in files:
        keys = [bytes(v) for v in z]
        assert keys == sorted(keys)
        assert first >= last
        last = keys[-1]


def rows_in_order(files):
    return [row for _, path, _ in files for row in pq.read_table(local(path)).to_pylist()]


def assert_same_rank_order(result, other, table, twin):
    """Two rank rewrites of twin tables learned the same boundaries, and their files
    hold the rows in the same curve order."""
    from zorder.values.rank import RankBoundaries

    assert result.report["rank_boundaries"] == other.report["rank_boundaries"]
    boundaries = RankBoundaries.from_dict(result.report["rank_boundaries"])
    files = sorted_rows(table, encoding="rank", boundaries=boundaries)
    assert_clustered(files)
    assert rows_in_order(files) == rows_in_order(
        sorted_rows(twin, encoding="rank", boundaries=boundaries))


def test_out_of_core_group_is_row_for_row_the_in_memory_rewrite(catalog, spill):
    """Two copies of one table: in memory and out of core give the same rows in the same
    global order, checksums equal, files cut alike; no spill file is left."""
    props = {**TARGET, "write.parquet.row-group-limit": "200"}
    kept = make_table(catalog, name="mem", appends=4, rows=3000, properties=props)
    ooc = make_table(catalog, name="ooc", appends=4, rows=3000, properties=props)
    before = multiset(ooc.scan().to_arrow())
    a = rewrite(kept, COLUMNS, memory_limit="100MB")
    calls = []
    b = rewrite(ooc, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill),
                progress=lambda done, total, entry: calls.append((done, total, entry)))
    [ga], [gb] = a.report["groups"], b.report["groups"]
    # each step of the group reported, then the group itself
    stages = [e["stage"] for _, _, e in calls if "stage" in e]
    assert [s for s in dict.fromkeys(stages)] == ["sampling", "spilling", "sorting", "writing"]
    assert all(done == 0 for done, _, e in calls if "stage" in e)
    assert calls[-1] == (1, 1, gb)
    assert "out_of_core" not in ga and gb["out_of_core"] is True
    assert gb["checksum"] == gb["written_checksum"] == ga["checksum"]
    assert multiset(ooc.scan().to_arrow()) == before
    files_a, files_b = sorted_rows(kept), sorted_rows(ooc)
    assert_clustered(files_b)
    assert rows_in_order(files_a) == rows_in_order(files_b)
    # cut alike: as many files, of about the same rows
    assert abs(len(files_a) - len(files_b)) <= 1
    assert os.listdir(spill) == []
    assert unreferenced_files(ooc) == set()
    # row groups of the table's limit, as the in-memory writer cuts them
    for _, path, _ in files_b:
        md = pq.read_metadata(local(path))
        sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
        assert all(n == 200 for n in sizes[:-1]) and 0 < sizes[-1] <= 200
    # the files record their clustering: a second run finds nothing to rewrite
    again = rewrite(ooc, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill))
    assert again.snapshot_id is None and again.report["groups"] == []


def test_rank_encoding_out_of_core_learns_the_same_boundaries_and_order(catalog, spill):
    """The rank sample of a group too large is streamed: the same rows, so the same
    boundaries and the same order as in memory."""
    kept = make_table(catalog, name="rmem", appends=4, rows=3000, properties=TARGET)
    ooc = make_table(catalog, name="rooc", appends=4, rows=3000, properties=TARGET)
    a = rewrite(kept, COLUMNS, encoding="rank", rank_bits=8, memory_limit="100MB")
    b = rewrite(ooc, COLUMNS, encoding="rank", rank_bits=8, memory_limit=LIMIT,
                temp_dir=str(spill))
    assert b.report["groups"][0]["out_of_core"]
    assert_same_rank_order(b, a, ooc, kept)


def test_rank_sole_group_is_read_once_for_its_sample_and_its_write(catalog, monkeypatch):
    """A table of one group: its curve columns, read for the rank sample, are the ones
    its write orders (read once, deletes applied once); the boundaries and the order are
    those of the Dask path, which samples with a read of its own."""
    pytest.importorskip("dask")
    from zorder.engines import iceberg as iceberg_engine

    kept = make_table(catalog, name="rsole", appends=4, rows=3000)
    twin = make_table(catalog, name="rsole_dask", appends=4, rows=3000)
    for table in (kept, twin):   # the same rows of the same file (by its first row)
        files = {pq.read_table(local(t.file.file_path)).column("l")[0].as_py(): t.file
                 for t in table.scan().plan_files()}
        add_position_deletes(table, files[min(files)], [1, 2, 3])
        table.refresh()
    reads = []
    real = iceberg_engine.read_first
    for module in (iceberg_engine, iceberg_write):
        monkeypatch.setattr(module, "read_first",
                            lambda *args: reads.append(args[2]) or real(*args))
    a = rewrite(kept, COLUMNS, encoding="rank", rank_bits=8)
    [entry] = a.report["groups"]
    assert len(reads) == 1 and entry["deleted_rows"] == 3
    b = rewrite(twin, COLUMNS, encoding="rank", rank_bits=8, scheduler="sync")
    assert_same_rank_order(a, b, kept, twin)


def test_ranges_as_tasks_on_a_local_scheduler(catalog, spill):
    pytest.importorskip("dask")
    kept = make_table(catalog, name="tmem", appends=4, rows=3000, properties=TARGET)
    ooc = make_table(catalog, name="tooc", appends=4, rows=3000, properties=TARGET)
    for table in (ooc, kept):   # the same rows of the same file (by its first row)
        files = {pq.read_table(local(t.file.file_path)).column("l")[0].as_py(): t.file
                 for t in table.scan().plan_files()}
        add_position_deletes(table, files[min(files)], [1, 2, 3])
    ooc.refresh()
    kept.refresh()
    rewrite(kept, COLUMNS, memory_limit="100MB")
    result = rewrite(ooc, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill), scheduler="threads")
    [entry] = result.report["groups"]
    assert entry["out_of_core"] and entry["ranges"] >= 2 and entry["deleted_rows"] == 3
    assert rows_in_order(sorted_rows(ooc)) == rows_in_order(sorted_rows(kept))
    assert os.listdir(spill) == []
    assert unreferenced_files(ooc) == set()


def test_workers_without_a_shared_folder_spill_through_the_tables_fileio(catalog,
                                                                        monkeypatch):
    """No temp_dir, and workers that do not see the client's spill folder (other
    machines): the runs go through the table's FileIO into the rewrite's journal folder,
    and are gone afterwards; the rows are the in-memory rewrite's, in its order."""
    import pickle

    pytest.importorskip("dask")
    kept = make_table(catalog, name="fmem", appends=4, rows=3000, properties=TARGET)
    ooc = make_table(catalog, name="fooc", appends=4, rows=3000, properties=TARGET)
    rewrite(kept, COLUMNS, memory_limit="100MB")
    monkeypatch.setattr(iceberg_external, "_workers_see", lambda scheduler, folder: False)
    opened = []
    storage_class = iceberg_external.TableSpillStorage
    real_open = storage_class.open_output

    def recording(self, location):
        opened.append(location)
        return real_open(self, location)

    monkeypatch.setattr(storage_class, "open_output", recording)
    result = rewrite(ooc, COLUMNS, memory_limit=LIMIT, scheduler="threads")
    [entry] = result.report["groups"]
    assert entry["out_of_core"] and entry["ranges"] >= 2
    journal = local(ooc.location()) + "/zorder-journal/"
    assert opened and all(local(p).startswith(journal) and "/spill-" in p for p in opened)
    # the spill runs, then the run's journal folder: gone
    assert [f for _, folders, files in os.walk(journal) for f in folders + files] == []
    assert rows_in_order(sorted_rows(ooc)) == rows_in_order(sorted_rows(kept))
    assert unreferenced_files(ooc) == set()
    # the workers get the storage by pickle, the table's FileIO with it
    copy = pickle.loads(pickle.dumps(storage_class(ooc.io)))
    assert isinstance(copy.io, PyArrowFileIO) and not copy.exists(opened[0])


def test_a_range_task_that_cannot_see_the_spilled_runs_fails_naming_temp_dir(
        catalog, spill, monkeypatch):
    """A worker that does not see stage 1's runs (another machine, a temp_dir not shared)
    fails its range, naming --temp-dir; nothing is committed or left behind."""
    pytest.importorskip("dask")
    from zorder.parquet.spill import SpillStorage

    table = make_table(catalog, name="blind", appends=4, rows=3000, properties=TARGET)
    before = multiset(table.scan().to_arrow())
    snapshot = table.current_snapshot().snapshot_id
    monkeypatch.setattr(SpillStorage, "exists", lambda self, location: False)
    with pytest.raises(IcebergRewriteError, match=r"found 0 of the \d+ rows .*--temp-dir"):
        rewrite(table, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill), scheduler="threads")
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert multiset(table.scan().to_arrow()) == before
    assert unreferenced_files(table) == set()
    assert os.listdir(spill) == []


def test_position_deletes_are_applied_while_streaming(catalog, spill):
    table = make_table(catalog, name="dels", appends=4, rows=3000, properties=TARGET)
    first = next(iter(table.scan().plan_files())).file
    add_position_deletes(table, first, [0, 5, 7, 1000, 10**6])
    table.refresh()
    before = multiset(table.scan().to_arrow())
    result = rewrite(table, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill))
    [entry] = result.report["groups"]
    assert entry["out_of_core"] and entry["deleted_rows"] == 3
    assert entry["rows"] == 12000 - 3
    assert multiset(table.scan().to_arrow()) == before
    assert_clustered(sorted_rows(table))


def test_only_groups_past_the_limit_go_out_of_core(catalog, spill):
    table = make_table(catalog, name="parts", spec="identity", appends=0, properties=TARGET)
    rng = np.random.default_rng(3)
    big, small = arrow_batch(rng, 12000), arrow_batch(rng, 300)
    big = big.set_column(big.schema.get_field_index("cat"), "cat", pa.array(["a"] * 12000))
    small = small.set_column(small.schema.get_field_index("cat"), "cat", pa.array(["b"] * 300))
    for piece in (big.slice(0, 6000), big.slice(6000), small):
        table.append(piece)
    result = rewrite(table, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill),
                     rewrite_all=True)
    by_part = {g["partition"]: g for g in result.report["groups"]}
    assert len(by_part) == 2
    assert sorted(bool(g.get("out_of_core")) for g in by_part.values()) == [False, True]
    assert_clustered([f for f in sorted_rows(table)
                      if pq.read_table(local(f[1])).column("cat")[0].as_py() == "a"])


def test_a_limit_too_small_is_refused_before_anything_is_written(catalog, spill):
    table = make_table(catalog, name="tiny", appends=4, rows=3000, properties=TARGET)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    with pytest.raises(ValueError, match=r"memory_limit=50000 \(--memory-limit\) is too small"):
        rewrite(table, COLUMNS, memory_limit=50_000, temp_dir=str(spill))
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk
    assert os.listdir(spill) == []


def test_a_bad_temp_dir_is_named(catalog, tmp_path):
    table = make_table(catalog, name="tmpd", appends=1, rows=10)
    with pytest.raises(FileNotFoundError, match="temp_dir"):
        rewrite(table, COLUMNS, temp_dir=str(tmp_path / "missing"))


def test_a_failed_write_leaves_no_file_and_no_spill(catalog, spill, monkeypatch):
    table = make_table(catalog, name="fail", appends=4, rows=3000, properties=TARGET)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    calls = []
    real = iceberg_external._FileWriter.__call__

    def third_fails(self, rows, last):
        calls.append(last)
        if calls.count(True) == 3:   # (two files written, the third cut short)
            raise OSError(28, "No space left on device")
        return real(self, rows, last)

    monkeypatch.setattr(iceberg_external._FileWriter, "__call__", third_fails)
    with pytest.raises(OSError, match="No space left"):
        rewrite(table, COLUMNS, memory_limit=LIMIT, temp_dir=str(spill))
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk
    assert os.listdir(spill) == []
    assert clean(table).deleted == []


def test_cut_files_cuts_on_coarse_cells_and_keeps_every_row():
    keys = np.sort(np.random.default_rng(0).integers(0, 2**16, 1000, dtype=np.uint64))
    matrix = keys.astype(">u8").view(np.uint8).reshape(-1, 8)
    key = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), 1000,
                                               [None, pa.py_buffer(matrix.tobytes())])
    table = pa.table({"row": np.arange(1000), "k": key})
    pieces = [table.slice(i, 137) for i in range(0, 1000, 137)]
    out, parts = [], []

    def write(rows, last):
        if rows is not None:
            parts.append(rows)
        if last:
            out.append(pa.concat_tables(parts) if parts else None)
            parts.clear()

    cuts.cut_files(pieces, 1000, 4, write)
    assert len(out) == 4
    assert [r for t in out for r in t.column("row").to_pylist()] == list(range(1000))
    ends = np.cumsum([t.num_rows for t in out])[:-1]
    # each cut within an eighth of a file of the even cut
    assert np.all(np.abs(ends - np.array([250, 500, 750])) <= 250 // 8)
    # where the value changes at a coarser bit than most neighbours
    bits = cuts.first_differing_bits(matrix[ends - 1], matrix[ends])
    assert np.all(bits <= np.median(cuts.first_differing_bits(matrix[:-1],
                                                                          matrix[1:])))


def test_cli_flags(catalog, spill, capsys):
    from zorder.cli import main

    table = make_table(catalog, name="cli", appends=4, rows=3000, properties=TARGET)
    common = ["iceberg", "rewrite", "db.cli", "--columns", ",".join(COLUMNS),
              "--uri", catalog.properties["uri"], "--warehouse", catalog.properties["warehouse"],
              "--catalog", "test", "--no-report", "--quiet"]
    assert main(common + ["--memory-limit", "50kB", "--temp-dir", str(spill)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--memory-limit 50000 is too small" in err[0]
    assert main(common + ["--memory-limit", LIMIT, "--temp-dir", str(spill / "no")]) == 2
    assert "--temp-dir" in capsys.readouterr().err
    assert main(common + ["--memory-limit", LIMIT, "--temp-dir", str(spill)]) == 0
    table.refresh()
    assert_clustered(sorted_rows(table))
    assert os.listdir(spill) == []


def test_cli_scheduler_local_cluster_rewrites_and_stops(catalog, spill, capsys):
    """--scheduler local:1 starts one LocalCluster for the rewrite (its group past the
    limit runs as range tasks there), commits, and stops it; a bad value is one line."""
    import multiprocessing

    from zorder.cli import main

    table = make_table(catalog, name="clisched", appends=4, rows=3000, properties=TARGET)
    before = multiset(table.scan().to_arrow())
    common = ["iceberg", "rewrite", "db.clisched", "--columns", ",".join(COLUMNS),
              "--uri", catalog.properties["uri"], "--warehouse", catalog.properties["warehouse"],
              "--catalog", "test", "--no-report", "--quiet"]
    with pytest.raises(SystemExit) as exit_:
        main(common + ["--scheduler", "local:x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--scheduler" in err[-1]
    assert main(common + ["--scheduler", "local:1", "--memory-limit", LIMIT,
                          "--temp-dir", str(spill)]) == 0
    table.refresh()
    assert multiset(table.scan().to_arrow()) == before
    assert_clustered(sorted_rows(table))
    assert os.listdir(spill) == []
    assert multiprocessing.active_children() == []


def test_cli_disk_full_while_spilling_is_one_line_and_the_table_as_it_was(
        catalog, spill, capsys, monkeypatch):
    from zorder.cli import main
    from zorder.parquet import spill as spill_module

    table = make_table(catalog, name="full", appends=4, rows=3000, properties=TARGET)
    snapshot = table.current_snapshot().snapshot_id
    on_disk = data_files_on_disk(table)
    real = spill_module.SpillRun.append
    calls = []

    def fills_up(self, data):
        calls.append(1)
        if len(calls) == 20:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(spill_module.SpillRun, "append", fills_up)
    argv = ["iceberg", "rewrite", "db.full", "--columns", ",".join(COLUMNS),
            "--uri", catalog.properties["uri"], "--warehouse", catalog.properties["warehouse"],
            "--catalog", "test", "--no-report", "--quiet", "--memory-limit", LIMIT,
            "--temp-dir", str(spill)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0]
    assert len(calls) == 20
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    assert data_files_on_disk(table) == on_disk
    assert os.listdir(spill) == []
    assert unreferenced_files(table) == set()


# ---------------------------------------------------------------------------------------
# A Dask cluster: ranges as tasks, a worker SIGKILLed mid-rewrite.

class PausingFileIO(PyArrowFileIO):
    """The table's FileIO, which makes one worker stop mid-rewrite: once
    ``zorder-test.pause/armed`` exists, the first process to open its second data file
    writes its PID to ``zorder-test.pause/pid`` and waits there
    (for the test to SIGKILL it). Workers import it by name (``py-io-impl``)."""

    written = 0

    def new_output(self, location):
        folder = self.properties.get("zorder-test.pause")
        if (folder and "/data/" in location and location.endswith(".parquet")
                and os.path.exists(os.path.join(folder, "armed"))):
            PausingFileIO.written += 1
            if PausingFileIO.written == 2:
                try:
                    fd = os.open(os.path.join(folder, "paused"), os.O_CREAT | os.O_EXCL)
                except FileExistsError:
                    fd = None
                if fd is not None:
                    os.close(fd)
                    with open(os.path.join(folder, "pid.tmp"), "w") as f:
                        f.write(str(os.getpid()))
                    os.rename(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
                    deadline = time.time() + 60
                    while time.time() < deadline:
                        time.sleep(0.05)
        return super().new_output(location)


def test_ranges_run_as_tasks_and_a_killed_worker_writes_nothing_twice(tmp_path):
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from pyiceberg.catalog.sql import SqlCatalog

    pause = tmp_path / "pause"
    pause.mkdir()
    cat = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                     warehouse=f"file://{tmp_path}/wh",
                     **{"py-io-impl": "test_iceberg_scale.PausingFileIO",
                        "zorder-test.pause": str(pause)})
    cat.create_namespace("db")
    table = make_table(cat, name="dist", appends=4, rows=3000, properties=TARGET)
    reference = make_table(cat, name="ref", appends=4, rows=3000, properties=TARGET)
    before = multiset(table.scan().to_arrow())
    (pause / "armed").touch()
    spill = tmp_path / "spill"
    spill.mkdir()
    killed = []

    from zorder.engines.dask_scheduler import WORKER_DATA_SHARE, WORKER_OVERHEAD
    from zorder.parquet.sizes import parse_size

    config = {"distributed.comm.timeouts.connect": "5s",
              "distributed.worker.multiprocessing-method": "forkserver",
              "distributed.scheduler.allowed-failures": 3,
              "distributed.worker.memory.pause": False}
    # the workers' own limits leave each task LIMIT: no memory_limit is given (this
    # machine's default would keep the group in memory)
    per_worker = WORKER_OVERHEAD + int(parse_size(LIMIT, "LIMIT") / WORKER_DATA_SHARE) + 1
    with dask.config.set(config), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit=per_worker,
            dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        # (spill runs stay local only where every worker sees the folder)
        assert iceberg_external._workers_see(client, str(spill))
        assert not iceberg_external._workers_see(client, str(tmp_path / "absent"))
        thread = threading.Thread(target=sigkill_when_paused, args=(pause, killed), daemon=True)
        thread.start()
        result = rewrite(table, COLUMNS, temp_dir=str(spill), scheduler=client)
        thread.join()
    assert killed and killed[0] in pids
    [entry] = result.report["groups"]
    assert entry["out_of_core"] and entry["ranges"] >= 2
    assert entry["checksum"] == entry["written_checksum"]
    assert entry["rows"] == 12000
    table.refresh()
    assert multiset(table.scan().to_arrow()) == before
    assert_clustered(sorted_rows(table))
    assert unreferenced_files(table) == set()
    assert clean(table).deleted == []
    assert os.listdir(spill) == []
    # the rows in the in-memory rewrite's global order
    rewrite(reference, COLUMNS, memory_limit="100MB")
    assert rows_in_order(sorted_rows(table)) == rows_in_order(sorted_rows(reference))
