"""The out-of-core write of an Iceberg file group (issue 38): a group whose rows, in
Arrow, times ``IN_MEMORY_PEAK``, pass the memory limit is never read whole. Its rows are
streamed through range spill runs by the engine-neutral core (``zorder.parquet.external``)
and written range by range, in memory bounded by the limit; every other group is
written in memory as before (``iceberg_write.write_group``).

- ``plan_out_of_core``: which groups go out of core (their Arrow size estimated from
  their files' footers), and a check, before anything is written, that the limit holds
  what the path holds at once: the window a file is cut in, a row group, the core's share.
- ``write_group_out_of_core``: the group here, in one process: sample, spill, sort range
  by range, and files cut as the sorted rows come (``cut_files``).
- ``run_group_on_dask``: the group on a Dask cluster, its ranges separate tasks, so one
  partition spreads over the workers. Stage 1 (a task per input file) computes curve
  values and appends its rows to per-range runs in a folder every worker can read;
  stage 2 (a task per range) sorts its range and writes its files, returning them with
  their rows and checksum; the client checks counts and checksums and commits once, as
  for any group. Stage 1's runs are written in a folder of the attempt's own, which its
  result names (a retried task never mixes with a dead one's runs), and stage 2's files
  have names fixed by (rewrite, group, range, file), so a task that Dask retries after
  its worker died writes the same files again, never a second set; the client takes one
  result per range. The runs go in a local folder when every worker sees it (the
  machine's temporary folder, or ``temp_dir``); on workers of other machines, and no
  ``temp_dir`` given, through the table's own FileIO, in the rewrite's journal folder
  (``spill_place``), so that a cluster needs no shared folder and ``clean`` removes what
  a lost client left.

Position deletes are applied while the rows stream (``iceberg_deletes.stream_live_rows``),
and the rows read and written are counted and checksummed as on the in-memory path.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import uuid as uuid_module
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy

from zorder.engines.cuts import choose_splits, cut_files
from zorder.engines.iceberg_columns import curve_input_table
from zorder.engines.iceberg_commit import (
    IcebergRewriteError, check_checksums, check_counts, delete_files)
from zorder.engines.iceberg_deletes import delete_positions, stream_live_rows
from zorder.engines.iceberg_journal import JournalWriter, remove_spill, spill_folder
from zorder.engines.iceberg_plan import FileGroup, entry_partition, group_name
from zorder.engines.iceberg_select import file_metadata
from zorder.engines.iceberg_tasks import WrittenPaths, on_dask, read_failure
from zorder.engines.iceberg_write import (
    DataFileWriter, _partition_key, group_entry, row_group_limit)
from zorder.engines.interrupts import Interrupted, interrupted
from zorder.parquet.checksum import row_checksum
from zorder.parquet.external import (
    KEY_COLUMN, Budget, external_sort, sorted_ranges, spill_ranges)
from zorder.parquet.memory import arrow_bytes, format_bytes
from zorder.parquet.safety import temporary_folder
from zorder.parquet.sort import IN_MEMORY_PEAK
from zorder.parquet.spill import LOCAL, JoinedRun, SpillFolder, SpillStorage, run_location
from zorder.values.ordering import Ordering

#: Rows of an input batch as PyIceberg's scan decodes them (pyarrow's scanner default, or
#: a smaller file's): the core's minimum holds a few of them.
_SCAN_BATCH_ROWS = 1 << 17
#: Input batches the core holds at once at its smallest (read, read ahead, grouped).
_MIN_BATCHES = 6
#: ``progress(stage, done, total, unit)``, as the core reports its steps.
Progress = Optional[Callable[[str, int, int, str], None]]
#: Arrow bytes a Parquet byte may become, at most, as far as choosing a path goes: a group
#: whose files, times this, are far below the limit is written in memory without its
#: footers being read.
_MAX_EXPANSION = 64
#: At most this many ranges on a Dask cluster (as the core: one open spill file each).
_MAX_RANGES = 512
#: Curve values sampled per group to cut its ranges on a Dask cluster.
_RANGE_SAMPLE = 65_536


@dataclass
class OutOfCore:
    """How one file group goes out of core: its estimated Arrow size, the rows of each
    output file, the memory the core may use and where its spill runs go."""

    arrow_bytes: int
    rows_per_file: int
    limit: int
    sort_limit: int
    spill_base: str
    spill_given: bool = False   # spill_base is the user's temp_dir

    @property
    def budget(self) -> Budget:
        return Budget(self.sort_limit)


def group_arrow_bytes(io: Any, group: FileGroup) -> int:
    """The Arrow size of a group's rows, estimated from its data files' footers
    (``parquet.memory.arrow_bytes``), deletes not subtracted."""
    import pyarrow.parquet as pq

    def one(task: Any) -> int:
        with io.new_input(task.file.file_path).open(seekable=True) as f:
            return arrow_bytes(pq.ParquetFile(f).metadata)

    with ThreadPoolExecutor(4) as pool:
        return sum(pool.map(one, group.tasks))


def _rows_per_file(group: FileGroup, target: int) -> int:
    """Rows of one output file: the group's rows in files of about the target size, at
    the input files' own bytes a row (as the table's writer wrote them)."""
    rows = max(1, group.rows)
    files = max(1, round(group.input_bytes / max(1, target)))
    return max(1, math.ceil(rows / files))


def plan_out_of_core(table_metadata: Any, io: Any, groups: Sequence[FileGroup], target: int,
                     limit: int, temp_dir: Optional[str]) -> List[Optional[OutOfCore]]:
    """Per group, its ``OutOfCore`` plan when its Arrow size times ``IN_MEMORY_PEAK``
    passes ``limit``, else None (written in memory, as before). ValueError naming
    ``memory_limit`` when the limit cannot hold what the out-of-core path holds at once
    (the window a file is cut in, a row group, a few input batches), before anything is
    written."""
    base = temp_dir if temp_dir is not None else tempfile.gettempdir()
    row_group_rows = row_group_limit(table_metadata.properties)
    plans: List[Optional[OutOfCore]] = []
    for group in groups:
        where = group_name(table_metadata, group)
        if group.input_bytes * _MAX_EXPANSION * IN_MEMORY_PEAK <= limit:
            plans.append(None)   # (far below the limit: no footer read)
            continue
        try:
            size = group_arrow_bytes(io, group)
        except Exception:  # noqa: BLE001 - the write reads it again and says what failed
            size = None    # (with partial progress, failing this group only)
        if size is None or size * IN_MEMORY_PEAK <= limit or group.rows == 0:
            plans.append(None)
            continue
        if group.repartition and not table_metadata.spec().is_unpartitioned():
            # (its rows go to several partitions of the current spec: in memory only)
            plans.append(None)
            continue
        row_bytes = size / group.rows
        rows_per_file = _rows_per_file(group, target)
        # held beside the sort: the window a file's cut is chosen in (a quarter of a
        # file) and the row group being gathered
        held = int((rows_per_file // 4 + 1 + min(row_group_rows, rows_per_file)) * row_bytes)
        largest = max(t.file.record_count for t in group.tasks)
        need = 2 * held + int(_MIN_BATCHES * row_bytes * min(largest, _SCAN_BATCH_ROWS))
        if limit < need:
            raise ValueError(
                f"memory_limit={limit} (--memory-limit) is too small for {where}: its rows "
                f"take about {format_bytes(row_bytes)} each in Arrow, an output file of the "
                f"target size holds {rows_per_file:,} of them, and the rewrite holds "
                f"{format_bytes(held)} of them as it cuts files, beside a few input batches "
                f"and the range it sorts; give at least {format_bytes(need)}, or a smaller "
                f"target_file_size / --target-file-size")
        plans.append(OutOfCore(size, rows_per_file, limit, limit - held, base,
                               temp_dir is not None))
    return plans


class _FileWriter:
    """Writes the rows ``cut_files`` hands on (curve value column last) as the data files
    of a group, one at a time, streamed: each named ``WriteTask``'s way from
    ``write_uuid`` and a running task id, journaled (``written``) before it is written,
    its rows converted and written as PyIceberg's ``write_file`` does, in row groups of
    the table's ``write.parquet.row-group-limit`` rows (as its one write of a whole file
    makes them), so only one row group is held here. Keeps the DataFiles, the rows and
    the written checksum."""

    def __init__(self, table_metadata: Any, io: Any, group: FileGroup, key: Any,
                 write_uuid: Any, written: List[str], where: str) -> None:
        from pyiceberg.table import TableProperties
        from pyiceberg.table.locations import load_location_provider

        self.table_metadata, self.io, self.group, self.key = table_metadata, io, group, key
        self.write_uuid, self.written, self.where = write_uuid, written, where
        properties = table_metadata.properties
        self.schema = table_metadata.schema()
        self.extension = str(properties.get(TableProperties.WRITE_FILE_FORMAT,
                                            TableProperties.WRITE_FILE_FORMAT_DEFAULT)).lower()
        self.group_rows = row_group_limit(properties)
        self.locations = load_location_provider(table_location=table_metadata.location,
                                                table_properties=properties)
        self.files: List[Any] = []
        self.checksum = 0
        self.rows = 0
        self.task_id = 0
        self.progress: Progress = None
        self.planned = 0
        self._open: Optional[DataFileWriter] = None
        self._pending: List[Any] = []
        self._pending_rows = 0
        self._first: Optional[bytes] = None
        self._last: Optional[bytes] = None

    def __call__(self, rows: Any, last: bool) -> None:
        if rows is not None and rows.num_rows:
            keys = rows.column(rows.num_columns - 1)
            if self._first is None:
                self._first = keys[0].as_py()
            self._last = keys[len(keys) - 1].as_py()
            data = rows.select(list(range(rows.num_columns - 1)))
            del rows, keys
            self._pending.append(data)
            self._pending_rows += data.num_rows
            while self._pending_rows >= self.group_rows:
                self._write_pending(self.group_rows)
        if last:
            if self._pending_rows:
                self._write_pending(self._pending_rows)
            self._close()

    def _write_pending(self, rows: int) -> None:
        import pyarrow as pa

        pending = pa.concat_tables(self._pending) if len(self._pending) > 1 \
            else self._pending[0]
        chunk, rest = pending.slice(0, rows), pending.slice(rows)
        if rest.num_rows and 2 * rest.num_rows < pending.num_rows:
            # (a slice would keep the whole table it came in alive until the next row
            # group; a small remainder is copied out, each row at most once)
            rest = rest.take(numpy.arange(rest.num_rows))
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        del pending, rest
        if self._open is None:
            self._open = self._start()
        self._open.write(chunk)
        self.checksum = (self.checksum + row_checksum(chunk)) % 2**64
        self.rows += chunk.num_rows

    def _start(self) -> DataFileWriter:
        from pyiceberg.table import WriteTask

        if interrupted():   # (a Dask thread pool an interrupt stopped: end now)
            raise Interrupted(f"{self.where}: interrupted")
        name = WriteTask(write_uuid=self.write_uuid, task_id=self.task_id, schema=self.schema,
                         record_batches=[], partition_key=self.key
                         ).generate_data_file_filename(self.extension)
        path = self.locations.new_data_location(data_file_name=name, partition_key=self.key)
        self.written.append(path)   # (journaled before the file exists)
        return DataFileWriter(self.table_metadata, self.io, path, self.key)

    def _close(self) -> None:
        if self._open is None:
            return
        writer, self._open = self._open, None
        footer = None
        if self.group.clustering is not None and self._first is not None:
            assert self._last is not None
            footer = file_metadata(self.group.clustering, self._first, self._last)
        self.files.append(writer.close(footer))
        self._first = self._last = None
        self.task_id += 1
        if self.progress is not None:
            self.progress("writing", self.task_id, max(self.planned, self.task_id), "files")


# ---------------------------------------------------------------------------------------
# Reading: the group's live rows streamed, converted for the curve, checked.

def _arrow_schema(table_metadata: Any, io: Any) -> Any:
    """The Arrow schema PyIceberg's scan reads the table's rows as."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    return ArrowScan(table_metadata, io, table_metadata.schema(), AlwaysTrue(),
                     True).to_table([]).schema


