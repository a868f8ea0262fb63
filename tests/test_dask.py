"""zorder.dask: Z-order clustering of a Parquet dataset on a real distributed.LocalCluster.

One generated dataset (2,000,000 rows in 8 files, row groups of 20,000 rows) is clustered
once on two worker processes and checked every way: global order, no row lost or doubled,
Z-values equal to zorder_values on the whole table, better min/max skipping. Another run
loses a worker mid-job, and a failing job must leave no output behind.
"""

import glob
import json
import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

import zorder  # noqa: E402
from zorder import dask as zd  # noqa: E402
from zorder.engines import dask_stages as engine  # noqa: E402
from zorder.engines.cuts import choose_splits, file_cuts  # noqa: E402
from zorder.values import codec  # noqa: E402
from zorder.__main__ import main  # noqa: E402

ROWS = 2_000_000
FILES = 8
COLUMNS = ["a", "b", "s"]
OPTIONS = dict(target_file_size="6MB", row_group_size=20_000)


def _write_dataset(path, rows, files, seed=1, row_group=20_000):
    os.makedirs(path)
    rng = np.random.default_rng(seed)
    per = rows // files
    # Z-order spends its leading bits where the ordered bytes vary: a full-range int64 (a
    # hash, say), a float of either sign, words whose first letter varies. (A small int or
    # strings with a common prefix leave their leading bytes constant and cluster far less,
    # in Iceberg as here.)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = np.array(["".join(w) for w in letters[rng.integers(0, 26, (5000, 6))]], dtype=object)
    for f in range(files):
        table = pa.table({
            "id": np.arange(f * per, (f + 1) * per, dtype=np.int64),
            "a": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, per),
            "b": rng.normal(0.0, 1e3, per),
            "s": pa.array(words[rng.integers(0, len(words), per)], pa.string()),
            "payload": rng.random(per).astype(np.float32),
        })
        pq.write_table(table, os.path.join(path, f"in-{f:02d}.parquet"), row_group_size=row_group)
    return path


def _read_files(out_dir):
    files = sorted(glob.glob(os.path.join(out_dir, "*.parquet")))
    return files, [pq.read_table(f) for f in files]


def _row_checksum(table):
    """Order-independent checksum of all values: the wrapping sum of per-row hashes."""
    frame = table.select(["id", "a", "b", "s", "payload"]).to_pandas()
    return int(pd.util.hash_pandas_object(frame, index=False).to_numpy().sum(dtype=np.uint64))


def _check_global_order(tables, zcol=zd.ZVALUE_COLUMN):
    previous_max = None
    for table in tables:
        z = np.asarray(codec.as_matrix(table.column(zcol)))
        keys = codec.sort_keys(z)
        assert np.all(keys[:-1] <= keys[1:]), "a file is not sorted by Z-value"
        if previous_max is not None:
            assert previous_max < keys[0], "a file's Z-range overlaps the previous file's"
        previous_max = keys[-1]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = _write_dataset(str(tmp_path_factory.mktemp("in") / "table"), ROWS, FILES)
    whole = pq.read_table(path)
    return {"path": path, "table": whole, "checksum": _row_checksum(whole)}


# A worker fetching data from a killed peer gives up after 5 s, not 30. The nannies start
# their workers, and the killed one's replacement, from a forkserver that has imported
# distributed and its optional packages once (pandas, pyarrow...), as Dask's own test suite
# does. Each spawned worker imported them anew: seconds natively, tens of CPU-seconds
# under qemu-user, whose translated code a forked process keeps. The workers are still
# separate processes that get every task pickled over TCP.
CLUSTER_CONFIG = {"distributed.comm.timeouts.connect": "5s",
                  "distributed.worker.multiprocessing-method": "forkserver"}


@pytest.fixture(scope="module")
def client():
    with dask.config.set(CLUSTER_CONFIG), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def clustered(dataset, client, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("out") / "table_z")
    result = zd.cluster(dataset["path"], out, COLUMNS, keep_zvalue=True, scheduler=client,
                        **OPTIONS)
    return out, result


def test_output_is_globally_ordered_by_z_value(clustered):
    out, result = clustered
    files, tables = _read_files(out)
    assert [os.path.basename(f) for f in files] == [os.path.basename(f.path) for f in result.files]
    assert len(files) >= 4
    _check_global_order(tables)
    for info, table in zip(result.files, tables):
        z = codec.as_matrix(table.column(zd.ZVALUE_COLUMN))
        assert (info.zmin, info.zmax) == (z[0].tobytes().hex(), z[-1].tobytes().hex())


