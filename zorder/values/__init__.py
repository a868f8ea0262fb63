"""The values floor: Z-values of whole tables, their codec, the Z-order sort, and decoding.

- ``table``: the columns of a DataFrame, Table or mapping, their ordered bytes, and
  ``zorder_widths``.
- ``ordering``: ``Curve`` (Z-order, Hilbert) and ``Ordering``, the one object the floors
  below the public functions take; ``zorder_values`` (Iceberg's ``SparkZOrderUDF`` over
  a table) and ``hilbert_values``.
- ``codec``: Z-values as a uint8 matrix, an Arrow ``FixedSizeBinary`` array or uint64
  words, and Iceberg's internal column names.
- ``sort``: ``sort_indices``, ``sort`` and ``argsort_zvalues`` over the radix sort
  ``_radix``.
- ``rank``: the opt-in rank encoding (``encoding="rank"``): ``RankBoundaries``,
  ``rank_boundaries``, ``rank_columns``; balanced columns, not Iceberg's layout.
- ``stages``: where a rewrite's time goes (``--profile``): ``stage`` marks read,
  ordered bytes, ranks, curve, sort, reorder, write, commit on any floor above; it
  records only inside ``profiling()``.
- ``decode``: ``deinterleave_rows``/``deinterleave_bits``, the inverse of the interleave;
  ``hilbert_decode_rows`` (``hilbert_decode``), the inverse of ``hilbert_rows``.

Imports the ordered, hilbert and interleave floors; the interleave backend comes from
``zorder.interleave.rows_function`` (the face sets its default), never from the face.
"""

from zorder.values.decode import deinterleave_bits, deinterleave_rows
from zorder.values.hilbert_decode import hilbert_decode_rows
from zorder.values.rank import RankBoundaries, rank_boundaries, rank_columns
from zorder.values.sort import argsort_zvalues, sort, sort_indices
from zorder.values.ordering import hilbert_values, zorder_values
from zorder.values.table import zorder_widths

__all__ = [
    "RankBoundaries",
    "argsort_zvalues",
    "deinterleave_bits",
    "deinterleave_rows",
    "hilbert_decode_rows",
    "hilbert_values",
    "rank_boundaries",
    "rank_columns",
    "sort",
    "sort_indices",
    "zorder_values",
    "zorder_widths",
]
