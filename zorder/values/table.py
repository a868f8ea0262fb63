"""The columns of whole tables and their ordered bytes, as Iceberg's Spark rewrite reads
them.

A table is a list of columns, a mapping, a pandas DataFrame or a pyarrow Table or
RecordBatch; ``columns_bytes`` selects its columns and gives each one's ordered bytes
(``ordered_bytes``), with errors naming the column. ``zorder_widths`` says how many bytes
each column contributes to a Z-value.

>>> import numpy as np
>>> zorder_widths([np.array([1, 2]), np.array(["a", "b"])])
[8, 8]
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy

from zorder.ordered import IcebergOptions, ordered_bytes
from zorder.ordered.column import is_unordered
from zorder.ordered.errors import ColumnError
from zorder.ordered.options import TimestampOption
from zorder.values.stages import ORDERED_BYTES, stage

__all__ = ["zorder_widths"]

ColumnSelection = Union[None, str, Sequence[Any]]


def _module_of(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _is_arrow_column(obj: Any) -> bool:
    if _module_of(obj) != "pyarrow":
        return False
    import pyarrow as pa

    return isinstance(obj, (pa.Array, pa.ChunkedArray))


def check_column_order(columns: Any) -> None:
    """Refuse a column selection with no order (a set or a mapping): the Z-value of
    every row depends on the column order, and a set's changes from run to run."""
    if is_unordered(columns):
        raise TypeError(
            f"columns must be an ordered sequence (a list or tuple), not "
            f"{type(columns).__name__}: the column order decides every Z-value"
        )


def check_column_names(columns: Any, available: Sequence[Any]) -> List[str]:
    """The clustering columns of an engine job as a list of names: a list or tuple of
    str (or one comma-separated str), non-empty, without repeats, all in ``available``."""
    check_column_order(columns)
    if isinstance(columns, str):
        columns = [c for c in columns.split(",") if c]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise TypeError("columns must be a list of column names (or one comma-separated string)")
    if not columns:
        raise ValueError("columns must name at least one column to cluster on")
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns has duplicates: {list(columns)}")
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(f"columns {missing} are not in the data; it has {list(available)}")
    return list(columns)


def _select(names: List[Any], columns: ColumnSelection, what: str) -> List[Any]:
    if columns is None:
        return list(names)
    check_column_order(columns)
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


def _named_columns(data: Any, columns: ColumnSelection) -> Tuple[List[str], List[Any], bool]:
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


def column_bytes(label: str, column: Any, options: IcebergOptions,
                 timestamp: Optional[str]) -> numpy.ndarray:
    """Ordered bytes of one selected column, strings and binary at the options'
    ``var_length_contribution``; errors say ``column {label}``."""
    if _is_arrow_column(column):
        import pyarrow as pa

        if isinstance(column, pa.ChunkedArray) and column.num_chunks != 1:
            column = column.combine_chunks()
    try:
        return ordered_bytes(column, options.var_length_contribution, iceberg=options.iceberg,
                             spark=options.spark, timestamp=timestamp)
    except ColumnError as exc:
        exc.where = f"column {label}"
        raise
    except NotImplementedError as exc:  # pyarrow's ArrowNotImplementedError
        kind = getattr(column, "dtype", None)  # (a numpy dtype is falsy: no `or` here)
        if kind is None:
            kind = getattr(column, "type", None)
        raise TypeError(
            f"column {label}: unsupported type {kind if kind is not None else type(column).__name__}"
            f" ({exc}); Iceberg's Spark UDF takes integers, floats, booleans, dates, "
            f"timestamps, strings and binary"
        ) from exc


def _timestamp_kinds(data: Any, labels: List[str], timestamp: TimestampOption) -> List[Optional[str]]:
    """The timestamp kind of each selected column."""
    if not isinstance(timestamp, Mapping):
        return [timestamp] * len(labels)
    # Names for a table, frame or mapping; positions for a list of columns.
    keys = {(f"columns[{k}]" if isinstance(data, (list, tuple)) and isinstance(k, int)
             else repr(k)): k for k in timestamp}
    unknown = [k for k in keys if k not in labels]
    if unknown:
        raise ValueError(f"timestamp: no selected column named {', '.join(unknown)}")
    return [timestamp[keys[label]] if label in keys else None for label in labels]


def columns_bytes(data: Any, columns: ColumnSelection,
                  options: IcebergOptions) -> Tuple[List[numpy.ndarray], bool]:
    """(every selected column's ordered bytes, whether the input is Arrow); errors name
    the column."""
    labels, cols, arrow = _named_columns(data, columns)
    kinds = _timestamp_kinds(data, labels, options.timestamp)
    parts: List[numpy.ndarray] = []
    for label, col, kind in zip(labels, cols, kinds):
        with stage(ORDERED_BYTES):
            part = column_bytes(label, col, options, kind)
        if parts and part.shape[0] != parts[0].shape[0]:
            raise ValueError(f"column {label} has {part.shape[0]} rows, the first has "
                             f"{parts[0].shape[0]}")
        parts.append(part)
    return parts, arrow


def zorder_widths(data: Any, *, columns: ColumnSelection = None,
                  var_length_contribution: int = 8) -> List[int]:
    """Bytes each selected column contributes to its Z-value, in interleave order.

    These are the ``widths`` that ``deinterleave_rows`` needs to decode ``zorder_values``
    output (8 for numbers, booleans, dates and timestamps; ``var_length_contribution``
    for strings and binary). A column with a type (numpy, Arrow, a pandas dtype other
    than object) is looked at through a 0-row slice; one whose type comes from its values
    (Python lists and tuples, object arrays and Series) is encoded whole, as
    ``zorder_values`` encodes it, so that the two always agree.

    >>> import numpy as np
    >>> zorder_widths([np.array([1]), np.array(["a"])], var_length_contribution=16)
    [8, 16]
    """
    options = IcebergOptions(var_length_contribution=var_length_contribution)
    labels, cols, _ = _named_columns(data, columns)
    return [column_bytes(label, _typed_sample(c), options, None).shape[1]
            for label, c in zip(labels, cols)]


def _typed_sample(column: Any) -> Any:
    """What says the column's type: no rows of it where it has a type of its own, the
    whole column where its values decide (an empty object column reads as strings, one
    of ints as BIGINT)."""
    if isinstance(column, (list, tuple)) or getattr(column, "dtype", None) == object:
        return column
    if _module_of(column) == "pandas":
        return column.iloc[:0]
    return column[:0]
