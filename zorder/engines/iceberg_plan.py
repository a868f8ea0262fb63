"""The plan of an Iceberg rewrite: the data files at a branch's head that ``row_filter``
may match, grouped by partition (one group per partition, split past
``max_file_group_size``; files of older specs in one group), and the target file size."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote_plus
from typing import Any, Dict, List, Optional, Tuple

from zorder.engines.iceberg_deletes import plan_tasks
from zorder.engines.iceberg_manifests import ManifestEntries
from zorder.parquet.sizes import parse_size


#: Iceberg's ``max-file-group-size-bytes`` default (``RewriteDataFiles``): 100 GiB.
DEFAULT_MAX_FILE_GROUP_SIZE = 100 * 1024**3

#: Iceberg's ``write.target-file-size-bytes`` default: 512 MiB.
DEFAULT_TARGET_FILE_SIZE = 512 * 1024**2


@dataclass
class FileGroup:
    """Data files rewritten together: of one partition (or one part of it, past the
    group size), or every file of older partition specs."""

    partition: Any          # the partition Record of its files (None: repartition)
    spec_id: int
    tasks: List[Any]        # FileScanTask
    # Files of older partition specs, split by the current spec as they are rewritten.
    repartition: bool = False
    # The clustering its written files record (``iceberg_select.clustering_text``).
    clustering: Optional[str] = None

    @property
    def source_specs(self) -> List[int]:
        return sorted({t.file.spec_id for t in self.tasks})

    @property
    def input_bytes(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)

    @property
    def rows(self) -> int:
        return sum(t.file.record_count for t in self.tasks)


def row_filter_expression(row_filter: Any) -> Any:
    """A PyIceberg expression from an expression or a string (ValueError if unparsable)."""
    from pyiceberg.expressions import AlwaysTrue, BooleanExpression

    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, BooleanExpression):
        return row_filter
    if not isinstance(row_filter, str):
        raise TypeError(f"row_filter must be a PyIceberg expression or a string, not "
                        f"{type(row_filter).__name__}")
    from pyiceberg.expressions.parser import parse

    try:
        return parse(row_filter)
    except Exception as exc:  # noqa: BLE001 - pyparsing's ParseException
        where = getattr(exc, "col", None)
        raise ValueError(f"row_filter: cannot parse {row_filter!r} as a PyIceberg expression"
                         + (f" (at column {where})" if where else "")
                         + "; e.g. \"day >= '2026-01-01' and city = 'Oslo'\"") from None


def check_row_filter(schema: Any, row_filter: Any, case_sensitive: bool) -> None:
    """ValueError, naming ``row_filter`` and the table's columns, for a filter on a column
    the table does not have (PyIceberg says only "Could not find field")."""
    from pyiceberg.expressions.visitors import bind

    try:
        bind(schema, row_filter, case_sensitive)
    except ValueError as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        missing = re.match(r"Could not find field with name (\S+?),", text)
        if missing:
            text = f"the table has no column {missing.group(1)!r}"
        raise ValueError(f"row_filter: {text}; its columns are "
                         f"{', '.join(schema.column_names)}") from None


def plan_groups(table: Any, row_filter: Any, case_sensitive: bool,
                max_group: int, branch: str = "main",
                entries: Optional[ManifestEntries] = None) -> List[FileGroup]:
    """The file groups of the data files at the head of ``branch`` that ``row_filter``
    may match: by partition, at most ``max_group`` input bytes each (ValueError if an
    equality delete file may apply to one of them). ``entries``: the rewrite's manifest
    reads, kept for its selection and commit."""
    snapshot = table.metadata.snapshot_by_name(branch)
    if snapshot is None:
        return []
    # (each task with its position deletes, applied as the group is read)
    tasks = plan_tasks(table.metadata, entries or ManifestEntries(table.io), snapshot,
                       row_filter, case_sensitive,
                       lambda f: file_partition_name(table.metadata, f))
    default_spec = table.metadata.default_spec_id
    by_partition: Dict[Tuple[int, Tuple[Any, ...]], List[Any]] = {}
    older: List[Any] = []
    for task in tasks:
        f = task.file
        if f.spec_id != default_spec:
            # As Iceberg's planner does: files of another spec may hold rows of several
            # current partitions, so they are grouped together, as if unpartitioned.
            older.append(task)
            continue
        key = (f.spec_id, tuple(f.partition))
        by_partition.setdefault(key, []).append(task)
    groups: List[FileGroup] = []
    parts = sorted(by_partition.items(), key=lambda kv: repr(kv[0]))
    if older:
        parts.append(((-1, ()), older))
    for (spec_id, _), part_tasks in parts:
        part_tasks.sort(key=lambda t: t.file.file_path)
        repartition = spec_id == -1
        current: List[Any] = []
        size = 0

        def close() -> None:
            partition = None if repartition else current[0].file.partition
            groups.append(FileGroup(partition, default_spec, current, repartition))

        for task in part_tasks:
            # Iceberg splits a partition into groups of at most max-file-group-size bytes.
            if current and size + task.file.file_size_in_bytes > max_group:
                close()
                current, size = [], 0
            current.append(task)
            size += task.file.file_size_in_bytes
        if current:
            close()
    return groups


#: The partition fields of recent (spec, schema) pairs, by identity: (spec, schema,
#: [(the field's quoted name, its transform, its result type)]).
_PARTITION_FIELDS: Dict[Tuple[int, int], Tuple[Any, Any, List[Tuple[str, Any, Any]]]] = {}

#: Text that ``quote_plus(text, safe="")`` leaves as it is.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")


def _partition_fields(spec: Any, schema: Any) -> List[Tuple[str, Any, Any]]:
    """Each of ``spec``'s fields as ``partition_name`` writes it: its quoted name, its
    transform and its result type (PyIceberg's ``partition_type``, which builds the
    struct anew on every call), kept while the same objects are asked for."""
    key = (id(spec), id(schema))
    known = _PARTITION_FIELDS.get(key)
    if known is None or known[0] is not spec or known[1] is not schema:
        if len(_PARTITION_FIELDS) >= 16:
            _PARTITION_FIELDS.clear()
        known = (spec, schema, [
            (quote_plus(field.name, safe=""), field.transform, kind.field_type)
            for field, kind in zip(spec.fields, spec.partition_type(schema).fields)])
        _PARTITION_FIELDS[key] = known
    return known[2]


def partition_name(table_metadata: Any, record: Any) -> str:
    """A partition as its path (``day=2026-01-01``), or "" when unpartitioned: Iceberg's
    ``PartitionSpec.partitionToPath``, as PyIceberg's ``partition_to_path`` writes it,
    with the partition type built once for a table's groups, not once per group."""
    spec = table_metadata.spec()
    if spec.is_unpartitioned():
        return ""
    parts = []
    for pos, (name, transform, kind) in enumerate(
            _partition_fields(spec, table_metadata.schema())):
        text = transform.to_human_string(kind, value=record[pos])
        if not _UNQUOTED.fullmatch(text):
            text = quote_plus(text, safe="")
        parts.append(f"{name}={text}")
    return "/".join(parts)


