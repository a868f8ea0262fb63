"""The delete files of an Iceberg rewrite (merge-on-read tables).

- Position deletes and deletion vectors are applied while a group is read (each
  ``FileScanTask.delete_files``, read by PyIceberg's own reader), and the rows they
  delete are counted, for the job's row checks.
- Equality deletes: PyIceberg 0.12 cannot read them (its planner raises), so a rewrite
  whose files one may apply to is refused before anything is read or written.
- A position delete file (or deletion vector) whose every referenced data file is
  rewritten is removed in the rewrite's own commit, as Spark's
  ``remove-dangling-deletes`` does; one that also references a kept file stays.
- The written files keep the starting snapshot's data sequence number (Spark's
  ``use-starting-sequence-number``), so an equality delete committed while the rewrite
  ran still applies to their rows.

PyIceberg 0.12 writes no delete manifests (its manifest writers are all of data
content): ``DeleteManifestWriter`` is its v2 writer marked as one, and
``RemovesDeleteFiles`` is the snapshot-producer mixin that rewrites the delete manifests
holding removed files.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

from zorder.engines.iceberg_manifests import ManifestEntries, in_blocks, plan_files, rewritten_entry

#: The field id of a position delete file's ``file_path`` column (Iceberg's spec).
FILE_PATH_FIELD_ID = 2147483546


def delete_key(delete_file: Any) -> Tuple[str, Optional[str], Optional[int]]:
    """One delete file's identity: a Puffin file holds several deletion vectors, one
    manifest entry each, so its path alone does not tell them apart."""
    return (delete_file.file_path, getattr(delete_file, "referenced_data_file", None),
            getattr(delete_file, "content_offset", None))


# ---------------------------------------------------------------------------------------
# Planning: the tasks with their position deletes, equality deletes refused.

def plan_tasks(table_metadata: Any, entries: ManifestEntries, snapshot: Any, row_filter: Any,
               case_sensitive: bool, describe: Any) -> List[Any]:
    """The FileScanTasks of ``snapshot`` that ``row_filter`` may match, each with the
    position delete files that apply to it (PyIceberg's own planner, each manifest read
    through ``entries``). ValueError, one line naming a delete file, if an equality
    delete file may apply to one of them: PyIceberg cannot read those, and rewriting
    without them would bring rows back. ``describe(data_file)`` names the file's
    partition in that message."""
    from pyiceberg.manifest import DataFileContent

    equality: List[Any] = []

    def not_equality(entry: Any) -> bool:
        if entry.data_file.content == DataFileContent.EQUALITY_DELETES:
            equality.append(entry.data_file)
            return False
        return True

    tasks = plan_files(table_metadata, entries, snapshot.manifests(entries.io), row_filter,
                       case_sensitive, not_equality)
    if equality:
        specs = table_metadata.specs()
        for task in tasks:
            hit = next((d for d in equality if _may_apply(d, task.file, specs)), None)
            if hit is not None:
                raise ValueError(
                    f"{describe(task.file)} has equality delete files, which PyIceberg "
                    f"cannot read, e.g. {hit.file_path}; exclude it with --where (row_filter) "
                    f"or apply its deletes first (Spark's rewrite_data_files)")
    return tasks


def report_tasks(table: Any, snapshot_id: int) -> List[Any]:
    """The FileScanTasks of a snapshot for a report of its files (their bounds, a sample
    of values): equality delete files are left out, where PyIceberg's scan would raise."""
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table import ManifestGroupPlanner

    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None:
        return []
    planner = ManifestGroupPlanner(table.metadata, table.io)
    return list(planner.plan_files(
        snapshot.manifests(table.io),
        manifest_entry_filter=lambda e: e.data_file.content != DataFileContent.EQUALITY_DELETES))


def _may_apply(delete_file: Any, data_file: Any, specs: Dict[int, Any]) -> bool:
    """Whether an equality delete file may apply to a data file: one of an unpartitioned
    spec applies to the whole table, another to its own partition (Iceberg's rule; the
    sequence numbers are not compared, so this may refuse one that no longer applies)."""
    spec = specs.get(delete_file.spec_id)
    if spec is None or spec.is_unpartitioned():
        return True
    return (delete_file.spec_id == data_file.spec_id
            and tuple(delete_file.partition) == tuple(data_file.partition))


# ---------------------------------------------------------------------------------------
# Reading: the live rows of a group's files.

