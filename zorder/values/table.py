"""Z-values of whole tables, and the Z-order sort, as Iceberg's Spark rewrite computes them.

``zorder_values`` is Iceberg's ``SparkZOrderUDF`` for a table held in Python: every column
becomes its ordered bytes (``ordered_bytes``), and the columns are interleaved, all rows in
one call of the selected backend's ``interleave_rows``. ``sort_indices`` and ``sort`` order
rows by those values, as ``rewrite_data_files(strategy='sort', sort_order='zorder(...)')``
orders them before writing.

>>> import numpy as np
>>> z = zorder_values([np.array([1, 2]), np.array(["a", "b"])])
>>> z.shape
(2, 16)
>>> sort_indices([np.array([3, 1, 2])]).tolist()
[1, 2, 0]
"""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy

from zorder._ordered import JAVA_INT_MAX, ordered_bytes

__all__ = ["argsort_zvalues", "sort", "sort_indices", "zorder_values", "zorder_widths"]

#: Iceberg's internal Z-value column. The rewrite rejects a table column of this name;
#: zorder never adds a column to your table, so here it is an ordinary name.
ICEBERG_ZVALUE_COLUMN = "ICEZVALUE"

_ColumnSelection = Union[None, str, Sequence[Any]]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = value.__index__()
    if value <= 0:
        raise ValueError(f"{name} must be > 0 (as in Iceberg's rewrite options), got {value}")
    if value > JAVA_INT_MAX:
        raise ValueError(f"{name} must be at most {JAVA_INT_MAX} (a Java int, as in Iceberg), got {value}")
    return value


