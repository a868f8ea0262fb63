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
any that could not be are named in the error.

Merge-on-read tables: each group is read with its position deletes (and deletion
vectors) applied, so deleted rows never come back; the commit removes the delete files
that referenced only rewritten files (Spark's ``remove-dangling-deletes``), and the new
files keep the planned snapshot's data sequence number (``use-starting-sequence-number``).
PyIceberg reads no equality deletes: files they may apply to are refused before any is
read (``zorder.engines.iceberg_deletes``).

PyIceberg has no public REPLACE commit (``_RewriteFiles`` is under review, PR 3131): the
commit here builds on its ``_OverwriteFiles`` snapshot producer (``_ReplaceFiles``).
Needs ``pyiceberg`` (``pip install 'zorder[iceberg]'``), imported when a function runs.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from zorder.engines.iceberg_columns import (
    CURVE_COLUMNS, check_curve, curve_columns, curve_ordering, require_pyiceberg)
from zorder.engines.iceberg_commit import (
    IcebergRewriteError, check_checksums, check_counts, commit_rewrite, summary_properties,
    zorder_summary)
from zorder.engines.iceberg_deletes import dangling_deletes, delete_references
from zorder.engines.iceberg_plan import (
    DEFAULT_MAX_FILE_GROUP_SIZE, DEFAULT_TARGET_FILE_SIZE, entry_partition, plan_groups,
    row_filter_expression, target_size)
from zorder.engines.iceberg_read import learn_group_boundaries
from zorder.engines.iceberg_report import RewriteResult, referenced_files, skipping
from zorder.engines.iceberg_tasks import deleted_on_failure, written_journal
from zorder.engines.iceberg_write import run_on_dask, write_group
from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT
from zorder.parquet.safety import sigterm_as_exception
from zorder.parquet.sizes import parse_size
from zorder.values.ordering import Ordering

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

#: The name ``zorder.cli.iceberg`` imports it by (it checks before loading a catalog).
_require_pyiceberg = require_pyiceberg


def rewrite(table: Any, columns: Union[str, Sequence[str]], curve: str = "zorder",
            target_file_size: Union[None, int, str] = None, row_filter: Any = None,
            options: Optional[IcebergOptions] = None, scheduler: Any = None,
            dry_run: bool = False, *, case_sensitive: bool = False,
            max_file_group_size: Union[int, str] = DEFAULT_MAX_FILE_GROUP_SIZE,
            progress: Optional[Callable[[int, int, Dict[str, Any]], None]] = None,
            snapshot_properties: Optional[Mapping[str, str]] = None,
            encoding: str = "iceberg", rank_bits: Optional[int] = None,
            boundaries: Any = None, var_length_contribution: int = 8,
            max_output_size: Optional[int] = None, iceberg: str = ICEBERG_DEFAULT,
            spark: str = "4") -> RewriteResult:
    """Cluster an Iceberg table by the Z-order (or Hilbert) curve of ``columns``, as
    Spark's ``rewrite_data_files(strategy => 'sort', sort_order => 'zorder(...)')``
    does, in one REPLACE snapshot.

    Args:
        table: a ``pyiceberg.table.Table``; it is refreshed first, and again just before
            the commit, which leaves it at the new snapshot.
        columns: the columns, as names or one comma-separated string; resolved
            case-insensitively unless ``case_sensitive``. Identity-partition columns are
            dropped (Iceberg's error if none is left).
        curve: ``"zorder"`` or ``"hilbert"`` (in any case).
        target_file_size: bytes or a size such as ``"512MB"``; default the table's
            ``write.target-file-size-bytes``, else 512 MiB.
        row_filter: a PyIceberg expression or string: only data files that may hold
            matching rows are rewritten (whole), so only their partitions change.
        options: a ``zorder.IcebergOptions`` (contribution, cap, versions), or the
            keywords ``var_length_contribution``, ``max_output_size``, ``iceberg`` and
            ``spark`` (as for ``zorder.zorder_values``), not both; the timestamp kinds
            are the ones the Iceberg schema gives.
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
        ValueError, TypeError: bad arguments, refused columns or types, files that an
            equality delete file may apply to (PyIceberg cannot read those).
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
    require_pyiceberg()
    ordering = Ordering.of(options, check_curve(curve), encoding, rank_bits, boundaries,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark)
    if not isinstance(case_sensitive, bool):
        raise TypeError(f"case_sensitive must be a bool, not {type(case_sensitive).__name__}")
    max_group = parse_size(max_file_group_size, "max_file_group_size")
    row_filter = row_filter_expression(row_filter)
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run must be a bool, not {type(dry_run).__name__}")
    extra_summary = summary_properties(snapshot_properties)
    start = time.perf_counter()
    table.refresh()
    target = target_size(table, target_file_size)
    names = curve_columns(table, columns, curve=ordering.curve, case_sensitive=case_sensitive)
    ordering = curve_ordering(table.schema(), names, ordering)
    groups = plan_groups(table, row_filter, case_sensitive, max_group)
    report: Dict[str, Any] = {"columns": names, "curve": ordering.curve.name,
                              "encoding": ordering.encoding,
                              "target_file_size": target, "groups": []}
    removed = [t.file for g in groups for t in g.tasks]
    previous = table.current_snapshot()
    # The position delete files that reference only rewritten files go in the same commit.
    removed_deletes = dangling_deletes(delete_references(table.io, (t for g in groups
                                                                    for t in g.tasks)),
                                       (f.file_path for f in removed))
    report["removed_delete_files"] = [d.file_path for d in removed_deletes]
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
            report["groups"].append({"partition": entry_partition(table.metadata, g),
                                     "input_files": len(g.tasks),
                                     "input_bytes": g.input_bytes, "rows": g.rows})
        report["seconds"] = time.perf_counter() - start
        return result

    if ordering.encoding == "rank" and ordering.boundaries is None:
        ordering = learn_group_boundaries(table, groups, names, ordering, scheduler)
        record(ordering)
    metadata = table.metadata
    written: List[str] = []
    added: List[Any] = []
    # SIGTERM as an exception, so that the cleanup runs for `kill` as for Ctrl-C.
    with written_journal(scheduler is not None) as journal, sigterm_as_exception():
        with deleted_on_failure(table.io, written, journal):
            if scheduler is None:
                for i, group in enumerate(groups):
                    files, entry = write_group(metadata, table.io, group, names, ordering,
                                                target, written)
                    added.extend(files)
                    report["groups"].append(entry)
                    if progress is not None:
                        progress(i + 1, len(groups), entry)
            else:
                results = run_on_dask(scheduler, metadata, table.io, groups, names,
                                       ordering, target, written, journal)
                for i, r in enumerate(results):
                    added.extend(r["files"])
                    report["groups"].append(r["entry"])
                    if progress is not None:
                        progress(i + 1, len(groups), r["entry"])
            check_counts(removed, added, "the table",
                         sum(e.get("deleted_rows", 0) for e in report["groups"]))
            entries = report["groups"]
            check_checksums(sum(int(e["checksum"], 16) for e in entries) % 2**64,
                            sum(int(e["written_checksum"], 16) for e in entries) % 2**64,
                            "the table")
        props = zorder_summary(ordering.curve.name, names, ordering.rank_bits)
        props.update(extra_summary)
        snapshot_id = commit_rewrite(
            table, removed, added, props, written, metadata, removed_deletes=removed_deletes,
            data_sequence_number=(previous.sequence_number
                                  if previous is not None and metadata.format_version >= 2
                                  else None))
    # (the commit left `table` at the new snapshot: PyIceberg takes the catalog's answer)
    result.snapshot_id = snapshot_id
    result.added_files = len(added)
    result.added_paths = [f.file_path for f in added]
    report["seconds"] = time.perf_counter() - start
    return result
