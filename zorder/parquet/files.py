"""What a Parquet dataset holds: the one file lister every command and report uses.

A folder is read as ``pyarrow.dataset`` discovers it (and so as Dask's ``read_parquet``
reads it): every file below it, hive partition folders included, except names starting
with ``_`` or ``.`` (``_SUCCESS``, ``_zorder.json``, temporary files). The jobs read the
list this returns, so a report and the job it describes never disagree on the files.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence, Union

__all__ = ["Where", "check_reorderable", "dataset_schema", "parquet_files", "require_pyarrow"]

Where = Union[str, "os.PathLike[str]", Sequence[Any]]


def require_pyarrow(what: str) -> None:
    """Raise ImportError naming the extra if pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{what} needs pyarrow: pip install 'zorder[arrow]' (or pip install pyarrow) ({exc})"
        ) from None


def parquet_files(where: Where) -> List[Any]:
    """The Parquet files of ``where``, sorted by path: a file, a folder (as
    ``pyarrow.dataset`` discovers it), or a list, which is returned as it is (it may hold
    paths, ``pyarrow.parquet.ParquetFile`` or ``FileMetaData`` objects)."""
    if isinstance(where, (str, os.PathLike)):
        path = os.fspath(where)
        if os.path.isdir(path):
            import pyarrow.dataset as ds

            return sorted(ds.dataset(path, format="parquet", partitioning="hive").files)
        if not os.path.exists(path):
            raise ValueError(f"no such Parquet file or folder: {path!r}")
        return [path]
    if isinstance(where, (list, tuple)):
        return list(where)
    raise TypeError(f"expected a path or a list of Parquet files, not {type(where).__name__}")