def _conform(batch: Any, schema: Any) -> Any:
    """``batch`` with ``schema``'s types (files written under older schemas may read
    back as other widths of string or binary)."""
    import pyarrow as pa

    if batch.schema.equals(schema):
        return batch
    return pa.Table.from_batches([batch]).cast(schema).combine_chunks().to_batches()[0] \
        if batch.num_rows else pa.RecordBatch.from_pylist([], schema=schema)


class _Counted:
    """The rows and checksum of what a stream gave."""

    def __init__(self) -> None:
        self.rows = 0
        self.checksum = 0

    def add(self, batch: Any, checksum: bool = True) -> None:
        self.rows += batch.num_rows
        if checksum:
            self.checksum = (self.checksum + row_checksum(batch)) % 2**64


def _live_batches(table_metadata: Any, io: Any, tasks: Sequence[Any], positions: Dict[str, Any],
                  rows: int, where: str, schema: Any, counted: Optional[_Counted] = None,
                  names: Optional[Sequence[str]] = None, expected: Optional[int] = None
                  ) -> Iterator[Any]:
    """The live rows of ``tasks`` streamed (``stream_live_rows``): the whole rows in
    ``schema``'s types, or, with ``names``, those curve columns converted for the curve.
    A file that cannot be read is an ``IcebergRewriteError``; so are fewer or more rows
    than ``expected``."""
    iceberg_schema = table_metadata.schema()
    projected = iceberg_schema if names is None else iceberg_schema.select(
        *names, case_sensitive=True)
    seen = 0
    with read_failure(where):
        for batch in stream_live_rows(table_metadata, io, projected, tasks, positions, rows):
            seen += batch.num_rows
            if names is not None:
                yield curve_input_table(batch, names, iceberg_schema)
                continue
            batch = _conform(batch, schema)
            if counted is not None:
                counted.add(batch)
            yield batch
    if expected is not None and seen != expected:
        raise IcebergRewriteError(f"read {seen} rows from {where}, its manifests and delete "
                                  f"files say {expected}; nothing was committed")



