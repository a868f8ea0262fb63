"""The ordered floor: Iceberg's ordered bytes, each value as bytes whose unsigned order
is the value's order.

- ``options``: ``IcebergOptions``, the one home of the rewrite options that change the
  bytes (Iceberg and Spark versions, timestamp type, string contribution, output cap).
- ``scalar``: one function per ``ZOrderByteUtils`` method, for one value.
- ``column``: ``ordered_bytes`` of a whole column, through the adapter for its kind:
  ``numpy_columns``, ``arrow_columns``, ``pandas_columns``; fixed-width types are
  ``numbers``, strings and binary ``strings`` (the compiled kernel ``_strings`` and its
  plain-Python twin, chosen there).
- ``errors``: column errors that the caller names (``where``) without re-labelling.

Imports nothing from zorder outside this floor (numpy always; pyarrow and pandas only
for their inputs).
"""

from zorder.ordered import options as _options
from zorder.ordered.column import ordered_bytes
from zorder.ordered.options import *  # noqa: F401,F403  (the names in options.__all__)
from zorder.ordered.scalar import (
    byte_truncate_or_fill,
    double_to_ordered_bytes,
    float_to_ordered_bytes,
    floating_point_ordered_bytes,
    int_to_ordered_bytes,
    long_to_ordered_bytes,
    short_to_ordered_bytes,
    string_to_ordered_bytes,
    tinyint_to_ordered_bytes,
    whole_number_ordered_bytes,
)

__all__ = [
    "byte_truncate_or_fill",
    "double_to_ordered_bytes",
    "float_to_ordered_bytes",
    "floating_point_ordered_bytes",
    "int_to_ordered_bytes",
    "long_to_ordered_bytes",
    "ordered_bytes",
    "short_to_ordered_bytes",
    "string_to_ordered_bytes",
    "tinyint_to_ordered_bytes",
    "whole_number_ordered_bytes",
]
__all__ += _options.__all__
