"""The columns of an Iceberg Z-order (or Hilbert) rewrite, as Spark resolves and reads
them: the curve's columns after identity-partition columns are dropped, Iceberg's own
errors for types and names it refuses, and each column converted from its *Iceberg* type
(``timestamptz`` in whole seconds, ``timestamp`` in microseconds, ``uuid`` as its
canonical text). Used by the ``zorder.engines.iceberg*`` stages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy

from zorder.values.sort import _argsort_zvalues
from zorder.values.ordering import CURVES, Curve, Ordering, curve_named


def require_pyiceberg() -> None:
    """ImportError, saying what to install, unless pyiceberg and pyarrow import."""
    try:
        import pyiceberg  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the Iceberg rewrite needs pyiceberg and pyarrow: pip install 'zorder[iceberg]' ({exc})"
        ) from None


def check_format_version(table_metadata: Any) -> None:
    """ValueError for a table of a format version the rewrite cannot commit, before any
    file is read: PyIceberg 0.12 reads v3 metadata but writes neither its manifests nor
    its metadata (``SUPPORTED_TABLE_FORMAT_VERSION`` is 2), and a v3 rewrite must also
    keep each row's lineage (``_row_id``), which zorder does not yet carry."""
    import pyiceberg
    from pyiceberg.table.metadata import SUPPORTED_TABLE_FORMAT_VERSION

    version = table_metadata.format_version
    if version <= 2:
        return
    if version > SUPPORTED_TABLE_FORMAT_VERSION:
        why = (f"PyIceberg {pyiceberg.__version__} commits tables up to format version "
               f"{SUPPORTED_TABLE_FORMAT_VERSION} (it writes no v{version} manifests or "
               f"metadata)")
    else:
        why = "zorder does not yet carry v3 row lineage (_row_id) through a rewrite"
    raise ValueError(f"the table is of format version {version}, which the rewrite cannot "
                     f"commit: {why}; nothing was read or written")


#: The internal value column of each curve, by name.
CURVE_COLUMNS = {name: curve.value_column for name, curve in CURVES.items()}
_CURVE_ERRORS = {
    "zorder": (
        "Cannot ZOrder when no columns are specified",
        "Cannot zorder because the table has a column named '{}', which conflicts with "
        "Iceberg's internal Z-order column name",
        "Cannot ZOrder, all columns provided were identity partition columns and cannot be used",
    ),
    "hilbert": (
        "Cannot HILBERT when no columns are specified",
        "Cannot HILBERT because the table has a column named '{}', which conflicts with "
        "Iceberg's internal Hilbert column name",
        "Cannot HILBERT, all columns provided were identity partition columns and cannot be used",
    ),
}



# ---------------------------------------------------------------------------------------
# Columns: names resolved as Iceberg resolves them, types from the Iceberg schema.

def _unsupported(name: str, typ: Any) -> TypeError:
    # SparkZOrderUDF's message, naming the column and its type.
    return TypeError(f"Cannot use column {name} of type {typ} in ZOrdering, the type is unsupported")


def _timestamp_kind(typ: Any) -> Optional[str]:
    """'tz', 'ntz' or None (not a timestamp) for an Iceberg type."""
    from pyiceberg import types as T

    if isinstance(typ, T.TimestamptzType):
        return "tz"
    if isinstance(typ, T.TimestampType):
        return "ntz"
    return None


def _check_type(name: str, typ: Any) -> None:
    """Refuse the Iceberg types Spark's Z-order UDF refuses (as Spark reads the table)."""
    from pyiceberg import types as T

    accepted = (T.BooleanType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
                T.DateType, T.TimestampType, T.TimestamptzType, T.StringType, T.UUIDType,
                T.FixedType, T.BinaryType)
    # The nanosecond timestamps of format v3 subclass nothing above; they are refused.
    if not isinstance(typ, accepted) or type(typ).__name__.endswith("NanoType"):
        raise _unsupported(name, typ)


