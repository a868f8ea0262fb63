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
# which 1.12 (the default, the newest release) shares and 1.11 lacks. Its inputs hold no
# null boolean.
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


FLOAT_CASES = [c for c in CASES if {"float", "double"} & set(load(c)[0]["spark_types"])]


@pytest.mark.parametrize("iceberg", [None, "1.12", "1.12.0"])
def test_the_default_and_1_12_give_the_spark_runs_float_bytes(iceberg):
    """The Spark run's float and double bytes are main's (PR 17071), which 1.12 has."""
    keywords = {} if iceberg is None else {"iceberg": iceberg}
    assert FLOAT_CASES
    for case in FLOAT_CASES:
        meta, table = load(case)
        for name, kind in zip(meta["columns"], meta["spark_types"]):
            if kind not in ("float", "double"):
                continue
            expected = binary_matrix(table.column(f"ordered_bytes__{name}"), 8)
            np.testing.assert_array_equal(zorder.ordered_bytes(table.column(name), **keywords),
                                          expected, err_msg=f"{case}: {name}")
            legacy = zorder.ordered_bytes(table.column(name), iceberg="1.11")
            assert not np.array_equal(legacy, expected), f"{case}: {name}"


def null_boolean_record():
    record = json.loads((SPARK / "boolean_null_behaviour.json").read_text())
    n = len(record["columns"])
    rows = [row[-n:] for row in record["input"]]   # each row: its index, then the columns
    table = pa.table({name: pa.array([row[i] for row in rows])
                      for i, name in enumerate(record["columns"])})
    assert table.column(1).null_count == 1
    return record, table


def test_null_boolean_fails_in_spark_and_with_1_11():
    """What the Spark run recorded (its UDF predates the null-boolean fix, PRs 17669 /
    18077, as 1.11 and every earlier release does): zorder raises for those releases."""
    record, table = null_boolean_record()
    assert record["outcome"]["zorder"]["has_NullPointerException"]
    for release in ("1.11", "1.11.1", "legacy", "1.10"):
        with pytest.raises(ValueError, match="column 'c_boolean': a null BOOLEAN"):
            zorder.zorder_values(table, iceberg=release)


@pytest.mark.parametrize("iceberg", [None, "1.12", "1.12.1", "main"])
def test_null_boolean_is_zeros_by_default_and_in_1_12(iceberg):
    """The default (1.12) and main have the fix: a null boolean is 8 zero bytes, like
    false; the rows without a null keep the bytes the Spark run recorded."""
    record, table = null_boolean_record()
    keywords = {} if iceberg is None else {"iceberg": iceberg}
    got = zorder.values.codec.as_matrix(zorder.zorder_values(table, **keywords))
    for index, hexed in record["outcome"]["zorder_non_null_rows"]:
        assert bytes(got[index]).hex() == hexed
    null_as_false = pa.table({"c_bigint": table.column(0), "c_boolean": pa.array([True, False, False])})
    np.testing.assert_array_equal(
        got, zorder.values.codec.as_matrix(zorder.zorder_values(null_as_false, iceberg="1.11")))
    hilbert = zorder.hilbert_values(table, record["columns"], **keywords)
    assert zorder.values.codec.as_matrix(hilbert).shape == (3, 16)


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
