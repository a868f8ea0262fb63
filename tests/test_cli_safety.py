"""Issue 12, items 1-2: the data-loss matrix for `zorder sort` and `zorder cluster`.

Every case names the input under another spelling (equal, relative, `..`, a symbolic link
either way, a hard link, nested both ways) and runs the command with and without
--overwrite. The command must refuse with one `error:` line that says the output is (or
holds, or is inside) the input, exit non-zero, and leave the input's bytes and the
output's old content exactly as they were.
"""

import os
import sys
import re

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fs_snapshot import snapshot  # noqa: E402

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder.__main__ import main  # noqa: E402

ROWS = 200


def write_table(path, seed=0):
    rng = np.random.default_rng(seed)
    pq.write_table(pa.table({"a": rng.integers(-1000, 1000, ROWS),
                             "b": rng.normal(size=ROWS)}), path)


def cli(capsys, *argv):
    """(exit code, stderr) of `zorder ARGV`; a raw exception is a failure of its own."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    except Exception as exc:  # noqa: BLE001 - the test reports it as a traceback
        pytest.fail(f"zorder {' '.join(argv)} raised {type(exc).__name__}: {exc} "
                    "instead of one error line")
    return rc, capsys.readouterr().err


def assert_refused(rc, err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc not in (0, None), f"the command was not refused: {err!r}"
    assert lines and lines[-1].startswith("error:"), err
    # The word, not part of a path such as pytest's tmp_path
    assert re.search(r"(?<![\w/.-])input(?![\w/.-])", lines[-1]), \
        f"the error does not say the output is the input: {err!r}"


# ---------------------------------------------------------------------------------------
# zorder sort IN.parquet OUT.parquet


@pytest.fixture
def sort_dir(tmp_path, monkeypatch):
    write_table(tmp_path / "in.parquet")
    (tmp_path / "sub").mkdir()
    os.symlink(".", tmp_path / "same")                      # same -> .
    os.symlink("in.parquet", tmp_path / "link.parquet")     # link.parquet -> in.parquet
    os.link(tmp_path / "in.parquet", tmp_path / "hard.parquet")
    monkeypatch.chdir(tmp_path)
    return tmp_path


SORT_CASES = {
    # name: (IN, OUT), both relative to the fixture's folder (the working directory)
    "equal": ("in.parquet", "in.parquet"),
    "absolute vs relative": ("in.parquet", "{root}/in.parquet"),
    "dot-dot": ("in.parquet", "sub/../in.parquet"),
    "symlinked folder": ("in.parquet", "same/in.parquet"),
    "symlink to the input": ("in.parquet", "link.parquet"),
    "input through a symlink": ("link.parquet", "in.parquet"),
    "hard link": ("in.parquet", "hard.parquet"),
    "hard link through a symlinked folder": ("same/hard.parquet", "in.parquet"),
}


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
@pytest.mark.parametrize("case", list(SORT_CASES))
def test_sort_refuses_the_input_under_any_name(sort_dir, capsys, case, overwrite):
    src, out = (p.format(root=sort_dir) for p in SORT_CASES[case])
    before = snapshot(sort_dir / "in.parquet")
    kinds = {n: os.path.islink(sort_dir / n) for n in ("link.parquet", "same")}
    rc, err = cli(capsys, "sort", src, out, "--columns", "a,b", "--no-report",
                  *(["--overwrite"] if overwrite else []))
    assert snapshot(sort_dir / "in.parquet") == before
    assert os.stat(sort_dir / "in.parquet").st_ino == os.stat(sort_dir / "hard.parquet").st_ino
    assert kinds == {n: os.path.islink(sort_dir / n) for n in kinds}, "a link was replaced"
    assert_refused(rc, err)


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
def test_sort_refuses_a_fifo_output(sort_dir, capsys, overwrite):
    os.mkfifo(sort_dir / "fifo")
    rc, err = cli(capsys, "sort", "in.parquet", "fifo", "--columns", "a", "--no-report",
                  *(["--overwrite"] if overwrite else []))
    assert os.path.exists(sort_dir / "fifo") and not os.path.isfile(sort_dir / "fifo"), \
        "the fifo was replaced by a file"
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc not in (0, None) and lines[-1].startswith("error:") and "fifo" in lines[-1], err


def test_sort_refuses_a_device_output(sort_dir, capsys):
    """A device node (made here, so that no real /dev entry is ever at risk)."""
    try:
        os.mknod(sort_dir / "null", 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    rc, err = cli(capsys, "sort", "in.parquet", "null", "--columns", "a", "--no-report",
                  "--overwrite")
    assert not os.path.isfile(sort_dir / "null"), "the device node was replaced by a file"
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc not in (0, None) and lines[-1].startswith("error:") and "device" in lines[-1], err


def test_sort_leaves_an_unrelated_output_alone_when_refused(sort_dir, capsys):
    write_table(sort_dir / "other.parquet", seed=9)
    before = snapshot(sort_dir / "other.parquet")
    rc, err = cli(capsys, "sort", "in.parquet", "other.parquet", "--columns", "a",
                  "--no-report")
    assert rc not in (0, None) and snapshot(sort_dir / "other.parquet") == before


def test_sort_apart_output_still_works(sort_dir, capsys):
    rc, err = cli(capsys, "sort", "same/in.parquet", "sub/out.parquet", "--columns", "a,b",
                  "--no-report")
    assert rc == 0, err
    assert pq.read_table(sort_dir / "sub" / "out.parquet").num_rows == ROWS


# ---------------------------------------------------------------------------------------
# zorder cluster IN_DIR OUT_DIR


@pytest.fixture
def cluster_dir(tmp_path, monkeypatch):
    """data/ (the input, two files), out/data/ (an input inside an old output), links."""
    pytest.importorskip("dask.dataframe")
    for root in (tmp_path / "data", tmp_path / "out" / "data"):
        root.mkdir(parents=True)
        write_table(root / "part-0.parquet", seed=1)
        write_table(root / "part-1.parquet", seed=2)
    (tmp_path / "out" / "old.txt").write_bytes(b"old output")
    os.symlink(tmp_path / "out" / "data", tmp_path / "in_link")  # in_link -> out/data
    os.symlink("data", tmp_path / "d_link")                      # d_link -> data
    os.symlink(".", tmp_path / "same")                           # same -> .
    os.mkdir(tmp_path / "single")
    os.link(tmp_path / "data" / "part-0.parquet", tmp_path / "single" / "x.parquet")
    monkeypatch.chdir(tmp_path)
    return tmp_path


CLUSTER_CASES = {
    # name: (IN_DIR, OUT_DIR, the folders whose content must not change)
    "equal": ("data", "data", ["data"]),
    "equal, relative and ..": ("data", "same/../data", ["data"]),
    "equal through a symlink": ("d_link", "data", ["data"]),
    "equal through a symlinked parent": ("data", "same/data", ["data"]),
    "output symlink to the input": ("data", "d_link", ["data"]),
    "output inside the input": ("data", "data/z", ["data"]),
    "output inside the input through a symlink": ("data", "d_link/z", ["data"]),
    "input inside the output": ("out/data", "out", ["out"]),
    "input inside the output through a symlink": ("in_link", "out", ["out"]),
    "input file hard-linked inside the output": ("data/part-0.parquet", "single",
                                                 ["data", "single"]),
}


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
@pytest.mark.parametrize("case", list(CLUSTER_CASES))
def test_cluster_refuses_the_input_under_any_name(cluster_dir, capsys, case, overwrite):
    src, out, guarded = CLUSTER_CASES[case]
    before = {g: snapshot(cluster_dir / g) for g in guarded}
    rc, err = cli(capsys, "cluster", src, out, "--columns", "a", "--scheduler", "sync",
                  "--quiet", "--no-report", *(["--overwrite"] if overwrite else []))
    for g in guarded:
        assert snapshot(cluster_dir / g) == before[g], f"{g}/ changed"
    assert os.path.islink(cluster_dir / "d_link") and os.path.islink(cluster_dir / "in_link")
    assert_refused(rc, err)
    stray = [n for n in os.listdir(cluster_dir) + os.listdir(cluster_dir / "data")
             if ".zorder-" in n]
    assert stray == [], f"leftovers: {stray}"


def test_cluster_api_refuses_a_dataframe_read_from_out_dir(cluster_dir):
    dd = pytest.importorskip("dask.dataframe")
    from zorder.dask import cluster

    before = snapshot(cluster_dir / "data")
    ddf = dd.read_parquet(str(cluster_dir / "data"))
    with pytest.raises(ValueError, match="input"):
        cluster(ddf, str(cluster_dir / "d_link"), ["a"], overwrite=True, scheduler="sync")
    assert snapshot(cluster_dir / "data") == before
    with pytest.raises(ValueError, match="input"):
        cluster(ddf, str(cluster_dir / "data"), ["a"], overwrite=True, scheduler="sync")
    assert snapshot(cluster_dir / "data") == before


def test_cluster_apart_output_still_works(cluster_dir, capsys):
    rc, err = cli(capsys, "cluster", "d_link", "fresh", "--columns", "a,b", "--scheduler",
                  "sync", "--quiet", "--no-report")
    assert rc == 0, err
    assert pq.read_table(cluster_dir / "fresh").num_rows == 2 * ROWS
    rc, err = cli(capsys, "cluster", "data", "fresh", "--columns", "a", "--scheduler",
                  "sync", "--quiet", "--no-report", "--overwrite")
    assert rc == 0, err
    assert [n for n in os.listdir(cluster_dir) if ".zorder-" in n] == []


# ---------------------------------------------------------------------------------------
# --plot: a second output, held to the same rules and checked before any work


def plot_refused(rc, err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc not in (0, None), f"the command was not refused: {err!r}"
    assert len(lines) == 1 and lines[0].startswith("error: --plot"), err
    return lines[0]


SORT_PLOT_CASES = {
    # name: (--plot, the words of the error)
    "the input": ("in.parquet", "is the input"),
    "a symlink to the input": ("link.parquet", "is the input"),
    "a hard link to the input": ("hard.parquet", "is the input"),
    "the input through a symlinked folder": ("same/in.parquet", "is the input"),
    "the output": ("out.parquet", "is the output"),
    "the output, spelled otherwise": ("sub/../out.parquet", "is the output"),
}


@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
@pytest.mark.parametrize("case", list(SORT_PLOT_CASES))
def test_sort_plot_is_never_the_input_or_the_output(sort_dir, capsys, case, overwrite):
    pytest.importorskip("matplotlib")
    plot, words = SORT_PLOT_CASES[case]
    before = snapshot(sort_dir / "in.parquet")
    rc, err = cli(capsys, "sort", "in.parquet", "out.parquet", "--columns", "a,b",
                  "--plot", plot, *(["--overwrite"] if overwrite else []))
    assert words in plot_refused(rc, err)
    assert snapshot(sort_dir / "in.parquet") == before
    assert not os.path.exists(sort_dir / "out.parquet"), "the sort ran before the refusal"


CLUSTER_PLOT_CASES = {
    "inside the input": ("data/p.png", "is inside the input"),
    "inside the input through a symlink": ("d_link/p.png", "is inside the input"),
    "a symlink to an input file": ("in_file.png", "is inside the input"),
    "inside OUT_DIR": ("fresh/p.png", "is inside OUT_DIR"),
    "OUT_DIR itself": ("fresh", "is OUT_DIR"),
}


@pytest.mark.parametrize("case", list(CLUSTER_PLOT_CASES))
def test_cluster_plot_is_never_in_the_input_or_out_dir(cluster_dir, capsys, case):
    pytest.importorskip("matplotlib")
    os.symlink("data/part-0.parquet", cluster_dir / "in_file.png")
    plot, words = CLUSTER_PLOT_CASES[case]
    before = snapshot(cluster_dir / "data")
    rc, err = cli(capsys, "cluster", "data", "fresh", "--columns", "a", "--scheduler", "sync",
                  "--quiet", "--overwrite", "--plot", plot)
    assert words in plot_refused(rc, err)
    assert snapshot(cluster_dir / "data") == before
    assert not os.path.exists(cluster_dir / "fresh"), "the cluster ran before the refusal"
    assert os.path.islink(cluster_dir / "in_file.png")


def test_plot_problems_are_found_before_the_work(sort_dir, capsys):
    pytest.importorskip("matplotlib")
    (sort_dir / "taken.png").write_bytes(b"someone's picture")
    for plot, words in (("missing/p.png", "does not exist"),
                        ("p.txt", "cannot write .txt"),
                        ("taken.png", "exists; pass"),
                        ("sub", "a folder")):
        rc, err = cli(capsys, "sort", "in.parquet", "out.parquet", "--columns", "a",
                      "--plot", plot)
        assert words in plot_refused(rc, err), plot
        assert not os.path.exists(sort_dir / "out.parquet"), plot
    assert (sort_dir / "taken.png").read_bytes() == b"someone's picture"


def test_plot_is_written_whole_and_replaced_only_with_overwrite(sort_dir, capsys):
    pytest.importorskip("matplotlib")
    rc, err = cli(capsys, "sort", "in.parquet", "out.parquet", "--columns", "a,b",
                  "--plot", "p.png")
    assert rc == 0, err
    assert (sort_dir / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rc, err = cli(capsys, "sort", "in.parquet", "out.parquet", "--columns", "a,b",
                  "--plot", "p.svg", "--overwrite")
    assert rc == 0, err
    assert b"<svg" in (sort_dir / "p.svg").read_bytes()[:400]
    assert [n for n in os.listdir(sort_dir) if ".zorder-" in n] == []


def test_empty_paths_are_named(sort_dir, capsys):
    rc, err = cli(capsys, "sort", "in.parquet", "", "--columns", "a", "--no-report")
    assert rc not in (0, None) and err.strip() == "error: output is an empty path"
    rc, err = cli(capsys, "sort", "", "out.parquet", "--columns", "a", "--no-report")
    assert rc not in (0, None) and err.strip() == "error: the input is an empty path"


@pytest.mark.parametrize("row_group_size", [0, -5, 1.5, True, 1 << 63])
def test_sort_parquet_checks_row_group_size_before_the_output(sort_dir, row_group_size):
    """A row group size of 0 or less wrote an empty file over the output (overwrite=True)."""
    from zorder.parquet.sort import sort_parquet

    write_table(sort_dir / "old.parquet", seed=5)
    before = snapshot(sort_dir / "old.parquet")
    with pytest.raises(ValueError, match="row_group_size must be a positive int"):
        sort_parquet("in.parquet", "old.parquet", ["a"], row_group_size=row_group_size,
                     overwrite=True, report=False)
    with pytest.raises(ValueError, match="predicates must be a positive int"):
        sort_parquet("in.parquet", "old.parquet", ["a"], predicates=0, overwrite=True)
    assert snapshot(sort_dir / "old.parquet") == before
