"""The write of an Iceberg rewrite: each file group read, sorted by its curve values and
written as files of about the target size, cut where the curve enters a new cell, here or
as Dask tasks; with the job's own checks of each group's rows and content."""

from __future__ import annotations

import uuid as uuid_module
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from zorder.engines.cuts import aligned_cuts, estimated_bytes, file_count
from zorder.engines.iceberg_columns import curve_order, curve_value_size
from zorder.engines.iceberg_commit import (
    IcebergRewriteError, check_checksums, check_counts, delete_files)
from zorder.engines.iceberg_footer import add_footer_metadata
from zorder.engines.iceberg_plan import FileGroup, entry_partition, group_name
from zorder.engines.iceberg_read import GroupRead, read_first, read_rest
from zorder.engines.iceberg_journal import JournalWriter
from zorder.engines.iceberg_select import file_metadata
from zorder.engines.iceberg_tasks import WrittenPaths, on_dask, read_failure
from zorder.engines.interrupts import Interrupted, interrupted
from zorder.parquet.checksum import row_checksum
from zorder.parquet.encoded_size import parquet_size_bound
from zorder.parquet.gather import combined_for_take, take_rows
from zorder.values.sort import sort_scratch
from zorder.values.ordering import Ordering
from zorder.values.stages import READ, REORDER, WRITE, stage


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


def _codec(properties: Dict[str, str]) -> str:
    """The table's Parquet codec (``write.parquet.compression-codec``, PyIceberg's
    default where unset), in lower case."""
    from pyiceberg.table import TableProperties

    return str(properties.get(TableProperties.PARQUET_COMPRESSION,
                              TableProperties.PARQUET_COMPRESSION_DEFAULT)).lower()


def _size_profile(table_metadata: Any, n: int, rows_at: Callable[[int, int], Any],
                  samples: int = 16, rows: int = 8_192,
                  pool: Optional[ThreadPoolExecutor] = None) -> Tuple[List[float], List[float]]:
    """(row positions, estimated bytes per row there) of ``n`` rows as Parquet with the
    table's codec: slices spread over them (``rows_at(start, stop)``, an Arrow table),
    each encoded in memory on its own (``slice_starts``: at most ``samples`` slices of
    ``rows`` rows, never overlapping). Sorted rows compress better than the input did,
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
    from pyiceberg.table import TableProperties

    if n == 0:
        return [0.0], [1.0]
    props = table_metadata.properties
    codec = _codec(props)
    level = props.get(TableProperties.PARQUET_COMPRESSION_LEVEL)

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

    starts = slice_starts(n, samples, take)
    # ``pool``'s threads share the slices (Arrow's encoder releases the GIL)
    densities = list(pool.map(density, starts) if pool is not None else map(density, starts))
    return [start + take / 2 for start in starts], densities


def slice_starts(n: int, samples: int, take: int) -> List[int]:
    """The first rows of at most ``samples`` slices of ``take`` rows spread evenly over
    ``n`` rows, never overlapping: fewer slices where ``samples`` would not fit, so a
    profile encodes each row at most once (16 overlapping slices encoded a group of
    11,000 rows 12 times over, for each of its two profiles)."""
    count = max(1, min(samples, n // max(1, take)))
    return sorted({int(k * (n - take) / max(1, count - 1)) for k in range(count)})


def _calibration(data: Any, table_metadata: Any, group: FileGroup) -> float:
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


def fits_one_file(piece: Any, table_metadata: Any, target: int) -> bool:
    """Whether ``piece``'s rows, in any order and written with the table's settings, take
    too few bytes for ``aligned_cuts`` to cut them (``parquet_size_bound`` under 1.5
    targets). Such rows are written as one file without estimating their size (an
    estimate a few percent high could have put them over 1.5 targets and cut them in
    two; their real size cannot be)."""
    from pyiceberg.table import TableProperties
    from pyiceberg.utils.properties import property_as_int

    properties = table_metadata.properties

    def setting(name: str, default: int) -> int:
        # (as PyIceberg's writer reads it: a 0 is 0)
        value = property_as_int(properties, name, default)
        return default if value is None else value

    codec = _codec(properties)
    # the schema PyIceberg writes in the footer, with its docs: its JSON twice over
    schema_bytes = 2 * len(table_metadata.schema().model_dump_json().encode("utf-8"))
    bound = parquet_size_bound(
        piece, compressed=codec != "uncompressed", footer_bytes=schema_bytes,
        dictionary_bytes=setting(TableProperties.PARQUET_DICT_SIZE_BYTES,
                                 TableProperties.PARQUET_DICT_SIZE_BYTES_DEFAULT),
        page_bytes=setting(TableProperties.PARQUET_PAGE_SIZE_BYTES,
                           TableProperties.PARQUET_PAGE_SIZE_BYTES_DEFAULT),
        batch_rows=setting(TableProperties.PARQUET_PAGE_ROW_LIMIT,
                           TableProperties.PARQUET_PAGE_ROW_LIMIT_DEFAULT),
        group_rows=row_group_limit(properties))
    return bound is not None and file_count(bound, target) == 1


def _sizing(piece: Any, table_metadata: Any, group: FileGroup, target: int,
            calibration: Optional[float]) -> Tuple[bool, Optional[float]]:
    """What the size plan of ``piece`` needs: (whether its rows fit one file,
    ``fits_one_file``; the group's calibration, ``calibration`` where an earlier piece
    made it, else made here for a piece that does not fit)."""
    if fits_one_file(piece, table_metadata, target):
        return True, calibration
    if calibration is None:
        calibration = _calibration(piece, table_metadata, group)
    return False, calibration


def _halves(piece: Any) -> Tuple[List[int], List[int]]:
    """``piece``'s columns in two halves of about equal bytes (the second may be empty)."""
    sizes = [column.nbytes for column in piece.columns]
    half, acc = sum(sizes) / 2, 0
    first: List[int] = []
    for i, size in enumerate(sizes):
        if acc >= half and first:
            break
        first.append(i)
        acc += size
    return first, [i for i in range(piece.num_columns) if i not in first]