def _module_of(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _is_arrow_column(obj: Any) -> bool:
    if _module_of(obj) != "pyarrow":
        return False
    import pyarrow as pa

    return isinstance(obj, (pa.Array, pa.ChunkedArray))


def _select(names: List[Any], columns: _ColumnSelection, what: str) -> List[Any]:
    if columns is None:
        return list(names)
    if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
        columns = [columns]
    chosen = list(columns)
    if not chosen:
        raise ValueError("columns is empty: select at least one column")
    known = set(names)
    for c in chosen:
        if c not in known:
            shown = ", ".join(map(repr, names[:20])) + (", ..." if len(names) > 20 else "")
            raise ValueError(f"columns: {what} has no column {c!r}; its columns: {shown}")
    return chosen


def _named_columns(data: Any, columns: _ColumnSelection) -> Tuple[List[str], List[Any], bool]:
    """(labels for messages, column objects, whether the input is Arrow)."""
    mod = _module_of(data)
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(data, (pa.Table, pa.RecordBatch)):
            names = list(data.column_names)
            if len(set(names)) != len(names) and columns is None:
                raise ValueError("data has duplicate column names; select columns= by name")
            chosen = _select(names, columns, type(data).__name__)
            for c in chosen:
                if names.count(c) > 1:
                    raise ValueError(f"columns: {c!r} names more than one column of data")
            return [repr(c) for c in chosen], [data.column(c) for c in chosen], True
        if isinstance(data, (pa.Array, pa.ChunkedArray)):
            raise TypeError("data is one column; pass a list of columns, e.g. [column]")
    if mod == "pandas":
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            names = list(data.columns)
            chosen = _select(names, columns, "the DataFrame")
            out = []
            for c in chosen:
                col = data[c]
                if isinstance(col, pd.DataFrame):
                    raise ValueError(f"columns: {c!r} names more than one column of the DataFrame")
                out.append(col)
            return [repr(c) for c in chosen], out, False
        if isinstance(data, pd.Series):
            raise TypeError("data is one column; pass a list of columns, e.g. [series]")
    if isinstance(data, Mapping):
        names = list(data.keys())
        chosen = _select(names, columns, "the mapping")
        cols = [data[c] for c in chosen]
        return [repr(c) for c in chosen], cols, bool(cols) and all(map(_is_arrow_column, cols))
    if isinstance(data, (list, tuple)):
        if columns is not None:
            raise TypeError(
                "columns= selects by name, for a DataFrame, a pyarrow Table or RecordBatch "
                "or a mapping; for a list of arrays pass only the columns you want"
            )
        if not data:
            raise ValueError("data is empty: at least one column is needed")
        cols = list(data)
        return [f"columns[{i}]" for i in range(len(cols))], cols, all(map(_is_arrow_column, cols))
    if isinstance(data, numpy.ndarray):
        raise TypeError(
            "data is a numpy array; pass a list of 1-D columns (e.g. list(array.T) for a "
            "2-D array of rows)"
        )
    raise TypeError(
        "data must be a list of columns, a mapping of name to column, a pandas DataFrame "
        f"or a pyarrow Table or RecordBatch, not {type(data).__name__}"
    )


def _column_bytes(label: str, column: Any, length: int, iceberg: str, spark: str,
                  timestamp: Any) -> numpy.ndarray:
    if _is_arrow_column(column) and _module_of(column) == "pyarrow":
        import pyarrow as pa

        if isinstance(column, pa.ChunkedArray) and column.num_chunks != 1:
            column = column.combine_chunks()
    try:
        return ordered_bytes(column, length, iceberg=iceberg, spark=spark, timestamp=timestamp)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if message.startswith("ordered_bytes: values"):
            message = message[len("ordered_bytes: values"):].lstrip(":, ")
        elif message.startswith("ordered_bytes: "):
            message = message[len("ordered_bytes: "):]
        raise type(exc)(f"column {label}: {message}") from exc
    except NotImplementedError as exc:  # pyarrow's ArrowNotImplementedError
        kind = getattr(column, "dtype", None)  # (a numpy dtype is falsy: no `or` here)
        if kind is None:
            kind = getattr(column, "type", None)
        raise TypeError(
            f"column {label}: unsupported type {kind if kind is not None else type(column).__name__}"
            f" ({exc}); Iceberg's Spark UDF takes integers, floats, booleans, dates, "
            f"timestamps, strings and binary"
        ) from exc


def _check_modes(iceberg: str, spark: str, timestamp: Any) -> None:
    # ordered_bytes names the valid values; check once, before any column is converted.
    kinds = timestamp.values() if isinstance(timestamp, Mapping) else [timestamp]
    for kind in kinds:
        ordered_bytes(numpy.zeros(0, numpy.int64), iceberg=iceberg, spark=spark, timestamp=kind)


def _zorder_bytes(data: Any, columns: _ColumnSelection, var_length_contribution: int,
                  max_output_size: Optional[int], iceberg: str, spark: str, timestamp: Any,
                  backend: Optional[str]) -> Tuple[numpy.ndarray, bool]:
    length = _positive(var_length_contribution, "var_length_contribution")
    cap = None if max_output_size is None else _positive(max_output_size, "max_output_size")
    labels, cols, arrow = _named_columns(data, columns)
    _check_modes(iceberg, spark, timestamp)
    import zorder  # the package, for the backend chosen at import (or the one named)

    interleave_rows: Callable = (zorder.interleave_rows if backend is None
                                 else zorder.get_backend(backend).interleave_rows)
    if isinstance(timestamp, Mapping):
        # Names for a table, frame or mapping; positions for a list of columns.
        keys = {(f"columns[{k}]" if isinstance(data, (list, tuple)) and isinstance(k, int)
                 else repr(k)): k for k in timestamp}
        unknown = [k for k in keys if k not in labels]
        if unknown:
            raise ValueError(f"timestamp: no selected column named {', '.join(unknown)}")
        kinds = [timestamp[keys[l]] if l in keys else None for l in labels]
    else:
        kinds = [timestamp] * len(cols)

    parts = []
    size = 0
    nrows = None
    for label, col, kind in zip(labels, cols, kinds):
        part = _column_bytes(label, col, length, iceberg, spark, kind)
        if nrows is None:
            nrows = part.shape[0]
        elif part.shape[0] != nrows:
            raise ValueError(f"column {label} has {part.shape[0]} rows, the first has {nrows}")
        parts.append(part)
        # SparkZOrderUDF: 8 bytes per primitive, var_length_contribution per string or
        # binary column (exactly the width ordered_bytes returns), capped as each is added.
        size += part.shape[1]
        if cap is not None:
            size = min(size, cap)

    return interleave_rows(parts, size), arrow


def zorder_widths(data: Any, *, columns: _ColumnSelection = None,
                  var_length_contribution: int = 8) -> List[int]:
    """Bytes each selected column contributes to its Z-value, in interleave order.

    These are the ``widths`` that ``deinterleave_rows`` needs to decode ``zorder_values``
    output (8 for numbers, booleans, dates and timestamps; ``var_length_contribution``
    for strings and binary). Only the column types are looked at, through a 0-row slice.

    >>> import numpy as np
    >>> zorder_widths([np.array([1]), np.array(["a"])], var_length_contribution=16)
    [8, 16]
    """
    length = _positive(var_length_contribution, "var_length_contribution")
    labels, cols, _ = _named_columns(data, columns)
    return [_column_bytes(l, _empty_slice(c), length, "main", "4", None).shape[1]
            for l, c in zip(labels, cols)]


def _empty_slice(column: Any) -> Any:
    """The column with no rows and the same type."""
    if _module_of(column) == "pandas":
        return column.iloc[:0]
    if isinstance(column, (list, tuple)):
        return numpy.asarray(column)[:0]
    return column[:0]


def zorder_values(data: Any, *, columns: _ColumnSelection = None,
                  var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                  iceberg: str = "main", spark: str = "4", timestamp: Any = None,
                  backend: Optional[str] = None) -> Any:
    """Iceberg's Z-value of every row, as its Spark Z-order rewrite computes them.

    This is ``SparkZOrderUDF``: each column becomes Iceberg's ordered bytes (see
    ``ordered_bytes`` for every type, null and compatibility mode), 8 bytes per number,
    boolean, date or timestamp and ``var_length_contribution`` bytes per string or binary
    column. The output length is the sum of those, capped at ``max_output_size`` (the cap
    applied as each column is added, as Iceberg does), and all columns are interleaved at
    that length (``interleave_rows`` of the selected backend, every row in one call).
    Ragged widths (a string at 16 beside 8-byte numbers) and a truncated size behave
    exactly as Iceberg's ``interleaveBits``.

    Iceberg's quirks are reproduced, not corrected, so the clustering is the one Spark
    writes:

    - A null gives zero bytes, the same bytes as long MIN (and as ``""`` for strings);
      a false and a null boolean collide. A null boolean throws a NullPointerException
      in Iceberg main; here it gives zeros, as open Iceberg PR 17669 does.
    - A TIMESTAMP with a time zone counts only whole seconds (Spark's cast to BIGINT);
      a TIMESTAMP_NTZ (numpy datetime64, zone-less Arrow timestamps) counts microseconds.
    - ``iceberg="1.11"`` (or ``"legacy"``): the float formula of every Iceberg release to
      date, whose order is wrong among values sharing their top 32 bits (a known bug,
      fixed on main by PR 17071); the default ``"main"`` has the fix.
    - ``spark="3.5"``: every DATE becomes 8 zero bytes (Spark 3.5 casts DATE to BIGINT,
      which yields null), so dates contribute nothing to the order.
    - Strings are truncated to whole UTF-8 characters (a character that does not fit is
      dropped), as Java's encoder does.

    A column named ``ICEZVALUE`` is accepted: Iceberg's rewrite rejects it only because it
    adds an internal column of that name, and zorder adds no column to your data.

    Args:
        data: the table: a list of columns (numpy arrays, pyarrow arrays, pandas Series),
            a mapping of name to column, a pandas DataFrame, or a pyarrow Table or
            RecordBatch.
        columns: the column names to Z-order, in order (default: all), for a DataFrame,
            Table, RecordBatch or mapping.
        var_length_contribution: bytes per string or binary column (Iceberg's
            ``var-length-contribution``), > 0.
        max_output_size: cap on the Z-value length in bytes (Iceberg's
            ``max-output-size``), > 0; None for no cap (Iceberg's default,
            ``Integer.MAX_VALUE``).
        iceberg: float/double formula, ``"main"`` or ``"1.11"`` (see ``ordered_bytes``).
        spark: DATE behaviour, ``"4"`` or ``"3.5"`` (see ``ordered_bytes``).
        timestamp: ``None`` (infer), ``"ntz"`` or ``"tz"`` for every timestamp column, or
            a mapping from column name to one of those.
        backend: interleave backend name; default the one zorder chose at import.

    Returns:
        an ``(N, size)`` uint8 array, or a pyarrow ``FixedSizeBinaryArray`` of byte width
        ``size`` when the input is Arrow (a Table, a RecordBatch, or only Arrow columns).

    Raises:
        TypeError: an unsupported column type (the message names the column and type),
            or a bad argument type.
        ValueError: a bad argument value, an unknown column name, columns of different
            lengths.

    Example:
        >>> import numpy as np
        >>> z = zorder_values([np.array([0, -1]), np.array([1.5, 2.0])])
        >>> bytes(z[0]).hex()
        'c5555540000000000000000000000000'
        >>> zorder_values([np.array([0]), np.array(["abc"])], var_length_contribution=16,
        ...               max_output_size=4).shape
        (1, 4)
    """
    z, arrow = _zorder_bytes(data, columns, var_length_contribution, max_output_size,
                             iceberg, spark, timestamp, backend)
    if not arrow:
        return z
    import pyarrow as pa

    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(z.shape[1]), z.shape[0], [None, pa.py_buffer(z)]
    )