def test_no_row_lost_or_duplicated(dataset, clustered):
    out, result = clustered
    _, tables = _read_files(out)
    table = pa.concat_tables(tables)
    assert table.num_rows == result.rows == ROWS
    assert np.array_equal(np.sort(table.column("id").to_numpy()), np.arange(ROWS))
    assert _row_checksum(table) == dataset["checksum"]
    assert table.schema.remove_metadata().field("s").type == pa.string()


def test_z_values_equal_zorder_values_of_the_whole_table(dataset, clustered):
    out, result = clustered
    _, tables = _read_files(out)
    table = pa.concat_tables(tables)
    expected = codec.as_matrix(zorder.zorder_values(dataset["table"], columns=COLUMNS))
    assert result.zvalue_size == expected.shape[1] == 24
    got = codec.as_matrix(table.column(zd.ZVALUE_COLUMN))
    ids = table.column("id").to_numpy()
    assert np.array_equal(got, expected[ids])  # the input's ids are its row numbers


def test_files_near_target_size_and_small_row_groups(clustered):
    out, result = clustered
    sizes = [f.bytes for f in result.files]
    # the estimate counts the kept 24-byte curve values (without them: 11 MB files)
    assert all(0.5 * 6e6 <= s <= 1.5 * 6e6 for s in sizes), sizes
    assert all(f.row_groups >= f.rows // 20_000 for f in result.files)
    for path in glob.glob(os.path.join(out, "*.parquet")):
        md = pq.ParquetFile(path).metadata
        assert max(md.row_group(i).num_rows for i in range(md.num_row_groups)) <= 20_000


def test_manifest_and_no_temporary_folder_left(clustered):
    out, result = clustered
    with open(os.path.join(out, zd.MANIFEST), encoding="utf-8") as fh:
        manifest = json.load(fh)
    assert manifest["rows"] == ROWS and manifest["zorder"]["columns"] == COLUMNS
    assert [f["path"] for f in manifest["files"]] == [os.path.basename(f.path) for f in result.files]
    parent = os.path.dirname(out)
    assert sorted(os.listdir(parent)) == [os.path.basename(out)]
    assert not [n for n in os.listdir(out) if n.endswith(".partial")]


def test_skipping_report_improves(dataset, clustered):
    out, _ = clustered
    report = zd.skipping_report(dataset["path"], out, COLUMNS)
    text = zd.format_report(report)
    assert all(c in text for c in COLUMNS)
    for column in COLUMNS:
        before, after = report["columns"][column]["before"], report["columns"][column]["after"]
        assert before["files"] == FILES and after["files"] >= 4
        # Random input: every row group spans almost the whole range of every column.
        assert before["row_groups_skipped"] < 0.05
        assert after["row_groups_skipped"] > before["row_groups_skipped"] + 0.15
        assert after["files_skipped"] >= before["files_skipped"]
    assert all(report["columns"][c]["after"]["files_skipped"] > 0.2 for c in ("a", "b"))


def test_worker_killed_mid_job_loses_no_data(dataset, client, tmp_path):
    """SIGKILL one of the two worker processes while files are being written: Dask's
    retries must finish the job correctly, or the job must fail with no output at all."""
    out = str(tmp_path / "killed_z")
    outcome = {}

    def job():
        try:
            outcome["result"] = zd.cluster(dataset["path"], out, COLUMNS, keep_zvalue=True,
                                           scheduler=client, **OPTIONS)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    pids = client.run(os.getpid)
    worker = threading.Thread(target=job)
    worker.start()
    deadline = time.monotonic() + 120
    pattern = os.path.join(str(tmp_path), ".killed_z.zorder-tmp-*", "part-*")
    while worker.is_alive() and not glob.glob(pattern) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker.is_alive(), "the job finished before a worker could be killed"
    os.kill(sorted(pids.values())[0], signal.SIGKILL)
    worker.join(240)
    assert not worker.is_alive()
    # The nanny restarts the killed worker: a new Python importing dask takes seconds
    # natively and minutes under qemu-user (tools/aarch64.sh sets ZORDER_EMULATED).
    client.wait_for_workers(2, timeout=300 if os.environ.get("ZORDER_EMULATED") else 60)
    if "error" in outcome:  # failed loudly, which is allowed: nothing may be left behind
        print(f"the job failed loudly, leaving no output: {outcome['error']!r}")
        assert not os.path.exists(out)
        assert os.listdir(str(tmp_path)) == []
        return
    files, tables = _read_files(out)
    table = pa.concat_tables(tables)
    assert table.num_rows == ROWS
    assert _row_checksum(table) == dataset["checksum"]
    _check_global_order(tables)
    assert sorted(os.listdir(str(tmp_path))) == ["killed_z"]
    assert not [n for n in os.listdir(out) if not n.endswith(".parquet") and n != zd.MANIFEST]


def test_failed_job_leaves_no_partial_output(tmp_path, monkeypatch):
    """A task that fails after other ranges were written: the error reaches the caller, the
    temporary folder with its finished files is removed and OUT_DIR is never touched."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 1000, 40_000), "b": rng.random(40_000)})
    ddf = dd.from_pandas(frame, npartitions=8)
    real_write = engine.write_range
    seen = []

    def write_then_fail(pdf, tmp_dir, *args):
        info = real_write(pdf, tmp_dir, *args)
        seen.append(sorted(os.listdir(tmp_dir)))
        if len(seen) == 3:
            raise RuntimeError("injected failure after two ranges were written")
        return info

    monkeypatch.setattr(engine, "write_range", write_then_fail)
    out = str(tmp_path / "out")
    os.makedirs(out)
    with pytest.raises(RuntimeError, match="injected failure"):
        zd.cluster(ddf, out, ["a", "b"], target_file_size="50kB", row_group_size=1000,
                   scheduler="sync")
    assert len(seen) == 3 and any(n.endswith(".parquet") for n in seen[1])
    assert os.listdir(out) == []  # the (empty) target folder is untouched
    assert os.listdir(str(tmp_path)) == ["out"]  # and the temporary folder is gone


def test_dataframe_input_with_many_equal_keys_never_splits_a_key(tmp_path):
    rng = np.random.default_rng(5)
    n = 60_000
    frame = pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                          "v": np.arange(n)})
    ddf = dd.from_pandas(frame, npartitions=6)
    out = str(tmp_path / "dup")
    result = zd.cluster(ddf, out, ["a", "b"], target_file_size="40kB", row_group_size=500,
                        keep_zvalue=True, scheduler="threads")
    files, tables = _read_files(out)
    assert 1 < len(files) <= 12  # 12 distinct keys at most
    _check_global_order(tables)
    table = pa.concat_tables(tables)
    assert np.array_equal(np.sort(table.column("v").to_numpy()), np.arange(n))
    assert result.rows == n


def test_cli_end_to_end_with_report_and_plot(tmp_path, capsys):
    src = _write_dataset(str(tmp_path / "in"), 60_000, 3, seed=7, row_group=2_000)
    out = str(tmp_path / "out")
    png = str(tmp_path / "skip.png")
    argv = ["cluster", src, out, "--columns", "a,s", "--target-file-size", "300kB",
            "--row-group-size", "2000", "--scheduler", "threads"]
    if zd_has_matplotlib():
        argv += ["--plot", png]
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "wrote 60,000 rows" in printed and "files before" in printed
    # (the threads scheduler runs in this process: the files are read once, no shuffle)
    assert "reading 3 files in this process" in captured.err
    assert "writing 60000 rows in 6 ranges" in captured.err
    files, tables = _read_files(out)
    assert len(files) > 1
    # Iceberg drops the Z-value column; so does zorder unless --keep-zvalue.
    assert all(zd.ZVALUE_COLUMN not in t.column_names for t in tables)
    assert tables[0].column_names == ["id", "a", "b", "s", "payload"]
    if zd_has_matplotlib():
        assert os.path.getsize(png) > 1000
    # A second run into the now non-empty OUT_DIR refuses (first for the existing plot,
    # checked before any work), then --overwrite replaces both.
    if zd_has_matplotlib():
        assert main(argv) == 2
        assert f"--plot {png!r} exists" in capsys.readouterr().err
    assert main([a for a in argv if a not in ("--plot", png)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(argv + ["--overwrite", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert sorted(os.listdir(str(tmp_path))) == sorted(["in", "out"] + (["skip.png"] if zd_has_matplotlib() else []))


def zd_has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(columns=["nope"]), ValueError, r"\['nope'\] are not in the data"),
    (dict(columns=[]), ValueError, "at least one column"),
    (dict(columns=[1]), TypeError, "columns must be"),
    (dict(columns=["a"], target_file_size="12 parsecs"), ValueError, "target_file_size"),
    (dict(columns=["a"], target_file_size=-1), ValueError, "target_file_size must be positive"),
    (dict(columns=["a"], row_group_size=0), ValueError, "row_group_size"),
    (dict(columns=["a"], scheduler="fast please"), ValueError, "scheduler"),
    (dict(columns=["a"], scheduler=3), TypeError, "scheduler"),
    (dict(columns=["a"], var_length_contribution=0), ValueError, "var_length_contribution"),
])
def test_bad_arguments_are_named(tmp_path, kwargs, error, match):
    ddf = dd.from_pandas(pd.DataFrame({"a": [1, 2, 3]}), npartitions=1)
    with pytest.raises(error, match=match):
        zd.cluster(ddf, str(tmp_path / "o"), **kwargs)
    assert not os.path.exists(str(tmp_path / "o"))
    assert os.listdir(str(tmp_path)) == []


def test_bad_data_and_out_dir(tmp_path):
    with pytest.raises(TypeError, match="data must be"):
        zd.cluster([1, 2], str(tmp_path / "o"), ["a"])
    with pytest.raises(ValueError, match="does not exist"):
        zd.cluster(str(tmp_path / "missing"), str(tmp_path / "o"), ["a"])
    src = _write_dataset(str(tmp_path / "in"), 1000, 1)
    with pytest.raises(ValueError, match="is inside the input"):
        zd.cluster(src, os.path.join(src, "z"), ["a"])
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep me")
    with pytest.raises(ValueError, match="not empty"):
        zd.cluster(src, str(full), ["a"])
    assert (full / "x").read_text() == "keep me"


def test_z_value_words_order_is_byte_order():
    rng = np.random.default_rng(11)
    for size in (1, 7, 8, 13, 24):
        m = rng.integers(0, 256, (3000, size), dtype=np.uint8)
        m[::7, : size // 2] = 0x80  # ties on leading bytes
        words = zd.zvalue_words(m)
        assert words.shape == (3000, -(-size // 8))
        by_words = np.lexsort(words.T[::-1])
        by_bytes = sorted(range(3000), key=lambda i: m[i].tobytes())
        assert [m[i].tobytes() for i in by_words] == [m[i].tobytes() for i in by_bytes]
        assert np.array_equal(codec.from_words(words, size), m)


def test_splits_are_weighted_by_partition_size():
    big = np.array([bytes([x]) for x in range(100, 200)], dtype="S1")
    small = np.array([bytes([x]) for x in range(0, 100)], dtype="S1")
    # 100 samples standing for 9,000 rows against 100 standing for 1,000 rows:
    splits = choose_splits([9000, 1000], [big, small], 10)
    assert len(splits) == 9
    # `small` holds the first tenth of all rows, so only the first split can fall in it,
    # within an eighth of a range (125 rows: 12.5 of its keys) of its end; unweighted
    # quantiles would put it at 0x14.
    assert splits[0] >= b"\x57" and all(s >= b"\x64" for s in splits[1:])
    assert choose_splits([5], [small[:5]], 1).size == 0


def test_splits_sit_on_curve_cell_edges():
    rng = np.random.default_rng(3)
    keys = np.sort(rng.integers(0, 2**16, 4000).astype(">u2")).view("S2")
    # four ranges: the quadrants of the top two bits, exactly
    assert choose_splits([4000], [keys], 4).tolist() == [b"\x40", b"\x80", b"\xc0"]
    # a key range with no edge near a quantile keeps the nearest coarsest edge in reach
    few = np.array([b"\x10\x01", b"\x10\x02", b"\x10\x03", b"\x10\x04"], dtype="S2")
    assert choose_splits([4], [few], 2).tolist() == [b"\x10\x02"]
    # equal keys: nothing to split on
    assert choose_splits([9], [np.array([b"ab"] * 9, dtype="S2")], 3).size == 0


def test_file_cuts_keep_equal_keys_together():
    keys = np.array([b"a"] * 5 + [b"b"] * 5 + [b"c"] * 2, dtype="S1")
    cuts = file_cuts(keys, 3)
    assert cuts[0] == 0 and cuts[-1] == 12
    for c in cuts[1:-1]:
        assert keys[c - 1] != keys[c]


def test_file_cuts_land_on_curve_cells():
    # 3,000 sorted 2-byte curve values whose top bit turns on at row 1,400: equal
    # row-count files of 1,500 rows would cut at 1,500, in the middle of the second
    # cell; the cut moves back to the cell's first row (files of 1,400 and 1,600 rows,
    # within the size tolerance).
    rng = np.random.default_rng(1)
    low = np.sort(rng.integers(0, 1 << 15, 1400).astype(np.uint16))
    high = np.sort(rng.integers(0, 1 << 15, 1600).astype(np.uint16)) | np.uint16(1 << 15)
    matrix = np.concatenate([low, high]).astype(">u2").view(np.uint8).reshape(-1, 2)
    keys = matrix.copy().view("S2").ravel()
    assert file_cuts(keys, 1500) == [0, 1400, 3000]
    # A cell boundary out of reach (the top bit turning on at row 1,000, more than an
    # eighth of a file from the equal cut) leaves the cut near the middle.
    early = np.concatenate([low[:1000], high, high[:400]])
    early_keys = np.sort(early).astype(">u2").view(np.uint8).reshape(-1, 2).copy().view("S2").ravel()
    cuts = file_cuts(early_keys, 1500)
    assert len(cuts) == 3 and abs(cuts[1] - 1500) <= 1500 // 8
    # Equal keys still share a file, whatever the cells say.
    ties = np.array([b"\x00\x01"] * 1400 + [b"\x80\x00"] * 1600, dtype="S2")
    assert file_cuts(ties, 1500) == [0, 1400, 3000]
    assert file_cuts(np.array([b"\x05\x05"] * 3000, dtype="S2"), 1500) == [0, 3000]


def test_parse_size():
    assert zd.parse_size("128MB") == 128_000_000
    assert zd.parse_size("128MiB") == 128 * 2**20
    assert zd.parse_size("1.5kB") == 1500
    assert zd.parse_size(10) == 10
    with pytest.raises(TypeError, match="target"):
        zd.parse_size(True, "target")
    with pytest.raises(ValueError):
        zd.parse_size("MB")


def test_a_bad_value_names_its_partition(tmp_path):
    """The row index of an out-of-range value is counted in its partition: the message
    says which one (it read as row 2 of the frame, which is row 6)."""
    ts = np.array([0, 1, 2, 3, 4, 5, 2**62, 7], "datetime64[s]")
    ddf = dd.from_pandas(pd.DataFrame({"t": ts, "a": np.arange(8)}), npartitions=2)
    with pytest.raises(ValueError, match=r"^partition 1's column 't': a timestamp is out of "
                                         r"the range .* \(first at index 2\)$"):
        zd.cluster(ddf, str(tmp_path / "out"), ["t", "a"], scheduler="sync")
    assert os.listdir(str(tmp_path)) == []


def test_a_range_task_sorts_on_its_own_thread(tmp_path, monkeypatch):
    """The scheduler already runs a task on each core, so a range's sort (here past
    PARALLEL_ROWS rows, where a sort outside a task takes every core) stays on the
    task's thread."""
    import importlib

    from zorder.values._radix import PARALLEL_ROWS

    sort_module = importlib.import_module("zorder.values.sort")   # (not the function)

    used = []
    real = sort_module.argsort_rows

    def recording(values, scratch=None, threads=1):
        used.append((len(values), threads))
        return real(values, scratch, threads)

    monkeypatch.setattr(sort_module, "argsort_rows", recording)
    n = PARALLEL_ROWS + 1000
    rng = np.random.default_rng(3)
    ddf = dd.from_pandas(pd.DataFrame({"a": rng.integers(0, 2**40, n),
                                       "b": rng.integers(0, 2**40, n)}), npartitions=2)
    result = zd.cluster(ddf, str(tmp_path / "out"), ["a", "b"], scheduler="sync")
    assert result.rows == n
    big = [threads for rows, threads in used if rows >= PARALLEL_ROWS]
    assert big and set(big) == {1}, used
