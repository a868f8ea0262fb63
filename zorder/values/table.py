"""Z-values of whole tables, as Iceberg's Spark rewrite computes them.

``zorder_values`` is Iceberg's ``SparkZOrderUDF`` for a table held in Python: every column
becomes its ordered bytes (``ordered_bytes``), and the columns are interleaved, all rows in
one call of the selected backend's ``interleave_rows``.

>>> import numpy as np
>>> z = zorder_values([np.array([1, 2]), np.array(["a", "b"])])
>>> z.shape
(2, 16)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union,
)

import numpy

from zorder import interleave
from zorder.ordered import IcebergOptions, ordered_bytes
from zorder.ordered.column import is_unordered
from zorder.ordered.errors import ColumnError
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption, check_positive
from zorder import hilbert
from zorder.values.codec import to_arrow

if TYPE_CHECKING:
    from zorder.values.rank import RankBoundaries

__all__ = ["Ordering", "hilbert_values", "zorder_values", "zorder_widths"]

#: The space-filling curves a table can be ordered by.
CURVES = ("zorder", "hilbert")

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


def column_bytes(label: str, column: Any, length: int, options: IcebergOptions,
                 timestamp: Optional[str]) -> numpy.ndarray:
    """Ordered bytes of one selected column; errors say ``column {label}``."""
    if _is_arrow_column(column):
        import pyarrow as pa

        if isinstance(column, pa.ChunkedArray) and column.num_chunks != 1:
            column = column.combine_chunks()
    try:
        return ordered_bytes(column, length, iceberg=options.iceberg, spark=options.spark,
                             timestamp=timestamp)
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


def zvalue_matrix(data: Any, columns: ColumnSelection, options: IcebergOptions,
                  backend: Optional[str] = None) -> Tuple[numpy.ndarray, bool]:
    """(the ``(N, size)`` Z-value matrix, whether the input is Arrow)."""
    interleave_rows: Callable = interleave.rows_function(backend)
    parts, arrow = _columns_bytes(data, columns, options, options.var_length_contribution)
    return interleave_rows(parts, capped_size([p.shape[1] for p in parts], options)), arrow


def capped_size(widths: Sequence[int], options: IcebergOptions) -> int:
    """SparkZOrderUDF's output size: 8 bytes per primitive, var_length_contribution per
    string or binary column (exactly the widths ordered_bytes returns), capped at
    max_output_size as each column is added."""
    size = 0
    for width in widths:
        size += width
        if options.max_output_size is not None:
            size = min(size, options.max_output_size)
    return size


def _columns_bytes(data: Any, columns: ColumnSelection, options: IcebergOptions,
                   length: int) -> Tuple[List[numpy.ndarray], bool]:
    """Every selected column's ordered bytes at ``length`` per string/binary column."""
    labels, cols, arrow = _named_columns(data, columns)
    kinds = _timestamp_kinds(data, labels, options.timestamp)
    parts: List[numpy.ndarray] = []
    for label, col, kind in zip(labels, cols, kinds):
        part = column_bytes(label, col, length, options, kind)
        if parts and part.shape[0] != parts[0].shape[0]:
            raise ValueError(f"column {label} has {part.shape[0]} rows, the first has "
                             f"{parts[0].shape[0]}")
        parts.append(part)
    return parts, arrow


def hvalue_matrix(data: Any, columns: ColumnSelection, options: IcebergOptions,
                  backend: Optional[str] = None) -> Tuple[numpy.ndarray, bool]:
    """(the ``(N, 8 n)`` Hilbert-value matrix, whether the input is Arrow), as Spark 4.1's
    ``hilbert(...)`` rewrite builds ICEHVALUE: every column's ordered bytes at exactly 8
    bytes (strings and binary too; no cap), then ``hilbertIndex(columns, 64)``."""
    if options.var_length_contribution != 8 or options.max_output_size is not None:
        raise ValueError(
            "var_length_contribution and max_output_size are Z-order options: Iceberg's "
            "Hilbert rewrite takes exactly 8 bytes of every column, with no cap"
        )
    hilbert_rows = hilbert.rows_function(backend)   # (a bad backend, before any work)
    parts, arrow = _columns_bytes(data, columns, options, 8)
    return hilbert_rows(parts, 64), arrow


def curve_matrix(data: Any, columns: ColumnSelection, options: IcebergOptions,
                 curve: str = "zorder", backend: Optional[str] = None) -> Tuple[numpy.ndarray, bool]:
    """``zvalue_matrix`` or ``hvalue_matrix``, by ``curve`` ("zorder" or "hilbert")."""
    if curve == "zorder":
        return zvalue_matrix(data, columns, options, backend)
    if curve == "hilbert":
        return hvalue_matrix(data, columns, options, backend)
    raise ValueError(f"curve must be one of {', '.join(map(repr, CURVES))}, got {curve!r}")


