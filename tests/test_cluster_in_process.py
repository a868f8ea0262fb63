"""zorder cluster on a scheduler in this process (threads, sync): the Parquet files are
read once with pyarrow and the rows sorted once, with no shuffle. The rows come out in
the order the Dask path gives them, every column of every row group is read once, and
a bad file or value is named."""

import glob
import json
import os

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder import dask as zd  # noqa: E402
from zorder.values.rank import RankBoundaries  # noqa: E402

COLUMNS = ["a", "b"]
OPTIONS = dict(target_file_size="100kB", keep_zvalue=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("in") / "table"
    path.mkdir()
    rng = np.random.default_rng(11)
    per = 10_000
    for f in range(3):
        pq.write_table(pa.table({
            "id": np.arange(f * per, (f + 1) * per, dtype=np.int64),
            "a": rng.integers(0, 300, per),           # repeats: ties in curve value
            "b": rng.normal(0.0, 10.0, per),
            "s": pa.array([f"w{x}" for x in rng.integers(0, 50, per)]),
        }), str(path / f"in-{f}.parquet"), row_group_size=2_000)
    return str(path)


def _in_order(result):
    tables = [pq.read_table(f.path) for f in result.files]
    return pa.concat_tables(tables)


def _dask_frame(path):
    return dd.read_parquet(sorted(glob.glob(os.path.join(path, "*.parquet"))),
                           dtype_backend="pyarrow", index=False)


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_the_rows_come_in_the_dask_paths_order(dataset, tmp_path, scheduler):
    here = zd.cluster(dataset, str(tmp_path / "here"), COLUMNS, scheduler=scheduler,
                      **OPTIONS)
    # a Dask DataFrame takes the survey, the shuffle and write_range
    shuffled = zd.cluster(_dask_frame(dataset), str(tmp_path / "dask"), COLUMNS,
                          scheduler="threads", **OPTIONS)
    assert here.rows == shuffled.rows == 30_000 and len(here.files) > 2
    ours, theirs = _in_order(here), _in_order(shuffled)
    assert ours.column("id").equals(theirs.column("id"))  # ties in input order, both
    assert ours.column(zd.ZVALUE_COLUMN).equals(theirs.column(zd.ZVALUE_COLUMN))
    assert ours.column_names == ["id", "a", "b", "s", zd.ZVALUE_COLUMN]
    assert ours.schema.field("s").type == pa.string()


def test_rank_boundaries_learned_here_give_the_dask_paths_order(dataset, tmp_path):
    here = zd.cluster(dataset, str(tmp_path / "here"), COLUMNS, scheduler="threads",
                      encoding="rank", **OPTIONS)
    with open(os.path.join(here.out_dir, zd.MANIFEST)) as fh:
        learned = RankBoundaries.from_dict(json.load(fh)["zorder"]["rank_boundaries"])
    shuffled = zd.cluster(_dask_frame(dataset), str(tmp_path / "dask"), COLUMNS,
                          scheduler="threads", encoding="rank", boundaries=learned, **OPTIONS)
    assert _in_order(here).column("id").equals(_in_order(shuffled).column("id"))


def test_every_row_group_column_is_read_once(dataset, tmp_path, monkeypatch):
    reads = []
    read_row_group = pq.ParquetFile.read_row_group

    def counted(self, i, columns=None, **kwargs):
        table = read_row_group(self, i, columns=columns, **kwargs)
        reads.extend((id(self), i, name) for name in table.column_names)
        return table
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    result = zd.cluster(dataset, str(tmp_path / "z"), COLUMNS, scheduler="threads", **OPTIONS)
    assert result.rows == 30_000
    # 3 files of 5 row groups, 4 columns each: every one once
    assert len({(file, group) for file, group, _ in reads}) == 3 * 5
    assert len(reads) == len(set(reads)) == 3 * 5 * 4


def test_a_bad_value_names_its_file_and_its_row_there(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    t = np.arange(10, dtype=np.int64)
    pq.write_table(pa.table({"t": pa.array(t, pa.timestamp("ms")), "a": t}),
                   data / "p0.parquet")
    t[6] = 2**62   # milliseconds past what Iceberg's microseconds hold
    pq.write_table(pa.table({"t": pa.array(t, pa.timestamp("ms")), "a": t}),
                   data / "p1.parquet")
    with pytest.raises(ValueError, match=r"p1\.parquet'\'s column 't': .* \(first at index "
                                         r"6\)$"):
        zd.cluster(str(data), str(tmp_path / "out"), ["t", "a"], scheduler="threads")
    assert sorted(os.listdir(tmp_path)) == ["data"]


def test_a_file_whose_values_do_not_fit_the_first_files_types_is_named(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32())}), data / "p0.parquet")
    pq.write_table(pa.table({"a": pa.array([3, 2**40], pa.int64())}), data / "p1.parquet")
    with pytest.raises(ValueError, match=r"p1\.parquet' does not cast to the first file's "
                                         r"column types"):
        zd.cluster(str(data), str(tmp_path / "out"), ["a"], scheduler="sync")
    assert sorted(os.listdir(tmp_path)) == ["data"]


