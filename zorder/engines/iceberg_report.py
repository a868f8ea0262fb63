"""What an Iceberg rewrite reports: its ``RewriteResult``, the files a table's metadata
names (``referenced_files``), and how many data files the manifests' bounds let a reader
skip, before and after (``skipping``, the math of ``zorder.parquet.skipping``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set

from zorder.engines.iceberg_deletes import report_tasks


@dataclass
class RewriteResult:
    """What a rewrite did.

    Attributes:
        snapshot_id: the REPLACE snapshot committed (None for a dry run or when there was
            nothing to rewrite).
        rewritten_files: data files removed by the snapshot (planned, for a dry run).
        added_files: data files it added.
        rewritten_bytes: bytes of the rewritten files.
        report: ``{"groups": [...], "columns": [...], "curve": ..., "target_file_size":
            ..., "seconds": ..., "removed_delete_files": [...]}``; each group has
            ``partition``, ``input_files``, ``input_bytes``, ``rows``, ``deleted_rows``
            (the rows its position deletes removed), ``output_files``, ``output_bytes``.
            ``removed_delete_files``: the delete files that referenced only rewritten
            data files, removed by the same snapshot.
        removed_paths, added_paths: the data files' locations, for a skipping report.
        previous_snapshot_id: the snapshot the rewrite planned from (its parent).
        boundaries: the ``RankBoundaries`` used with ``encoding="rank"`` (given or
            learned; also in ``report["rank_boundaries"]`` as a dict), else None.
    """

    snapshot_id: Optional[int]
    rewritten_files: int
    added_files: int
    rewritten_bytes: int
    report: Dict[str, Any] = field(default_factory=dict)
    removed_paths: List[str] = field(default_factory=list)
    added_paths: List[str] = field(default_factory=list)
    previous_snapshot_id: Optional[int] = None
    boundaries: Any = None


def referenced_files(table: Any) -> Set[str]:
    """Every file location the table's metadata names: each snapshot's manifest list, its
    manifests and their data and delete files (deleted entries too: older snapshots still
    read them), and the metadata files of its log. (Not ``table.inspect.all_files()``,
    which fails on types pyarrow cannot hold in its metrics, such as uuid.)"""
    io = table.io
    files: Set[str] = {table.metadata_location}
    files.update(entry.metadata_file for entry in table.metadata.metadata_log)
    manifests: Dict[str, Any] = {}
    for snapshot in table.snapshots():
        files.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            manifests.setdefault(manifest.manifest_path, manifest)
    for path, manifest in manifests.items():
        files.add(path)
        files.update(e.data_file.file_path
                     for e in manifest.fetch_manifest_entry(io, discard_deleted=False))
    return files


def _data_files(table: Any, snapshot_id: int) -> List[Any]:
    """The data files of a snapshot, as its manifests list them (with their bounds)."""
    return [t.file for t in report_tasks(table, snapshot_id)]


def _bound_domain(arr: Any, typ: Any) -> Any:
    """Arrow values as PyIceberg decodes the same type's bounds (``from_bytes``): ints for
    dates, times and timestamps (in the type's unit), bytes for uuid, else as they are."""
    import pyarrow as pa
    from pyiceberg import types as T

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_timestamp(arr.type):
        unit = "ns" if type(typ).__name__.endswith("NanoType") else "us"
        return arr.cast(pa.timestamp(unit, tz=arr.type.tz)).cast(pa.int64())
    if pa.types.is_time(arr.type):
        return arr.cast(pa.time64("us")).cast(pa.int64())
    if pa.types.is_date(arr.type) or isinstance(typ, T.DateType):
        return arr.cast(pa.int32())
    return arr


def _file_stats(files: Sequence[Any], field: Any) -> List[Any]:
    """Each data file's bounds of ``field`` (decoded from the manifest entry) as one
    ``RowGroupStats``; a file without bounds can never be skipped."""
    from pyiceberg.conversions import from_bytes

    from zorder.parquet.skipping import RowGroupStats

    out = []
    for i, f in enumerate(files):
        lo_raw = (f.lower_bounds or {}).get(field.field_id)
        hi_raw = (f.upper_bounds or {}).get(field.field_id)
        lo = hi = None
        if lo_raw is not None and hi_raw is not None:
            lo, hi = from_bytes(field.field_type, lo_raw), from_bytes(field.field_type, hi_raw)
            if isinstance(lo, float) and math.isnan(lo) or isinstance(hi, float) and math.isnan(hi):
                lo = hi = None
        nulls = (f.null_value_counts or {}).get(field.field_id)
        all_null = nulls is not None and f.record_count > 0 and nulls == f.record_count
        out.append(RowGroupStats(i, 0, f.record_count, lo, hi, all_null))
    return out


def _row_group_stats(io: Any, files: Sequence[Any], field: Any,
                     footers: Optional[Dict[str, Any]] = None) -> List[Any]:
    """Each row group's statistics of ``field`` in the data files' Parquet footers, in the
    domain of the manifests' bounds (dates, times and timestamps as their stored ints); a
    row group without them can never be skipped. ``footers``: the footers read so far, by
    path (each file's footer read once for every column)."""
    import pyarrow.parquet as pq

    from zorder.parquet.skipping import RowGroupStats

    as_int = type(field.field_type).__name__ in (
        "DateType", "TimeType", "TimestampType", "TimestamptzType", "TimestampNanoType",
        "TimestamptzNanoType")
    out = []
    for i, f in enumerate(files):
        md = None if footers is None else footers.get(f.file_path)
        if md is None:
            with io.new_input(f.file_path).open() as stream:
                md = pq.read_metadata(stream)
            if footers is not None:
                footers[f.file_path] = md
        arrow = md.schema.to_arrow_schema()
        names = [a.name for a in arrow if (a.metadata or {}).get(b"PARQUET:field_id")
                 == str(field.field_id).encode()]
        index = next((k for k in range(md.num_columns)
                      if names and md.schema.column(k).path == names[0]), None)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            st = rg.column(index).statistics if index is not None else None
            lo = hi = None
            all_null = False
            if st is not None:
                all_null = bool(st.has_null_count and st.null_count == rg.num_rows > 0)
                if st.has_min_max:
                    lo, hi = (st.min_raw, st.max_raw) if as_int else (st.min, st.max)
                    if isinstance(lo, float) and math.isnan(lo) or \
                            isinstance(hi, float) and math.isnan(hi):
                        lo = hi = None
            out.append(RowGroupStats(i, g, rg.num_rows, lo, hi, all_null))
    return out


def skipping(table: Any, before: Any, after: Optional[int] = None,
             columns: Optional[Sequence[str]] = None, *, changed_only: bool = True,
             fraction: float = 0.01, predicates: int = 25,
             sample_files: int = 16, level: str = "files") -> Dict[str, Any]:
    """How many data files min/max statistics let a reader skip, before and after, read
    from the table's own manifests: each data file's lower and upper bounds (and null
    counts) in its manifest entry, as a planner prunes with them.

    Args:
        table: the ``pyiceberg.table.Table``.
        before, after: snapshot ids; or a ``RewriteResult`` as ``before`` (its previous
            and committed snapshots, and its columns).
        columns: the columns to report on (default the rewrite's curve columns).
        changed_only: compare only the files that differ between the two snapshots (the
            rewritten files and their replacements); False: every data file of each.
        fraction, predicates: as for ``zorder.parquet.skipping.skipping_report`` (the
            same math, ``stats_report``, fed with the manifests' bounds).
        sample_files: the predicates are cut from the values of at most this many of the
            ``before`` files, read (only that column) through the table's FileIO.
        level: ``"files"`` (the manifests' bounds only) or ``"row_groups"``: also each
            row group's statistics in the files' Parquet footers, which a reader skips
            within a file (a partition of one file has no file to skip).

    Returns:
        ``stats_report``'s dict, ``level="files"``, sides ``before`` and ``after``;
        ``format_report`` prints it.
    """
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    from zorder.parquet.skipping import sorted_sample, stats_report

    if isinstance(before, RewriteResult):
        result = before
        if result.snapshot_id is None or result.previous_snapshot_id is None:
            raise ValueError("skipping: the rewrite committed nothing (a dry run, or nothing "
                             "to rewrite), so there is no after to compare")
        columns = result.report["columns"] if columns is None else columns
        before, after = result.previous_snapshot_id, result.snapshot_id
    if after is None or columns is None:
        raise TypeError("skipping needs before and after snapshot ids and columns (or a "
                        "RewriteResult)")
    tasks = report_tasks(table, before)
    old, new = [t.file for t in tasks], _data_files(table, after)
    if changed_only:
        old_paths, new_paths = {f.file_path for f in old}, {f.file_path for f in new}
        old = [f for f in old if f.file_path not in new_paths]
        new = [f for f in new if f.file_path not in old_paths]
        tasks = [t for t in tasks if t.file.file_path not in new_paths]
    schema = table.schema()
    fields = {c: schema.find_field(c, case_sensitive=False) for c in columns}
    step = max(1, math.ceil(len(tasks) / sample_files))
    chosen = tasks[::step][:sample_files]

    def sample(column: str) -> List[Any]:
        import pyarrow as pa

        field = fields[column]
        name = schema.find_column_name(field.field_id)
        projected = schema.select(name, case_sensitive=True)
        per_file = max(1, 100_000 // max(1, len(chosen)))
        parts = []
        for task in chosen:
            col = ArrowScan(table.metadata, table.io, projected, AlwaysTrue(), True) \
                .to_table([task]).column(0)
            col = _bound_domain(col, field.field_type)
            parts.append(pa.array(sorted_sample(col, per_file), type=col.type))
        return sorted_sample(pa.chunked_array(parts), 100_000) if parts else []

    if level == "row_groups":
        footers: Dict[str, Any] = {}
        sides = {"before": lambda c: _row_group_stats(table.io, old, fields[c], footers),
                 "after": lambda c: _row_group_stats(table.io, new, fields[c], footers)}
    else:
        sides = {"before": lambda c: _file_stats(old, fields[c]),
                 "after": lambda c: _file_stats(new, fields[c])}
    return stats_report(list(columns), sample, sides, fraction=fraction,
                        predicates=predicates, level=level)
