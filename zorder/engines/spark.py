"""Iceberg's Z-order clustering recipe on Spark, with ``zorder`` computing the Z-values.

Spark's own pieces do the distributed work, exactly as Iceberg's
``SparkZOrderFileRewriteRunner`` arranges them: ``mapInArrow`` adds the Z-value column to
each Arrow batch (the function below, :func:`zvalue_batches`), ``repartitionByRange`` cuts
the whole table into ranges of Z-values from a sample, and ``sortWithinPartitions`` sorts
each range. Spark orders BINARY as unsigned bytes, left to right, which is the order of
the Z-values. See ``docs/spark.md``.

>>> from zorder.spark import zorder_dataframe                          # doctest: +SKIP
>>> zorder_dataframe(df, ["ts", "user_id"]).write.parquet("events_z")  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from typing import Iterable, Iterator, Optional, Sequence

from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption
from zorder.values.codec import ZVALUE_COLUMN, to_arrow
from zorder.values.ordering import Ordering
from zorder.values.table import check_column_names

__all__ = ["ZVALUE_COLUMN", "zvalue_batches", "zvalue_schema", "zorder_dataframe"]


def zvalue_batches(batches: Iterable, columns: Sequence[str], *,
                   zvalue_column: str = ZVALUE_COLUMN, var_length_contribution: int = 8,
                   max_output_size: Optional[int] = None, iceberg: str = ICEBERG_DEFAULT,
                   spark: str = "4", timestamp: TimestampOption = None,
                   options: Optional[IcebergOptions] = None) -> Iterator:
    """For ``DataFrame.mapInArrow``: each pyarrow RecordBatch with its Z-values appended.

    The Z-values are :func:`zorder.zorder_values` of ``columns`` (Iceberg's Spark UDF), as a
    ``binary`` column named ``zvalue_column`` (Spark's BinaryType arrives and leaves as Arrow
    ``binary``, so the FixedSizeBinary result is cast to it). Arrow types are Spark's:
    TimestampType is ``timestamp[us, tz]``, TimestampNTZType ``timestamp[us]``, DateType
    ``date32``, which ``zorder_values`` maps as Iceberg's UDF maps the Spark types.
    The Iceberg options come as keywords or as one ``options`` (``IcebergOptions``).
    """
    ordering = Ordering.of(options, var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    return _with_zvalues(batches, columns, zvalue_column, ordering)


def _with_zvalues(batches: Iterable, columns: Sequence[str], zvalue_column: str,
                  ordering: Ordering) -> Iterator:
    """``zvalue_batches`` of one ``Ordering``."""
    import pyarrow as pa

    for batch in batches:
        if not isinstance(batch, pa.RecordBatch):
            raise TypeError(f"batches must yield pyarrow RecordBatches, not {type(batch).__name__}")
        cols = check_column_names(columns, batch.schema.names)
        if zvalue_column in batch.schema.names:
            raise ValueError(f"zvalue_column {zvalue_column!r} is already a column of the data")
        z = to_arrow(ordering.matrix(pa.Table.from_batches([batch]), cols)).cast(pa.binary())
        yield pa.RecordBatch.from_arrays(
            list(batch.columns) + [z],
            schema=batch.schema.append(pa.field(zvalue_column, pa.binary(), nullable=False)),
        )


def zvalue_schema(schema, zvalue_column: str = ZVALUE_COLUMN):
    """A Spark StructType with the Z-value column (BinaryType, not null) appended."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    return StructType(list(schema.fields) + [StructField(zvalue_column, BinaryType(), False)])


def zorder_dataframe(df, columns: Sequence[str], *, num_partitions: Optional[int] = None,
                     keep_zvalue: bool = False, zvalue_column: str = ZVALUE_COLUMN,
                     var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                     iceberg: str = ICEBERG_DEFAULT, spark: str = "4",
                     timestamp: TimestampOption = None, options: Optional[IcebergOptions] = None):
    """``df`` (a pyspark DataFrame) range-partitioned and sorted by Iceberg's Z-value.

    ``num_partitions``: output partitions (files when written); default Spark's
    ``spark.sql.shuffle.partitions``. The Z-value column is dropped unless ``keep_zvalue``.
    The Iceberg options come as keywords or as one ``options`` (``IcebergOptions``).
    """
    try:
        from pyspark.sql import DataFrame
        from pyspark.sql.functions import col
    except ImportError as exc:
        raise ImportError("zorder_dataframe needs pyspark: pip install pyspark") from exc
    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark DataFrame, not {type(df).__name__}")
    cols = check_column_names(columns, df.columns)
    if zvalue_column in df.columns:
        raise ValueError(f"zvalue_column {zvalue_column!r} is already a column of the data")
    if num_partitions is not None and (isinstance(num_partitions, bool) or
                                       not isinstance(num_partitions, int) or num_partitions < 1):
        raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
    ordering = Ordering.of(options, var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    fn = functools.partial(_with_zvalues, columns=cols, zvalue_column=zvalue_column,
                           ordering=ordering)
    out = df.mapInArrow(fn, zvalue_schema(df.schema, zvalue_column))
    z = col(zvalue_column)
    out = out.repartitionByRange(num_partitions, z) if num_partitions else out.repartitionByRange(z)
    out = out.sortWithinPartitions(z)
    return out if keep_zvalue else out.drop(zvalue_column)
