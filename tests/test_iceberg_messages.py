"""Issue 37, requirement 7: ``zorder iceberg rewrite`` as a shell user meets it. Each case
through the command line: its exit status and its one line, no PyIceberg traceback."""

import os
import sys

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_iceberg import catalog, make_table  # noqa: E402,F401

from zorder.cli import main, shell_message  # noqa: E402


def run(capsys, *argv):
    code = main(["iceberg", "rewrite", *argv])
    captured = capsys.readouterr()
    return code, captured.out.strip().splitlines(), captured.err.strip().splitlines()


@pytest.fixture
def flags(tmp_path):
    return ["--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db", "--warehouse",
            f"file://{tmp_path}/wh", "--quiet"]


def test_a_table_name_without_a_namespace(catalog, flags, capsys):
    make_table(catalog, name="events", appends=1, rows=50)
    code, _, err = run(capsys, "events", "--columns", "l", *flags)
    assert code == 2 and err == [
        "error: table 'events' has no namespace: name it NAMESPACE.TABLE, e.g. db.events "
        "(namespaces in catalog 'test': db)"]


def test_a_misspelled_column_in_where(catalog, flags, capsys):
    make_table(catalog, name="where", appends=1, rows=50)
    code, _, err = run(capsys, "db.where", "--columns", "l", "--where", "ll > 3", *flags)
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: --where: the table has no column 'll'; its columns are b, i, l")


def test_a_uri_whose_database_holds_another_catalog_names_it(catalog, tmp_path, capsys):
    make_table(catalog, name="other", appends=1, rows=50)
    code, _, err = run(capsys, "db.other", "--columns", "l", "--uri",
                       f"sqlite:///{tmp_path}/catalog.db", "--quiet")
    assert code == 2 and err == [
        f"error: no table 'db.other' in catalog 'default': its database "
        f"sqlite:///{tmp_path}/catalog.db holds tables of catalog 'test' only; name it with "
        f"--catalog test"]


def test_a_misspelled_sqlite_path_creates_no_catalog(catalog, tmp_path, capsys):
    code, _, err = run(capsys, "db.t", "--columns", "l", "--catalog", "test", "--uri",
                       f"sqlite:///{tmp_path}/catalgo.db", "--quiet")
    assert code == 2 and err == [
        f"error: --uri sqlite:///{tmp_path}/catalgo.db: there is no SQLite database "
        f"'{tmp_path}/catalgo.db' (a misspelled path? it was not created)"]
    assert not os.path.exists(tmp_path / "catalgo.db")


def test_messages_name_flags_not_keywords(catalog, flags, capsys):
    make_table(catalog, name="flags", appends=1, rows=50)
    code, _, err = run(capsys, "db.flags", "--columns", "l", "--target-file-size", "1MB",
                       "--min-file-size", "2MB", *flags)
    assert code == 2 and err == [
        "error: --min-file-size 2000000 must be below the target file size (1000000): every "
        "new file would be too small"]
    code, _, err = run(capsys, "db.flags", "--columns", "l", "--where", "l >", *flags)
    assert code == 2 and err[0].startswith("error: --where: cannot parse")
    assert shell_message("out 'x' exists; pass overwrite=True (--overwrite on the command "
                         "line) to replace it") == "out 'x' exists; pass --overwrite to replace it"
    assert shell_message("name it with case_sensitive=True (--case-sensitive)") == \
        "name it with --case-sensitive"


def test_overwrite_is_named_as_a_flag_by_sort(tmp_path, capsys):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2, 3], "b": [3, 2, 1]}), tmp_path / "in.parquet")
    (tmp_path / "out.parquet").write_bytes(b"x")
    code = main(["sort", str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet"),
                 "--columns", "a,b"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--overwrite" in err[0]
    assert "overwrite=True" not in err[0]


def test_rewrite_help_shows_the_rewrites_own_options(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["iceberg", "rewrite", "--help"])
    out = capsys.readouterr().out
    assert exit.value.code == 0
    for flag in ("--columns", "--where", "--min-file-size", "--rewrite-all",
                 "--min-overlap-depth", "--dry-run"):
        assert flag in out


def test_identity_partition_columns_dropped_are_reported(catalog, flags, capsys):
    make_table(catalog, name="ident", spec="identity", appends=1, rows=50)
    code, out, _ = run(capsys, "db.ident", "--columns", "l,CAT", "--no-report", *flags)
    assert code == 0
    assert out[0] == ("note: cat is an identity-partition column, constant in each "
                      "partition: dropped from --columns (as Iceberg's rewrite drops it)")


def test_the_skipping_report_counts_row_groups(catalog, flags, capsys):
    """One file per partition: no file can be skipped before or after, but row groups in
    the clustered files can."""
    table = make_table(catalog, name="groups", spec="identity", appends=0,
                       properties={"write.parquet.row-group-limit": "500"})
    rng = np.random.default_rng(3)
    data = pa.table({"l": pa.array(rng.integers(-10**12, 10**12, 6000)),
                     "d": pa.array(rng.normal(size=6000) * 1e3),
                     "cat": pa.array(["abc"[k % 3] for k in range(6000)])})
    table.append(data.cast(pa.schema([table.schema().as_arrow().field(n) for n in data.schema.names])))
    code, out, _ = run(capsys, "db.groups", "--columns", "l,d", *flags)
    assert code == 0
    assert out[1].startswith("files and row groups a reader can skip")
    rows = {line.split()[0]: line.split(")")[:-1] for line in out[3:]}
    groups_before, groups_after, files_before, files_after = rows["d"]
    share = [int(g.split()[-1].strip("(%")) for g in rows["d"]]
    assert share[1] >= share[0] + 20, rows
    assert files_before.split()[-1] == files_after.split()[-1] == "(0%", rows


def test_a_misspelled_column_in_columns(catalog, flags, capsys):
    make_table(catalog, name="cols", appends=1, rows=50)
    code, _, err = run(capsys, "db.cols", "--columns", "l,zz", *flags)
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: --columns: the table has no column 'zz'; its columns are "
                             "b, i, l, ")
    code, _, err = run(capsys, "db.cols", "--columns", "L", "--case-sensitive", *flags)
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: --columns: the table has no column 'L' "
                             "(--case-sensitive); its columns are b, i, l, ")
