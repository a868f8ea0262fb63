"""Z-order (or Hilbert) clustering of an Iceberg table through PyIceberg: the rewrite
that Spark runs as ``CALL system.rewrite_data_files(strategy => 'sort',
sort_order => 'zorder(a, b)')``, committed as one REPLACE snapshot.

What it does, as Iceberg's ``RewriteDataFilesSparkAction`` with
``SparkZOrderFileRewriteRunner`` does it:

- plans the data files of the current snapshot (only those ``row_filter`` may match,
  each rewritten whole) and groups them by partition, one group per partition, split
  when a group passes ``max_file_group_size`` (100 GiB by default, as in Iceberg);
- drops identity-partition columns from the curve's columns (they are constant in a
  group) and refuses a table column named like the internal value column;
- sorts each group by the curve value of its rows, with every column converted from
  its *Iceberg* type (``timestamptz`` in whole seconds, ``timestamp`` in microseconds,
  ``uuid`` as its canonical text, as Spark reads them);
- writes each group as Parquet files of about the target size into the group's
  partition, with the table's write properties and PyIceberg's column metrics;
- commits one snapshot with operation ``replace`` that deletes the rewritten files and
  adds the new ones, so history stays true (the previous snapshot still reads the old
  files; an incremental append scan sees no new rows).
- files of older partition specs form one group, as if unpartitioned, and are rewritten
  into the current spec.

Beyond Spark: ``encoding="rank"`` (issue 16) with boundaries learned in one sampling pass
shared by every group and recorded for reuse; files cut on the curve's cells; the job
checks each group's row count and an order-independent checksum of its rows
(``zorder.parquet.checksum``) before anything is committed; ``skipping`` reports what
the table's manifests let a reader skip, before and after.

Nothing is lost: the commit carries the catalog's optimistic-concurrency check, so a
writer that committed after the plan makes it fail (it is refused, never retried over
the other commit); on any failure the files written for the rewrite are deleted, and
any that could not be are named in the error. Tables with delete files are refused.

PyIceberg has no public REPLACE commit (``_RewriteFiles`` is under review, PR 3131): the
commit here builds on its ``_OverwriteFiles`` snapshot producer (``_ReplaceFiles``).
Needs ``pyiceberg`` (``pip install 'zorder[iceberg]'``), imported when a function runs.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import time
import uuid as uuid_module
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import (
    Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union,
)

from zorder.ordered import IcebergOptions
from zorder.values.ordering import Ordering
from zorder.parquet.checksum import row_checksum
from zorder.parquet.sizes import parse_size
from zorder.values.sort import sort_scratch
from zorder.engines.iceberg_columns import (  # noqa: F401  (re-exported names)
    CURVE_COLUMNS, curve_columns, _check_curve, _curve_order, curve_ordering, curve_parts,
    curve_value_size,
)
from zorder.engines.iceberg_columns import _require_pyiceberg
from zorder.engines.dask_stages import aligned_cuts, estimated_bytes
from zorder.engines.iceberg_commit import (
    IcebergRewriteError, _commit, _delete_files, summary_properties, zorder_summary)
from zorder.engines.dask_scheduler import Interrupted, interrupted
from zorder.parquet.safety import sigterm_as_exception

__all__ = [
    "CURVE_COLUMNS",
    "DEFAULT_MAX_FILE_GROUP_SIZE",
    "DEFAULT_TARGET_FILE_SIZE",
    "IcebergRewriteError",
    "RewriteResult",
    "check_checksums",
    "check_counts",
    "curve_columns",
    "referenced_files",
    "rewrite",
    "skipping",
]

#: Iceberg's ``max-file-group-size-bytes`` default (``RewriteDataFiles``): 100 GiB.
DEFAULT_MAX_FILE_GROUP_SIZE = 100 * 1024**3

#: Iceberg's ``write.target-file-size-bytes`` default: 512 MiB.
DEFAULT_TARGET_FILE_SIZE = 512 * 1024**2

#: The internal value column of each curve, and Iceberg's messages for its checks
#: (``SparkZOrderFileRewriteRunner``, ``SparkHilbertFileRewriteRunner``).

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
            ..., "seconds": ...}``; each group has ``partition``, ``input_files``,
            ``input_bytes``, ``rows``, ``output_files``, ``output_bytes``.
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



# ---------------------------------------------------------------------------------------
# Planning: the current snapshot's data files, grouped by partition.

@dataclass
class _FileGroup:
    partition: Any          # the partition Record of its files (None: repartition)
    spec_id: int
    tasks: List[Any]        # FileScanTask
    # Files of older partition specs, split by the current spec as they are rewritten.
    repartition: bool = False

    @property
    def source_specs(self) -> List[int]:
        return sorted({t.file.spec_id for t in self.tasks})

    @property
    def input_bytes(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)

    @property
    def rows(self) -> int:
        return sum(t.file.record_count for t in self.tasks)


def _row_filter(row_filter: Any) -> Any:
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


def _plan(table: Any, row_filter: Any, case_sensitive: bool, max_group: int) -> List[_FileGroup]:
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    deletes = int((snapshot.summary or {}).get("total-delete-files") or 0)
    scan = table.scan(row_filter=row_filter, case_sensitive=case_sensitive,
                      snapshot_id=snapshot.snapshot_id)
    tasks = list(scan.plan_files())
    if deletes or any(t.delete_files for t in tasks):
        raise ValueError(
            "the table has delete files (row-level deletes of a v2 table); zorder's rewrite "
            "refuses it rather than risk bringing deleted rows back. Compact them first "
            "(e.g. rewrite_position_delete_files and expire them on Spark), then rerun"
        )
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
    groups: List[_FileGroup] = []
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
            groups.append(_FileGroup(partition, default_spec, current, repartition))

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


# ---------------------------------------------------------------------------------------
# Writing one group: read its files, sort, write files of about the target size.

def _partition_key(table_metadata: Any, record: Any) -> Any:
    """A PyIceberg PartitionKey that yields an existing partition Record (PartitionKey
    normally derives the record from raw source values)."""
    from pyiceberg.partitioning import PartitionKey

    spec = table_metadata.spec()
    if spec.is_unpartitioned():
        return None
    key = PartitionKey(field_values=[], partition_spec=spec, schema=table_metadata.schema())
    key.__dict__["partition"] = record  # fills the cached_property `partition`
    return key


def _partition_name(table_metadata: Any, record: Any) -> str:
    """A partition as its path (``day=2026-01-01``), or "" when unpartitioned."""
    spec = table_metadata.spec()
    return "" if spec.is_unpartitioned() else spec.partition_to_path(record, table_metadata.schema())


def _metric_totals(files: Sequence[Any]) -> Dict[Tuple[str, int], int]:
    """Per column: the values and nulls the files' metrics count, summed; only columns
    every file has metrics for."""
    totals: Dict[Tuple[str, int], int] = {}
    for kind in ("value_counts", "null_value_counts"):
        maps = [getattr(f, kind, None) or {} for f in files]
        common = set.intersection(*(set(m) for m in maps)) if maps else set()
        for field_id in common:
            totals[(kind, field_id)] = sum(m[field_id] for m in maps)
    return totals


def check_counts(before: Sequence[Any], after: Sequence[Any], where: str) -> None:
    """The job's own check: the files written hold as many rows, values and nulls per
    column as the files they replace (as their Iceberg metrics count them)."""
    rows_before = sum(f.record_count for f in before)
    rows_after = sum(f.record_count for f in after)
    if rows_before != rows_after:
        raise IcebergRewriteError(f"{where}: the files written hold {rows_after} rows, the "
                                  f"files they replace {rows_before}; nothing was committed")
    a, b = _metric_totals(before), _metric_totals(after)
    wrong = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    if wrong:
        kind, field_id = wrong[0]
        raise IcebergRewriteError(
            f"{where}: column {field_id}'s {kind.replace('_', ' ')} is {b[(kind, field_id)]} in "
            f"the files written and {a[(kind, field_id)]} in the files they replace; nothing "
            f"was committed")


def check_checksums(read: int, written: int, where: str) -> None:
    """The job's content check: the order-independent checksum
    (``zorder.parquet.checksum.row_checksum``) of the rows written equals that of the
    rows read."""
    if read != written:
        raise IcebergRewriteError(
            f"{where}: the rows written differ from the rows read (order-independent "
            f"checksum {written:016x}, read {read:016x}); nothing was committed")


def _group_name(table_metadata: Any, group: _FileGroup) -> str:
    if group.repartition:
        return (f"the files of older partition specs "
                f"({', '.join(map(str, group.source_specs))})")
    return f"partition {_partition_name(table_metadata, group.partition) or '(unpartitioned)'}"


def _size_profile(table_metadata: Any, n: int, rows_at: Callable[[int, int], Any],
                  samples: int = 16, rows: int = 8_192,
                  pool: Optional[ThreadPoolExecutor] = None) -> Tuple[List[float], List[float]]:
    """(row positions, estimated bytes per row there) of ``n`` rows as Parquet with the
    table's codec: slices spread over them (``rows_at(start, stop)``, an Arrow table),
    each encoded in memory on its own. Sorted rows compress better than the input did,
    and parts of the curve differently.

    Each slice is encoded with dictionaries and without, and each column counts its
    smaller size: a large file's writer keeps a dictionary only while it pays (it falls
    back to plain pages once the dictionary fills), while a small slice's dictionary of
    distinct doubles would cost more than the values. The writer's own overheads (the
    pages it dictionary-encodes before falling back, headers, statistics) are left to
    ``_calibration``."""
    import numpy
    import pyarrow as pa
    import pyarrow.parquet as pq

    if n == 0:
        return [0.0], [1.0]
    props = table_metadata.properties
    codec = str(props.get("write.parquet.compression-codec", "zstd")).lower()
    level = props.get("write.parquet.compression-level")

    def column_bytes(piece: Any, dictionary: bool) -> Any:
        sink = pa.BufferOutputStream()
        pq.write_table(piece, sink, compression=None if codec == "uncompressed" else codec,
                       compression_level=int(level) if level is not None else None,
                       use_dictionary=dictionary)
        md = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
        return numpy.array([sum(md.row_group(g).column(i).total_compressed_size
                                for g in range(md.num_row_groups))
                            for i in range(md.num_columns)], dtype=numpy.float64)

    take = min(n, rows)

    def density(start: int) -> float:
        piece = rows_at(start, start + take)
        size = numpy.minimum(column_bytes(piece, True), column_bytes(piece, False)).sum()
        return max(float(size) / take, 1e-3)

    starts = sorted({int(k * (n - take) / max(1, samples - 1)) for k in range(samples)})
    # ``pool``'s threads share the slices (Arrow's encoder releases the GIL)
    densities = list(pool.map(density, starts) if pool is not None else map(density, starts))
    return [start + take / 2 for start in starts], densities


def _calibration(data: Any, table_metadata: Any, group: _FileGroup) -> float:
    """The input files' real bytes per row over ``_size_profile``'s estimate of the same
    rows as read: what the table's writer spends beyond the estimate, applied to the
    estimate of the sorted rows. (4M rows of issue 16's table: estimated 24.2 B/row for
    the input, 27.3 written, so x1.13; the sorted rows estimated 22.6, written 25.1,
    calibrated 25.5.) Kept within [0.5, 2]."""
    _, densities = _size_profile(table_metadata, data.num_rows,
                                 lambda start, stop: data.slice(start, stop - start))
    estimate = sum(densities) / len(densities)
    if not group.rows or estimate <= 0:
        return 1.0
    return min(2.0, max(0.5, group.input_bytes / group.rows / estimate))


def _combined(holder: List[Any]) -> Any:
    """The table taken out of ``holder``, each column in one chunk (Arrow's take
    concatenates a chunked column on every call). Each column's chunks are let go once
    combined: the read and its combined copy are never both whole in memory."""
    import pyarrow as pa

    read = holder.pop()
    columns = list(read.columns)
    schema = read.schema
    del read
    for i, name in enumerate(schema.names):
        # a one-column table's combine splits binary data past 2 GB into several chunks
        columns[i] = pa.table([columns[i]], names=[name]).combine_chunks().column(0)
    return pa.Table.from_arrays(columns, schema=schema)


def _after(job: Any, function: Callable[..., Any], *args: Any) -> Any:
    """``function(job's result, *args)``: work queued behind another job's result."""
    return function(job.result(), *args)


def _entry_partition(table_metadata: Any, group: _FileGroup) -> str:
    """A group's partition in the report: its path ("" unpartitioned), or its specs."""
    if group.repartition:
        return f"(older specs {', '.join(map(str, group.source_specs))}, into the current spec)"
    return _partition_name(table_metadata, group.partition)


def _pieces(table_metadata: Any, group: _FileGroup, data: Any) -> List[Tuple[Any, Any]]:
    """(partition key, rows) of each output partition of a group: the group's own
    partition, or, for files of older specs, the rows split by the current spec (as
    PyIceberg's append splits them; Spark's rewrite sorts them by partition first)."""
    if not group.repartition:
        return [(_partition_key(table_metadata, group.partition), data)]
    spec = table_metadata.spec()
    if spec.is_unpartitioned():
        return [(None, data)]
    from pyiceberg.io.pyarrow import _determine_partitions

    return [(p.partition_key, p.arrow_table_partition)
            for p in _determine_partitions(spec, table_metadata.schema(), data)]


#: Files written at once by a group (PyIceberg's writer encodes one Parquet file on one
#: thread). The plan of each file is corrected by the sizes of those written before it
#: but the ones still being written, so the first two go uncorrected.
_WRITERS = 2


def _write_group(table_metadata: Any, io: Any, group: _FileGroup, names: Sequence[str],
                 ordering: Ordering, target: int,
                 written: List[str]) -> Tuple[List[Any], Dict[str, Any]]:
    """Rewrite one group; returns (its new DataFiles, its report entry). Every path
    written is appended to ``written`` as soon as it exists, for cleanup."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, write_file
    from pyiceberg.table import WriteTask
    from pyiceberg.table.locations import load_location_provider

    schema = table_metadata.schema()
    # Every row of every file: row_filter chose files, not rows (as in Spark).
    data = ArrowScan(table_metadata, io, schema, AlwaysTrue(), True).to_table(group.tasks)
    where = _group_name(table_metadata, group)
    if data.num_rows != group.rows:
        raise IcebergRewriteError(
            f"read {data.num_rows} rows from {where}, its manifests say {group.rows}; "
            f"nothing was committed")
    # Work beside each piece's curve order, on two threads (Arrow and numpy release the
    # GIL): the sort's working memory, then the piece's columns in one chunk each, the
    # job's own check of content (rows can only move: an order-independent checksum of
    # the rows read, against the rows handed to the writer) and the size calibration.
    beside = ThreadPoolExecutor(2)
    read_checksums: List[Any] = []
    calibration: Optional[float] = None
    written_checksum = 0
    rows = data.num_rows
    pieces = _pieces(table_metadata, group, data)
    del data

    write_uuid = uuid_module.uuid4()
    extension = str(table_metadata.properties.get("write.format.default", "parquet")).lower()
    locations = load_location_provider(table_location=table_metadata.location,
                                       table_properties=table_metadata.properties)
    files: List[Any] = []
    task_id = 0

    def write(piece: Any, indices: Any, task_id: int, key: Any) -> Tuple[List[Any], int]:
        # a file's rows, taken here: the writers take in parallel, beside the planning
        chunk = piece.take(indices)
        task = WriteTask(write_uuid=write_uuid, task_id=task_id, schema=schema,
                         record_batches=chunk.to_batches(), partition_key=key)
        return list(write_file(io, table_metadata, iter([task]))), row_checksum(chunk)

    # Each writer takes its file's rows from the unsorted rows, writes and checksums them,
    # while the next file is planned here: at most two files' rows beside the group's,
    # never a sorted copy of the whole group. (One writer, with the take and checksum
    # elsewhere, left a core idle while files were written: 4M rows, 4 files, AMD EPYC,
    # Zen 4, 2.97-4.05 s -> 2.45-2.88 s with two, in alternating runs.)
    with beside, ThreadPoolExecutor(_WRITERS) as writer:
        while pieces:
            key, piece = pieces.pop(0)
            # the sort's working memory, first touched on that thread while the curve
            # values are computed here (4M rows: 128 MB, 0.1-0.3 s of page faults here)
            scratch = beside.submit(sort_scratch, piece.num_rows,
                                    curve_value_size(piece, names, schema, ordering))
            curve_input = piece.select(list(names))
            holder = [piece]
            del piece   # the holder's is the last reference: the read is freed as combined
            combined = beside.submit(_combined, holder)
            # then, on both threads: the checksum of the rows read and the calibration
            checked = beside.submit(_after, combined, row_checksum)
            measured = (beside.submit(_after, combined, _calibration, table_metadata, group)
                        if calibration is None else None)
            order, values = _curve_order(curve_input, names, schema, ordering, scratch)
            del scratch, curve_input
            piece = combined.result()
            read_checksums.append(checked)   # wanted only at the end
            if measured is not None:
                calibration = measured.result()
            del combined, checked, measured
            assert calibration is not None

            def sorted_rows(start: int, stop: int, piece: Any = piece, order: Any = order) -> Any:
                return piece.take(order[start:stop])

            def values_at(rows: Any, values: Any = values, order: Any = order) -> Any:
                return values[order[rows]]  # curve values of sorted rows

            # Files of about the target size, cut where the curve moves to a new cell. The
            # estimate is a few percent off (sorted rows compress unlike the input), which
            # at the edge of the tolerance decides: so as files are written the rest is
            # planned again, the estimate scaled by what the written files really took.
            at, densities = _size_profile(table_metadata, piece.num_rows, sorted_rows,
                                          pool=beside)
            profile = (at, [d * calibration for d in densities])
            start, estimated, actual, planned, cuts = 0, 0.0, 0, 0.0, [0]
            pending: List[Tuple[Any, int, int]] = []

            def finish(job: Tuple[Any, int, int], n: int = piece.num_rows,
                       profile: Any = profile) -> None:
                nonlocal estimated, actual, written_checksum
                new, checksum = job[0].result()
                files.extend(new)
                written_checksum = (written_checksum + checksum) % 2**64
                estimated += estimated_bytes(n, profile, job[1], job[2])
                actual += sum(f.file_size_in_bytes for f in new)

            while start < piece.num_rows:
                # the files written so far correct the plan: all that are done, and the
                # oldest while both writers are busy
                while pending and (pending[0][0].done() or len(pending) >= _WRITERS):
                    finish(pending.pop(0))
                scale = min(2.0, max(0.5, actual / estimated)) if estimated > 0 else 1.0
                if abs(scale - planned) > 0.01 * scale:
                    # (re)plan the rest: first, and when the scale moved
                    rest = ([p - start for p in at], [d * scale for d in profile[1]])
                    cuts = [start + c for c in aligned_cuts(
                        piece.num_rows - start, rest, target,
                        lambda rows, s=start: values_at(rows + s))]
                    planned = scale
                stop = cuts[cuts.index(start) + 1]
                if interrupted():   # (a Dask thread pool an interrupt stopped: end now)
                    raise Interrupted(f"{where}: interrupted")
                # The path is known before writing: recorded first, so a failed write is
                # cleaned too.
                name = WriteTask(write_uuid=write_uuid, task_id=task_id, schema=schema,
                                 record_batches=[], partition_key=key
                                 ).generate_data_file_filename(extension)
                written.append(locations.new_data_location(data_file_name=name,
                                                           partition_key=key))
                pending.append((writer.submit(write, piece, order[start:stop], task_id, key),
                                start, stop))
                task_id += 1
                start = stop
            while pending:
                finish(pending.pop(0))
            del piece, order, values
        read_checksum = sum(job.result() for job in read_checksums) % 2**64
    check_checksums(read_checksum, written_checksum, where)
    check_counts([t.file for t in group.tasks], files, where)
    entry = {
        "partition": _entry_partition(table_metadata, group),
        "input_files": len(group.tasks),
        "input_bytes": group.input_bytes,
        "rows": rows,
        "output_files": len(files),
        "output_bytes": sum(f.file_size_in_bytes for f in files),
        "checksum": f"{read_checksum:016x}",
        "written_checksum": f"{written_checksum:016x}",
    }
    return files, entry


class _WrittenPaths(list):
    """A task's written paths, each also appended to the client's journal file as it is
    recorded (before the file is written), so that after an interrupt, when no task's
    result comes back, the client still knows every file to delete. A worker that does
    not see the client's file system (another machine) keeps the list only."""

    def __init__(self, journal: Optional[str]) -> None:
        super().__init__()
        self.journal = journal

    def append(self, path: str) -> None:
        super().append(path)
        if self.journal is None:
            return
        try:   # (never created here: on another machine the name means nothing)
            fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
        except OSError:
            self.journal = None
            return
        try:
            os.write(fd, (path + "\n").encode("utf-8"))   # one append: whole lines
        finally:
            os.close(fd)


def _group_task(table_metadata: Any, io: Any, group: _FileGroup, names: Sequence[str],
                ordering: Ordering, target: int, journal: Optional[str] = None) -> Dict[str, Any]:
    """One file group as a Dask task: its DataFiles, report entry and written paths, or
    the error it raised after deleting what it wrote (so a failed task leaves nothing and
    the finished ones stay known to the client, which commits or deletes them). Paths
    are also journaled (``_WrittenPaths``) for a client whose wait was interrupted."""
    written = _WrittenPaths(journal)
    try:
        files, entry = _write_group(table_metadata, io, group, names, ordering, target, written)
        if interrupted():
            # its last file finished after the client had cleaned up (a stopped pool waits
            # for its threads a few seconds only): nobody else will delete these
            raise Interrupted(f"{_group_name(table_metadata, group)}: interrupted")
    except Exception as exc:  # noqa: BLE001 - returned, raised again on the client
        return {"error": f"{type(exc).__name__}: {exc}", "leftovers": _delete_files(io, written)}
    except BaseException:     # an interrupt in the task itself (the sync scheduler)
        _delete_files(io, written)
        raise
    return {"files": files, "entry": entry, "written": list(written)}


def _journaled(journal: Optional[str]) -> List[str]:
    """The paths the tasks journaled, in order, without repeats."""
    if journal is None:
        return []
    try:
        with open(journal, encoding="utf-8") as f:
            return list(dict.fromkeys(line.rstrip("\n") for line in f if line.strip()))
    except OSError:
        return []


def _on_dask(scheduler: Any, function: Callable[..., Any],
             calls: Sequence[Tuple[Any, ...]]) -> List[Any]:
    """``function(*call)`` for every call as a task on ``scheduler`` (a distributed
    Client, an address, or 'threads'/'processes'/'sync'); the results in order."""
    import dask

    from zorder.engines.dask import require_dask
    from zorder.engines.dask_scheduler import compute_options, running_on

    require_dask("rewrite(scheduler=...)")
    tasks = [dask.delayed(function, pure=False)(*call) for call in calls]
    with running_on(scheduler, 10.0) as client:
        return list(client.compute(tasks, sync=True) if client is not None
                    else dask.compute(*tasks, **compute_options()))


def _run_on_dask(scheduler: Any, table_metadata: Any, io: Any, groups: Sequence[_FileGroup],
                 names: Sequence[str], ordering: Ordering, target: int,
                 written: List[str], journal: Optional[str]) -> List[Dict[str, Any]]:
    """Every group written as a task on ``scheduler``; the results in group order. The
    commit stays here, on the client."""
    results = _on_dask(scheduler, _group_task,
                       [(table_metadata, io, g, list(names), ordering, target, journal)
                        for g in groups])
    for r in results:
        written.extend(r.get("written", []))
    errors = [r for r in results if "error" in r]
    if errors:
        left = [p for r in errors for p in r["leftovers"]]
        raise IcebergRewriteError(f"{len(errors)} of {len(groups)} file groups failed, the first "
                                  f"with {errors[0]['error']}; nothing was committed", left)
    return results


# ---------------------------------------------------------------------------------------
# The rank encoding: boundaries from one deterministic sample of every group.

def _sample_group(table_metadata: Any, io: Any, group: _FileGroup, names: Sequence[str],
                  ordering: Ordering, index: int, rows: int) -> Tuple[int, List[Any]]:
    """(rows read, a sample of at most ``rows`` rows of each curve column's ordered bytes)
    of one group, reading only the curve columns; the same rows every run."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    from zorder.engines.dask_stages import sample_parts

    schema = table_metadata.schema()
    projected = schema.select(*names, case_sensitive=True)
    data = ArrowScan(table_metadata, io, projected, AlwaysTrue(), True).to_table(group.tasks)
    return data.num_rows, sample_parts(curve_parts(data, names, schema, ordering), index, rows)


def _learn_boundaries(table: Any, groups: Sequence[_FileGroup], names: Sequence[str],
                      ordering: Ordering, scheduler: Any) -> Ordering:
    """``ordering`` with rank boundaries learned from one pass over the groups: each
    group's share of ``DEFAULT_SAMPLE`` rows (at least 2,000), pooled with each row
    weighted by its group's size, as ``zorder cluster`` learns them from its partitions."""
    from zorder.engines.dask_stages import learn_boundaries
    from zorder.values.rank import DEFAULT_SAMPLE

    total = max(1, sum(g.rows for g in groups))
    sizes = [min(g.rows, max(2_000, math.ceil(DEFAULT_SAMPLE * g.rows / total))) for g in groups]
    calls = [(table.metadata, table.io, g, list(names), ordering, i, k)
             for i, (g, k) in enumerate(zip(groups, sizes))]
    samples = ([_sample_group(*c) for c in calls] if scheduler is None
               else _on_dask(scheduler, _sample_group, calls))
    return learn_boundaries(ordering, [n for n, _ in samples], [p for _, p in samples], names)


# ---------------------------------------------------------------------------------------

def _target_size(table: Any, target_file_size: Any) -> int:
    if target_file_size is not None:
        return parse_size(target_file_size, "target_file_size")
    prop = table.properties.get("write.target-file-size-bytes")
    if not prop:
        return DEFAULT_TARGET_FILE_SIZE
    try:   # (a whole number of bytes, as Iceberg's Java reads it: Long.parseLong)
        size = int(prop.strip())
    except ValueError:
        raise ValueError(f"the table property write.target-file-size-bytes must be a whole "
                         f"number of bytes, not {prop!r} (or pass target_file_size / "
                         f"--target-file-size)") from None
    return parse_size(size, "the table property write.target-file-size-bytes")


def rewrite(table: Any, columns: Union[str, Sequence[str]], curve: str = "zorder",
            target_file_size: Union[None, int, str] = None, row_filter: Any = None,
            options: Optional[IcebergOptions] = None, scheduler: Any = None,
            dry_run: bool = False, *, case_sensitive: bool = False,
            max_file_group_size: Union[int, str] = DEFAULT_MAX_FILE_GROUP_SIZE,
            progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None,
            snapshot_properties: Optional[Mapping[str, str]] = None,
            encoding: str = "iceberg", rank_bits: Optional[int] = None,
            boundaries: Any = None) -> RewriteResult:
    """Cluster an Iceberg table by the Z-order (or Hilbert) curve of ``columns``, as
    Spark's ``rewrite_data_files(strategy => 'sort', sort_order => 'zorder(...)')``
    does, in one REPLACE snapshot.

    Args:
        table: a ``pyiceberg.table.Table``; it is refreshed first, and again just before
            the commit, which leaves it at the new snapshot.
        columns: the columns, as names or one comma-separated string; resolved
            case-insensitively unless ``case_sensitive``. Identity-partition columns are
            dropped (Iceberg's error if none is left).
        curve: ``"zorder"`` or ``"hilbert"`` (when zorder's ``sort_indices`` has it).
        target_file_size: bytes or a size such as ``"512MB"``; default the table's
            ``write.target-file-size-bytes``, else 512 MiB.
        row_filter: a PyIceberg expression or string: only data files that may hold
            matching rows are rewritten (whole), so only their partitions change.
        options: a ``zorder.IcebergOptions`` (contribution, cap, versions); its
            ``timestamp`` is replaced by the kinds the Iceberg schema gives.
        scheduler: None (file groups run one after the other in this process, so the
            largest group bounds memory), or a Dask scheduler: a ``distributed.Client``,
            its address, ``"threads"``, ``"processes"`` or ``"sync"``; each file group
            is then one task (read, sort, write), and the commit happens once, here.
        dry_run: plan and report the groups, write and commit nothing.
        case_sensitive: resolve column names exactly (Spark's default is insensitive).
        max_file_group_size: the most input bytes in one group (Iceberg's
            ``max-file-group-size-bytes``, 100 GiB).
        progress: called as ``progress(done_groups, total_groups, group_entry)``.
        snapshot_properties: extra entries for the snapshot summary, str to str; not a
            key Iceberg computes (``operation``, ``added-*``, ``total-*``...) or zorder
            writes (``zorder.curve``...).
        encoding: ``"iceberg"`` (Iceberg's ordered bytes, as Spark's rewrite) or
            ``"rank"`` (each column's quantile rank, so every column gets its share of
            the curve; not Iceberg's order, and Spark's rewrite will not reproduce it).
        rank_bits: bits per column rank with ``encoding="rank"`` (default 16).
        boundaries: with ``encoding="rank"``, a ``zorder.RankBoundaries`` of an earlier
            run (``RankBoundaries.from_dict(result.report["rank_boundaries"])``), so new
            data ranks as the old did; by default they are learned first, in one pass
            over every group's curve columns (a deterministic sample shared by all file
            groups), then every group is rewritten with them. Either way they are
            recorded in ``result.boundaries`` and ``result.report["rank_boundaries"]``.

    Returns:
        a ``RewriteResult``.

    Raises:
        ValueError, TypeError: bad arguments, refused columns or types, a table with
            delete files.
        IcebergRewriteError: the rewrite wrote files but did not commit (the files were
            deleted; any that could not be are listed). A ``CommitFailedException`` from
            a concurrent commit comes as this error, with the original as its cause. A
            catalog failure that leaves the commit's outcome unknown (the catalog may
            still apply it) comes as this error with ``outcome_unknown`` set and nothing
            deleted; so does an interrupt during the commit, as its cause.
        KeyboardInterrupt: an interrupt before the commit, after every file written
            was deleted (SIGTERM likewise: while the rewrite runs in the main thread, it
            raises ``zorder.parquet.safety.Terminated``, a ``SystemExit`` of status 143,
            and the process's own SIGTERM handler is restored after).
    """
    _require_pyiceberg()
    curve = _check_curve(curve)
    if not isinstance(case_sensitive, bool):
        raise TypeError(f"case_sensitive must be a bool, not {type(case_sensitive).__name__}")
    max_group = parse_size(max_file_group_size, "max_file_group_size")
    if options is not None and not isinstance(options, IcebergOptions):
        raise TypeError(f"options must be a zorder.IcebergOptions, not {type(options).__name__}")
    row_filter = _row_filter(row_filter)
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run must be a bool, not {type(dry_run).__name__}")
    extra_summary = summary_properties(snapshot_properties)
    start = time.perf_counter()
    table.refresh()
    target = _target_size(table, target_file_size)
    names = curve_columns(table, columns, curve=curve, case_sensitive=case_sensitive)
    ordering = curve_ordering(table.schema(), names, curve, options, encoding, rank_bits,
                              boundaries)
    groups = _plan(table, row_filter, case_sensitive, max_group)
    report: Dict[str, Any] = {"columns": names, "curve": curve, "encoding": ordering.encoding,
                              "target_file_size": target, "groups": []}
    removed = [t.file for g in groups for t in g.tasks]
    previous = table.current_snapshot()
    result = RewriteResult(None, len(removed), 0, sum(f.file_size_in_bytes for f in removed),
                           report, [f.file_path for f in removed], [],
                           None if previous is None else previous.snapshot_id)

    def record(ordering: Ordering) -> None:
        if ordering.encoding == "rank":
            report["rank_bits"] = ordering.rank_bits
            result.boundaries = ordering.boundaries
            report["rank_boundaries"] = (None if ordering.boundaries is None
                                         else ordering.boundaries.to_dict())

    record(ordering)
    if dry_run or not groups:
        for g in groups:
            report["groups"].append({"partition": _entry_partition(table.metadata, g),
                                     "input_files": len(g.tasks),
                                     "input_bytes": g.input_bytes, "rows": g.rows})
        report["seconds"] = time.perf_counter() - start
        return result

    if ordering.encoding == "rank" and ordering.boundaries is None:
        ordering = _learn_boundaries(table, groups, names, ordering, scheduler)
        record(ordering)
    metadata = table.metadata
    written: List[str] = []
    added: List[Any] = []
    # SIGTERM as an exception, so that the cleanup runs for `kill` as for Ctrl-C.
    with _journal(scheduler is not None) as journal, sigterm_as_exception():
        with _deleted_on_failure(table.io, written, journal):
            if scheduler is None:
                for i, group in enumerate(groups):
                    files, entry = _write_group(metadata, table.io, group, names, ordering,
                                                target, written)
                    added.extend(files)
                    report["groups"].append(entry)
                    if progress is not None:
                        progress(i + 1, len(groups), entry)
            else:
                results = _run_on_dask(scheduler, metadata, table.io, groups, names,
                                       ordering, target, written, journal)
                for i, r in enumerate(results):
                    added.extend(r["files"])
                    report["groups"].append(r["entry"])
                    if progress is not None:
                        progress(i + 1, len(groups), r["entry"])
            check_counts(removed, added, "the table")
            entries = report["groups"]
            check_checksums(sum(int(e["checksum"], 16) for e in entries) % 2**64,
                            sum(int(e["written_checksum"], 16) for e in entries) % 2**64,
                            "the table")
        props = zorder_summary(curve, names,
                               ordering.rank_bits if ordering.encoding == "rank" else None)
        props.update(extra_summary)
        snapshot_id = _commit(table, removed, added, props, written, metadata)
    # (the commit left `table` at the new snapshot: PyIceberg takes the catalog's answer)
    result.snapshot_id = snapshot_id
    result.added_files = len(added)
    result.added_paths = [f.file_path for f in added]
    report["seconds"] = time.perf_counter() - start
    return result


@contextlib.contextmanager
def _journal(wanted: bool) -> Iterator[Optional[str]]:
    """A local file the Dask tasks journal their written paths into (``_WrittenPaths``),
    removed after; None when not ``wanted``."""
    if not wanted:
        yield None
        return
    handle, path = tempfile.mkstemp(prefix="zorder-iceberg-written-", suffix=".txt")
    os.close(handle)
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):   # (never hide the block's own error)
            os.unlink(path)