def _output_key(table_metadata: Any, group: FileGroup) -> Any:
    return None if group.repartition else _partition_key(table_metadata, group.partition)


def write_group_out_of_core(table_metadata: Any, io: Any, group: FileGroup,
                            names: Sequence[str], ordering: Ordering, plan: OutOfCore,
                            written: List[str], progress: Progress = None
                            ) -> Tuple[List[Any], Dict[str, Any]]:
    """``write_group`` for a group too large for the limit, in this process: its rows
    streamed twice (the curve columns, to cut ranges; then whole, into the ranges' spill
    runs), each range sorted in turn and the files cut as it comes. Same return.
    ``progress(stage, done, total, unit)`` on each step."""
    where = group_name(table_metadata, group)
    with read_failure(where):
        positions = delete_positions(io, group.tasks)
    deleted = sum(len(p) for p in positions.values())
    nrows = group.rows - deleted
    schema = _arrow_schema(table_metadata, io)
    row_bytes = plan.arrow_bytes / max(1, group.rows)
    budget = plan.budget
    counted = _Counted()
    tasks = group.tasks
    sample = _live_batches(table_metadata, io, tasks, positions,
                           budget.batch_rows(row_bytes), where, schema, names=names,
                           expected=nrows)
    iceberg_schema = table_metadata.schema()

    def batches(rows: int) -> Iterator[Any]:
        return _live_batches(table_metadata, io, tasks, positions, rows, where, schema,
                             counted, expected=nrows)

    writer = _FileWriter(table_metadata, io, group, _output_key(table_metadata, group),
                         uuid_module.uuid4(), written, where)
    files = max(1, round(nrows / plan.rows_per_file))
    with temporary_folder(os.path.join(plan.spill_base, "iceberg"), "spill",
                          plan.spill_base) as folder:
        done = external_sort(sample, batches, nrows, ordering, names, schema=schema,
                             budget=budget, spill_folder=folder, row_bytes=row_bytes,
                             progress=progress,
                             curve_input=lambda b: curve_input_table(b, names, iceberg_schema),
                             keep_key=True)
        writer.progress, writer.planned = progress, files
        cut_files(done.tables, nrows, files, writer)
    check_checksums(counted.checksum, writer.checksum, where)
    check_counts([t.file for t in group.tasks], writer.files, where, deleted)
    return writer.files, group_entry(table_metadata, group, counted.rows, deleted, writer.files,
                                     counted.checksum, writer.checksum, out_of_core=True)


