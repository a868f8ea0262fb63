"""The engines floor: Z-order clustering on engines that scale past one machine.

- ``dask``: ``cluster``, a whole Parquet dataset range-partitioned by Z-value on Dask.
- ``spark``: Iceberg's Spark recipe with zorder computing the Z-values (``mapInArrow``).

Imports the parquet, values and ordered floors; the engines themselves (dask, pyspark)
only when a function runs. ``zorder.dask`` and ``zorder.spark`` are their public names.
"""