def _joined(piece: Any, parts: List[Tuple[List[int], List[Any]]]) -> Any:
    import pyarrow as pa

    found = {i: column for columns, taken in parts for i, column in zip(columns, taken)}
    return pa.Table.from_arrays([found[i] for i in range(piece.num_columns)],
                                schema=piece.schema)


def _taken(piece: Any, indices: Any, pool: ThreadPoolExecutor) -> Any:
    """``piece.take(indices)``, its columns in two halves of about equal bytes, one
    taken on ``pool`` while this thread takes the other (Arrow's take is one thread)."""
    with stage(REORDER):
        first, second = _halves(piece)
        if not second:
            return take_rows(piece, indices)
        far = pool.submit(_take_columns, piece, second, indices)
        near = _take_columns(piece, first, indices)
        return _joined(piece, [(first, near), (second, far.result())])


def _taken_later(piece: Any, indices: Any, pool: ThreadPoolExecutor) -> Callable[[], Any]:
    """``piece.take(indices)`` started on ``pool``, its two halves as two jobs (none
    waits on another, so writers sharing the pool never block each other's takes);
    returns the call that waits for the rows."""
    halves = [h for h in _halves(piece) if h]
    jobs = [(columns, pool.submit(_take_columns, piece, columns, indices)) for columns in halves]
    return lambda: _joined(piece, [(columns, job.result()) for columns, job in jobs])


def _take_columns(piece: Any, columns: List[int], indices: Any) -> List[Any]:
    with stage(REORDER):
        return take_rows(piece.select(columns), indices).columns


def _read_rest(*args: Any) -> Any:
    with stage(READ):
        return read_rest(*args)


def _after(job: Any, function: Callable[..., Any], *args: Any) -> Any:
    """``function(job's result, *args)``: work queued behind another job's result."""
    return function(job.result(), *args)


def _pieces(table_metadata: Any, group: FileGroup, data: Any) -> List[Tuple[Any, Any]]:
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
#: thread). The plan of each file is corrected by the sizes of all those before it but
#: the last, which may still be being written: the first two go uncorrected, and the
#: cuts are the same on every run.
_WRITERS = 2

#: A group whose input files hold at most this share of the target is written as one
#: file, its rows never encoded to be measured: ``aligned_cuts`` cuts only an estimate
#: of 1.5 targets or more, which its rows would reach only if, encoded sorted, they
#: took 12 times what they take as read. (The daily partitions of a small table are
#: such groups, and their two size profiles were a third of their write.)
_ONE_FILE_SHARE = 1 / 8