# ---------------------------------------------------------------------------------------
# On a Dask cluster: ranges as tasks.

def _sample_file(table_metadata: Any, io: Any, task: Any, names: List[str], ordering: Ordering,
                 share: float, rows: int, where: str) -> Tuple[int, int, numpy.ndarray]:
    """Stage 0, one input file: (its live rows, the rows its deletes remove, the curve
    values of about ``share`` of its rows, evenly spaced)."""
    positions = delete_positions(io, [task])
    deleted = sum(len(p) for p in positions.values())
    live = task.file.record_count - deleted
    step = max(1, int(1 / share)) if share > 0 else max(1, live)
    seen, parts = 0, []
    for converted in _live_batches(table_metadata, io, [task], positions, rows, where, None,
                                   names=names, expected=live):
        first = (-seen) % step
        at = numpy.arange(first, converted.num_rows, step)
        if len(at):
            parts.append(ordering.matrix(converted.take(at), names))
        seen += converted.num_rows
    values = (numpy.concatenate(parts) if parts else numpy.zeros(
        (0, _value_size(ordering, names, table_metadata.schema())), dtype=numpy.uint8))
    return live, deleted, values


def _keys(values: numpy.ndarray) -> numpy.ndarray:
    """Curve values ``(N, size)`` as ``S{size}`` keys, as the core compares them."""
    values = numpy.ascontiguousarray(values)
    return values.view(f"S{values.shape[1]}").reshape(values.shape[0])


