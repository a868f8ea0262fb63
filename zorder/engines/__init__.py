"""The engines floor: Z-order clustering on engines that scale past one machine.

- ``dask``: ``cluster``, a whole Parquet dataset range-partitioned by Z-value on Dask.
- ``spark``: Iceberg's Spark recipe with zorder computing the Z-values (``mapInArrow``).
- ``iceberg``: ``rewrite``, an Iceberg table Z-ordered through PyIceberg in one REPLACE
  snapshot (``zorder.iceberg``), by stage: ``iceberg_plan`` groups the files,
  ``iceberg_columns`` resolves and converts the columns as Spark does, ``iceberg_read``
  and ``iceberg_write`` read and rewrite each group (``iceberg_tasks`` runs them on Dask
  and keeps track of every file written), ``iceberg_commit`` checks and makes the one
  commit, ``iceberg_report`` says what it did and what readers can skip.
- ``cuts`` (where to cut curve-sorted rows into files and ranges) and ``interrupts``
  (ending a thread pool's tasks): engine-neutral, used by both.

Imports the parquet, values and ordered floors; the engines themselves (dask, pyspark)
only when a function runs. ``zorder.dask``, ``zorder.spark`` and ``zorder.iceberg`` are
their public names.
"""
