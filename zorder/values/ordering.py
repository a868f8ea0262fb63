"""How rows are ordered: the curve, and the one ``Ordering`` object below the public face.

- ``Curve``: what a space-filling curve is: ``ZORDER`` (Iceberg's Z-order, the interleave
  of ``SparkZOrderUDF``) and ``HILBERT`` (Spark 4.1's ``hilbert(...)`` rewrite), each with
  the size of its values, its kernel, its value column and the options it refuses.
- ``Ordering``: Iceberg's options, the curve, the encoding (Iceberg's ordered bytes or
  column ranks) and the rank boundaries, validated once. The public functions take
  loose keywords and build one (``Ordering.of``); every function below takes it whole.
- ``zorder_values`` and ``hilbert_values``: a table's curve values.

>>> import numpy as np
>>> z = zorder_values([np.array([1, 2]), np.array(["a", "b"])])
>>> z.shape
(2, 16)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy

from zorder import hilbert, interleave
from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, PRIMITIVE_BUFFER_SIZE, TimestampOption
from zorder.values import table
from zorder.values.stages import CURVE, stage
from zorder.values.codec import HVALUE_COLUMN, ZVALUE_COLUMN, to_arrow
from zorder.values.rank import (
    RankBoundaries, boundaries_of, check_encoding_arguments, check_shapes, column_names,
    rank_columns,
)
from zorder.values.table import ColumnSelection

__all__ = ["CURVES", "HILBERT", "ZORDER", "Curve", "Ordering", "curve_named",
           "hilbert_values", "zorder_values"]

Kernel = Callable[[Sequence[numpy.ndarray]], numpy.ndarray]


class Curve:
    """A space-filling curve: its name, the column Iceberg gives its values, what a value
    is called in messages, the options it takes, the size of its values and its kernel.
    There are two, ``ZORDER`` and ``HILBERT`` (``curve_named`` finds one by name)."""

    name: str
    value_column: str
    label: str

    def check(self, options: IcebergOptions, encoding: str) -> None:
        """Refuse the options this curve does not take (ValueError)."""

    def size(self, widths: Sequence[int], options: IcebergOptions) -> int:
        """Bytes of one value of columns of these widths (ordered bytes, or ranks)."""
        raise NotImplementedError

    def kernel(self, backend: Optional[str], options: IcebergOptions) -> Kernel:
        """The values of columns (``(N, width)`` uint8 each) by ``backend``'s kernel,
        found now: a bad backend is an error before any work."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name.upper()

    def __reduce__(self) -> Any:   # one object per curve, in every process
        return curve_named, (self.name,)


class _ZOrder(Curve):
    name, value_column, label = "zorder", ZVALUE_COLUMN, "Z"

    def size(self, widths: Sequence[int], options: IcebergOptions) -> int:
        # Iceberg caps as each column is added, which is the cap of the sum.
        cap = options.max_output_size
        return sum(widths) if cap is None else min(sum(widths), cap)

    def kernel(self, backend: Optional[str], options: IcebergOptions) -> Kernel:
        rows = interleave.rows_function(backend)
        return lambda parts: rows(list(parts), self.size([p.shape[1] for p in parts], options))


class _Hilbert(Curve):
    name, value_column, label = "hilbert", HVALUE_COLUMN, "Hilbert"

    def check(self, options: IcebergOptions, encoding: str) -> None:
        if encoding == "iceberg" and (options.var_length_contribution != PRIMITIVE_BUFFER_SIZE
                                      or options.max_output_size is not None):
            raise ValueError(
                "var_length_contribution and max_output_size are Z-order options: Iceberg's "
                "Hilbert rewrite takes exactly 8 bytes of every column, with no cap"
            )
        if options.max_output_size is not None:
            raise ValueError("max_output_size is a Z-order option; the Hilbert index takes "
                             "every rank bit")

    def size(self, widths: Sequence[int], options: IcebergOptions) -> int:
        return sum(widths)   # every bit of every column: 8 bytes each, or the rank's

    def kernel(self, backend: Optional[str], options: IcebergOptions) -> Kernel:
        rows = hilbert.rows_function(backend)
        return lambda parts: rows(list(parts), 8 * parts[0].shape[1])


ZORDER: Curve = _ZOrder()
HILBERT: Curve = _Hilbert()
#: The curves by name, as the public functions take them.
CURVES: Dict[str, Curve] = {c.name: c for c in (ZORDER, HILBERT)}