def curve_columns(table: Any, columns: Union[str, Sequence[str]], *, curve: Any = "zorder",
                  case_sensitive: bool = False) -> List[str]:
    """The table's columns the curve is computed on, as Iceberg's rewrite chooses them.

    Resolves ``columns`` against the table's current schema (case-insensitively unless
    ``case_sensitive``), refuses a table column named like the curve's internal value
    column (``ICEZVALUE``/``ICEHVALUE``) and types Iceberg refuses, and drops
    identity-partition columns (constant within a partition); raises Iceberg's errors.

    Returns:
        the schema's spelling of each kept column, in the order given.
    """
    require_pyiceberg()
    curve = check_curve(curve)
    no_columns, conflict, all_identity = _CURVE_ERRORS[curve.name]
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    if not columns:
        raise ValueError(no_columns)
    schema = table.schema()

    def lookup(name: str) -> Any:
        try:
            return schema.find_field(name, case_sensitive=case_sensitive)
        except ValueError:
            return None

    internal = curve.value_column
    if lookup(internal) is not None:
        raise ValueError(conflict.format(internal))
    identity_sources = {f.source_id for f in table.spec().fields
                        if type(f.transform).__name__ == "IdentityTransform"}
    top_level = {f.field_id for f in schema.fields}
    kept: List[str] = []
    for name in columns:
        if not isinstance(name, str):
            raise TypeError(f"columns must be column names, not {type(name).__name__}")
        if not case_sensitive:
            # Spark refuses an ambiguous reference; PyIceberg would pick one of them.
            alike = [c for c in schema.column_names if c.lower() == name.lower()]
            if len(alike) > 1:
                raise ValueError(
                    f"column {name!r} is ambiguous: the table has {', '.join(map(repr, alike))}, "
                    f"which differ only in case; name it with case_sensitive=True "
                    f"(--case-sensitive)")
        found = lookup(name)
        if found is None:
            raise ValueError(
                f"Cannot find column '{name}' in table schema (case sensitive = "
                f"{str(case_sensitive).lower()}): {schema.as_struct()}"
            )
        resolved = schema.find_column_name(found.field_id)
        if found.field_id not in top_level:
            # Spark's rewrite reads top-level columns only; a nested field is refused.
            raise _unsupported(resolved, "nested field")
        _check_type(resolved, found.field_type)
        if found.field_id in identity_sources:
            continue  # Iceberg logs "Ignoring ... constant within a partition"
        if resolved not in kept:
            kept.append(resolved)
    if not kept:
        raise ValueError(all_identity)
    return kept


def check_curve(curve: Any) -> Curve:
    """The ``Curve`` a name says, in any case ("zorder" or "hilbert"); ValueError else."""
    if isinstance(curve, str) and curve.strip().lower() in CURVES:
        return CURVES[curve.strip().lower()]
    return curve_named(curve)


def _uuid_text(arr: Any) -> Any:
    """A 16-byte uuid column as strings of its canonical text form, as Spark reads it."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    n = len(arr)
    raw = numpy.frombuffer(arr.buffers()[1], dtype=numpy.uint8,
                           count=(arr.offset + n) * 16)[arr.offset * 16:].reshape(n, 16) \
        if n else numpy.zeros((0, 16), dtype=numpy.uint8)
    digits = numpy.frombuffer(b"0123456789abcdef", dtype=numpy.uint8)
    text = numpy.full((n, 36), ord("-"), dtype=numpy.uint8)
    positions = [i for i in range(36) if i not in (8, 13, 18, 23)]
    text[:, positions[0::2]] = digits[raw >> 4]
    text[:, positions[1::2]] = digits[raw & 15]
    offsets = numpy.arange(n + 1, dtype=numpy.int32) * 36
    validity = arr.buffers()[0] if arr.null_count else None
    if validity is not None and arr.offset:
        validity = pa.array(arr.is_valid()).buffers()[1]
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets),
                                                  pa.py_buffer(text.tobytes())],
                                 null_count=arr.null_count)


def _curve_input(data: Any, names: Sequence[str], schema: Any) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The curve's columns of an Arrow table read from Iceberg, converted as Spark sees
    them, and each timestamp column's kind (from the Iceberg type, never guessed)."""
    from pyiceberg import types as T

    columns: Dict[str, Any] = {}
    kinds: Dict[str, str] = {}
    for name in names:
        typ = schema.find_field(name).field_type
        col = data.column(name)
        if isinstance(typ, T.UUIDType):
            col = _uuid_text(col)
        kind = _timestamp_kind(typ)
        if kind is not None:
            kinds[name] = kind
        columns[name] = col
    return columns, kinds