def row_group_limit(properties: Dict[str, str]) -> int:
    """Rows per row group of a table's Parquet files (``write.parquet.row-group-limit``,
    PyIceberg's default where unset)."""
    from pyiceberg.table import TableProperties
    from pyiceberg.utils.properties import property_as_int

    return property_as_int(properties, TableProperties.PARQUET_ROW_GROUP_LIMIT,
                           TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT) or (1 << 20)


class DataFileWriter:
    """One data file of a rewrite, at a path already recorded for cleanup, written as
    PyIceberg's ``write_file`` writes it (the rows converted to the table's file schema,
    row groups of its ``write.parquet.row-group-limit`` rows, the same statistics), but
    a row group at a time (``write``), so that the rows of the next can be taken while
    one is written; ``close`` gives the DataFile."""

    def __init__(self, table_metadata: Any, io: Any, path: str, key: Any) -> None:
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.manifest import FileFormat
        from pyiceberg.schema import sanitize_column_names
        from pyiceberg.table import DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE, TableProperties
        from pyiceberg.utils.config import Config

        properties = table_metadata.properties
        self.table_metadata, self.path, self.key = table_metadata, path, key
        self.schema = table_metadata.schema()
        sanitized = sanitize_column_names(self.schema)
        self.file_schema = sanitized if sanitized != self.schema else self.schema
        self.format = FileFormat(properties.get(TableProperties.WRITE_FILE_FORMAT,
                                                TableProperties.WRITE_FILE_FORMAT_DEFAULT))
        self.model = FileFormatFactory.get(self.format)
        self.downcast = Config().get_bool(DOWNCAST_NS_TIMESTAMP_TO_US_ON_WRITE) or False
        #: rows per row group: what ``write`` should be given at a time
        self.group_rows = row_group_limit(properties)
        self.output = io.new_output(path)
        self.writer = self.model.create_writer(self.output, self.file_schema, properties)

    def write(self, rows: Any) -> None:
        """Write ``rows`` (an Arrow table of the table's schema)."""
        import pyarrow as pa
        from pyiceberg.io.pyarrow import _to_requested_schema

        batches = [_to_requested_schema(requested_schema=self.file_schema,
                                        file_schema=self.schema, batch=batch,
                                        downcast_ns_timestamp_to_us=self.downcast,
                                        include_field_ids=True, format_model=self.model)
                   for batch in rows.to_batches()]
        self.writer.write(pa.Table.from_batches(batches))

    def close(self, footer: Optional[Dict[str, str]] = None) -> Any:
        """Finish the file, ``footer`` in its key-value metadata; its DataFile."""
        from pyiceberg.manifest import DataFile, DataFileContent
        from pyiceberg.typedef import Record

        if footer:
            add_footer_metadata(self.writer, footer)
        statistics = self.writer.close()
        return DataFile.from_args(
            content=DataFileContent.DATA, file_path=self.path, file_format=self.format,
            partition=self.key.partition if self.key else Record(),
            file_size_in_bytes=len(self.output), sort_order_id=None,
            spec_id=self.table_metadata.default_spec_id, equality_ids=None,
            key_metadata=None, **statistics.to_serialized_dict())

    def abort(self) -> None:
        """Close what is open after a failure (the caller deletes the path)."""
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - the failure being handled is the one to report
            pass


