"""The Z-order sort, as Iceberg's Spark rewrite orders rows before writing them.

``sort_indices`` and ``sort`` order rows by their Z-values compared as unsigned bytes,
as ``rewrite_data_files(strategy='sort', sort_order='zorder(...)')`` does; the sort is
a most-significant-byte-first radix sort (``_radix``), stable.

>>> import numpy as np
>>> sort_indices([np.array([3, 1, 2])]).tolist()
[1, 2, 0]
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy

from zorder.cpu.cores import usable_cores
from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption
from zorder.values._radix import PARALLEL_ROWS, argsort_rows, argsort_short, rows_scratch
from zorder.values.codec import as_matrix
from zorder.values.ordering import Ordering
from zorder.values.rank import RankBoundaries
from zorder.values.stages import SORT, stage
from zorder.values.table import ColumnSelection

__all__ = ["argsort_zvalues", "sort", "sort_indices", "sort_order"]

#: Longer Z-values use numpy's stable sort: the radix sort keeps 257 counts a byte of
#: width (2 MiB at 1,024 bytes), and such values are rare.
_RADIX_MAX_BYTES = 4096
#: Z-values this short (e.g. two 16-bit ranks) sort by a least-significant-digit radix
#: sort over their varying bits (``_radix.argsort_short``).
_SHORT_MAX_BYTES = 4
#: Most threads one radix sort runs on: each keeps counts of 65,536 buckets (512 KiB).
_MAX_SORT_THREADS = 8


def argsort_zvalues(values: Any) -> numpy.ndarray:
    """The stable permutation that sorts Z-values as unsigned bytes, left to right.

    That is how Spark compares the BINARY Z-value column in Iceberg's rewrite; rows with
    equal Z-values keep their input order.

    Args:
        values: an ``(N, size)`` uint8 array or a pyarrow FixedSizeBinary array.

    Returns:
        an int64 array ``p`` with ``values[p]`` sorted.

    A most-significant-byte-first radix sort (``zorder.values._radix``): bytes equal across a
    whole bucket cost one counting pass, so leading bytes that tie (constant high bits
    of small integers, timestamps, shared string prefixes) are cheap. From 262,144 rows
    it runs on every core this process may use (``zorder.cpu.cores.usable_cores``, at
    most 8), and gives the same permutation.

    >>> import numpy as np
    >>> argsort_zvalues(np.array([[2, 0], [1, 9], [1, 3]], dtype=np.uint8)).tolist()
    [2, 1, 0]
    """
    return _argsort_zvalues(values, None)


def sort_scratch(n: int, size: int) -> Any:
    """Working memory for ``_argsort_zvalues`` of up to ``n`` Z-values of ``size`` bytes,
    touched: made on an idle thread ahead of the sort (``zorder.engines.iceberg``). None
    where that sort would not use it (short or very long values)."""
    if size <= _SHORT_MAX_BYTES or size > _RADIX_MAX_BYTES:
        return None
    return rows_scratch(n)


def _argsort_zvalues(values: Any, scratch: Any, threads: Optional[int] = None) -> numpy.ndarray:
    """``argsort_zvalues``, in ``scratch`` (``sort_scratch``, or None) where it can, on
    at most ``threads`` threads (None: the usable cores; a Dask task gives 1, as its
    scheduler already runs a task on each core)."""
    with stage(SORT):
        return _argsorted(values, scratch, threads)


def _argsorted(values: Any, scratch: Any, threads: Optional[int]) -> numpy.ndarray:
    z = as_matrix(values)
    if z.shape[1] <= _SHORT_MAX_BYTES and z.shape[0] < 2**32:
        if z.shape[1] > 1 and z.strides[1] != 1:
            z = numpy.ascontiguousarray(z)
        return argsort_short(z)
    if z.shape[1] > _RADIX_MAX_BYTES:
        # (the radix sort's counts grow with the width: very long values use numpy's)
        rows = numpy.ascontiguousarray(z).view(f"V{z.shape[1]}").reshape(z.shape[0])
        return numpy.argsort(rows, kind="stable").astype(numpy.int64, copy=False)
    if z.shape[1] > 1 and z.strides[1] != 1:
        z = numpy.ascontiguousarray(z)
    if z.shape[0] < PARALLEL_ROWS:
        threads = 1
    elif threads is None:
        threads = min(usable_cores(), _MAX_SORT_THREADS)
    return argsort_rows(z, scratch, threads)


def sort_indices(data: Any, *, columns: ColumnSelection = None,
                 var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                 iceberg: str = ICEBERG_DEFAULT, spark: str = "4", timestamp: TimestampOption = None,
                 backend: Optional[str] = None,
                 options: Optional[IcebergOptions] = None, curve: str = "zorder",
                 encoding: str = "iceberg", rank_bits: Optional[int] = None,
                 boundaries: Optional[RankBoundaries] = None) -> numpy.ndarray:
    """The permutation that puts rows in Z-order, as Iceberg's Spark rewrite sorts them.

    Takes the same arguments as ``zorder_values`` and sorts its Z-values as unsigned
    bytes (``argsort_zvalues``). The sort is stable: rows with equal Z-values keep their
    input order (Spark gives no order among ties). ``curve="hilbert"`` sorts by
    ``hilbert_values`` instead, as Spark 4.1's ``hilbert(...)`` rewrite does.
    ``encoding="rank"`` (with ``rank_bits`` and ``boundaries``) sorts by interleaved (or
    Hilbert-transformed) column ranks instead: balanced, but not Iceberg's order.

    Returns:
        an int64 array ``p``; ``table.take(p)`` or ``df.iloc[p]`` is the sorted table.

    >>> import numpy as np
    >>> sort_indices([np.array([3, 0, 3, 1]), np.array([0, 5, 0, 2])]).tolist()
    [3, 0, 2, 1]
    """
    ordering = Ordering.of(options, curve, encoding, rank_bits, boundaries,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    return sort_order(ordering, data, columns, backend)[0]


def sort_order(ordering: Ordering, data: Any, columns: ColumnSelection,
               backend: Optional[str] = None) -> Tuple[numpy.ndarray, int]:
    """(the permutation that sorts ``data``'s rows by their values in ``ordering``, the
    bytes of one value): what ``sort_indices`` computes, below the public keywords."""
    values = ordering.table_values(data, columns, backend)[0]
    return argsort_zvalues(values), values.shape[1]


def sort(table: Any, columns: ColumnSelection = None, *, var_length_contribution: int = 8,
         max_output_size: Optional[int] = None, iceberg: str = ICEBERG_DEFAULT, spark: str = "4",
         timestamp: TimestampOption = None, backend: Optional[str] = None,
         options: Optional[IcebergOptions] = None, curve: str = "zorder",
         encoding: str = "iceberg", rank_bits: Optional[int] = None,
         boundaries: Optional[RankBoundaries] = None) -> Any:
    """A copy of ``table`` with its rows in Z-order of ``columns``.

    Args:
        table: a pyarrow Table or RecordBatch, or a pandas DataFrame (its index moves with
            the rows, as with ``sort_values``).
        columns: the column names to Z-order by, in order (default: all).
        var_length_contribution, max_output_size, iceberg, spark, timestamp, backend,
        options, curve: as for ``sort_indices``.
        encoding, rank_bits, boundaries: as for ``zorder_values`` (``encoding="rank"``:
            balanced, not Iceberg's order).

    >>> import pandas as pd
    >>> sort(pd.DataFrame({"x": [3, 0, 1], "y": [0, 5, 2]}), ["x", "y"]).index.tolist()
    [2, 0, 1]
    """
    mod = type(table).__module__.split(".")[0]
    ok = False
    if mod == "pyarrow":
        import pyarrow as pa

        ok = isinstance(table, (pa.Table, pa.RecordBatch))
    elif mod == "pandas":
        import pandas as pd

        ok = isinstance(table, pd.DataFrame)
    if not ok:
        raise TypeError(
            "table must be a pyarrow Table or RecordBatch or a pandas DataFrame, not "
            f"{type(table).__name__} (for other inputs use sort_indices)"
        )
    ordering = Ordering.of(options, curve, encoding, rank_bits, boundaries,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    perm = sort_order(ordering, table, columns, backend)[0]
    if mod == "pandas":
        return table.iloc[perm].copy()
    return table.take(perm)