def read_live_rows(table_metadata: Any, io: Any, schema: Any, tasks: Sequence[Any],
                   positions: Optional[Dict[str, Any]] = None) -> Tuple[Any, int]:
    """(the rows of ``tasks``' data files that their position deletes and deletion vectors
    leave, in file order, as one Arrow table; the rows those delete, each distinct position
    below a file's record count once). ``positions``: ``delete_positions(io, tasks)``,
    read already (two reads of different columns of the same rows share it).

    The delete files are read once, by PyIceberg's reader, and each file's positions
    applied as one mask: PyIceberg's scan applies them batch by batch against a Python
    range, which took four times as long as the read itself (4M rows, 10% deleted)."""
    import numpy
    import pyarrow as pa
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    scan = ArrowScan(table_metadata, io, schema, AlwaysTrue(), True)
    if not any(t.delete_files for t in tasks):
        return scan.to_table(tasks), 0
    per_file = delete_positions(io, tasks) if positions is None else positions

    def read(task: Any) -> Tuple[Any, int]:
        # the file read whole (no filter, so rows come in file order), then masked
        data = scan.to_table([FileScanTask(task.file, residual=task.residual)])
        positions = per_file.get(task.file.file_path)
        if positions is None:
            return data, 0
        keep = numpy.ones(data.num_rows, dtype=bool)
        keep[positions[positions < data.num_rows]] = False
        return data.filter(pa.array(keep)), len(positions)

    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(read, tasks))
    if not parts:
        return scan.to_table([]), 0
    data = pa.concat_tables([p for p, _ in parts], promote_options="permissive")
    return data, sum(n for _, n in parts)


def delete_positions(io: Any, tasks: Sequence[Any]) -> Dict[str, Any]:
    """Per data file path of ``tasks`` with position deletes (or a deletion vector): the
    sorted distinct positions they delete below its record count (int64 numpy), read once
    by PyIceberg's reader."""
    import numpy
    from pyiceberg.io.pyarrow import _read_all_delete_files

    if not any(t.delete_files for t in tasks):
        return {}
    per_file = _read_all_delete_files(io, tasks)
    found: Dict[str, Any] = {}
    for task in tasks:
        arrays = per_file.get(task.file.file_path)
        if not arrays:
            continue
        positions = numpy.unique(numpy.concatenate(
            [c.to_numpy(zero_copy_only=False) for a in arrays for c in a.chunks]))
        found[task.file.file_path] = positions[(positions >= 0)
                                               & (positions < task.file.record_count)]
    return found


def stream_live_rows(table_metadata: Any, io: Any, schema: Any, tasks: Sequence[Any],
                     positions: Dict[str, Any], rows: int = 1 << 17) -> Iterator[Any]:
    """``read_live_rows``' rows streamed: record batches of at most ``rows`` rows, file by
    file in file order, each file's ``positions`` (``delete_positions``) masked out, one
    batch in memory at a time. ``schema``: an Iceberg schema (a projection reads only
    those columns)."""
    import numpy
    import pyarrow as pa
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    scan = ArrowScan(table_metadata, io, schema, AlwaysTrue(), True)
    for task in tasks:
        deleted = positions.get(task.file.file_path)
        seen = 0
        # (one file, no deletes, no filter: a lazy stream of its rows in file order)
        for batch in scan._record_batches_from_scan_tasks_and_deletes(
                [FileScanTask(task.file, residual=task.residual)], {}):
            n = batch.num_rows
            if deleted is not None and len(deleted):
                lo, hi = numpy.searchsorted(deleted, [seen, seen + n])
                if hi > lo:
                    keep = numpy.ones(n, dtype=bool)
                    keep[deleted[lo:hi] - seen] = False
                    batch = batch.filter(pa.array(keep))
            seen += n
            for start in range(0, batch.num_rows, rows):
                yield batch.slice(start, rows)


# ---------------------------------------------------------------------------------------
# The dangling deletes: the delete files the rewrite's commit removes.

def delete_references(io: Any, tasks: Iterable[Any]) -> List[Tuple[Any, FrozenSet[str]]]:
    """Every position delete file (or deletion vector) of ``tasks``, once, with the data
    files it references: its ``referenced_data_file``, else its ``file_path`` bounds when
    they name one file, else the paths read from its ``file_path`` column."""
    from pyiceberg.io.pyarrow import _read_deletes

    unique: Dict[Tuple[str, Optional[str], Optional[int]], Any] = {}
    for task in tasks:
        for d in task.delete_files:
            unique.setdefault(delete_key(d), d)
    known: List[Tuple[Any, FrozenSet[str]]] = []
    to_read: List[Any] = []
    for d in unique.values():
        single = _single_reference(d)
        if single is not None:
            known.append((d, frozenset([single])))
        else:
            to_read.append(d)
    if to_read:
        with ThreadPoolExecutor(4) as pool:
            read = list(pool.map(lambda d: frozenset(_read_deletes(io, d)), to_read))
        known.extend(zip(to_read, read))
    return known


