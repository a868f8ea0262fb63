"""`python -m zorder sort` end to end on small Parquet files, and the skipping report."""

import datetime
import os
import sys

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import zorder  # noqa: E402
from zorder.parquet import skipping as _skipping  # noqa: E402
from zorder.parquet import sort as _parquet  # noqa: E402
from zorder.__main__ import main  # noqa: E402

N = 3000


def make_table(n=N, seed=5):
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, n)
    b = rng.normal(0, 100, n)
    s = np.char.add("id-", rng.integers(0, 10**6, n).astype("U6")).astype(object)
    s[rng.random(n) < 0.05] = None
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    ts = pa.array(rng.integers(0, 86400 * 10**6 * 30, n), pa.int64()).cast(
        pa.timestamp("us", tz="UTC"))
    a_masked = pa.array(a, mask=rng.random(n) < 0.05)
    return pa.table({
        "rid": np.arange(n),
        "a": a_masked,
        "b": b,
        "s": pa.array(s, pa.string()),
        "ts": ts,
    }), start


@pytest.fixture
def parquet_in(tmp_path):
    table, _ = make_table()
    path = tmp_path / "in.parquet"
    pq.write_table(table, path, row_group_size=250)
    return path, table


def zvalues_bytes(table, columns, **kw):
    return zorder.zorder_values(table, columns=columns, **kw).to_pylist()


def test_cli_end_to_end(parquet_in, tmp_path, capsys):
    src, table = parquet_in
    out = tmp_path / "out.parquet"
    rc = main(["sort", str(src), str(out), "--columns", "a,s,ts",
               "--var-length-contribution", "4", "--max-output-size", "18",
               "--progress", "always"])
    assert rc == 0
    captured = capsys.readouterr()
    result = pq.read_table(out)
    # The same rows, as a permutation of the input ...
    rids = result.column("rid").to_pylist()
    assert sorted(rids) == list(range(N))
    assert result.schema.equals(table.schema, check_metadata=False)
    assert result.equals(table.take(rids))
    # ... ordered by Z-value (Iceberg's options passed through), stably.
    kw = {"var_length_contribution": 4, "max_output_size": 18}
    z = zvalues_bytes(result, ["a", "s", "ts"], **kw)
    assert all(x <= y for x, y in zip(z, z[1:]))
    expected = zorder.sort_indices(table, columns=["a", "s", "ts"], **kw)
    assert rids == expected.tolist()
    # Row groups of the input's size; the report and the progress bar.
    md = pq.ParquetFile(out).metadata
    assert md.num_row_groups == N // 250
    assert "wrote 3,000 rows in 12 row groups" in captured.out
    assert "18-byte Z-values" in captured.out
    assert "row groups a reader can skip" in captured.out
    for column in ("a", "s", "ts"):
        assert any(line.split()[:1] == [column] for line in captured.out.splitlines())
    assert "zorder sort: writing" in captured.err and "100%" in captured.err


def test_report_shows_clustering_gain(parquet_in, tmp_path):
    src, _ = parquet_in
    out = tmp_path / "by_a.parquet"
    result = _parquet.sort_parquet(str(src), str(out), ["a"])
    report = result["report"]
    before = report["columns"]["a"]["before"]
    after = report["columns"]["a"]["after"]
    assert before["row_groups"] == after["row_groups"] == 12
    # One column: Z-order is plain order; a 1% range touches one or two row groups.
    assert before["row_groups_skipped"] < 0.2
    assert after["row_groups_skipped"] > 0.8
    assert after["row_groups_skipped_mean"] == pytest.approx(after["row_groups_skipped"] * 12)
    text = _skipping.format_report(report)
    assert "before" in text and "after" in text and "of 12" in text


