"""The REPLACE commits of an Iceberg rewrite, through PyIceberg's snapshot producers.

PyIceberg has no public REPLACE commit (``_RewriteFiles`` is under review, PR 3131): the
commit builds on its ``_OverwriteFiles`` producer, marked ``replace`` and validated as
Iceberg's ``RewriteFiles`` is (``rewrite_conflict``), against the snapshot the rewrite
planned from; PyIceberg's commit retries it over concurrent commits that do not conflict.
Files written for a rewrite that does not commit are deleted, or named. Before it, the
job's own checks: as many rows, values and nulls, and the same rows' checksum."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Dict, Iterator, List, Mapping, NoReturn, Optional, Sequence, Tuple

from zorder.engines.iceberg_deletes import RemovesDeleteFiles
from zorder.engines.iceberg_manifests import ManifestEntries, carry_encoded, rewritten_entry


class IcebergRewriteError(RuntimeError):
    """The rewrite did not commit; the table is as it was (unless ``outcome_unknown``, or
    ``committed`` lists batches that a ``partial_progress`` rewrite committed before).

    Attributes:
        leftovers: data files written for the rewrite that could not be deleted (orphans
            no snapshot references; safe to delete).
        outcome_unknown: the catalog call failed without saying whether the commit will
            land (it had not when asked); the written files were kept, and are named in
            the message: orphans only if the snapshot never appears.
        committed: with ``partial_progress``, the commits that landed before (dicts as
            in ``report["commits"]``); empty otherwise.
    """

    def __init__(self, message: str, leftovers: Sequence[str] = (),
                 outcome_unknown: bool = False,
                 committed: Sequence[Dict[str, Any]] = ()) -> None:
        if leftovers:
            message += (f"; {len(leftovers)} written file(s) could not be deleted and are "
                        f"referenced by no snapshot: {', '.join(leftovers)}")
        super().__init__(message)
        self.leftovers = list(leftovers)
        self.outcome_unknown = outcome_unknown
        self.committed = list(committed)


# ---------------------------------------------------------------------------------------
# The job's checks, before the commit.

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


def check_counts(before: Sequence[Any], after: Sequence[Any], where: str,
                 deleted: int = 0) -> None:
    """The job's own check: the files written hold as many rows, values and nulls per
    column as the files they replace (as their Iceberg metrics count them), less the
    ``deleted`` rows of their position deletes (then rows only: the metrics count the
    deleted rows' values too)."""
    rows_before = sum(f.record_count for f in before)
    rows_after = sum(f.record_count for f in after)
    if rows_before - deleted != rows_after:
        raise IcebergRewriteError(f"{where}: the files written hold {rows_after} rows, the "
                                  f"files they replace {rows_before}"
                                  + (f" less {deleted} deleted" if deleted else "")
                                  + "; nothing was committed")
    if deleted:
        return
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


# ---------------------------------------------------------------------------------------
# The commit: one REPLACE snapshot, validated as Iceberg's RewriteFiles is.

#: The operations that can remove a data file, and those that can add delete files
#: (Iceberg's ``MergingSnapshotProducer``: an append removes nothing and adds no deletes).
_REMOVING_OPERATIONS = ("overwrite", "replace", "delete")
_DELETING_OPERATIONS = ("overwrite", "delete")


def _operation(snapshot: Any) -> Optional[str]:
    """A snapshot's operation as text (None: no summary, so it may have done anything)."""
    op = getattr(snapshot.summary, "operation", None) if snapshot.summary is not None else None
    return None if op is None else getattr(op, "value", str(op))


def _field_changes(planned: Any, now: Any) -> Optional[str]:
    """How the schema ``now`` no longer matches files written under ``planned``: a column
    whose type or nullability changed, or a required column added (the files lack it).
    Renamed, dropped and added optional columns read as before: None."""
    from pyiceberg.schema import index_by_id

    before, after = index_by_id(planned), index_by_id(now)
    for field_id, field in sorted(after.items()):
        old = before.get(field_id)
        if old is None:
            if field.required:
                return f"required column {field.name!r} was added, which the files lack"
            continue
        same_type = (old.field_type == field.field_type if old.field_type.is_primitive
                     else type(old.field_type) is type(field.field_type))
        if not same_type or old.required != field.required:
            return (f"column {field.name!r} changed from {old.field_type}"
                    f"{' required' if old.required else ''} to {field.field_type}"
                    f"{' required' if field.required else ''}, and the files hold the first")
    return None


def _applying_to(delete_file: Any, removed: Sequence[Any], by_path: Mapping[str, Any],
                 by_partition: Mapping[Tuple[int, Any], List[Any]]) -> Optional[Any]:
    """The first of the ``removed`` data files that a delete file (position deletes, a
    deletion vector or equality deletes) may apply to, as Iceberg's delete index decides:
    a referenced data file, else path bounds, within the file's partition (an equality
    delete of an unpartitioned spec covers every partition); None if none."""
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table.delete_file_index import _applies_to_data_file

    referenced = getattr(delete_file, "referenced_data_file", None)
    if referenced:
        return by_path.get(referenced)
    if delete_file.content == DataFileContent.EQUALITY_DELETES:
        if not delete_file.partition:
            return removed[0] if removed else None
        same = by_partition.get((delete_file.spec_id, delete_file.partition), [])
        return same[0] if same else None
    return next((f for f in by_partition.get((delete_file.spec_id, delete_file.partition), [])
                 if _applies_to_data_file(delete_file, f)), None)


def rewrite_conflict(table: Any, planned: Any, base_id: Optional[int], branch: str,
                     removed: Sequence[Any],
                     keeps_sequence_number: bool = False) -> Optional[str]:
    """Why the rewrite of ``removed`` (data files of snapshot ``base_id``, written under
    the ``planned`` metadata) cannot commit on ``table`` as it is now, naming the
    conflicting snapshot; None when it can. Iceberg's ``RewriteFiles`` validation: every
    replaced file still live, no delete file added since that applies to one of them;
    appends and changes elsewhere are no conflict. Also refused: another table under the
    name, a moved or missing branch, a partition spec or schema the files do not match.

    With ``keeps_sequence_number`` (the new files take the planned snapshot's data
    sequence number), an equality delete added since is no conflict: its sequence number
    is above theirs, so it still applies to their rows (Iceberg's Java skips them then
    too). Position deletes and deletion vectors name the old files, so they always are.
    Only delete files *added* since count: those the rewrite itself removes were there
    when it planned."""
    now = table.metadata
    head = now.snapshot_by_name(branch)
    at = f"the head of {branch} is snapshot {None if head is None else head.snapshot_id}"
    if now.table_uuid != planned.table_uuid:
        return (f"it was replaced by another table of the same name (uuid {now.table_uuid}, "
                f"planned on {planned.table_uuid})")
    if now.default_spec_id != planned.default_spec_id:
        # (the new files' partition values are the planned spec's; PyIceberg lists added
        # files under the table's default spec, so they would be read as the new one's)
        return (f"its partition spec changed from {planned.default_spec_id} to "
                f"{now.default_spec_id}, and the files were written under the first; {at}")
    change = _field_changes(planned.schema(), now.schema())
    if change is not None:
        return f"its schema changed: {change}; {at}"
    if head is None:
        return f"branch {branch!r} was removed"
    if head.snapshot_id == base_id:
        return None
    from pyiceberg.table.snapshots import ancestors_of

    since: List[Any] = []
    for snapshot in ancestors_of(head, now):
        if snapshot.snapshot_id == base_id:
            break
        since.append(snapshot)
    else:
        return (f"{branch} was moved to snapshot {head.snapshot_id}, which does not descend "
                f"from snapshot {base_id} that the rewrite planned from")
    from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus

    by_path = {f.file_path: f for f in removed}
    by_partition: Dict[Tuple[int, Any], List[Any]] = {}
    for f in removed:
        by_partition.setdefault((f.spec_id, f.partition), []).append(f)
    for snapshot in reversed(since):    # oldest first: the first conflict is named
        op = _operation(snapshot)
        if op is not None and op not in _REMOVING_OPERATIONS:
            continue
        for manifest in snapshot.manifests(table.io):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            deletes = manifest.content == ManifestContent.DELETES
            if deletes and op is not None and op not in _DELETING_OPERATIONS:
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                f = entry.data_file
                if entry.snapshot_id != snapshot.snapshot_id:
                    continue
                if not deletes and entry.status == ManifestEntryStatus.DELETED \
                        and f.file_path in by_path:
                    return (f"snapshot {snapshot.snapshot_id} ({op}) removed input file "
                            f"{f.file_path}")
                if deletes and entry.status == ManifestEntryStatus.ADDED:
                    if keeps_sequence_number and f.content == DataFileContent.EQUALITY_DELETES:
                        continue
                    hit = _applying_to(f, removed, by_path, by_partition)
                    if hit is not None:
                        return (f"snapshot {snapshot.snapshot_id} ({op}) added delete file "
                                f"{f.file_path}, which applies to input file {hit.file_path}")
    return None


def _replace_producer_class() -> Any:
    """PyIceberg's ``_OverwriteFiles`` with its summary marked ``replace`` and the
    validation of a rewrite.

    PyIceberg has no public REPLACE snapshot producer (its ``_RewriteFiles`` is still
    under review). ``_OverwriteFiles`` already writes what a REPLACE needs: a manifest of
    the added files, DELETED entries for the removed ones and the other manifests kept;
    only the operation differs. ``update_snapshot_summaries`` accepts no ``replace``, so
    the totals are computed as for an overwrite and the operation is set afterwards.
    Registered with its transaction, PyIceberg's commit retries it (``commit.retry.*``):
    each retry stages it again on the new head after ``_validate_concurrency``, which here
    is ``rewrite_conflict`` (the base class's serializable check would refuse any append).

    The head's manifests are read through ``entries`` (those the plan read are not read
    again), and once for both of the base class's passes over them: the removed files'
    entries, then the manifests kept as they are or written again without those files,
    their kept records copied as they were (``carry_encoded``) and the removed files'
    DELETED entries with them, as Iceberg's Java writes them (PyIceberg writes those in
    a manifest of their own, which only a spec with no manifest written again gets).
    """
    from pyiceberg.exceptions import ValidationException
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles
    from pyiceberg.typedef import KeyDefaultDict

    class _ReplaceFiles(RemovesDeleteFiles, _OverwriteFiles):
        planned: Any = None
        retries = 0
        entries: Optional[ManifestEntries] = None
        # (the head's manifests, each with None to keep it as it is, else the entries it
        # keeps, and the DELETED entries written with them; made by `_deleted_entries`,
        # written by `_existing_manifests`)
        _kept: Optional[Tuple[Optional[int],
                              List[Tuple[Any, Optional[List[Any]], List[Any]]]]] = None
        _read: Optional[ManifestEntries] = None   # (the reads `_kept` came from)

        def _head_pass(self) -> Tuple[List[Any], List[Any]]:
            """The removed files' entries, marked DELETED, and those of them in no
            manifest written again; each manifest of the head kept whole (it cannot hold,
            or does not hold, a removed file) or with the entries left, all from one read
            of each manifest."""
            parent = self._parent_snapshot_id
            head = (None if parent is None
                    else self._transaction.table_metadata.snapshot_by_id(parent))
            if parent is not None and head is None:
                raise ValueError(f"Could not find the previous snapshot: {parent}")
            entries = self.entries or ManifestEntries(self._io)
            removed = self._deleted_data_files
            may_hold = KeyDefaultDict(self._build_manifest_evaluator)

            def is_removed(entry: Any) -> bool:
                return (entry.data_file.content == DataFileContent.DATA
                        and entry.data_file in removed)

            deleted: List[Any] = []
            kept: List[Tuple[Any, Optional[List[Any]], List[Any]]] = []
            for manifest in ([] if head is None else head.manifests(self._io)):
                if not may_hold[manifest.partition_spec_id](manifest):
                    kept.append((manifest, None, []))
                    continue
                live = entries.live(manifest)
                gone = [e for e in live if is_removed(e)]
                if not gone:
                    kept.append((manifest, None, []))
                    continue
                deleted.extend(rewritten_entry(e, self._snapshot_id) for e in gone)
                left = [e for e in live if not is_removed(e)]
                if left:
                    kept.append((manifest, left, []))
            # As Iceberg's Java marks the removed entries DELETED in the manifest it
            # writes again, they go in the first manifest of their spec written again
            # (one manifest fewer to write and read); only those of a spec with none go
            # in a manifest of their own, as PyIceberg writes them all.
            first: Dict[int, List[Any]] = {}
            for manifest, keeps, gone_here in kept:
                if keeps is not None:
                    first.setdefault(manifest.partition_spec_id, gone_here)
            alone: List[Any] = []
            for e in deleted:
                first.get(e.data_file.spec_id, alone).append(e)
            self._kept = (parent, kept)
            self._read = entries
            return deleted, alone

        def _deleted_entries(self) -> List[Any]:
            deleted, alone = self._head_pass()
            self._validate_required_deletes(deleted)
            return alone

        def _existing_manifests(self) -> List[Any]:
            if self._kept is None or self._kept[0] != self._parent_snapshot_id:
                self._head_pass()   # (the base class calls _deleted_entries first)
            assert self._kept is not None and self._read is not None
            out: List[Any] = []
            for manifest, left, gone_here in self._kept[1]:
                if left is None:
                    out.append(manifest)
                    continue
                with self.new_manifest_writer(self.spec(manifest.partition_spec_id)) as writer:
                    # (the kept files' records copied as they are, not encoded again)
                    carry_encoded(writer, self._read.encoded(manifest))
                    for e in left:
                        writer.add_entry(rewritten_entry(e))
                    for e in gone_here:
                        writer.add_entry(e)
                out.append(writer.to_manifest_file())
            return out

        def _summary(self, snapshot_properties: Any = None) -> Any:
            summary = super()._summary(snapshot_properties or {})
            entries = dict(summary.additional_properties)
            return Summary(Operation.REPLACE, **entries)

        def _refresh_for_retry(self) -> None:
            self.retries += 1
            super()._refresh_for_retry()

        def _validate_concurrency(self) -> None:
            conflict = rewrite_conflict(self._transaction._table, self.planned,
                                        self._starting_snapshot_id, self._target_branch or "main",
                                        list(self._deleted_data_files),
                                        self._data_sequence_number is not None)
            if conflict is not None:
                raise ValidationException(conflict)

    return _ReplaceFiles


def _transaction_class() -> Any:
    """PyIceberg's ``Transaction`` whose ``table_metadata`` (the table's metadata with the
    staged updates applied) is computed once for each metadata and set of updates: PyIceberg
    applies the updates to a deep copy of the whole metadata, every snapshot of the
    table's history, on each of the snapshot producer's many accesses. Its metadata is
    never changed in place (frozen models), and a retry refreshes the table and stages
    its updates again, so it is computed again then."""
    from pyiceberg.table import Transaction

    class _Transaction(Transaction):
        _staged: Optional[Tuple[Any, Any, Any]] = None

        @property
        def table_metadata(self) -> Any:
            base, updates, staged = self._table.metadata, self._updates, self._staged
            if staged is None or staged[0] is not base or staged[1] is not updates:
                staged = self._staged = (base, updates, super().table_metadata)
            return staged[2]

    return _Transaction


class CommitCall:
    """One commit's catalog call, as the write phase's cleanup sees it: once ``started``,
    the files written belong to a commit that may land, and no cleanup deletes them."""

    def __init__(self) -> None:
        self.started = False
        self.landed = False
        self.snapshot_id: Optional[int] = None
        self.retries = 0


def branch_head(table: Any, branch: str) -> Any:
    """The snapshot at the head of ``branch`` (None: ``main`` of a table without
    snapshots); ValueError for a missing branch or a tag."""
    if not isinstance(branch, str) or not branch:
        raise TypeError(f"branch must be a branch name, not {branch!r}")
    ref = table.metadata.refs.get(branch)
    if ref is None:
        if branch == "main":
            return None
        names = sorted(n for n, r in table.metadata.refs.items()
                       if r.snapshot_ref_type.value == "branch")
        raise ValueError(f"table {'.'.join(table.name())} has no branch {branch!r} (its "
                         f"branches: {', '.join(names) or 'none'})")
    if ref.snapshot_ref_type.value != "branch":
        raise ValueError(f"{branch!r} is a tag of table {'.'.join(table.name())}, not a "
                         f"branch: a rewrite commits to a branch")
    return table.metadata.snapshot_by_id(ref.snapshot_id)


@contextlib.contextmanager
def interrupts_deferred(enabled: bool = True) -> Iterator[None]:
    """A first Ctrl-C or SIGTERM within the block is held until the block ends (a commit
    then finishes and is recorded) and raised after it; a second one acts at once. Only
    in the main thread, where Python runs signal handlers."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    from zorder.parquet.safety import exception_for, set_handlers

    held: List[int] = []

    def hold(signum: int, frame: Any) -> None:
        if held:
            raise exception_for(signum)
        held.append(signum)

    previous: Dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.getsignal(sig)
            signal.signal(sig, hold)
        yield
    finally:
        raised = set_handlers(previous)
        if raised is not None:
            raise raised
    if held:
        raise exception_for(held[0])


def delete_files(io: Any, paths: Sequence[str]) -> List[str]:
    """Delete ``paths``; returns the ones that could not be deleted."""
    left: List[str] = []
    for path in paths:
        try:
            io.delete(path)
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - any storage error: report the file
            left.append(path)
    return left


def zorder_summary(curve: str, columns: Sequence[str], rank_bits: Optional[int]) -> Dict[str, str]:
    """The snapshot summary entries zorder writes: the curve, its columns and, for the
    rank encoding (``rank_bits`` not None), the encoding and its bits."""
    summary = {"zorder.curve": curve, "zorder.columns": ",".join(columns)}
    if rank_bits is not None:
        summary.update({"zorder.encoding": "rank", "zorder.rank-bits": str(rank_bits)})
    return summary


#: The snapshot summary keys zorder writes itself.
ZORDER_SUMMARY_KEYS = tuple(zorder_summary("", (), 0))
# The keys Iceberg's snapshot summary computes (Iceberg's SnapshotSummary and PyIceberg's
# update_snapshot_summaries): a caller's value there would misreport the snapshot, and
# the next snapshot's totals are computed from this one's.
_COMPUTED_SUMMARY_PREFIXES = ("added-", "deleted-", "removed-", "total-", "changed-",
                              "partitions.", "partition-summaries")


def summary_properties(value: Any) -> Dict[str, str]:
    """``snapshot_properties`` checked: a mapping of str to str (None: empty), none of
    them a key Iceberg computes (``operation``, ``total-records``...) or zorder writes."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"snapshot_properties must be a mapping of str to str, not "
                        f"{type(value).__name__}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"snapshot_properties must map str to str (the summary is a map "
                            f"of strings), got {key!r}: {item!r}")
        if (key == "operation" or key.startswith(_COMPUTED_SUMMARY_PREFIXES)
                or key in ZORDER_SUMMARY_KEYS):
            raise ValueError(f"snapshot_properties: {key!r} is a summary key "
                             f"{'zorder' if key in ZORDER_SUMMARY_KEYS else 'Iceberg'} "
                             f"computes; use another name")
    return dict(value)


def commit_rewrite(table: Any, removed: Sequence[Any], added: Sequence[Any],
                   properties: Mapping[str, str], written: List[str], planned: Any,
                   branch: str = "main", call: Optional[CommitCall] = None, *,
                   removed_deletes: Sequence[Any] = (),
                   data_sequence_number: Optional[int] = None,
                   entries: Optional[ManifestEntries] = None) -> int:
    """Commit one REPLACE snapshot on ``branch``; returns its id. ``planned`` is the table
    metadata the rewrite planned from (the branch's head then) and wrote its files under.

    The snapshot also removes the delete files ``removed_deletes`` (those that referenced
    only removed files), and the added files take ``data_sequence_number`` (the planned
    snapshot's: Spark's use-starting-sequence-number) unless it is None. ``entries``:
    the manifests the plan read, not read again.

    Validated as Iceberg's ``RewriteFiles``, against the planned snapshot
    (``rewrite_conflict``): commits since that only append, or change other files, are
    kept under it; PyIceberg's commit retries a commit the catalog refused as concurrent,
    within the table's ``commit.retry.*`` properties (Iceberg's defaults: 4 retries),
    validating again each time. On failure, deletes what was written (data files,
    manifests) only when the commit surely did not land and never will: refused,
    retries spent, or never sent to the catalog. ``call`` says when the catalog call
    begins (from then the caller's cleanup must not delete the files) and how it ended."""
    from pyiceberg.exceptions import CommitFailedException, ValidationException
    from pyiceberg.table.snapshots import Operation

    call = CommitCall() if call is None else call
    base = planned.snapshot_by_name(branch)
    base_id = None if base is None else base.snapshot_id
    producer: Any = None

    def discard() -> List[str]:
        if producer is not None:
            producer._clean_all_uncommitted()
        return delete_files(table.io, written)

    def not_committed(exc: BaseException, why: str) -> NoReturn:
        # Before the catalog call: what was written is deleted, an interrupt goes on as it is.
        left = discard()
        if not isinstance(exc, Exception):
            raise exc
        raise IcebergRewriteError(f"the rewrite did not commit: {why}", left) from exc

    # The snapshot is staged on the table's metadata as it is now, not as planned: its
    # sequence number must follow every commit since, a branch's or an undone one's too.
    try:
        table.refresh()
    except BaseException as exc:
        not_committed(exc, f"the table could not be loaded again before the commit: {exc}")
    try:
        conflict = rewrite_conflict(table, planned, base_id, branch, removed,
                                    data_sequence_number is not None)
        if conflict is None:
            txn = _transaction_class()(table)
            producer = _replace_producer_class()(
                operation=Operation.OVERWRITE, transaction=txn, io=table.io,
                snapshot_properties=dict(properties), branch=branch)
            producer.planned = planned
            producer.entries = entries
            # (the validation window of every retry starts at the planned snapshot)
            producer._starting_snapshot_id = base_id
            for data_file in removed:
                producer.delete_data_file(data_file)
            for data_file in added:
                producer.append_data_file(data_file)
            producer.remove_delete_files(removed_deletes)
            producer.keep_data_sequence_number(data_sequence_number)
            updates, requirements = producer._commit()
            txn._apply(updates, requirements)
            txn._register_snapshot_producer(producer)   # retried by commit_transaction
    except BaseException as exc:
        # (staged here, in memory and in the table's storage: the catalog was not asked)
        not_committed(exc, f"its snapshot could not be staged: {exc!r}")
    if conflict is not None:
        raise IcebergRewriteError(
            f"the table changed while it was rewritten ({conflict}); the rewrite was "
            f"refused and the table is as it was", discard())
    call.started, call.snapshot_id = True, producer.snapshot_id
    try:
        txn.commit_transaction()
        call.landed, call.retries = True, producer.retries
        return int(producer.snapshot_id)
    except CommitFailedException as exc:
        raise IcebergRewriteError(
            f"the catalog refused the commit {producer.retries + 1} time(s), each time after "
            f"a concurrent commit (the table's commit.retry.* properties bound the "
            f"retries); the rewrite was refused and the table is as it was: {exc}",
            discard()) from exc
    except ValidationException as exc:
        raise IcebergRewriteError(
            f"the table changed while it was rewritten ({exc}); the rewrite was refused "
            f"and the table is as it was", discard()) from exc
    except BaseException as exc:
        # Catalog down, a lost response, a timeout, an interrupt: the commit may or may not
        # have landed, and a catalog that has not applied it yet may still apply it (a REST
        # catalog behind a gateway that timed out). Only the two failures above say it
        # never will; after any other, nothing is deleted (as Iceberg's Java cleans up
        # only after a CleanableFailure): deleting files a landed commit references would
        # lose the table's data, keeping them only costs their space.
        kept = (f"If it never appears, these written files are orphans no snapshot "
                f"references: {', '.join(written)}")
        if not isinstance(exc, Exception):
            # Never a silent success: an interrupt ends the job, whether or not it landed.
            from zorder.parquet.safety import Terminated

            stopped = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
            raise IcebergRewriteError(
                f"{stopped} during the catalog call that commits snapshot "
                f"{producer.snapshot_id}: the commit may have landed, its outcome is "
                f"unknown, so nothing was deleted; look for the snapshot in the table's "
                f"history. {kept}", outcome_unknown=True) from exc
        try:
            table.refresh()
        except Exception:  # noqa: BLE001 - still unreachable
            now = "the catalog cannot say whether it landed"
        else:
            if table.metadata.snapshot_by_id(producer.snapshot_id) is not None:
                call.landed, call.retries = True, producer.retries
                return int(producer.snapshot_id)
            now = "it is not in the table now, but the catalog may still apply it"
        raise IcebergRewriteError(
            f"the commit of snapshot {producer.snapshot_id} failed and its outcome is "
            f"unknown ({exc!r}): {now}, so nothing was deleted. {kept}",
            outcome_unknown=True) from exc
