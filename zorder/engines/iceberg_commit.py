"""The one REPLACE commit of an Iceberg rewrite, through PyIceberg's snapshot producers.

PyIceberg has no public REPLACE commit (``_RewriteFiles`` is under review, PR 3131): the
commit builds on its ``_OverwriteFiles`` producer, marked ``replace``, and is not
registered for PyIceberg's retry-and-rebase, so a concurrent commit is refused, never
rebased. Files written for a rewrite that does not commit are deleted, or named. Before
it, the job's own checks: as many rows, values and nulls, and the same rows' checksum."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from zorder.engines.iceberg_deletes import RemovesDeleteFiles


class IcebergRewriteError(RuntimeError):
    """The rewrite did not commit; the table is as it was (unless ``outcome_unknown``).

    Attributes:
        leftovers: data files written for the rewrite that could not be deleted (orphans
            no snapshot references; safe to delete).
        outcome_unknown: the catalog call failed without saying whether the commit will
            land (it had not when asked); the written files were kept, and are named in
            the message: orphans only if the snapshot never appears.
    """

    def __init__(self, message: str, leftovers: Sequence[str] = (),
                 outcome_unknown: bool = False) -> None:
        if leftovers:
            message += (f"; {len(leftovers)} written file(s) could not be deleted and are "
                        f"referenced by no snapshot: {', '.join(leftovers)}")
        super().__init__(message)
        self.leftovers = list(leftovers)
        self.outcome_unknown = outcome_unknown


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
# The commit: one REPLACE snapshot.

def _replace_producer_class() -> Any:
    """PyIceberg's ``_OverwriteFiles`` with its summary marked ``replace``.

    PyIceberg has no public REPLACE snapshot producer (its ``_RewriteFiles`` is still
    under review). ``_OverwriteFiles`` already writes what a REPLACE needs: a manifest of
    the added files, DELETED entries for the removed ones and the other manifests kept;
    only the operation differs. ``update_snapshot_summaries`` accepts no ``replace``, so
    the totals are computed as for an overwrite and the operation is set afterwards.
    """
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    class _ReplaceFiles(RemovesDeleteFiles, _OverwriteFiles):
        def _summary(self, snapshot_properties: Any = None) -> Any:
            summary = super()._summary(snapshot_properties or {})
            entries = dict(summary.additional_properties)
            return Summary(Operation.REPLACE, **entries)

    return _ReplaceFiles


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
                   properties: Mapping[str, str], written: List[str], planned: Any, *,
                   removed_deletes: Sequence[Any] = (),
                   data_sequence_number: Optional[int] = None) -> int:
    """Commit one REPLACE snapshot on the main branch; returns its id. ``planned`` is the
    table metadata the rewrite planned from and wrote its files under: main's head, the
    default partition spec and the table's uuid must still be its. The snapshot also
    removes the delete files ``removed_deletes`` (those that referenced only removed
    files), and the added files take ``data_sequence_number`` (the planned snapshot's:
    Spark's use-starting-sequence-number) unless it is None. On failure, deletes
    what was written (data files, manifests) only when the commit surely did not land and
    never will: the table changed, validation refused it, or it was never sent to the
    catalog."""
    from pyiceberg.exceptions import CommitFailedException, ValidationException
    from pyiceberg.table import Transaction
    from pyiceberg.table.snapshots import Operation

    # The snapshot is staged on the table's metadata as it is now, not as planned: its
    # sequence number must follow every commit since, a branch's or an undone one's too
    # (staged on the planned metadata, the catalog refused it as older).
    try:
        table.refresh()
    except BaseException as exc:
        left = delete_files(table.io, written)
        if not isinstance(exc, Exception):
            raise
        raise IcebergRewriteError(f"the rewrite did not commit: the table could not be "
                                  f"loaded again before the commit: {exc}", left) from exc
    now = table.metadata
    changed = None
    if now.table_uuid != planned.table_uuid:
        changed = (f"it was replaced by another table of the same name (uuid "
                   f"{now.table_uuid}, planned on {planned.table_uuid})")
    elif now.current_snapshot_id != planned.current_snapshot_id:
        changed = (f"a concurrent commit made snapshot {now.current_snapshot_id} the head "
                   f"of main, planned from {planned.current_snapshot_id}")
    elif now.default_spec_id != planned.default_spec_id:
        # (the new files' partition values are the planned spec's; PyIceberg lists added
        # files under the table's default spec, so they would be read as the new one's)
        changed = (f"its partition spec changed from {planned.default_spec_id} to "
                   f"{now.default_spec_id}, and the files were written under the first")
    if changed is not None:
        raise IcebergRewriteError(
            f"the table changed while it was rewritten ({changed}); the rewrite was "
            f"refused and the table is as it was", delete_files(table.io, written))
    txn = Transaction(table)
    producer = _replace_producer_class()(
        operation=Operation.OVERWRITE, transaction=txn, io=table.io,
        snapshot_properties=dict(properties))
    for data_file in removed:
        producer.delete_data_file(data_file)
    for data_file in added:
        producer.append_data_file(data_file)
    producer.remove_delete_files(removed_deletes)
    producer.keep_data_sequence_number(data_sequence_number)

    def discard() -> List[str]:
        producer._clean_all_uncommitted()
        return delete_files(table.io, written)

    try:
        updates, requirements = producer._commit()
        # Staged without registering the producer for PyIceberg's retry-and-rebase: the
        # commit asserts the branch head is still the planned snapshot, so any concurrent
        # commit fails it (CommitFailedException): the rewrite is refused, never rebased.
        txn._apply(updates, requirements)
    except BaseException as exc:
        # (staged here, in memory and in the table's storage: the catalog was not asked)
        left = discard()
        if not isinstance(exc, Exception):
            raise
        raise IcebergRewriteError(f"the rewrite did not commit: its snapshot could not be "
                                  f"staged: {exc!r}", left) from exc
    try:
        txn.commit_transaction()
    except CommitFailedException as exc:
        raise IcebergRewriteError(
            f"the table changed while it was rewritten (a concurrent commit); the rewrite "
            f"was refused and the table is as it was: {exc}", discard()) from exc
    except ValidationException as exc:
        raise IcebergRewriteError(f"the rewrite did not commit: {exc}", discard()) from exc
    except BaseException as exc:
        # Catalog down, a lost response, a timeout, an interrupt: the commit may or may not
        # have landed, and a catalog that has not applied it yet may still apply it (a REST
        # catalog behind a gateway that timed out). Only the two failures above say it
        # never will; after any other, nothing is deleted (as Iceberg's Java cleans up
        # only after a CleanableFailure): deleting files a landed commit references would
        # lose the table's data, keeping them only costs their space.
        try:
            table.refresh()
        except Exception:  # noqa: BLE001 - still unreachable
            now = "the catalog cannot say whether it landed"
        else:
            if table.metadata.snapshot_by_id(producer.snapshot_id) is not None:
                return producer.snapshot_id
            now = "it is not in the table now, but the catalog may still apply it"
        raise IcebergRewriteError(
            f"the commit of snapshot {producer.snapshot_id} failed and its outcome is "
            f"unknown ({exc!r}): {now}, so nothing was deleted. If it never appears, these "
            f"written files are orphans no snapshot references: {', '.join(written)}",
            outcome_unknown=True) from exc
    return producer.snapshot_id