def _single_reference(delete_file: Any) -> Optional[str]:
    """The one data file a delete file references, if its metadata says so."""
    referenced = getattr(delete_file, "referenced_data_file", None)
    if referenced:
        return str(referenced)
    lower = (delete_file.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    upper = (delete_file.upper_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is not None and lower == upper:
        try:
            return bytes(lower).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def dangling_deletes(references: Iterable[Tuple[Any, FrozenSet[str]]],
                     rewritten: Iterable[str]) -> List[Any]:
    """The delete files of ``references`` whose every referenced data file is among the
    ``rewritten`` paths: once those are replaced, they delete nothing."""
    gone = set(rewritten)
    return [d for d, paths in references if paths and paths <= gone]


# ---------------------------------------------------------------------------------------
# Committing: delete manifests, removed delete files, the starting sequence number.

def delete_manifest_writer_class() -> Any:
    """PyIceberg's v2 manifest writer, writing a manifest of delete files."""
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> Any:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> Dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    return DeleteManifestWriter


class RemovesDeleteFiles:
    """A mixin for a PyIceberg snapshot producer (before it in the bases): the snapshot
    also removes the given delete files, and its added data files take a given data
    sequence number.

    The producer's own manifests are written first; then each delete manifest that holds
    a removed file is written again, its other entries EXISTING and the removed ones
    DELETED, as Iceberg's Java does. A delete file no longer in the table (removed by a
    commit since) is skipped, and the summary counts only those removed here."""

    _removed_deletes: Sequence[Any] = ()
    _removed_found: List[Any] = []
    _data_sequence_number: Optional[int] = None

    def remove_delete_files(self, files: Sequence[Any]) -> None:
        self._removed_deletes = list(files)
        self._removed_found = []

    def keep_data_sequence_number(self, sequence_number: Optional[int]) -> None:
        self._data_sequence_number = sequence_number

    def new_manifest_writer(self, spec: Any) -> Any:
        writer = in_blocks(super().new_manifest_writer(spec))  # type: ignore[misc]
        sequence_number = self._data_sequence_number
        if sequence_number is not None:
            # Only the manifest of added files adds entries with `add`; the others copy
            # entries (`add_entry`) with their own sequence numbers.
            from pyiceberg.manifest import ManifestEntry

            add = writer.add

            def add_at_starting_sequence(entry: Any) -> Any:
                return add(ManifestEntry.from_args(
                    status=entry.status, snapshot_id=entry.snapshot_id,
                    sequence_number=sequence_number, file_sequence_number=None,
                    data_file=entry.data_file))

            writer.add = add_at_starting_sequence
        return writer

    def _process_manifests(self, manifests: List[Any]) -> List[Any]:
        manifests = super()._process_manifests(manifests)  # type: ignore[misc]
        if not self._removed_deletes:
            return manifests
        from pyiceberg.manifest import ManifestContent

        removed = {delete_key(d) for d in self._removed_deletes}
        self._removed_found = []
        out: List[Any] = []
        writer_class = delete_manifest_writer_class()
        producer: Any = self
        for manifest in manifests:
            if manifest.content != ManifestContent.DELETES:
                out.append(manifest)
                continue
            entries = manifest.fetch_manifest_entry(io=producer._io, discard_deleted=True)
            if not any(delete_key(e.data_file) in removed for e in entries):
                out.append(manifest)
                continue
            with in_blocks(writer_class(producer.spec(manifest.partition_spec_id),
                                        producer.schema(), producer.new_manifest_output(),
                                        producer._snapshot_id,
                                        producer._compression)) as writer:
                for e in entries:
                    gone = delete_key(e.data_file) in removed
                    if gone:
                        self._removed_found.append(e.data_file)
                    writer.add_entry(rewritten_entry(e, producer._snapshot_id if gone else None))
            out.append(writer.to_manifest_file())
        return out

    def _summary(self, snapshot_properties: Any = None) -> Any:
        # The summary counts the files in `_deleted_data_files`, delete files included
        # (removed-delete-files, removed-position-deletes and the totals).
        producer: Any = self
        data_files = producer._deleted_data_files
        producer._deleted_data_files = list(data_files) + list(self._removed_found)
        try:
            return super()._summary(snapshot_properties or {})  # type: ignore[misc]
        finally:
            producer._deleted_data_files = data_files

    @property
    def removed_delete_files(self) -> List[Any]:
        """The delete files the staged snapshot removes."""
        return list(self._removed_found)