def write_group(table_metadata: Any, io: Any, group: FileGroup, names: Sequence[str],
                ordering: Ordering, target: int, written: List[str],
                first: Optional[GroupRead] = None) -> Tuple[List[Any], Dict[str, Any]]:
    """Rewrite one group; returns (its new DataFiles, its report entry). Every path
    written is appended to ``written`` as soon as it exists, for cleanup. ``first``: its
    ``read_first``, read already (by the rank sampling), or None to read it here."""
    from pyiceberg.table import TableProperties, WriteTask
    from pyiceberg.table.locations import load_location_provider

    schema = table_metadata.schema()
    where = group_name(table_metadata, group)
    # The curve columns are read first, and the rest on ``reader`` while the rows are
    # ordered.
    if first is None:
        with read_failure(where), stage(READ):
            first = read_first(table_metadata, io, group, names)
    data, deleted, unread = first
    del first
    # Work beside each piece's curve order, on two threads (Arrow and numpy release the
    # GIL): the sort's working memory, then the piece made ready for the takes
    # (``combined_for_take``), the job's own check of content (rows can only move: an
    # order-independent checksum of the rows read, against the rows handed to the writer)
    # and what the size plan needs (``_sizing``).
    beside = ThreadPoolExecutor(2)
    read_checksums: List[Any] = []
    small_group = group.input_bytes <= target * _ONE_FILE_SHARE
    calibration: Optional[float] = None
    written_checksum = 0
    rows = data.num_rows
    pieces = _pieces(table_metadata, group, data)
    del data

    write_uuid = uuid_module.uuid4()
    extension = str(table_metadata.properties.get(
        TableProperties.WRITE_FILE_FORMAT, TableProperties.WRITE_FILE_FORMAT_DEFAULT)).lower()
    locations = load_location_provider(table_location=table_metadata.location,
                                       table_properties=table_metadata.properties)
    files: List[Any] = []
    task_id = 0

    def write(piece: Any, indices: Any, path: str, key: Any,
              footer: Optional[Dict[str, str]]) -> Tuple[List[Any], int]:
        # A file's rows a row group at a time: the first taken here and beside, each next
        # one beside while this one is written, and checksummed beside (the rows written
        # are the rows checked). Two row groups in flight, never the file's rows whole.
        out = DataFileWriter(table_metadata, io, path, key)
        rows = out.group_rows
        checks = []
        try:
            chunk = _taken(piece, indices[:rows], beside)
            for start in range(0, len(indices), rows):
                following = (_taken_later(piece, indices[start + rows:start + 2 * rows], beside)
                             if start + rows < len(indices) else None)
                checks.append(beside.submit(row_checksum, chunk))
                with stage(WRITE):
                    out.write(chunk)
                del chunk
                if following is not None:
                    with stage(REORDER):
                        chunk = following()
            with stage(WRITE):
                new = out.close(footer)
        except BaseException:
            out.abort()
            raise
        return [new], sum(check.result() for check in checks) % 2**64

    # Each writer takes its file's rows from the unsorted rows, writes and checksums them,
    # while the next file is planned here: at most two files' rows beside the group's,
    # never a sorted copy of the whole group. (One writer, with the take and checksum
    # elsewhere, left a core idle while files were written: 4M rows, 4 files, AMD EPYC,
    # Zen 4, 2.97-4.05 s -> 2.45-2.88 s with two, in alternating runs.)
    reader = ThreadPoolExecutor(1, thread_name_prefix="zorder-reader")
    with reader, beside, ThreadPoolExecutor(_WRITERS) as writer:
        # (started inside the block, so that the block waits for it whatever ends it)
        whole = (None if unread is None else
                 reader.submit(_read_rest, table_metadata, io, group, pieces[0][1], *unread))
        del unread
        while pieces:
            key, piece = pieces.pop(0)
            # the sort's working memory, first touched on that thread while the curve
            # values are computed here (4M rows: 128 MB, 0.1-0.3 s of page faults here)
            scratch = beside.submit(sort_scratch, piece.num_rows,
                                    curve_value_size(piece, names, schema, ordering))
            curve_input = piece.select(list(names))
            if whole is not None:
                combined, whole = whole, None
            else:
                holder = [piece]
                del piece   # the holder's is the last reference: the read is freed as combined
                combined = beside.submit(combined_for_take, holder)
            # then, on both threads: the checksum of the rows read and the size plan's needs
            checked = beside.submit(_after, combined, row_checksum)
            sizing = (None if small_group else
                      beside.submit(_after, combined, _sizing, table_metadata, group, target,
                                    calibration))
            order, values = curve_order(curve_input, names, schema, ordering, scratch)
            del scratch, curve_input
            with read_failure(where):
                piece = combined.result()
            read_checksums.append(checked)   # wanted only at the end
            one_file, calibration = (True, calibration) if sizing is None else sizing.result()
            del combined, checked, sizing

            def sorted_rows(start: int, stop: int, piece: Any = piece, order: Any = order) -> Any:
                return take_rows(piece, order[start:stop])

            def values_at(rows: Any, values: Any = values, order: Any = order) -> Any:
                return values[order[rows]]  # curve values of sorted rows

            # Files of about the target size, cut where the curve moves to a new cell. The
            # estimate is a few percent off (sorted rows compress unlike the input), which
            # at the edge of the tolerance decides: so as files are written the rest is
            # planned again, the estimate scaled by what the written files really took.
            at, densities = (([0.0], [1.0]) if one_file else
                             _size_profile(table_metadata, piece.num_rows, sorted_rows,
                                           pool=beside))
            factor = 1.0 if one_file or calibration is None else calibration
            profile = (at, [d * factor for d in densities])
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
                # the files written so far correct the plan: all but the last one, whose
                # writer may still be busy (waiting on the one before it frees a writer
                # anyway). Never "all that are done": the cuts would hang on timing.
                while len(pending) >= _WRITERS:
                    finish(pending.pop(0))
                scale = min(2.0, max(0.5, actual / estimated)) if estimated > 0 else 1.0
                if abs(scale - planned) > 0.01 * scale:
                    # (re)plan the rest: first, and when the scale moved
                    rest = ([p - start for p in at], [d * scale for d in profile[1]])
                    cuts = [start, piece.num_rows] if one_file else [
                        start + c for c in aligned_cuts(
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
                # the file's clustering and curve range, in its footer (sorted: first, last)
                footer = None if group.clustering is None else file_metadata(
                    group.clustering, bytes(values[order[start]]),
                    bytes(values[order[stop - 1]]))
                pending.append((writer.submit(write, piece, order[start:stop], written[-1], key,
                                              footer), start, stop))
                task_id += 1
                start = stop
            while pending:
                finish(pending.pop(0))
            del piece, order, values
        read_checksum = sum(job.result() for job in read_checksums) % 2**64
    check_checksums(read_checksum, written_checksum, where)
    check_counts([t.file for t in group.tasks], files, where, deleted)
    return files, group_entry(table_metadata, group, rows, deleted, files, read_checksum,
                              written_checksum)


def _group_task(table_metadata: Any, io: Any, group: FileGroup, names: Sequence[str],
                ordering: Ordering, target: int, journal: Optional[str] = None,
                table_journal: Optional[JournalWriter] = None) -> Dict[str, Any]:
    """One file group as a Dask task: its DataFiles, report entry and written paths, or
    the error it raised after deleting what it wrote (so a failed task leaves nothing and
    the finished ones stay known to the client, which commits or deletes them). Paths
    are also journaled (``WrittenPaths``) for a client whose wait was interrupted."""
    written = WrittenPaths(journal, table_journal)
    try:
        files, entry = write_group(table_metadata, io, group, names, ordering, target, written)
        if interrupted():
            # its last file finished after the client had cleaned up (a stopped pool waits
            # for its threads a few seconds only): nobody else will delete these
            raise Interrupted(f"{group_name(table_metadata, group)}: interrupted")
    except Exception as exc:  # noqa: BLE001 - returned, raised again on the client
        return {"error": f"{type(exc).__name__}: {exc}", "leftovers": delete_files(io, written)}
    except BaseException:     # an interrupt in the task itself (the sync scheduler)
        delete_files(io, written)
        raise
    return {"files": files, "entry": entry, "written": list(written)}


def run_on_dask(scheduler: Any, table_metadata: Any, io: Any, groups: Sequence[FileGroup],
                names: Sequence[str], ordering: Ordering, target: int,
                written: List[str], journal: Optional[str],
                table_journal: Optional[JournalWriter] = None,
                keep_failures: bool = False) -> List[Dict[str, Any]]:
    """Every group written as a task on ``scheduler``; the results in group order. The
    commit stays here, on the client. A failed group (its files deleted) fails them all,
    or with ``keep_failures`` is returned as ``{"error": ..., "leftovers": [...]}``."""
    results = on_dask(scheduler, _group_task,
                      [(table_metadata, io, g, list(names), ordering, target, journal,
                        table_journal) for g in groups])
    for r in results:
        written.extend(r.get("written", []))
    errors = [r for r in results if "error" in r]
    if errors and not keep_failures:
        left = [p for r in errors for p in r["leftovers"]]
        raise IcebergRewriteError(f"{len(errors)} of {len(groups)} file groups failed, the first "
                                  f"with {errors[0]['error']}; nothing was committed", left)
    return results


def group_entry(table_metadata: Any, group: FileGroup, rows: int, deleted: int,
                files: List[Any], read_checksum: int, written_checksum: int,
                **extra: Any) -> Dict[str, Any]:
    """A written group's line of the rewrite's report (in memory or out of core)."""
    return {
        "partition": entry_partition(table_metadata, group),
        "input_files": len(group.tasks),
        "input_bytes": group.input_bytes,
        "rows": rows,
        "deleted_rows": deleted,
        "output_files": len(files),
        "output_bytes": sum(f.file_size_in_bytes for f in files),
        "checksum": f"{read_checksum:016x}",
        "written_checksum": f"{written_checksum:016x}",
        **extra,
    }