@dataclass(frozen=True)
class Ordering:
    """How a job orders rows: Iceberg's options, the curve and the encoding (with the rank
    boundaries of ``encoding="rank"``), validated once, carried whole through the stages
    of an engine's job (and recorded in its manifest).

    A job works in two steps, so that one sampling pass can both learn rank boundaries and
    cut ranges: ``parts`` (each column's ordered bytes) and ``values`` (curve values of
    parts); ``matrix`` is both at once."""

    options: IcebergOptions = field(default_factory=IcebergOptions)
    curve: str = "zorder"
    encoding: str = "iceberg"
    rank_bits: Optional[int] = None
    boundaries: Optional["RankBoundaries"] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        from zorder.values.rank import check_encoding_arguments

        if self.curve not in CURVES:
            raise ValueError(f"curve must be one of {', '.join(map(repr, CURVES))}, "
                             f"got {self.curve!r}")
        object.__setattr__(self, "rank_bits", check_encoding_arguments(
            self.encoding, self.rank_bits, self.boundaries))
        if self.curve == "hilbert" and self.encoding == "iceberg":
            # refuse the Z-order-only options now, not in a task (on a probe column that
            # has none of the data's names, so without the per-column timestamp kinds)
            probe = replace(self.options, timestamp=None)
            hvalue_matrix([numpy.zeros(0, numpy.int64)], None, probe)

    def parts(self, data: Any, columns: ColumnSelection) -> List[numpy.ndarray]:
        """Each selected column's ordered bytes, at the width this ordering reads."""
        hilbert_bytes = self.curve == "hilbert" and self.encoding == "iceberg"
        length = 8 if hilbert_bytes else self.options.var_length_contribution
        return _columns_bytes(data, columns, self.options, length)[0]

    def values(self, parts: Sequence[numpy.ndarray], backend: Optional[str] = None) -> numpy.ndarray:
        """The ``(N, size)`` curve values of ``parts`` (rank needs ``boundaries``)."""
        from zorder.values.rank import rank_values_of_ordered

        if self.encoding == "rank":
            if self.boundaries is None:
                raise ValueError("encoding='rank' needs boundaries here (zorder.rank_boundaries)")
            return rank_values_of_ordered(parts, self.boundaries, curve=self.curve,
                                          max_output_size=self.options.max_output_size,
                                          backend=backend)
        if self.curve == "hilbert":
            return hilbert.rows_function(backend)(list(parts), 64)
        return interleave.rows_function(backend)(list(parts), self.size([p.shape[1] for p in parts]))

    def matrix(self, data: Any, columns: ColumnSelection,
               backend: Optional[str] = None) -> numpy.ndarray:
        """The ``(N, size)`` uint8 curve values of ``data``'s ``columns``."""
        return self.values(self.parts(data, columns), backend)

    def size(self, widths: Sequence[int]) -> int:
        """Bytes of one curve value for columns of these ordered-byte widths."""
        if self.encoding == "rank":
            size = len(widths) * int(self.rank_bits or 16) // 8
            cap = self.options.max_output_size if self.curve == "zorder" else None
        elif self.curve == "hilbert":
            return 8 * len(widths)
        else:
            return capped_size(widths, self.options)
        return size if cap is None else min(size, cap)

    def as_dict(self) -> Dict[str, Any]:
        out = {**self.options.as_dict(), "curve": self.curve, "encoding": self.encoding}
        if self.encoding == "rank":
            out["rank_bits"] = self.rank_bits
            out["rank_boundaries"] = None if self.boundaries is None else self.boundaries.to_dict()
        return out


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
    length = check_positive(var_length_contribution, "var_length_contribution")
    labels, cols, _ = _named_columns(data, columns)
    return [column_bytes(label, _typed_sample(c), length, _DEFAULT_OPTIONS, None).shape[1]
            for label, c in zip(labels, cols)]


_DEFAULT_OPTIONS = IcebergOptions()


def _typed_sample(column: Any) -> Any:
    """What says the column's type: no rows of it where it has a type of its own, the
    whole column where its values decide (an empty object column reads as strings, one
    of ints as BIGINT)."""
    if isinstance(column, (list, tuple)) or getattr(column, "dtype", None) == object:
        return column
    if _module_of(column) == "pandas":
        return column.iloc[:0]
    return column[:0]