class TableSpillStorage(SpillStorage):
    """Spill runs through a table's FileIO (any storage the table is on: every worker
    that can write the table can read them). Picklable, as the FileIO is."""

    local = False

    def __init__(self, io: Any) -> None:
        self.io = io

    def open_output(self, location: str) -> Any:
        return self.io.new_output(location).create(overwrite=True)

    def open_input(self, location: str) -> Any:
        return self.io.new_input(location).open(seekable=False)

    def exists(self, location: str) -> bool:
        return bool(self.io.new_input(location).exists())

    def delete(self, location: str) -> None:
        try:
            self.io.delete(location)
        except FileNotFoundError:
            pass


def _workers_see(scheduler: Any, folder: str) -> bool:
    """Whether every worker of ``scheduler`` sees the local ``folder`` (threads,
    processes and sync run on this machine)."""
    from zorder.engines.dask_scheduler import running_on

    with running_on(scheduler, 10.0) as client:
        if client is None:
            return True
        return all(client.run(os.path.isdir, folder).values())


@contextlib.contextmanager
def spill_place(scheduler: Any, io: Any, plan: OutOfCore,
                table_journal: Optional[JournalWriter]) -> Iterator[Tuple[str, SpillStorage]]:
    """The folder (and its storage) for one group's spill runs on ``scheduler``, removed
    however the block ends: a local folder when every worker sees it (or ``temp_dir``,
    which the user vouches for), else a folder in the rewrite's journal folder through
    the table's FileIO (``clean`` takes it after a lost client)."""
    with contextlib.ExitStack() as local:
        folder = local.enter_context(temporary_folder(
            os.path.join(plan.spill_base, "iceberg"), "spill", plan.spill_base))
        if plan.spill_given or table_journal is None or _workers_see(scheduler, folder):
            yield folder, LOCAL
            return
    place = spill_folder(table_journal.folder)
    try:
        yield place, TableSpillStorage(io)
    finally:
        remove_spill(io, place)