def _as_zvalue_matrix(values: Any) -> numpy.ndarray:
    if _module_of(values) == "pyarrow":
        from zorder._deinterleave import _as_values

        return _as_values(values)
    arr = numpy.asarray(values)
    if arr.dtype != numpy.uint8 or arr.ndim != 2:
        raise TypeError(
            "values must be a 2-D uint8 array (rows, bytes) or a pyarrow FixedSizeBinary "
            f"array, not {type(values).__name__} of dtype {arr.dtype} and {arr.ndim} dims"
        )
    return arr


def argsort_zvalues(values: Any) -> numpy.ndarray:
    """The stable permutation that sorts Z-values as unsigned bytes, left to right.

    That is how Spark compares the BINARY Z-value column in Iceberg's rewrite; rows with
    equal Z-values keep their input order.

    Args:
        values: an ``(N, size)`` uint8 array or a pyarrow FixedSizeBinary array.

    Returns:
        an int64 array ``p`` with ``values[p]`` sorted.

    A most-significant-byte-first radix sort (``zorder._zsort``): bytes equal across a
    whole bucket cost one counting pass, so leading bytes that tie (constant high bits
    of small integers, timestamps, shared string prefixes) are cheap.

    >>> import numpy as np
    >>> argsort_zvalues(np.array([[2, 0], [1, 9], [1, 3]], dtype=np.uint8)).tolist()
    [2, 1, 0]
    """
    from zorder._zsort import argsort_rows

    z = _as_zvalue_matrix(values)
    if z.shape[1] > _RADIX_MAX_BYTES:
        # The radix sort recurses once per byte; very long values use numpy's stable sort.
        rows = numpy.ascontiguousarray(z).view(f"V{z.shape[1]}").reshape(z.shape[0])
        return numpy.argsort(rows, kind="stable").astype(numpy.int64, copy=False)
    if z.shape[1] > 1 and z.strides[1] != 1:
        z = numpy.ascontiguousarray(z)
    return argsort_rows(z)


