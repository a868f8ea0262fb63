"""The Hilbert curve through the commands: sort and cluster order rows by Iceberg's
ICEHVALUE, and the skipping report compares curves on the same data."""

import json
import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import zorder  # noqa: E402
from zorder.__main__ import main  # noqa: E402
from zorder.parquet.sort import sort_parquet  # noqa: E402

ROWS = 20_000


@pytest.fixture
def table():
    rng = np.random.default_rng(7)
    return pa.table({"x": rng.normal(size=ROWS), "y": rng.integers(-10**6, 10**6, ROWS),
                     "s": [f"k{v:06d}" for v in rng.integers(0, 10**6, ROWS)]})


def hvalues(t, columns):
    return zorder.values.codec.as_matrix(zorder.hilbert_values(t, columns))


def is_sorted(matrix):
    keys = zorder.values.codec.sort_keys(matrix)
    return bool(np.all(keys[:-1] <= keys[1:]))


def test_sort_parquet_in_hilbert_order(tmp_path, table):
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src, row_group_size=1000)
    result = sort_parquet(str(src), str(out), ["x", "y"], curve="hilbert")
    written = pq.read_table(out)
    assert written.num_rows == ROWS and result["zvalue_bytes"] == 16
    assert is_sorted(hvalues(written, ["x", "y"]))
    assert not is_sorted(zorder.values.codec.as_matrix(zorder.zorder_values(written, columns=["x", "y"])))
    assert sorted(written.column("y").to_pylist()) == sorted(table.column("y").to_pylist())


def test_sort_both_reports_each_curve(tmp_path, table, capsys):
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src, row_group_size=1000)
    assert main(["sort", str(src), str(out), "--columns", "x,y", "--curve", "both"]) == 0
    text = capsys.readouterr().out
    assert "row groups zorder" in text and "row groups hilbert" in text
    written = pq.read_table(out)        # the file itself is in Z-order
    assert is_sorted(zorder.values.codec.as_matrix(zorder.zorder_values(written, columns=["x", "y"])))
    report = sort_parquet(str(src), str(tmp_path / "o2.parquet"), ["x", "y"], curve="both")["report"]
    for column in ("x", "y"):
        entry = report["columns"][column]
        assert set(entry) == {"before", "zorder", "hilbert"}
        assert entry["hilbert"]["row_groups_skipped"] > entry["before"]["row_groups_skipped"]


def test_sort_refuses_an_unknown_curve(tmp_path, table, capsys):
    src = tmp_path / "in.parquet"
    pq.write_table(table, src)
    with pytest.raises(SystemExit):
        main(["sort", str(src), str(tmp_path / "o.parquet"), "--columns", "x", "--curve", "peano"])
    with pytest.raises(ValueError, match="curve must be"):
        sort_parquet(str(src), str(tmp_path / "o.parquet"), ["x"], curve="peano")
    assert not os.path.exists(tmp_path / "o.parquet")