def _spill_file(table_metadata: Any, io: Any, task: Any, index: int, names: List[str],
                ordering: Ordering, splits: numpy.ndarray, folder: str, rows: int,
                where: str, storage: SpillStorage = LOCAL) -> Dict[str, Any]:
    """Stage 1, one input file: its live rows, with their curve values, appended to one
    run per range in a folder of this attempt's own under ``folder`` (a retried task never
    mixes with a dead one's runs). Returns the folder, its rows, the checksum of its rows
    and the rows and Arrow bytes of each range."""
    import pyarrow as pa

    positions = delete_positions(io, [task])
    deleted = sum(len(p) for p in positions.values())
    schema = _arrow_schema(table_metadata, io)
    iceberg_schema = table_metadata.schema()
    counted = _Counted()
    attempt = f"{folder}/in-{index:06d}.{uuid_module.uuid4().hex}"
    if storage.local:
        os.mkdir(attempt)
    try:
        spill = SpillFolder(attempt, schema.append(pa.field(KEY_COLUMN,
                                                            pa.binary(splits.dtype.itemsize))),
                            storage=storage)
        runs = spill_ranges(
            _live_batches(table_metadata, io, [task], positions, rows, where, schema, counted,
                          expected=task.file.record_count - deleted),
            ordering, names, splits, spill,
            curve_input=lambda b: curve_input_table(b, names, iceberg_schema))
        ranges = [(r.rows, r.nbytes) for r in runs]
    except BaseException:
        if storage.local:   # (elsewhere: the whole spill folder goes with the group)
            shutil.rmtree(attempt, ignore_errors=True)
        raise
    return {"folder": attempt, "rows": counted.rows, "deleted": deleted,
            "checksum": counted.checksum, "ranges": ranges}


def _value_size(ordering: Ordering, names: Sequence[str], schema: Any) -> int:
    empty = schema.select(*names, case_sensitive=True).as_arrow().empty_table()
    return ordering.size([p.shape[1] for p in ordering.parts(
        curve_input_table(empty, names, schema), list(names))])


def _write_range(table_metadata: Any, io: Any, group: FileGroup, names: List[str],
                 ordering: Ordering, number: int, runs: List[Tuple[str, int, int]],
                 folder: str, rows_per_file: int, sort_limit: int, write_uuid: Any,
                 journal: Optional[str], table_journal: Optional[JournalWriter],
                 storage: SpillStorage = LOCAL) -> Dict[str, Any]:
    """Stage 2, one range: its ``runs`` (location, rows, Arrow bytes: one per input file,
    in file order) read as one run, sorted (split again if too large) and written as files
    of about ``rows_per_file`` rows. Returns the DataFiles, rows and written checksum, or
    the error after deleting what it wrote. A run stage 1 wrote that is not found is an
    error: a folder this worker does not see. The runs stay for a retry of this task."""
    where = f"{group_name(table_metadata, group)}, range {number}"
    written = WrittenPaths(journal, table_journal)
    # (runs split again go beside the shared ones, or in this machine's temporary folder
    # when those are kept through the table's FileIO)
    scratch = folder if storage.local else tempfile.gettempdir()
    try:
        budget = Budget(sort_limit)
        with temporary_folder(os.path.join(scratch, f"range-{number:06d}"), "sort",
                              scratch) as own:
            spilled = [r for r in runs if r[1]]   # (none: no row of the group falls here)
            found = [r for r in spilled if storage.exists(r[0])]
            expected = sum(rows for _, rows, _ in spilled)
            if len(found) < len(spilled):
                raise IcebergRewriteError(
                    f"{where}: found {sum(rows for _, rows, _ in found)} of the {expected} "
                    f"rows spilled in {folder}; on a cluster of several machines give "
                    f"temp_dir / --temp-dir, a folder every worker can read and write")
            writer = _FileWriter(table_metadata, io, group, _output_key(table_metadata, group),
                                 write_uuid, written, where)
            if found:   # (in file order: ties keep the input order)
                run = JoinedRun([path for path, _, _ in found], expected,
                                sum(nbytes for _, _, nbytes in found), owned=False,
                                storage=storage)
                files = max(1, round(run.rows / rows_per_file))
                cut_files(sorted_ranges([run], SpillFolder(own, run.schema), budget,
                                        keep_key=True), run.rows, files, writer)
        if interrupted():
            raise Interrupted(f"{where}: interrupted")
    except Exception as exc:  # noqa: BLE001 - returned, raised again on the client
        return {"error": f"{type(exc).__name__}: {exc}", "leftovers": delete_files(io, written)}
    except BaseException:
        delete_files(io, written)
        raise
    return {"files": writer.files, "rows": writer.rows, "checksum": writer.checksum,
            "written": list(written)}