def dataset_schema(folder: str, files: Sequence[str]) -> Any:
    """The one schema of the Parquet ``files`` of ``folder``, checked before any work.

    Every file's footer is read (one that is not Parquet is named), and every file must
    have the same columns, in any order: the job writes one schema, and a column some
    files lack would be dropped (or a task would fail on it). Their types are the first
    file's (the job casts the others to them, as Dask's own reading does), and a file whose
    column is of another kind (a bool where the first has an integer, a string, a date) is
    refused: that cast would change its values without an error. A field is
    nullable if it is in any file. The schema metadata is what every file says alike: a
    key whose value differs between files (a GeoParquet bounding box, say) would be false
    of the rows of the others, so it is left out. Hive partition folders (``key=value``)
    are refused: their columns are in the folder names, not in the files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = os.path.abspath(folder)
    for path in files:
        parent = os.path.relpath(os.path.dirname(os.path.abspath(path)), root)
        keys = [part for part in parent.split(os.sep) if "=" in part]
        if keys:
            raise ValueError(
                f"{folder!r} is partitioned in key=value folders ({keys[0]!r} holds "
                f"{os.path.basename(path)!r}): their column is in the folder names, not in "
                f"the files, and would be dropped; cluster a folder of whole files")
    first = None
    nullable: set = set()
    common: Dict[bytes, bytes] = {}
    for path in files:
        where = repr(path) if os.path.abspath(path) == root else f"{path!r} in {folder!r}"
        try:
            footer = pq.read_metadata(path)
            schema = footer.schema.to_arrow_schema()
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(f"{where} is not a readable Parquet file ({exc})") from None
        legacy = [footer.schema.column(i).path for i in range(footer.num_columns)
                  if footer.schema.column(i).physical_type == "INT96"]
        if legacy:
            # Dask reads INT96 as nanoseconds, wrapping dates outside 1677-2262 (Spark's
            # 9999-12-31 became 1816-03-29) with no error, and offers no option to read
            # them otherwise; `zorder sort` reads them in microseconds.
            raise ValueError(
                f"column {legacy[0]!r} of {os.path.basename(path)!r} holds INT96 timestamps "
                f"(Spark's legacy type), which Dask reads in nanoseconds, corrupting dates "
                f"outside 1677-2262; rewrite them as INT64 timestamps first (Spark: "
                f"spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS, or zorder sort)")
        nullable.update(f.name for f in schema if f.nullable)
        metadata = dict(schema.metadata or {})
        if first is None:
            first, first_path, common = schema, path, metadata
            continue
        common = {k: v for k, v in common.items() if metadata.get(k) == v}
        ours, theirs = set(first.names), set(schema.names)
        if ours != theirs:
            name = sorted(ours ^ theirs)[0]
            raise ValueError(
                f"the files of {folder!r} have different columns: {name!r} is "
                f"{_described(first, name)} in {os.path.basename(first_path)!r} and "
                f"{_described(schema, name)} in {os.path.basename(path)!r}; "
                f"the job writes one schema (rewrite the files to one first)")
        for field in schema:
            ours_type = first.field(field.name).type
            if not _castable(ours_type, field.type):
                raise ValueError(
                    f"the files of {folder!r} disagree on column {field.name!r}: "
                    f"{ours_type} in {os.path.basename(first_path)!r} and {field.type} in "
                    f"{os.path.basename(path)!r}, which the job would convert to the first "
                    f"file's type; rewrite the files to one type first")
    if first is None:
        raise ValueError(f"{folder!r} holds no Parquet files")
    check_reorderable(first, repr(folder))
    fields = [f.with_nullable(True) if f.name in nullable else f for f in first]
    return pa.schema(fields, metadata=common or None)


#: The kinds of column a checked cast keeps the values of, by pyarrow.types predicate
#: (the view and list-view types are newer than some pyarrow: missing ones never match).
_KINDS = (("null", ("is_null",)), ("bool", ("is_boolean",)), ("integer", ("is_integer",)),
          ("float", ("is_floating",)), ("decimal", ("is_decimal",)),
          ("timestamp", ("is_timestamp",)), ("date", ("is_date",)), ("time", ("is_time",)),
          ("duration", ("is_duration",)), ("struct", ("is_struct",)), ("map", ("is_map",)),
          ("string", ("is_string", "is_large_string", "is_string_view")),
          ("binary", ("is_binary", "is_large_binary", "is_binary_view",
                      "is_fixed_size_binary")),
          ("list", ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view",
                    "is_large_list_view")))


def _kind(typ: Any) -> str:
    """What a column holds, whatever its width, unit or encoding: a value cast to another
    type of its kind keeps its value or fails (a checked cast); across kinds it changes
    (2 -> True, 7 -> "7", a timestamp -> its date)."""
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        return _kind(typ.value_type)
    for kind, tests in _KINDS:
        if any(getattr(pa.types, test, lambda _: False)(typ) for test in tests):
            return kind
    return str(typ)


def _castable(a: Any, b: Any) -> bool:
    """Whether the job may cast a column of type ``a`` to ``b``, or the other way, and keep
    every value (an integer to a float is checked by the cast)."""
    kinds = {_kind(a), _kind(b)}
    return len(kinds) == 1 or "null" in kinds or kinds == {"integer", "float"}


def _described(schema: Any, name: str) -> str:
    return str(schema.field(name).type) if name in schema.names else "absent"


def _view_type(typ: Any) -> bool:
    """Whether ``typ`` is or holds a string_view or binary_view."""
    from zorder.ordered.arrow_columns import view_kind

    return view_kind(typ) is not None or any(_view_type(typ.field(i).type)
                                             for i in range(typ.num_fields))


def check_reorderable(schema: Any, where: str) -> None:
    """Refuse, before any work, a column pyarrow cannot put in another order: a
    string_view or binary_view (at any depth) has no take kernel, so the rewrite would
    end in pyarrow's NotImplementedError."""
    for field in schema:
        if _view_type(field.type):
            raise ValueError(
                f"column {field.name!r} of {where} is {field.type}, which pyarrow cannot "
                f"reorder (no take for view types); write it as string or binary first")