def test_cluster_in_hilbert_order(tmp_path, table):
    pytest.importorskip("dask.dataframe")
    from zorder.dask import cluster

    data = tmp_path / "data"
    data.mkdir()
    for i in range(2):
        pq.write_table(table.slice(i * ROWS // 2, ROWS // 2), data / f"p{i}.parquet")
    result = cluster(str(data), str(tmp_path / "out"), ["x", "s"], curve="hilbert",
                     target_file_size="100kB", keep_zvalue=True, scheduler="sync")
    assert result.rows == ROWS and result.zvalue_size == 16
    manifest = json.loads((tmp_path / "out" / "_zorder.json").read_text())
    assert manifest["zorder"]["curve"] == "hilbert"
    assert manifest["zorder"]["zvalue_column"] == "ICEHVALUE"
    pieces = [pq.read_table(f.path) for f in result.files]
    whole = pa.concat_tables(pieces)
    kept = np.frombuffer(b"".join(whole.column("ICEHVALUE").to_pylist()), np.uint8).reshape(ROWS, 16)
    np.testing.assert_array_equal(kept, hvalues(whole, ["x", "s"]))
    assert is_sorted(kept)   # globally: files in order, rows in order within each


def test_cluster_refuses_zorder_only_options_for_hilbert(tmp_path, table):
    pytest.importorskip("dask.dataframe")
    from zorder.dask import cluster

    pq.write_table(table, tmp_path / "in.parquet")
    with pytest.raises(ValueError, match="Z-order options"):
        cluster(str(tmp_path / "in.parquet"), str(tmp_path / "out"), ["x"], curve="hilbert",
                var_length_contribution=16)
    assert not os.path.exists(tmp_path / "out")


def test_sort_compares_encodings_and_curves(tmp_path, table, capsys):
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src, row_group_size=1000)
    assert main(["sort", str(src), str(out), "--columns", "x,y", "--compare", "encoding,curve"]) == 0
    text = capsys.readouterr().out
    for name in ("iceberg/zorder", "iceberg/hilbert", "rank/zorder", "rank/hilbert"):
        assert f"row groups {name}" in text
    report = sort_parquet(str(src), str(tmp_path / "o2.parquet"), ["x", "y"], compare=("encoding",))
    assert set(report["report"]["columns"]["x"]) == {"before", "iceberg", "rank"}
    # --rank-bits belongs to the rank layout only (the comparison's Iceberg layout was
    # given it too, and refused, after the output was written)
    assert main(["sort", str(src), str(tmp_path / "o5.parquet"), "--columns", "x,y", "--encoding",
                 "rank", "--rank-bits", "8", "--compare", "encoding"]) == 0
    assert "row groups iceberg" in capsys.readouterr().out
    with pytest.raises(ValueError, match="rank_bits is for encoding='rank'"):
        sort_parquet(str(src), str(tmp_path / "o6.parquet"), ["x"], rank_bits=8)
    assert not (tmp_path / "o6.parquet").exists()
    with pytest.raises(ValueError, match="compare must name"):
        sort_parquet(str(src), str(tmp_path / "o3.parquet"), ["x"], compare=("speed",))
    with pytest.raises(SystemExit):
        main(["sort", str(src), str(tmp_path / "o4.parquet"), "--columns", "x", "--compare", "speed"])


def test_sort_with_rank_encoding_orders_by_ranks(tmp_path, table):
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, src, row_group_size=1000)
    result = sort_parquet(str(src), str(out), ["x", "y"], encoding="rank", rank_bits=8)
    assert result["zvalue_bytes"] == 2
    written = pq.read_table(out)
    expected = zorder.sort(table, ["x", "y"], encoding="rank", rank_bits=8)
    assert written.column("y").to_pylist() == expected.column("y").to_pylist()


def test_hilbert_values_with_rank_encoding(table):
    h = zorder.hilbert_values(table, ["x", "y"], encoding="rank", rank_bits=16)
    assert zorder.values.codec.as_matrix(h).shape == (ROWS, 4)
    with pytest.raises(ValueError, match="encoding must be"):
        zorder.hilbert_values(table, ["x"], encoding="ranked")


def test_cluster_with_rank_encoding_records_and_reuses_boundaries(tmp_path, table):
    pytest.importorskip("dask.dataframe")
    from zorder.dask import cluster
    from zorder.values.rank import RankBoundaries

    data = tmp_path / "data"
    data.mkdir()
    for i in range(2):
        pq.write_table(table.slice(i * ROWS // 2, ROWS // 2), data / f"p{i}.parquet")
    result = cluster(str(data), str(tmp_path / "out"), ["x", "y"], encoding="rank",
                     target_file_size="100kB", keep_zvalue=True, scheduler="sync")
    assert result.rows == ROWS and result.zvalue_size == 4
    manifest = json.loads((tmp_path / "out" / "_zorder.json").read_text())
    assert manifest["zorder"]["encoding"] == "rank" and manifest["zorder"]["rank_bits"] == 16
    b = RankBoundaries.from_dict(manifest["zorder"]["rank_boundaries"])
    whole = pa.concat_tables([pq.read_table(f.path) for f in result.files])
    kept = np.frombuffer(b"".join(whole.column("ICEZVALUE").to_pylist()), np.uint8).reshape(ROWS, 4)
    expected = zorder.values.codec.as_matrix(
        zorder.zorder_values(whole, columns=["x", "y"], encoding="rank", boundaries=b))
    np.testing.assert_array_equal(kept, expected)
    assert is_sorted(kept)
    # A later increment given the same boundaries (CLI: --boundaries out/_zorder.json).
    assert main(["cluster", str(data), str(tmp_path / "out2"), "--columns", "x,y", "--encoding",
                 "rank", "--boundaries", str(tmp_path / "out" / "_zorder.json"), "--scheduler",
                 "sync", "--quiet", "--no-report"]) == 0
    again = json.loads((tmp_path / "out2" / "_zorder.json").read_text())
    assert again["zorder"]["rank_boundaries"] == manifest["zorder"]["rank_boundaries"]


def test_sort_plots_every_layout(tmp_path, table, capsys):
    pytest.importorskip("matplotlib")
    src, png = tmp_path / "in.parquet", tmp_path / "skip.png"
    pq.write_table(table, src, row_group_size=1000)
    assert main(["sort", str(src), str(tmp_path / "o.parquet"), "--columns", "x,y",
                 "--compare", "encoding,curve", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["sort", str(src), str(tmp_path / "o2.parquet"), "--columns", "x",
                 "--plot", str(png), "--no-report"]) == 2
    assert "--no-report" in capsys.readouterr().err
