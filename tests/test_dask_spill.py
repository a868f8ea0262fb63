"""zorder cluster out of core (issue 38): a range too large for its task's share (a heavy
curve value) is sorted through the core and its files cut as the rows stream; the survey
reads a partition in bounded slices; a worker SIGKILLed on the spill path loses and
doubles nothing.

A few thousand rows and a limit of a megabyte or two make the out-of-core path run."""

import os
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

import dask  # noqa: E402

from zorder import dask as zd  # noqa: E402
from zorder.engines import dask_stages  # noqa: E402
from zorder.engines.dask_scheduler import WORKER_OVERHEAD  # noqa: E402
from zorder.parquet import spill as spill_module  # noqa: E402
from zorder.values import codec  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dask import CLUSTER_CONFIG  # noqa: E402
from worker_kill import pause_after_a_file, sigkill_when_paused  # noqa: E402

ROWS = 24_000
HEAVY = 9_000       # rows of one curve value: more than a range task may hold
COLUMNS = ["a", "b"]
OPTIONS = dict(target_file_size="100kB", keep_zvalue=True)


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """4 files; ``HEAVY`` rows, spread over all of them, share a = 0, b = 0."""
    path = tmp_path_factory.mktemp("in") / "table"
    path.mkdir()
    rng = np.random.default_rng(11)
    a = rng.integers(1, 500, ROWS)
    b = rng.normal(0.0, 10.0, ROWS)
    at = rng.choice(ROWS, HEAVY, replace=False)
    a[at], b[at] = 0, 0.0
    per = ROWS // 4
    for f in range(4):
        part = slice(f * per, (f + 1) * per)
        pq.write_table(pa.table({
            "id": np.arange(f * per, (f + 1) * per, dtype=np.int64), "a": a[part],
            "b": b[part], "s": pa.array([f"w{x}" for x in rng.integers(0, 40, per)]),
        }), str(path / f"in-{f}.parquet"), row_group_size=2_000)
    return str(path)


def checksum(table):
    """Order-independent: the wrapping sum of per-row hashes of the input's columns."""
    frame = table.select(["id", "a", "b", "s"]).to_pandas()
    return int(pd.util.hash_pandas_object(frame, index=False).to_numpy().sum(dtype=np.uint64))


def rows_in_order(result):
    """The files' rows in file order; each file sorted, files strictly apart."""
    tables = [pq.read_table(f.path) for f in result.files]
    previous = None
    for table in tables:
        keys = codec.sort_keys(codec.as_matrix(table.column(zd.ZVALUE_COLUMN)))
        assert np.all(keys[:-1] <= keys[1:])
        if previous is not None:
            assert previous < keys[0], "equal curve values in two files"
        previous = keys[-1]
    return pa.concat_tables(tables)


@pytest.fixture(scope="module")
def reference(heavy, tmp_path_factory):
    """The rows in the in-memory path's order."""
    return rows_in_order(zd.cluster(heavy, str(tmp_path_factory.mktemp("mem") / "z"),
                                    COLUMNS, scheduler="threads", **OPTIONS))


def test_a_heavy_value_streams_through_its_range_task(heavy, reference, tmp_path,
                                                      monkeypatch):
    given, loaded = [], []
    sorted_ranges, read = dask_stages.sorted_ranges, spill_module.SpillRun.read

    def counted(*args, **kwargs):
        for table in sorted_ranges(*args, **kwargs):
            given.append(table.num_rows)
            yield table

    def counted_read(run):
        table = read(run)
        loaded.append(table.num_rows)
        return table

    monkeypatch.setattr(dask_stages, "sorted_ranges", counted)
    monkeypatch.setattr(spill_module.SpillRun, "read", counted_read)
    result = zd.cluster(heavy, str(tmp_path / "z"), COLUMNS, scheduler="sync",
                        memory_limit="1MB", **OPTIONS)
    table = rows_in_order(result)
    assert result.rows == ROWS and sum(given) == ROWS
    # rows, and ties (the heavy value's rows above all), in the in-memory order
    assert table.column("id").equals(reference.column("id"))
    assert checksum(table) == checksum(reference)
    # the heavy value's range was never held whole: split again, then given in pieces
    assert len(given) > result.ranges
    assert max(loaded + given) < HEAVY // 3
    # its rows share one file (equal values never straddle two), as in memory
    zero = [int(np.sum((t.column("a").to_numpy() == 0) & (t.column("b").to_numpy() == 0)))
            for t in (pq.read_table(f.path) for f in result.files)]
    assert sorted(zero)[-2:] == [0, HEAVY]
    assert os.listdir(tmp_path) == ["z"]


# ---------------------------------------------------------------------------------------
# A worker SIGKILLed while a range task writes its files.