def test_cli_subprocess(parquet_in, tmp_path, run_python):
    src, _ = parquet_in
    out = tmp_path / "sub.parquet"
    proc = run_python("-m", "zorder", "sort", str(src), str(out), "--columns", "b,a",
                      "--iceberg", "1.11", "--no-report", "--compression", "zstd")
    assert proc.returncode == 0, proc.stderr
    assert "row groups a reader can skip" not in proc.stdout
    assert proc.stderr == ""  # no progress bar: not a terminal, and a small file
    md = pq.ParquetFile(out).metadata
    assert md.row_group(0).column(0).compression == "ZSTD"
    result = pq.read_table(out)
    z = zvalues_bytes(result, ["b", "a"], iceberg="1.11")
    assert all(x <= y for x, y in zip(z, z[1:]))


def test_cli_errors(parquet_in, tmp_path, capsys):
    # Usage errors exit 2, as argparse does and as every zorder command does.
    src, _ = parquet_in
    out = tmp_path / "out.parquet"
    assert main(["sort", str(src), str(out), "--columns", "a,nope"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err
    assert main(["sort", str(tmp_path / "missing.parquet"), str(out), "--columns", "a"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sort", str(src), str(src), "--columns", "a"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert main(["sort", str(src), str(out), "--columns", "a", "--no-report"]) == 0
    assert main(["sort", str(src), str(out), "--columns", "a"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["sort", str(src), str(out), "--columns", "a", "--overwrite",
                 "--no-report"]) == 0
    for bad in (["--columns", "a,,b"], ["--columns", "a", "--max-output-size", "0"],
                ["--columns", "a", "--var-length-contribution", "x"]):
        with pytest.raises(SystemExit):
            main(["sort", str(src), str(out)] + bad)
    # The library's own checks of these options, worded with the flag, before any work.
    capsys.readouterr()
    for flag, value, said in (("--iceberg", "9", "must be a release"),
                              ("--spark", "3", "must be '4'"),
                              ("--rank-bits", "12", "must be a multiple of 8"),
                              ("--rank-bits", "x", "expected an integer")):
        with pytest.raises(SystemExit) as stop:
            main(["sort", str(src), str(out), "--columns", "a", "--overwrite", flag, value])
        assert stop.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"error: argument {flag}: {said}" in last, last
    # --rank-bits without --encoding rank was ignored
    assert main(["sort", str(src), str(out), "--columns", "a", "--overwrite",
                 "--rank-bits", "16"]) == 2
    assert "--rank-bits is for --encoding rank" in capsys.readouterr().err
    assert not [p for p in os.listdir(tmp_path) if "zorder-tmp" in p]


def numpy_out_of_memory():
    np.empty(2**62, np.uint8)   # (numpy's own MemoryError: no address space is that large)


def raising(exc):
    def fail():
        raise exc
    return fail


@pytest.mark.parametrize("fail, said", [
    (numpy_out_of_memory, "error: out of memory (Unable to allocate 4.00 EiB"),
    (raising(pa.lib.ArrowMemoryError("realloc of size 16777216 failed")),
     "error: out of memory (realloc of size 16777216 failed)"),
    (raising(MemoryError()), "error: out of memory (MemoryError)"),
    (raising(RuntimeError("can't start new thread")), "error: could not start a thread"),
])
def test_running_out_of_memory_is_one_line_and_keeps_the_output(
        fail, said, parquet_in, tmp_path, capsys, monkeypatch):
    """A command out of memory printed a 20-40 line traceback; now one line, status 1, with
    the old output and no temporary file left."""
    src, _ = parquet_in
    out = tmp_path / "out.parquet"
    out.write_bytes(b"the old output")

    def no_memory(*args, **kwargs):
        fail()

    monkeypatch.setattr(_parquet, "sort_order", no_memory)
    assert main(["sort", str(src), str(out), "--columns", "a,b", "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err
    assert "about 4 times their size in Arrow" in err
    assert out.read_bytes() == b"the old output"
    assert not [p for p in os.listdir(tmp_path) if "zorder-tmp" in p]


def test_other_runtime_errors_still_show_their_traceback(parquet_in, tmp_path, monkeypatch):
    """Only the thread-start failure is turned into one line: a bug stays visible."""
    src, _ = parquet_in

    def bug(*args, **kwargs):
        raise RuntimeError("an internal bug")

    monkeypatch.setattr(_parquet, "sort_order", bug)
    with pytest.raises(RuntimeError, match="an internal bug"):
        main(["sort", str(src), str(tmp_path / "o.parquet"), "--columns", "a,b"])


def test_cli_without_pyarrow(monkeypatch, capsys, tmp_path):
    # As if pyarrow were not installed: the real check must say which extra brings it.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert main(["sort", "a.parquet", str(tmp_path / "b.parquet"), "--columns", "x"]) == 2
    assert "pip install 'zorder[arrow]'" in capsys.readouterr().err


def test_empty_file(tmp_path):
    table, _ = make_table(0)
    src = tmp_path / "empty.parquet"
    pq.write_table(table, src)
    result = _parquet.sort_parquet(str(src), str(tmp_path / "o.parquet"), ["a", "s"])
    assert result["rows"] == 0
    assert pq.read_table(tmp_path / "o.parquet").num_rows == 0


@pytest.mark.parametrize("rows", [N, 0])
@pytest.mark.parametrize("encoding, curve, cap, size", [
    ("rank", "zorder", 2, 2), ("rank", "zorder", None, 4), ("iceberg", "zorder", 12, 12),
    ("iceberg", "zorder", None, 16), ("iceberg", "hilbert", None, 24), ("rank", "hilbert", None, 6),
])
def test_zvalue_bytes_is_the_width_of_the_sorted_values(tmp_path, capsys, rows, encoding,
                                                         curve, cap, size):
    """zvalue_bytes (and the command's "N-byte Z-values") is the size of the values the
    rows were sorted by: with encoding="rank" and max_output_size=2 it said 4, the two
    16-bit ranks uncapped, while the values had 2 bytes."""
    table, _ = make_table(rows)
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    columns = ["a", "b"] if curve == "zorder" else ["a", "b", "s"]
    result = _parquet.sort_parquet(str(src), str(tmp_path / "o.parquet"), columns,
                                   encoding=encoding, curve=curve, max_output_size=cap,
                                   var_length_contribution=8, report=False)
    assert result["zvalue_bytes"] == size
    if rows:
        values = (zorder.hilbert_values if curve == "hilbert" else zorder.zorder_values)(
            table, columns=columns, encoding=encoding,
            **({} if cap is None else {"max_output_size": cap}))
        assert values.type.byte_width == size
    flags = ["--encoding", encoding, "--curve", curve, "--no-report", "--overwrite"]
    assert main(["sort", str(src), str(tmp_path / "o.parquet"), "--columns", ",".join(columns)]
                + flags + ([] if cap is None else ["--max-output-size", str(cap)])) == 0
    assert f"({size}-byte {'Hilbert' if curve == 'hilbert' else 'Z'}-values" in capsys.readouterr().out


# -- the reusable skipping functions ----------------------------------------------------

def test_range_predicates_and_can_skip():
    assert _skipping.range_predicates(list(range(1000)), 0.01, 3) == [
        (165, 174), (495, 504), (825, 834)]
    assert _skipping.range_predicates([], 0.01, 3) == []
    g = _skipping.RowGroupStats(0, 0, 10, 5, 9, False)
    assert _skipping.can_skip(g, 10, 20) and _skipping.can_skip(g, 0, 4)
    assert not _skipping.can_skip(g, 9, 9) and not _skipping.can_skip(g, 0, 5)
    assert _skipping.can_skip(_skipping.RowGroupStats(0, 0, 3, None, None, True), 0, 1)
    assert not _skipping.can_skip(_skipping.RowGroupStats(0, 0, 3, None, None, False), 0, 1)
    assert not _skipping.can_skip(g, "a", "b")  # incomparable: never skipped
    with pytest.raises(ValueError, match="fraction"):
        _skipping.range_predicates([1], 1.5)
    with pytest.raises(ValueError, match="predicates"):
        _skipping.range_predicates([1], 0.1, 0)


def test_row_group_stats_folders_and_nulls(tmp_path):
    folder = tmp_path / "ds"
    (folder / "part=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2, 3, 4], "y": [None, None, 5, 6]}),
                   folder / "part=1" / "f0.parquet", row_group_size=2)
    pq.write_table(pa.table({"x": [10, 20]}), folder / "f1.parquet")
    (folder / "_SUCCESS").write_text("")
    files = _skipping.parquet_files(folder)
    assert [os.path.basename(f) for f in files] == ["f1.parquet", "f0.parquet"]
    stats = _skipping.row_group_stats(files, "y")
    assert [(s.file, s.min, s.max, s.all_null) for s in stats] == [
        (0, None, None, False), (1, None, None, True), (1, 5, 6, False)]
    report = _skipping.skipping_report(folder, files[1:], ["x"], predicates=4, fraction=0.2)
    side = report["columns"]["x"]["before"]
    assert side["files"] == 2 and side["row_groups"] == 3
    assert 0 < side["row_groups_skipped"] <= 1
    with pytest.raises(ValueError, match="no such Parquet file"):
        _skipping.parquet_files(tmp_path / "nothing")


def test_sample_values_handles_nan_and_strings(tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"f": [float("nan"), 1.0, None, -2.0],
                             "s": ["b", None, "a", "c"]}), path)
    assert _skipping.sample_values(path, "f") == [-2.0, 1.0]
    assert _skipping.sample_values(path, "s") == ["a", "b", "c"]
    assert _skipping.sample_values(path, "missing") == []


def test_cli_checks_types_and_folder_before_reading(tmp_path, capsys):
    src = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"l": pa.array([[1], [2]]), "x": [1, 2]}), src)
    assert main(["sort", str(src), str(tmp_path / "o.parquet"), "--columns", "x,l"]) == 2
    assert "column 'l': unsupported Arrow type list" in capsys.readouterr().err
    assert main(["sort", str(src), str(tmp_path / "no" / "o.parquet"), "--columns", "x"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_row_group_write_failing_on_the_writer_thread_is_raised_and_cleaned(
        parquet_in, tmp_path, monkeypatch):
    """The groups are written on a thread of their own: its error reaches the caller,
    and the half-written file is gone (the old output kept)."""
    src, _ = parquet_in
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    real = pq.ParquetWriter.write_table
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    with pytest.raises(OSError, match="disk full"):
        _parquet.sort_parquet(src, out, ["a", "s"], row_group_size=500, overwrite=True,
                              report=False)
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]


def test_curve_columns_read_apart_give_the_whole_read_s_file(parquet_in, tmp_path):
    """The curve columns are read first and the others beside them; a file whose names
    cannot be read apart (a dotted name) is read whole: both are the same rewrite."""
    src, table = parquet_in
    dotted = tmp_path / "dotted.parquet"
    pq.write_table(table.rename_columns(["rid", "a", "b.x", "s", "ts"]), dotted,
                   row_group_size=250)
    _parquet.sort_parquet(src, tmp_path / "o1.parquet", ["a", "s"], report=False)
    _parquet.sort_parquet(dotted, tmp_path / "o2.parquet", ["a", "s"], report=False)
    one, two = pq.read_table(tmp_path / "o1.parquet"), pq.read_table(tmp_path / "o2.parquet")
    assert one.column_names == table.column_names
    assert one.rename_columns(two.column_names).equals(two)
    perm = zorder.sort_indices(table, columns=["a", "s"])
    assert one.equals(table.take(perm).replace_schema_metadata(one.schema.metadata))