def zorder_values(data: Any, *, columns: ColumnSelection = None,
                  var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                  iceberg: str = ICEBERG_DEFAULT, spark: str = "4", timestamp: TimestampOption = None,
                  backend: Optional[str] = None,
                  options: Optional[IcebergOptions] = None, encoding: str = "iceberg",
                  rank_bits: Optional[int] = None,
                  boundaries: Optional[RankBoundaries] = None) -> Any:
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

    - A null gives zero bytes, the same bytes as long MIN (and as ``""`` for strings).
      A null boolean gives zeros with the default, 1.12, and main (PRs 17669 / 18077),
      so a false and a null boolean collide; with 1.11 or earlier it is a ValueError,
      as their UDF throws a NullPointerException there.
    - A TIMESTAMP with a time zone counts only whole seconds (Spark's cast to BIGINT);
      a TIMESTAMP_NTZ (numpy datetime64, zone-less Arrow timestamps) counts microseconds.
    - ``iceberg="1.11"`` (also ``"legacy"`` or any earlier release number): the float
      formula of Iceberg 1.11 and earlier, whose order is wrong among values sharing
      their top 32 bits (a known bug, fixed by PR 17071); the default, ``"1.12"`` (the
      newest release), and ``"main"`` have the fix.
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
        iceberg: the Iceberg release whose bytes to give, ``"1.12"`` (default) or an
            earlier one, or ``"main"`` (see ``ordered_bytes``).
        spark: DATE behaviour, ``"4"`` or ``"3.5"`` (see ``ordered_bytes``).
        timestamp: ``None`` (infer), ``"ntz"`` or ``"tz"`` for every timestamp column, or
            a mapping from column name to one of those.
        backend: interleave backend name; default the one zorder chose at import.
        options: an ``IcebergOptions`` holding all of the above Iceberg options at once
            (then leave those keywords out).
        encoding: ``"iceberg"`` (the default: Iceberg's bytes, as above) or ``"rank"``:
            each column's rank among quantile split points of its ordered bytes,
            ``rank_bits`` bits, interleaved, so every column gets its share of the
            leading bits. Not Iceberg's layout: Spark's rewrite will not reproduce it.
            See ``zorder.values.rank``.
        rank_bits: bits per rank for ``"rank"``, a multiple of 8 up to 64 (default 16,
            or the boundaries').
        boundaries: a ``RankBoundaries`` (``rank_boundaries``) to rank against, e.g.
            from an earlier run; default: computed from this data.

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
        >>> bytes(z[0]).hex()  # Iceberg 1.12's float bytes (the default)
        'c5555540000000000000000000000000'
        >>> bytes(zorder_values([np.array([0]), np.array([1.5])], iceberg="1.11")[0]).hex()
        'c5555540000000001555550000000000'
        >>> zorder_values([np.array([0]), np.array(["abc"])], var_length_contribution=16,
        ...               max_output_size=4).shape
        (1, 4)
    """
    opts = IcebergOptions.of(options, var_length_contribution=var_length_contribution,
                             max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                             timestamp=timestamp)
    from zorder.values.rank import encoded_matrix  # rank builds on this module

    z, arrow = encoded_matrix(data, columns, opts, encoding=encoding, rank_bits=rank_bits,
                              boundaries=boundaries, backend=backend)
    return to_arrow(z) if arrow else z




def hilbert_values(data: Any, columns: ColumnSelection = None, *, iceberg: str = ICEBERG_DEFAULT,
                   spark: str = "4", timestamp: TimestampOption = None,
                   backend: Optional[str] = None,
                   options: Optional[IcebergOptions] = None, encoding: str = "iceberg",
                   rank_bits: Optional[int] = None,
                   boundaries: Optional["RankBoundaries"] = None) -> Any:
    """Iceberg's Hilbert value of every row, as Spark 4.1's ``hilbert(...)`` rewrite
    computes its ``ICEHVALUE`` column.

    Every column becomes Iceberg's ordered bytes at exactly 8 bytes (``ordered_bytes``;
    strings and binary are cut or padded to 8, with no output cap), then
    ``HilbertByteUtils.hilbertIndex(columns, 64)`` (``hilbert_rows``): 8 bytes per column.

    Args:
        data, columns, iceberg, spark, timestamp, backend: as for ``zorder_values``.
        options: an ``IcebergOptions`` for iceberg, spark and timestamp at once (its
            max_output_size must be None, and with Iceberg's bytes its
            var_length_contribution 8: they are Z-order options; with
            ``encoding="rank"``, var_length_contribution is how many bytes of a string
            or binary value its rank is taken over).
        encoding, rank_bits, boundaries: ``encoding="rank"`` transforms column ranks
            instead of Iceberg's bytes (see ``zorder_values``): balanced, not Iceberg's.

    Returns:
        an ``(N, 8 * n)`` uint8 array, or a pyarrow ``FixedSizeBinaryArray`` for Arrow input.

    >>> import numpy as np
    >>> hilbert_values([np.array([0, 1]), np.array([0, 0])]).shape
    (2, 16)
    """
    from zorder.values.rank import encoded_matrix  # (rank builds on this module)

    opts = IcebergOptions.of(options, iceberg=iceberg, spark=spark, timestamp=timestamp)
    h, arrow = encoded_matrix(data, columns, opts, encoding=encoding, rank_bits=rank_bits,
                              boundaries=boundaries, curve="hilbert", backend=backend)
    return to_arrow(h) if arrow else h