def file_partition_name(table_metadata: Any, data_file: Any) -> str:
    """A data file's partition as the job's messages name it."""
    if data_file.spec_id != table_metadata.default_spec_id:
        return f"a file of the older partition spec {data_file.spec_id}"
    return f"partition {partition_name(table_metadata, data_file.partition) or '(unpartitioned)'}"


def group_name(table_metadata: Any, group: FileGroup) -> str:
    """A group as the job's messages name it (``partition day=2026-01-01``)."""
    if group.repartition:
        return (f"the files of older partition specs "
                f"({', '.join(map(str, group.source_specs))})")
    return f"partition {partition_name(table_metadata, group.partition) or '(unpartitioned)'}"


def entry_partition(table_metadata: Any, group: FileGroup) -> str:
    """A group's partition in the report: its path ("" unpartitioned), or its specs."""
    if group.repartition:
        return f"(older specs {', '.join(map(str, group.source_specs))}, into the current spec)"
    return partition_name(table_metadata, group.partition)


def target_size(table: Any, target_file_size: Any) -> int:
    """The target file size in bytes: the one given, else the table's
    ``write.target-file-size-bytes``, else Iceberg's default."""
    if target_file_size is not None:
        return parse_size(target_file_size, "target_file_size")
    from pyiceberg.table import TableProperties

    prop = table.properties.get(TableProperties.WRITE_TARGET_FILE_SIZE_BYTES)
    if not prop:
        return DEFAULT_TARGET_FILE_SIZE
    try:   # (a whole number of bytes, as Iceberg's Java reads it: Long.parseLong)
        size = int(prop.strip())
    except ValueError:
        raise ValueError(f"the table property write.target-file-size-bytes must be a whole "
                         f"number of bytes, not {prop!r} (or pass target_file_size / "
                         f"--target-file-size)") from None
    return parse_size(size, "the table property write.target-file-size-bytes")
