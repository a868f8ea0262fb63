"""The manifests of one Iceberg rewrite, each read once.

A rewrite asks the manifests at the branch's head for its plan (PyIceberg's planner),
for the snapshot that added each file (its recorded clustering), and, to commit, for the
entries of the removed files and the manifests that keep the others. A manifest file is
never changed once written, so its live entries, read once by path, answer all of them;
a manifest another writer committed meanwhile is read when first asked for. On a table
of hundreds of partitions in one manifest, those reads were most of what a rewrite of a
few partitions paid beyond their own work.

The manifests a rewrite writes hold their entries in Avro blocks of ``ENTRIES_PER_BLOCK``
(``in_blocks``), as Iceberg's Java writers cut theirs, where PyIceberg's writers put each
entry in a block of its own, compressed alone.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterator, List


class ManifestEntries:
    """The live (ADDED and EXISTING) entries of manifests, by manifest path, each read
    at most once (PyIceberg's ``fetch_manifest_entry``); safe across threads. The lists
    are shared: callers read them, never change them."""

    def __init__(self, io: Any) -> None:
        self.io = io
        self._entries: Dict[str, List[Any]] = {}
        self._lock = threading.Lock()

    def live(self, manifest: Any) -> List[Any]:
        path = manifest.manifest_path
        with self._lock:
            found = self._entries.get(path)
        if found is None:
            # (read outside the lock, so that threads read different manifests at once)
            read = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
            with self._lock:
                found = self._entries.setdefault(path, read)
        return found


#: Entries per Avro block of the manifests a rewrite writes: about the 64 KB that Java's
#: Avro writers cut a block at, for entries with a few columns' metrics.
ENTRIES_PER_BLOCK = 128


def in_blocks(writer: Any) -> Any:
    """A PyIceberg ``ManifestWriter``, not yet entered, made to write its entries
    ``ENTRIES_PER_BLOCK`` to an Avro block (the rest when it closes) instead of one to a
    block: fewer, better compressed blocks, and less work per entry to write and read."""
    writer.__class__ = _in_blocks_class(type(writer))
    return writer


def _in_blocks_class(base: Any) -> type:
    # (a class made per writer: a few a commit, and none kept past its writer)
    class InBlocks(base):  # type: ignore[misc, valid-type]
        def __enter__(self) -> Any:
            entered = super().__enter__()
            avro = self._writer
            write = avro.write_block
            held: List[Any] = []

            def hold(objects: List[Any]) -> None:
                held.extend(objects)
                if len(held) >= ENTRIES_PER_BLOCK:
                    write(list(held))
                    held.clear()

            def flush() -> None:
                if held:
                    write(list(held))
                    held.clear()

            avro.write_block = hold
            self._flush_block = flush
            return entered

        def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> Any:
            if exc_type is None:
                self._flush_block()
            return super().__exit__(exc_type, exc, traceback)

    InBlocks.__name__ = InBlocks.__qualname__ = f"{base.__name__}InBlocks"
    return InBlocks


def plan_files(table_metadata: Any, entries: ManifestEntries, manifests: Any,
               row_filter: Any, case_sensitive: bool,
               entry_filter: Callable[[Any], bool]) -> List[Any]:
    """PyIceberg's ``ManifestGroupPlanner.plan_files`` (its manifest, partition and
    metrics evaluators, its delete file index), reading each manifest through
    ``entries``; without a row filter, every file's residual is ``AlwaysTrue`` (one
    evaluator for all, not one built per file), and the files kept are those its
    evaluators keep (all but the empty ones), without evaluating each file."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.expressions.visitors import UnpartitionedResidualEvaluator
    from pyiceberg.table import ManifestGroupPlanner, _min_sequence_number
    from pyiceberg.utils.concurrent import ExecutorFactory
    from pyiceberg.typedef import KeyDefaultDict

    class Planner(ManifestGroupPlanner):
        def plan_manifest_entries(self, manifests: Any) -> Iterator[List[Any]]:
            may_match = KeyDefaultDict(self._build_manifest_evaluator)
            chosen = [m for m in manifests if may_match[m.partition_spec_id](m)]
            in_partition = KeyDefaultDict(self._build_partition_evaluator)
            in_bounds = self._build_metrics_evaluator()
            everything = (isinstance(self.row_filter, AlwaysTrue)
                          and self.options.get("include_empty_files", "false") == "false")
            least = _min_sequence_number(chosen)

            def matching(manifest: Any) -> List[Any]:
                if everything:
                    # (what PyIceberg's evaluators of AlwaysTrue keep: every partition,
                    # every file but the empty ones; without a visitor built per file)
                    return [e for e in entries.live(manifest) if e.data_file.record_count != 0]
                keep = in_partition[manifest.partition_spec_id]
                return [e for e in entries.live(manifest)
                        if keep(e.data_file) and in_bounds(e.data_file)]

            # (built here, in one thread: KeyDefaultDict is no lock)
            for m in chosen:
                in_partition[m.partition_spec_id]
            return ExecutorFactory.get_or_create().map(
                matching, [m for m in chosen if self._check_sequence_number(least, m)])

        def _build_residual_evaluator(self, spec_id: int) -> Callable[[Any], Any]:
            if not isinstance(self.row_filter, AlwaysTrue):
                return super()._build_residual_evaluator(spec_id)
            # (its residual_for returns the expression as it is, keeping no state)
            everywhere = UnpartitionedResidualEvaluator(self.table_metadata.schema(),
                                                        AlwaysTrue())
            return lambda data_file: everywhere

    planner = Planner(table_metadata, entries.io, row_filter, case_sensitive)
    return list(planner.plan_files(manifests, manifest_entry_filter=entry_filter))


def rewritten_entry(entry: Any, removed_by: Any = None) -> Any:
    """``entry`` as a manifest written again lists it: EXISTING with its own snapshot and
    sequence numbers, or DELETED by snapshot ``removed_by`` (its sequence numbers kept,
    as Iceberg's manifest rewrites keep them)."""
    from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus

    return ManifestEntry.from_args(
        status=ManifestEntryStatus.EXISTING if removed_by is None else ManifestEntryStatus.DELETED,
        snapshot_id=entry.snapshot_id if removed_by is None else removed_by,
        sequence_number=entry.sequence_number,
        file_sequence_number=entry.file_sequence_number,
        data_file=entry.data_file)