@contextlib.contextmanager
def _deleted_on_failure(io: Any, written: List[str], journal: Optional[str]) -> Iterator[None]:
    """On any failure or interrupt of the block, delete every file written for the rewrite
    (``written``, and what the tasks journaled: after an interrupt their results never
    come back; the scheduler's pool is stopped by then, ``running_on`` stops it on the
    way out). Files that cannot be deleted are named in an ``IcebergRewriteError``."""
    try:
        yield
    except BaseException as exc:
        written.extend(p for p in _journaled(journal) if p not in written)
        left = _delete_files(io, written)
        if isinstance(exc, IcebergRewriteError):
            raise IcebergRewriteError(str(exc), left) from exc.__cause__
        if left and isinstance(exc, Exception):
            raise IcebergRewriteError(f"the rewrite failed and did not commit: {exc}",
                                      left) from exc
        raise


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
    return [t.file for t in table.scan(snapshot_id=snapshot_id).plan_files()]


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


def skipping(table: Any, before: Any, after: Optional[int] = None,
             columns: Optional[Sequence[str]] = None, *, changed_only: bool = True,
             fraction: float = 0.01, predicates: int = 25,
             sample_files: int = 16) -> Dict[str, Any]:
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
    old, new = _data_files(table, before), _data_files(table, after)
    if changed_only:
        old_paths, new_paths = {f.file_path for f in old}, {f.file_path for f in new}
        old = [f for f in old if f.file_path not in new_paths]
        new = [f for f in new if f.file_path not in old_paths]
    schema = table.schema()
    fields = {c: schema.find_field(c, case_sensitive=False) for c in columns}
    tasks = [t for t in table.scan(snapshot_id=before).plan_files()
             if not changed_only or t.file.file_path in {f.file_path for f in old}]
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

    sides = {"before": lambda c: _file_stats(old, fields[c]),
             "after": lambda c: _file_stats(new, fields[c])}
    return stats_report(list(columns), sample, sides, fraction=fraction,
                        predicates=predicates, level="files")
