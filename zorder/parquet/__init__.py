"""The parquet floor: Parquet files in, Parquet files out, and what a layout lets readers skip.

- ``files``: the one lister of a dataset's files; ``sizes``: byte sizes like ``128MB``.
- ``safety``: an output is never the input under any name, and replaces the old one whole.
- ``sort``: ``sort_parquet``, one file rewritten in Z-order (the ``sort`` command's work).
- ``skipping``: the skipping report, before and after a rewrite, from min/max statistics.

Imports the values and ordered floors; pyarrow only when a function runs.
"""
