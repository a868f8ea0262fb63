"""Iceberg's own Spark UDFs on real rows (tests/data/spark/, see its README): every
ICEZVALUE (and each column's ordered bytes) that Spark computed, zorder gives too."""

import json
import pathlib

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import zorder  # noqa: E402

SPARK = pathlib.Path(__file__).parent / "data" / "spark"
# The build that computed these (README, _run_info.json): ZOrderByteUtils from Iceberg main
# 7f879b1, with PR 17071's float fix, so the float and double bytes are iceberg="main"'s,
# not those of the default (the newest release, 1.11). Its inputs hold no null boolean.
BUILD = "main"
JAVA_INT_MAX = 2**31 - 1
CASES = sorted(p.stem for p in SPARK.glob("*.json")
               if not p.stem.startswith("_") and "file" in json.loads(p.read_text()))


def load(case):
    meta = json.loads((SPARK / f"{case}.json").read_text())
    return meta, pq.read_table(SPARK / meta["file"])


def binary_matrix(column, width):
    rows = column.to_pylist()
    assert all(r is not None and len(r) == width for r in rows)
    return np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), width)


def test_every_case_is_here():
    assert len(CASES) >= 10 and "all_types" in CASES


@pytest.mark.parametrize("case", CASES)
def test_ordered_bytes_of_each_column(case):
    meta, table = load(case)
    length = meta["zorder"]["var_length_contribution"]
    for name in meta["columns"]:
        expected = table.column(f"ordered_bytes__{name}")
        width = len(next(v for v in expected.to_pylist() if v is not None))
        got = zorder.ordered_bytes(table.column(name), length if width != 8 else 8, iceberg=BUILD)
        np.testing.assert_array_equal(got, binary_matrix(expected, width), err_msg=f"{case}: {name}")


@pytest.mark.parametrize("case", CASES)
def test_zorder_values_equal_icezvalue(case, backend):
    meta, table = load(case)
    spec = meta["zorder"]
    cap = None if spec["max_output_size"] == JAVA_INT_MAX else spec["max_output_size"]
    got = zorder.zorder_values(table, columns=meta["columns"], backend=backend.name,
                               var_length_contribution=spec["var_length_contribution"],
                               max_output_size=cap, iceberg=BUILD)
    (width,) = spec["output_lengths_seen"]
    expected = binary_matrix(table.column("ICEZVALUE"), width)
    np.testing.assert_array_equal(zorder.values.codec.as_matrix(got), expected, err_msg=case)


def test_null_boolean_fails_in_spark_and_by_default():
    """What the Spark run recorded (its UDF predates main's null-boolean fix, PRs 17669 /
    18077, as every release does): zorder's default, the newest release, raises too."""
    record = json.loads((SPARK / "boolean_null_behaviour.json").read_text())
    assert record["outcome"]["zorder"]["has_NullPointerException"]
    n = len(record["columns"])
    rows = [row[-n:] for row in record["input"]]   # each row: its index, then the columns
    table = pa.table({name: pa.array([row[i] for row in rows])
                      for i, name in enumerate(record["columns"])})
    assert table.column(1).null_count == 1
    with pytest.raises(ValueError, match="column 'c_boolean': a null BOOLEAN"):
        zorder.zorder_values(table)
    assert zorder.zorder_values(table, iceberg="main").to_pylist()[1] is not None


HILBERT_CASES = [c for c in CASES if load(c)[0].get("hilbert")]


def test_hilbert_cases_are_here():
    assert len(HILBERT_CASES) >= 8 and "all_types" in HILBERT_CASES


@pytest.mark.parametrize("case", HILBERT_CASES)
def test_hilbert_values_equal_icehvalue(case, backend):
    meta, table = load(case)
    (width,) = meta["hilbert"]["output_lengths_seen"]
    expected = binary_matrix(table.column("ICEHVALUE"), width)
    got = zorder.hilbert_values(table, meta["columns"], backend=backend.name, iceberg=BUILD)
    np.testing.assert_array_equal(zorder.values.codec.as_matrix(got), expected, err_msg=case)


@pytest.mark.parametrize("case", HILBERT_CASES)
def test_sort_by_hilbert_is_the_order_of_icehvalue(case):
    meta, table = load(case)
    (width,) = meta["hilbert"]["output_lengths_seen"]
    expected = binary_matrix(table.column("ICEHVALUE"), width)
    perm = zorder.sort_indices(table, columns=meta["columns"], curve="hilbert", iceberg=BUILD)
    np.testing.assert_array_equal(perm, zorder.argsort_zvalues(expected))


def test_hilbert_refuses_zorder_only_options():
    meta, table = load(HILBERT_CASES[0])
    with pytest.raises(ValueError, match="Z-order options"):
        zorder.sort_indices(table, columns=meta["columns"], curve="hilbert",
                            var_length_contribution=16)
    with pytest.raises(ValueError, match="curve must be one of 'zorder', 'hilbert'"):
        zorder.sort_indices(table, columns=meta["columns"], curve="peano")