def curve_named(curve: Any) -> Curve:
    """The ``Curve`` a name says ("zorder" or "hilbert"; a ``Curve`` as it is)."""
    if isinstance(curve, Curve):
        return curve
    if isinstance(curve, str) and curve in CURVES:
        return CURVES[curve]
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
    curve: Curve = ZORDER   # (a name is taken too: "zorder" or "hilbert")
    encoding: str = "iceberg"
    rank_bits: Optional[int] = None
    boundaries: Optional[RankBoundaries] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "curve", curve_named(self.curve))
        object.__setattr__(self, "rank_bits", check_encoding_arguments(
            self.encoding, self.rank_bits, self.boundaries))
        self.curve.check(self.options, self.encoding)

    @classmethod
    def of(cls, options: Optional[IcebergOptions] = None, curve: Any = ZORDER,
           encoding: str = "iceberg", rank_bits: Optional[int] = None,
           boundaries: Optional[RankBoundaries] = None, **keywords: Any) -> "Ordering":
        """The ordering of a public function's arguments: ``options`` or the Iceberg
        keywords (one of the two, ``IcebergOptions.of``), the curve and the encoding."""
        return cls(IcebergOptions.of(options, **keywords), curve, encoding, rank_bits,
                   boundaries)

    def parts(self, data: Any, columns: ColumnSelection) -> List[numpy.ndarray]:
        """Each selected column's ordered bytes, at the width this ordering reads."""
        return table.columns_bytes(data, columns, self.options)[0]

    def values(self, parts: Sequence[numpy.ndarray], backend: Optional[str] = None) -> numpy.ndarray:
        """The ``(N, size)`` curve values of ``parts`` (rank needs ``boundaries``)."""
        kernel = self.curve.kernel(backend, self.options)
        if self.encoding == "rank":
            if self.boundaries is None:
                raise ValueError("encoding='rank' needs boundaries here (zorder.rank_boundaries)")
            parts = rank_columns(parts, self.boundaries)
        with stage(CURVE):
            return kernel(parts)

    def matrix(self, data: Any, columns: ColumnSelection,
               backend: Optional[str] = None) -> numpy.ndarray:
        """The ``(N, size)`` uint8 curve values of ``data``'s ``columns``."""
        return self.values(self.parts(data, columns), backend)

    def table_values(self, data: Any, columns: ColumnSelection,
                     backend: Optional[str] = None) -> Tuple[numpy.ndarray, bool]:
        """(the curve values of a table, whether it is Arrow), as the public functions
        give them: rank boundaries, unless given, from this table (``DEFAULT_SAMPLE``
        rows, ``DEFAULT_SEED``), and given ones checked against its column names."""
        self.curve.kernel(backend, self.options)   # (a bad backend, before any work)
        parts, arrow = table.columns_bytes(data, columns, self.options)
        ordering = self
        if self.encoding == "rank":
            names = column_names(data, columns)
            boundaries = self.boundaries
            if boundaries is None:
                boundaries = boundaries_of(parts, int(self.rank_bits or 0), names)
            check_shapes(parts, boundaries, names)
            ordering = replace(self, boundaries=boundaries)
        return ordering.values(parts, backend), arrow

    def size(self, widths: Sequence[int]) -> int:
        """Bytes of one curve value for columns of these ordered-byte widths."""
        if self.encoding == "rank":
            widths = [int(self.rank_bits or 0) // 8] * len(widths)
        return self.curve.size(widths, self.options)

    def as_dict(self) -> Dict[str, Any]:
        out = {**self.options.as_dict(), "curve": self.curve.name, "encoding": self.encoding}
        if self.encoding == "rank":
            out["rank_bits"] = self.rank_bits
            out["rank_boundaries"] = None if self.boundaries is None else self.boundaries.to_dict()
        return out


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
    ordering = Ordering.of(options, ZORDER, encoding, rank_bits, boundaries,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    z, arrow = ordering.table_values(data, columns, backend)
    return to_arrow(z) if arrow else z


def hilbert_values(data: Any, columns: ColumnSelection = None, *, iceberg: str = ICEBERG_DEFAULT,
                   spark: str = "4", timestamp: TimestampOption = None,
                   backend: Optional[str] = None,
                   options: Optional[IcebergOptions] = None, encoding: str = "iceberg",
                   rank_bits: Optional[int] = None,
                   boundaries: Optional[RankBoundaries] = None) -> Any:
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
    ordering = Ordering.of(options, HILBERT, encoding, rank_bits, boundaries,
                           iceberg=iceberg, spark=spark, timestamp=timestamp)
    h, arrow = ordering.table_values(data, columns, backend)
    return to_arrow(h) if arrow else h