def test_an_interrupt_stops_the_reader_at_its_next_row_group(dataset, monkeypatch):
    """Ctrl-C while a thread reads the other columns: the job ends after that thread's
    current row group, not after the whole read (threads cannot be killed)."""
    import threading
    import time

    from zorder.engines.cluster_in_process import survey_files
    from zorder.values.ordering import Ordering

    read_row_group = pq.ParquetFile.read_row_group
    groups = []

    def slow(self, i, columns=None, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            groups.append(i)
            time.sleep(0.3)         # 15 row groups: 4.5 s for the whole read
        return read_row_group(self, i, columns=columns, **kwargs)

    def ctrl_c(self, data, columns):
        raise KeyboardInterrupt
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", slow)
    monkeypatch.setattr(Ordering, "parts", ctrl_c)
    files = sorted(glob.glob(os.path.join(dataset, "*.parquet")))
    schema = pq.read_schema(files[0])
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        survey_files(files, schema, COLUMNS, Ordering.of(), 100, "zstd", False, False)
    assert time.monotonic() - start < 2.0 and len(groups) < 6
    assert not [t for t in threading.enumerate() if t.name.startswith("zorder-reader")]


def test_a_dotted_column_name_is_read_with_the_rest(dataset, tmp_path):
    """A dotted name could be a nested field's path: the columns are then read at once,
    by sort's rule (``curve_columns_first``), and every value still arrives."""
    data = tmp_path / "dotted"
    data.mkdir()
    for path in sorted(glob.glob(os.path.join(dataset, "*.parquet"))):
        table = pq.read_table(path)
        pq.write_table(table.rename_columns(["id", "a", "b", "s.x"]),
                       str(data / os.path.basename(path)), row_group_size=2_000)
    here = zd.cluster(str(data), str(tmp_path / "here"), COLUMNS, scheduler="threads",
                      **OPTIONS)
    plain = zd.cluster(dataset, str(tmp_path / "plain"), COLUMNS, scheduler="threads",
                       **OPTIONS)
    ours, theirs = _in_order(here), _in_order(plain)
    assert ours.column_names == ["id", "a", "b", "s.x", zd.ZVALUE_COLUMN]
    assert ours.column("id").equals(theirs.column("id"))
    assert ours.column("s.x").equals(theirs.column("s"))


def test_learned_boundaries_resample_only_rows_of_unequal_weight():
    """Partitions sampled at one rate are a uniform sample already: their rows give the
    boundaries as they are. At different rates, each row counts by its partition's size."""
    from zorder.engines.dask_stages import learn_boundaries
    from zorder.values.ordering import Ordering
    from zorder.values.rank import rank_columns

    ordering = Ordering.of(encoding="rank", rank_bits=8)
    rng = np.random.default_rng(3)
    one = [rng.integers(0, 256, (1000, 8), dtype=np.uint8)]
    two = [rng.integers(0, 256, (500, 8), dtype=np.uint8)]
    learned = learn_boundaries(ordering, [10_000], [one], ["x"]).boundaries
    assert learned == RankBoundaries.from_ordered(one, 8, ["x"])
    learned = learn_boundaries(ordering, [10_000, 5_000], [one, two], ["x"]).boundaries
    assert learned == RankBoundaries.from_ordered([np.concatenate([one[0], two[0]])], 8, ["x"])
    # 9,000 rows of one value sampled 1,000 times, 1,000 of another all sampled: each
    # value's rank is the middle of its share of the range, nine tenths and one tenth
    # (unweighted, a half each: 64 and 192).
    low, high = np.full((1, 8), 1, np.uint8), np.full((1, 8), 2, np.uint8)
    learned = learn_boundaries(ordering, [9_000, 1_000], [[low.repeat(1000, 0)],
                                                          [high.repeat(1000, 0)]], ["x"]).boundaries
    [ranks] = rank_columns([np.concatenate([low, high])], learned)
    assert 0.40 * 256 < ranks[0, 0] < 0.50 * 256 and 0.90 * 256 < ranks[1, 0]
