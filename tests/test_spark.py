"""zorder.spark: the Arrow function of the Spark recipe, and the recipe itself in local mode.

The Arrow function (what ``mapInArrow`` calls) is tested with pyarrow alone. The recipe runs
on pyspark in local mode when pyspark and a Java runtime are installed; the test extra does
not pull pyspark in (see docs/spark.md), so CI skips that one test.
"""

import datetime as dt
import shutil

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import zorder  # noqa: E402
from zorder.spark import ZVALUE_COLUMN, zvalue_batches  # noqa: E402


def _table(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "i": pa.array(rng.integers(-2**31, 2**31 - 1, n), pa.int32()),
        "d": rng.normal(0, 1e6, n),
        "s": pa.array([None if k % 17 == 0 else f"{chr(97 + k % 26)}{k}" for k in range(n)]),
        "ts": pa.array([base + dt.timedelta(seconds=int(x), microseconds=int(x) % 1000)
                        for x in rng.integers(0, 10**8, n)], pa.timestamp("us", tz="UTC")),
    })


def _matrix(z):
    if isinstance(z, pa.ChunkedArray):
        z = z.combine_chunks()
    width = z.type.byte_width if pa.types.is_fixed_size_binary(z.type) else None
    rows = z.to_pylist()
    width = width or len(rows[0])
    return np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), width)


def test_zvalue_batches_append_zorder_values_as_spark_binary():
    table = _table()
    columns = ["i", "d", "s", "ts"]
    out = list(zvalue_batches(table.to_batches(max_chunksize=700), columns))
    assert len(out) == 8
    result = pa.Table.from_batches(out)
    assert result.schema.field(ZVALUE_COLUMN).type == pa.binary()
    assert result.drop_columns([ZVALUE_COLUMN]).equals(table)
    expected = _matrix(zorder.zorder_values(table, columns=columns))
    assert np.array_equal(_matrix(result.column(ZVALUE_COLUMN)), expected)


def test_zvalue_batches_pass_iceberg_options():
    table = _table(300)
    out = pa.Table.from_batches(list(zvalue_batches(
        table.to_batches(), ["s", "d"], zvalue_column="z", var_length_contribution=16,
        max_output_size=20, iceberg="1.11")))
    expected = zorder.zorder_values(table, columns=["s", "d"], var_length_contribution=16,
                                    max_output_size=20, iceberg="1.11")
    assert np.array_equal(_matrix(out.column("z")), _matrix(expected))
    assert _matrix(out.column("z")).shape == (300, 20)


def test_zvalue_batches_errors_name_the_argument():
    batch = _table(10).to_batches()[0]
    with pytest.raises(ValueError, match=r"\['nope'\]"):
        list(zvalue_batches([batch], ["nope"]))
    with pytest.raises(ValueError, match="zvalue_column 'id'"):
        list(zvalue_batches([batch], ["i"], zvalue_column="id"))
    with pytest.raises(TypeError, match="RecordBatch"):
        list(zvalue_batches([{"i": [1]}], ["i"]))


def _spark_or_skip():
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("pyspark is installed but no Java runtime is on PATH")
    from pyspark.sql import SparkSession

    return pyspark, (SparkSession.builder.master("local[2]").appName("zorder-test")
                     .config("spark.ui.enabled", "false")
                     .config("spark.sql.session.timeZone", "UTC")
                     .config("spark.sql.shuffle.partitions", "4")
                     .getOrCreate())


def test_spark_recipe_in_local_mode():
    _, spark = _spark_or_skip()
    from pyspark.sql.functions import spark_partition_id

    from zorder.spark import zorder_dataframe

    try:
        table = _table(20_000, seed=3)
        df = spark.createDataFrame(table)
        columns = ["i", "d", "s", "ts"]
        out = zorder_dataframe(df, columns, num_partitions=5, keep_zvalue=True)
        got = out.withColumn("pid", spark_partition_id()).toArrow()
        assert got.num_rows == 20_000
        assert sorted(got.column("id").to_pylist()) == list(range(20_000))
        z = _matrix(got.column(ZVALUE_COLUMN))
        keys = z.view(f"S{z.shape[1]}").ravel()
        assert np.all(keys[:-1] <= keys[1:])  # collected in partition order: globally sorted
        pids = got.column("pid").to_numpy()
        assert np.all(np.diff(pids) >= 0) and len(set(pids)) == 5
        # Spark's own Arrow batches give the bytes zorder_values gives the same table.
        expected = _matrix(zorder.zorder_values(table, columns=columns))
        assert np.array_equal(z, expected[got.column("id").to_numpy()])
        dropped = zorder_dataframe(df, columns)
        assert ZVALUE_COLUMN not in dropped.columns and dropped.count() == 20_000
        with pytest.raises(ValueError, match="nope"):
            zorder_dataframe(df, ["nope"])
    finally:
        spark.stop()