_RADIX_MAX_BYTES = 4096


def sort_indices(data: Any, *, columns: _ColumnSelection = None,
                 var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                 iceberg: str = "main", spark: str = "4", timestamp: Any = None,
                 backend: Optional[str] = None) -> numpy.ndarray:
    """The permutation that puts rows in Z-order, as Iceberg's Spark rewrite sorts them.

    Takes the same arguments as ``zorder_values`` and sorts its Z-values as unsigned
    bytes (``argsort_zvalues``). The sort is stable: rows with equal Z-values keep their
    input order (Spark gives no order among ties).

    Returns:
        an int64 array ``p``; ``table.take(p)`` or ``df.iloc[p]`` is the sorted table.

    >>> import numpy as np
    >>> sort_indices([np.array([3, 0, 3, 1]), np.array([0, 5, 0, 2])]).tolist()
    [3, 0, 2, 1]
    """
    z, _ = _zorder_bytes(data, columns, var_length_contribution, max_output_size,
                         iceberg, spark, timestamp, backend)
    return argsort_zvalues(z)


def sort(table: Any, columns: _ColumnSelection = None, *, var_length_contribution: int = 8,
         max_output_size: Optional[int] = None, iceberg: str = "main", spark: str = "4",
         timestamp: Any = None, backend: Optional[str] = None) -> Any:
    """A copy of ``table`` with its rows in Z-order of ``columns``.

    Args:
        table: a pyarrow Table or RecordBatch, or a pandas DataFrame (its index moves with
            the rows, as with ``sort_values``).
        columns: the column names to Z-order by, in order (default: all).
        others: as for ``zorder_values``.

    >>> import pandas as pd
    >>> sort(pd.DataFrame({"x": [3, 0, 1], "y": [0, 5, 2]}), ["x", "y"]).index.tolist()
    [2, 0, 1]
    """
    mod = _module_of(table)
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
    perm = sort_indices(table, columns=columns, var_length_contribution=var_length_contribution,
                        max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                        timestamp=timestamp, backend=backend)
    if mod == "pandas":
        return table.iloc[perm].copy()
    return table.take(perm)
