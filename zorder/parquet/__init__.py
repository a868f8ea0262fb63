"""The parquet floor: Parquet files in, Parquet files out, and what a layout lets readers skip.

- ``files``: the one lister of a dataset's files; ``sizes``: byte sizes like ``128MB``.
- ``safety``: an output is never the input under any name, and replaces the old one whole.
- ``sort``: ``sort_parquet``, one file rewritten in Z-order (the ``sort`` command's work).
- ``memory``: the memory limit (default: a share of what is available, cgroup-aware) and
  a file's size in Arrow; ``external``: the out-of-core sort of record batches under that
  limit, engine-neutral; ``spill``: its runs on disk (Arrow IPC).
- ``skipping``: the skipping report, before and after a rewrite, from min/max statistics.
- ``encoded_size``: the most bytes a table's rows can take as Parquet, in any order.

Imports the values and ordered floors; pyarrow only when a function runs.
"""