def run_group_on_dask(scheduler: Any, table_metadata: Any, io: Any, group: FileGroup,
                      names: Sequence[str], ordering: Ordering, plan: OutOfCore,
                      written: List[str], journal: Optional[str],
                      table_journal: Optional[JournalWriter] = None,
                      progress: Progress = None) -> Dict[str, Any]:
    """One group too large for the limit, written on ``scheduler`` with its ranges as
    tasks (the stages above); the spill runs in a folder under ``plan.spill_base``,
    which every worker must be able to read (a local cluster's temporary folder, or a
    shared ``temp_dir``), removed however this ends. Returns ``_group_task``'s result:
    ``{"files", "entry", "written"}``, or ``{"error", "leftovers"}``.
    ``progress(stage, done, total, unit)`` as each stage's tasks end."""
    def report(stage: str, done: int, total: int, unit: str) -> None:
        if progress is not None:
            progress(stage, done, total, unit)

    files_in = len(group.tasks)
    names = list(names)
    where = group_name(table_metadata, group)
    row_bytes = plan.arrow_bytes / max(1, group.rows)
    budget = plan.budget
    batch_rows = budget.batch_rows(row_bytes)
    share = min(1.0, _RANGE_SAMPLE / max(1, group.rows))
    samples = on_dask(scheduler, _sample_file,
                      [(table_metadata, io, t, names, ordering, share, batch_rows, where)
                       for t in group.tasks])
    report("sampling", files_in, files_in, "files")
    nrows = sum(n for n, _, _ in samples)
    deleted = sum(d for _, d, _ in samples)
    size = samples[0][2].shape[1]
    total = nrows * (row_bytes + size)
    # A range a task, each about an output file (more where a file would not fit the
    # limit), split on the curve's cells as files are cut (``cuts.choose_splits``): a
    # range too large still (a heavy value) is split again in its task.
    ranges = max(-(-int(total * 1.25) // budget.range_bytes),
                 round(nrows / plan.rows_per_file))
    splits = choose_splits([n for n, _, _ in samples], [_keys(v) for _, _, v in samples],
                           max(1, min(_MAX_RANGES, ranges)))
    splits = splits.astype(f"S{size}")
    del samples
    with spill_place(scheduler, io, plan, table_journal) as (folder, storage):
        spilled = on_dask(scheduler, _spill_file,
                          [(table_metadata, io, t, i, names, ordering, splits, folder,
                            batch_rows, where, storage) for i, t in enumerate(group.tasks)])
        report("spilling", files_in, files_in, "files")
        read_rows = sum(s["rows"] for s in spilled)
        read_checksum = sum(s["checksum"] for s in spilled) % 2**64
        base = uuid_module.uuid4()
        results = on_dask(scheduler, _write_range, [
            (table_metadata, io, group, names, ordering, r,
             [(run_location(s["folder"], r), *s["ranges"][r]) for s in spilled], folder,
             plan.rows_per_file, plan.sort_limit, uuid_module.uuid5(base, f"range-{r}"),
             journal, table_journal, storage)
            for r in range(len(splits) + 1)])
        report("writing", len(results), len(results), "ranges")
    for r in results:
        written.extend(p for p in r.get("written", []) if p not in written)
    errors = [r for r in results if "error" in r]
    if errors:
        return {"error": f"{len(errors)} of {len(results)} ranges failed, the first with "
                         f"{errors[0]['error']}",
                "leftovers": [p for r in errors for p in r["leftovers"]]}
    files = [f for r in results for f in r["files"]]
    written_checksum = sum(r["checksum"] for r in results) % 2**64
    check_checksums(read_checksum, written_checksum, where)
    check_counts([t.file for t in group.tasks], files, where, deleted)
    return {"files": files, "written": [p for r in results for p in r["written"]],
            "entry": group_entry(table_metadata, group, read_rows, deleted, files, read_checksum,
                                 written_checksum, out_of_core=True, ranges=len(results))}