def test_a_killed_worker_on_the_spill_path_loses_and_doubles_nothing(heavy, reference,
                                                                      tmp_path):
    """Killed after a range task renamed one file into place: the retried task writes
    the same files again from the same runs, none twice."""
    pause = tmp_path / "pause"
    pause.mkdir()
    killed = []

    # workers whose limits leave each task about a megabyte: out of core (no pause, as
    # local:N starts them)
    config = {**CLUSTER_CONFIG, "distributed.scheduler.allowed-failures": 3,
              "distributed.worker.memory.pause": False}
    with dask.config.set(config), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            memory_limit=WORKER_OVERHEAD + 1_500_000,
            dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        client.run(pause_after_a_file, str(pause))
        thread = threading.Thread(target=sigkill_when_paused, args=(pause, killed), daemon=True)
        thread.start()
        result = zd.cluster(heavy, str(tmp_path / "z"), COLUMNS, scheduler=client,
                            **OPTIONS)
        thread.join()
    assert killed and killed[0] in pids   # (so the spill path ran: _RangeWriter is its)
    table = rows_in_order(result)
    assert table.num_rows == ROWS and checksum(table) == checksum(reference)
    assert table.column("id").equals(reference.column("id"))
    names = sorted(os.listdir(tmp_path / "z"))
    assert names == sorted([os.path.basename(f.path) for f in result.files] + [zd.MANIFEST])
    assert sorted(os.listdir(tmp_path)) == ["pause", "z"]


# ---------------------------------------------------------------------------------------
# The survey, in slices.

def test_the_survey_reads_a_partition_in_slices(monkeypatch):
    from zorder.values.ordering import Ordering

    rng = np.random.default_rng(3)
    n = 20_000
    pdf = pd.DataFrame({"a": rng.integers(0, 9, n), "b": rng.normal(0.0, 1.0, n),
                        "t": np.arange(n).astype("datetime64[s]")})
    ordering = Ordering.of(None, "zorder", "iceberg", None, None)
    whole = dask_stages.survey(pdf, 5, ["a", "b"], ordering, 700, "zstd")
    converted = []
    arrow_of = dask_stages._arrow_of

    def counted(frame, columns):
        converted.append(len(frame))
        return arrow_of(frame, columns)
    monkeypatch.setattr(dask_stages, "_arrow_of", counted)
    sliced = dask_stages.survey(pdf, 5, ["a", "b"], ordering, 700, "zstd", batch_bytes=64_000)
    assert 1 < max(converted) <= 2_000 and sum(converted) > n
    # the same rows sampled, and the same sizes within the smaller head's error
    assert sliced[0] == whole[0] == n
    assert all(np.array_equal(x, y) for x, y in zip(sliced[1], whole[1]))
    assert len(sliced[1][0]) == 700
    assert sliced[3] == pytest.approx(whole[3], rel=0.05)
    # a bad value in a later slice is found, at its row of the partition
    t = np.arange(n).astype("datetime64[s]")
    t[17_321] = np.datetime64(2**62, "s")
    pdf["t"] = t
    with pytest.raises(ValueError, match=r"^partition 5's column 't'.*\(first at index "
                                         r"17321\)$"):
        dask_stages.survey(pdf, 5, ["t", "a"], ordering, 700, "zstd", batch_bytes=64_000)


def test_a_row_group_too_large_is_refused_before_the_survey(tmp_path, monkeypatch):
    """Dask reads a row group whole, however small its blocksize: one past a task's
    share is refused from the footers, before any partition is read."""
    rng = np.random.default_rng(4)
    pq.write_table(pa.table({"a": rng.integers(0, 9, 60_000), "b": rng.random(60_000)}),
                   str(tmp_path / "one.parquet"), row_group_size=60_000)
    surveyed = []
    monkeypatch.setattr(dask_stages, "survey", lambda *a: surveyed.append(a))
    with pytest.raises(ValueError, match=r"memory_limit=1000000 \(--memory-limit\) is too "
                                         r"small .* a partition of up to 960 kB"):
        zd.cluster(str(tmp_path / "one.parquet"), str(tmp_path / "z"), COLUMNS,
                   scheduler="sync", memory_limit="1MB")
    assert surveyed == [] and sorted(os.listdir(tmp_path)) == ["one.parquet"]


def test_streamed_cuts_never_split_equal_values():
    """cut_files(whole_keys=True), on sorted rows in pieces of any size: every row once,
    in order, no value in two files, and about as many files as file_cuts makes."""
    from zorder.engines.cuts import cut_files, file_cuts

    rng = np.random.default_rng(8)
    for _ in range(40):
        n = int(rng.integers(1, 3000))
        keys = np.sort(rng.integers(0, int(rng.choice([3, 60, 2**16])), n, dtype=np.uint64))
        heavy = int(rng.integers(0, n))
        keys[heavy:heavy + int(rng.integers(0, n))] = keys[heavy]
        keys = np.sort(keys)
        matrix = keys.astype(">u8").view(np.uint8).reshape(-1, 8)
        table = pa.table({"row": np.arange(n), "k": pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(8), n, [None, pa.py_buffer(matrix.tobytes())])})
        step = int(rng.integers(1, 500))
        files = int(rng.integers(1, 20))
        out, parts = [], []

        def write(rows, last):
            if rows is not None and rows.num_rows:
                parts.append(rows)
            if last and parts:
                out.append(pa.concat_tables(parts))
                parts.clear()

        cut_files([table.slice(i, step) for i in range(0, n, step)], n, files, write,
                  whole_keys=True)
        assert parts == []
        assert [r for t in out for r in t.column("row").to_pylist()] == list(range(n))
        for a, b in zip(out, out[1:]):
            assert a.column("k")[-1].as_py() < b.column("k")[0].as_py()
        planned = len(file_cuts(keys.astype(">u8").view("S8"), max(1, round(n / files)))) - 1
        assert abs(len(out) - planned) <= 1