def curve_input_table(data: Any, names: Sequence[str], schema: Any) -> Any:
    """The curve's columns of ``data`` (a table or batch read from Iceberg) as an Arrow
    table, converted as Spark reads them: what an ``Ordering`` reads, batch by batch."""
    import pyarrow as pa

    columns, _ = _curve_input(data, names, schema)
    return pa.table([columns[n] for n in names], names=list(names))


def curve_ordering(schema: Any, names: Sequence[str], ordering: Ordering) -> Ordering:
    """``ordering`` for a rewrite on ``names`` (resolved by ``curve_columns``), with each
    timestamp column's kind from the Iceberg schema. Checked here, before any file is
    read: its ``boundaries`` (of an earlier run) must be for these columns, at the
    widths its options give them."""
    import pyarrow as pa

    kinds = {n: k for n in names
             if (k := _timestamp_kind(schema.find_field(n).field_type)) is not None}
    ordering = replace(ordering, options=replace(ordering.options, timestamp=kinds or None))
    boundaries = ordering.boundaries
    if boundaries is not None:
        if boundaries.names is not None and [n.lower() for n in boundaries.names] != \
                [n.lower() for n in names]:
            raise ValueError(f"boundaries: made for columns {list(boundaries.names)}, this "
                             f"rewrite orders {list(names)}")
        # Zero rows of the columns' types: the widths the boundaries must have.
        empty = pa.Table.from_batches([], schema=schema.select(*names).as_arrow())
        parts = curve_parts(empty, names, schema, ordering)
        for name, part, width in zip(names, parts, boundaries.widths):
            if part.shape[1] != width:
                raise ValueError(f"boundaries: column {name} has {width}-byte split points "
                                 f"but {part.shape[1]}-byte ordered bytes here (was "
                                 f"var_length_contribution different?)")
    return ordering


def curve_parts(data: Any, names: Sequence[str], schema: Any,
                ordering: Ordering) -> List[numpy.ndarray]:
    """Each curve column's ordered bytes, converted as Spark reads it (what the rank
    encoding samples and ranks)."""
    columns, _ = _curve_input(data, names, schema)
    return ordering.parts(columns, list(names))


def curve_order(data: Any, names: Sequence[str], schema: Any, ordering: Ordering,
                scratch: Any = None) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(the permutation that sorts ``data`` by its curve values, the ``(N, size)`` curve
    values in ``data``'s order). ``scratch``: a future of the sort's working memory
    (``zorder.values.sort.sort_scratch``), made meanwhile on another thread, or None."""
    values = _curve_values(data, names, schema, ordering)
    return _argsort_zvalues(values, scratch.result() if scratch is not None else None), values


def curve_value_size(data: Any, names: Sequence[str], schema: Any, ordering: Ordering) -> int:
    """The bytes of each curve value of ``data``'s rows (from none of its rows)."""
    return ordering.size([p.shape[1] for p in curve_parts(data.slice(0, 0), names, schema,
                                                          ordering)])


#: Rows of curve values computed at a time: the ordered bytes of a slice stay in memory
#: already touched (a whole group's, 32 bytes a row for two doubles, were first-touch
#: page faults that took longer than the arithmetic).
_VALUES_CHUNK_ROWS = 1 << 18


def _curve_values(data: Any, names: Sequence[str], schema: Any,
                  ordering: Ordering) -> numpy.ndarray:
    """The ``(N, size)`` curve values of ``data``: slice by slice where each row's value
    is its own (all but rank boundaries still to be computed from the whole group)."""
    n = data.num_rows
    if n <= _VALUES_CHUNK_ROWS or (ordering.encoding == "rank" and ordering.boundaries is None):
        return ordering.values(curve_parts(data, names, schema, ordering))
    out: Any = None
    for start in range(0, n, _VALUES_CHUNK_ROWS):
        piece = ordering.values(curve_parts(data.slice(start, _VALUES_CHUNK_ROWS), names,
                                            schema, ordering))
        if out is None:
            out = numpy.empty((n, piece.shape[1]), dtype=numpy.uint8)
        out[start:start + len(piece)] = piece
    return out
