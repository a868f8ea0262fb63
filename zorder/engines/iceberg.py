"""Z-order (or Hilbert) clustering of an Iceberg table through PyIceberg: the rewrite
that Spark runs as ``CALL system.rewrite_data_files(strategy => 'sort',
sort_order => 'zorder(a, b)')``, committed as one REPLACE snapshot (one per batch
with ``partial_progress``).

What it does, as Iceberg's ``RewriteDataFilesSparkAction`` with
``SparkZOrderFileRewriteRunner`` does it:

- plans the data files at the head of ``branch`` (only those ``row_filter`` may match,
  each rewritten whole) and groups them by partition, one group per partition, split
  when a group passes ``max_file_group_size`` (100 GiB by default, as in Iceberg);
- keeps only the groups that need it (``iceberg_select``): a file not clustered by this
  curve, these columns and options, Iceberg's size and delete criteria
  (``min_file_size``...), or, on request, curve ranges that overlap; a clustered table
  commits nothing;
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
the table's manifests let a reader skip, before and after. A group larger than
``memory_limit`` is rewritten out of core (``zorder.engines.iceberg_external``): the same
rows in the same order, its ranges separate tasks on a Dask scheduler.

Concurrent writers, as Iceberg's ``RewriteFiles`` validates them: the commit is checked
against the snapshot the rewrite planned from; commits since that only append files, or
change other files, stay under it (PyIceberg's commit retries it, within the table's
``commit.retry.*`` properties); one that removed a rewritten file or added a delete file
applying to one, or a partition spec or schema change the new files do not match, refuses
it, naming the snapshot. On any failure the files written for the rewrite are deleted,
and any that could not be are named in the error. Format-v3 tables are refused (PyIceberg
0.12 cannot commit them). ``partial_progress`` commits the file groups in batches
(Iceberg's ``partial-progress``); ``branch`` rewrites and commits to a branch, never
moving another ref. Every file is journaled with the
table's data before it is written (``zorder.engines.iceberg_journal``), in one journal
run for the whole rewrite whose entries each landed commit clears, so what a SIGKILL
leaves is deleted by the next run or by ``clean``.

Merge-on-read tables: each group is read with its position deletes (and deletion
vectors) applied, so deleted rows never come back; the commit removes the delete files
that referenced only rewritten files (Spark's ``remove-dangling-deletes``; with partial
progress, the batch that rewrites the last of them), and the new files keep the planned
snapshot's data sequence number (``use-starting-sequence-number``), so an equality delete
committed meanwhile still applies to them and is no conflict. PyIceberg reads no
equality deletes: files they may apply to are refused before any is read
(``zorder.engines.iceberg_deletes``).

PyIceberg has no public REPLACE commit (``_RewriteFiles`` is under review, PR 3131): the
commit here builds on its ``_OverwriteFiles`` snapshot producer (``_ReplaceFiles``).
Needs ``pyiceberg`` (``pip install 'zorder[iceberg]'``), imported when a function runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from zorder.engines.iceberg_columns import (
    CURVE_COLUMNS, check_curve, check_format_version, curve_columns, curve_ordering,
    require_pyiceberg)
from zorder.engines.iceberg_commit import (
    CommitCall, IcebergRewriteError, branch_head, check_checksums, check_counts, commit_rewrite,
    delete_files, interrupts_deferred, summary_properties, zorder_summary)
from zorder.engines.iceberg_deletes import dangling_deletes, delete_key, delete_references
from zorder.engines.iceberg_plan import (
    DEFAULT_MAX_FILE_GROUP_SIZE, DEFAULT_TARGET_FILE_SIZE, check_row_filter, entry_partition,
    plan_groups, row_filter_expression, target_size)
from zorder.engines.iceberg_read import GroupRead, learn_group_boundaries, read_first
from zorder.engines.iceberg_report import RewriteResult, referenced_files, skipping
from zorder.engines.iceberg_select import (
    CLUSTERING_KEY, Selection, check_summary_keys, clustering_record, clustering_text,
    describe, identity_columns, select_groups)
from zorder.engines.iceberg_journal import CleanResult, RunJournal, clean
from zorder.engines.iceberg_manifests import ManifestEntries
from zorder.engines.iceberg_tasks import (
    WrittenPaths, deleted_on_failure, read_failure, run_journal, written_journal)
from zorder.engines.iceberg_external import (
    OutOfCore, plan_out_of_core, run_group_on_dask, write_group_out_of_core)
from zorder.engines.iceberg_write import run_on_dask, write_group
from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT
from zorder.parquet.memory import memory_limit_of
from zorder.parquet.safety import interrupts_as_exceptions, raise_if_interrupted
from zorder.parquet.sizes import parse_size
from zorder.values.ordering import Ordering
from zorder.values.stages import COMMIT, READ, stage

__all__ = [
    "CURVE_COLUMNS",
    "CleanResult",
    "DEFAULT_MAX_COMMITS",
    "DEFAULT_MAX_FILE_GROUP_SIZE",
    "DEFAULT_TARGET_FILE_SIZE",
    "IcebergRewriteError",
    "RewriteResult",
    "check_checksums",
    "check_counts",
    "clean",
    "curve_columns",
    "referenced_files",
    "rewrite",
    "skipping",
]

#: Iceberg's ``partial-progress.max-commits`` default (``RewriteDataFiles``).
DEFAULT_MAX_COMMITS = 10

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
            spark: str = "4", branch: str = "main", partial_progress: bool = False,
            max_commits: int = DEFAULT_MAX_COMMITS, min_file_size: Union[None, int, str] = None,
            max_file_size: Union[None, int, str] = None, min_input_files: int = 5,
            rewrite_all: bool = False, delete_file_threshold: Optional[int] = None,
            max_files_to_rewrite: Optional[int] = None,
            min_overlap_depth: Optional[int] = None,
            memory_limit: Union[None, int, str] = None,
            temp_dir: Optional[str] = None) -> RewriteResult:
    """Cluster an Iceberg table by the Z-order (or Hilbert) curve of ``columns``, as
    Spark's ``rewrite_data_files(strategy => 'sort', sort_order => 'zorder(...)')``
    does, in one REPLACE snapshot (one per batch with ``partial_progress``).

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
            largest group, up to ``memory_limit``, bounds memory), or a Dask scheduler: a
            ``distributed.Client``, its address, ``"threads"``, ``"processes"``, ``"sync"``
            or ``"local:N"`` (a LocalCluster of N worker processes sharing ``memory_limit``,
            started for this rewrite and stopped after it); each file group is then one task (read, sort, write), or, past
            ``memory_limit``, a task per input file and per range, and the commit
            happens once, here.
        dry_run: plan and report the groups, write and commit nothing.
        case_sensitive: resolve column names exactly (Spark's default is insensitive).
        max_file_group_size: the most input bytes in one group (Iceberg's
            ``max-file-group-size-bytes``, 100 GiB).
        progress: called as ``progress(done_groups, total_groups, group_entry)`` as each
            group is written; during a group written out of core also with an entry
            ``{"partition", "stage", "done", "total", "unit"}`` (``stage``: sampling,
            spilling, sorting, writing), ``done_groups`` not yet counting it.
        branch: the branch whose head is rewritten and committed to (Spark's
            ``branch``); no other ref moves.
        partial_progress: commit the file groups in up to ``max_commits`` batches as they
            are written (Iceberg's ``partial-progress.enabled``): a failed group, or a
            batch whose commit is refused, is listed in ``report["failed_groups"]`` with
            its error while the other batches commit; ``report["commits"]`` lists each
            commit. An interrupt lets the batch being committed finish, then stops.
        max_commits: the most commits with ``partial_progress`` (Iceberg's
            ``partial-progress.max-commits``, 10).
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
        min_file_size, max_file_size, min_input_files, rewrite_all, delete_file_threshold,
            max_files_to_rewrite: which file groups are rewritten, as Iceberg's
            ``rewrite_data_files`` options of those names choose them (defaults 75% and
            180% of the target, 5, False, off, no cap); beyond them, a group holding a
            file not clustered by this run's curve, columns and options is always
            rewritten (whole), and a group whose files all are is not, so a run on a
            clustered table commits nothing (``report["selection"]`` says why, per group).
        min_overlap_depth: also rewrite a group whose files' curve ranges overlap at
            least this deep (Iceberg PR 17504's ``min-overlap-depth``; off by default).
        memory_limit: bytes one file group may hold (``2GB``, ``512MiB`` or an int;
            default ``zorder.parquet.memory.DEFAULT_FRACTION`` of the available memory;
            on a Dask cluster, each task's: on a distributed one, at most what its
            workers' own memory limits leave a task, and that by default). A group whose Arrow size (from its files'
            footers) times ``IN_MEMORY_PEAK`` is over it is rewritten out of core
            (``zorder.engines.iceberg_external``): its rows streamed through range spill
            runs, its files cut as the sorted rows come; with ``scheduler``, its ranges
            are separate tasks. Other groups are written in memory as before.
        temp_dir: an existing folder for the out-of-core spill runs (default the
            system's temporary folder); on a Dask cluster of several machines, one every
            worker can read and write.

    Returns:
        a ``RewriteResult``.

    Raises:
        ValueError, TypeError: bad arguments, refused columns or types, files that an
            equality delete file may apply to (PyIceberg cannot read those), a format-v3
            table (before any manifest or data file is read).
        IcebergRewriteError: the rewrite wrote files but did not commit (the files were
            deleted; any that could not be are listed): a conflicting commit (the
            message names its snapshot), or the catalog's refusals outlasting the
            retries (``CommitFailedException`` as its cause); a data file that is missing
            or cannot be read (truncated) is this error too. A catalog failure that
            leaves the commit's outcome unknown (the catalog may still apply it) comes as
            this error with ``outcome_unknown`` set and nothing deleted; so does an
            interrupt during the catalog call ("the commit may have landed"), as its
            cause. With ``partial_progress``, an interrupt or failure after some batches
            committed comes as this error, ``committed`` listing them.
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
    limit = memory_limit_of(memory_limit)
    if temp_dir is not None and not os.path.isdir(temp_dir):
        raise FileNotFoundError(f"temp_dir={temp_dir!r} (--temp-dir) is not an existing folder")
    row_filter = row_filter_expression(row_filter)
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run must be a bool, not {type(dry_run).__name__}")
    extra_summary = summary_properties(snapshot_properties)
    if not isinstance(partial_progress, bool):
        raise TypeError(f"partial_progress must be a bool, not {type(partial_progress).__name__}")
    if isinstance(max_commits, bool) or not isinstance(max_commits, int) or max_commits < 1:
        raise ValueError(f"max_commits must be a whole number of at least 1, not {max_commits!r}")
    check_summary_keys(extra_summary)
    selection = Selection.of(min_file_size=min_file_size, max_file_size=max_file_size,
                             min_input_files=min_input_files, rewrite_all=rewrite_all,
                             delete_file_threshold=delete_file_threshold,
                             max_files_to_rewrite=max_files_to_rewrite,
                             min_overlap_depth=min_overlap_depth)
    start = time.perf_counter()
    table.refresh()
    check_format_version(table.metadata)
    previous = branch_head(table, branch)
    target = target_size(table, target_file_size)
    check_row_filter(table.schema(), row_filter, case_sensitive)
    names = curve_columns(table, columns, curve=ordering.curve, case_sensitive=case_sensitive)
    dropped = identity_columns(table, columns, case_sensitive)
    ordering = curve_ordering(table.schema(), names, ordering)
    clustering = clustering_record(ordering, names)
    # (each manifest read once, for the plan, the selection and the commit)
    entries = ManifestEntries(table.io)
    groups, decisions = select_groups(
        table, plan_groups(table, row_filter, case_sensitive, max_group, branch, entries),
        clustering, selection, target, previous, entries)
    report: Dict[str, Any] = {"columns": names, "curve": ordering.curve.name,
                              "encoding": ordering.encoding,
                              "target_file_size": target, "groups": [],
                              "clustering": describe(clustering), "selection": decisions,
                              "dropped_columns": dropped}
    removed = [t.file for g in groups for t in g.tasks]
    # The position delete files that reference only rewritten files go in the commit
    # that rewrites the last of them.
    references = delete_references(table.io, (t for g in groups for t in g.tasks))
    report["removed_delete_files"] = [d.file_path for d in dangling_deletes(
        references, (f.file_path for f in removed))]
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

    # The metadata planned from: the commit is validated against it (``clean`` below
    # refreshes the table, which may then be past the plan).
    metadata = table.metadata
    # What earlier runs journaled and left (a SIGKILL, a lost client): deleted first.
    try:
        report["journal_cleaned"] = clean(table).deleted
    except Exception as exc:  # noqa: BLE001 - the rewrite does not depend on it
        report["journal_cleaned"] = f"not cleaned: {type(exc).__name__}: {exc}"
    # local:N: one LocalCluster for the whole rewrite (each batch and out-of-core group
    # would otherwise start its own), sharing the memory limit, always stopped.
    with contextlib.ExitStack() as local:
        if isinstance(scheduler, str) and scheduler.startswith("local:"):
            from zorder.engines.dask_scheduler import running_on

            workers = int(scheduler.split(":", 1)[1])
            scheduler = local.enter_context(running_on(scheduler, 10.0, memory_limit=limit,
                                                       local_directory=temp_dir))
            # each worker holds its share of the limit, and so each of its tasks
            limit = max(1, limit // workers)
        elif scheduler is not None and scheduler not in _LOCAL_SCHEDULERS:
            limit = _task_limit(scheduler, limit, memory_limit is not None)
        # Which groups go out of core, the limit checked before anything is written.
        plans = plan_out_of_core(metadata, table.io, groups, target, limit, temp_dir)
        first: Optional[GroupRead] = None   # a sole group's read: sampled, then written
        if ordering.encoding == "rank" and ordering.boundaries is None:
            with read_failure("the rank sampling"):
                if len(groups) == 1 and scheduler is None and plans[0] is None:
                    with stage(READ):
                        first = read_first(metadata, table.io, groups[0], names)
                ordering = learn_group_boundaries(table, groups, names, ordering, scheduler,
                                                  [p is not None for p in plans], first)
            record(ordering)
            clustering = clustering_record(ordering, names)
            for g in groups:
                g.clustering = clustering_text(clustering)
        # (every batch's summary records the clustering, as its files do)
        extra_summary = {**extra_summary, CLUSTERING_KEY: clustering_text(clustering)}
        committer = _Committer(table, metadata, names, ordering, extra_summary, branch,
                               partial_progress, result)
        committer.delete_references = references
        committer.entries = entries
        committer.out_of_core = {id(g): p for g, p in zip(groups, plans) if p is not None}
        if first is not None:
            committer.first_reads[id(groups[0])] = first
            del first   # (the committer's is the last reference: freed as the write goes)
        try:
            # One journal run for every batch (kept with the table's data, for a SIGKILL):
            # each file is journaled before it is written, each landed commit clears its own.
            with run_journal(table.io, metadata.location, committer.journaled) as run:
                committer.journal = run
                for batch in _batches(groups, max_commits if partial_progress else 1):
                    committer.run(batch, target, scheduler, progress, len(groups))
        except BaseException as exc:
            committer.stopped(exc)
        committer.finish()
        report["seconds"] = time.perf_counter() - start
        return result


#: Dask's schedulers of this process (their tasks share this machine's ``memory_limit``).
_LOCAL_SCHEDULERS = ("threads", "processes", "sync", "synchronous")


def _task_limit(scheduler: Any, limit: int, given: bool) -> int:
    """The bytes one task may hold on a distributed cluster: what its workers' own limits
    leave each task (``dask_scheduler.worker_memory``), not this machine's memory; a
    ``memory_limit`` given is kept where it is smaller; ``limit`` where no worker states
    a limit."""
    from zorder.engines.dask import require_dask
    from zorder.engines.dask_scheduler import running_on, worker_memory

    require_dask("rewrite(scheduler=...)")
    with running_on(scheduler, 10.0) as client:
        found = worker_memory(client) if client is not None else None
    if found is None:
        return limit
    return min(limit, found[0]) if given else found[0]


def _batches(groups: List[Any], max_commits: int) -> List[List[Any]]:
    """The file groups in at most ``max_commits`` batches of consecutive groups, as
    Iceberg's partial progress cuts them (``ceil(groups / max_commits)`` per commit)."""
    size = max(1, -(-len(groups) // max_commits))
    return [groups[i:i + size] for i in range(0, len(groups), size)]


class _Committer:
    """The write and commit phases of one rewrite: each batch of file groups written
    (here, or as Dask tasks), checked and committed as one REPLACE snapshot. Without
    partial progress there is one batch, and any failure fails it all; with it, a failed
    group, or a batch whose commit is refused, is reported and the others go on."""

    #: Every position delete file of the planned tasks with the data files it references
    #: (``iceberg_deletes.delete_references``); each commit removes those left dangling.
    delete_references: Sequence[Any] = ()
    #: The manifests the plan read (``iceberg_manifests``), not read again to commit.
    entries: Optional[ManifestEntries] = None
    #: The out-of-core plan of each group too large for the memory limit, by ``id``.
    out_of_core: Dict[int, OutOfCore] = {}

    def __init__(self, table: Any, metadata: Any, names: List[str], ordering: Ordering,
                 extra_summary: Dict[str, str], branch: str, partial: bool,
                 result: RewriteResult) -> None:
        self.table, self.metadata, self.names, self.ordering = table, metadata, names, ordering
        self.extra_summary, self.branch, self.partial = extra_summary, branch, partial
        self.result, self.report = result, result.report
        self.commits: List[Dict[str, Any]] = []
        self.failed: List[Dict[str, Any]] = []
        self.done = self.batches = 0
        self.call = CommitCall()
        self.removed: List[Any] = []
        self.added: List[Any] = []
        self.journal: Optional[RunJournal] = None   # the run's, kept with the table's data
        self.journaled: List[str] = []   # every path this process journaled, all batches
        # A group's ``read_first`` made before its write (by the rank sampling), by ``id``;
        # handed over, never kept.
        self.first_reads: Dict[int, GroupRead] = {}
        if partial:
            self.report["commits"], self.report["failed_groups"] = self.commits, self.failed

    def _failed_group(self, group: Any, error: str, batch: int) -> None:
        self.failed.append({"partition": entry_partition(self.metadata, group),
                            "batch": batch, "error": error})

    def _delete_files(self, removed: List[Any]) -> Dict[str, Any]:
        """``commit_rewrite``'s keywords for a batch that rewrites ``removed``: the delete
        files whose every referenced data file is rewritten by the batches committed so
        far and this one, less those the earlier batches removed; and, for every batch,
        the planned snapshot's data sequence number (Spark's
        use-starting-sequence-number; v1 tables have none)."""
        landed = [f.file_path for f in self.removed]
        before = {delete_key(d) for d in dangling_deletes(self.delete_references, landed)}
        now = dangling_deletes(self.delete_references,
                               landed + [f.file_path for f in removed])
        planned = self.metadata.snapshot_by_name(self.branch)
        return {"removed_deletes": [d for d in now if delete_key(d) not in before],
                "data_sequence_number": (planned.sequence_number if planned is not None
                                         and self.metadata.format_version >= 2 else None)}

    def run(self, batch: List[Any], target: int, scheduler: Any,
            progress: Optional[Callable[[int, int, Dict[str, Any]], None]], total: int) -> None:
        self.batches += 1
        number = self.batches
        table, metadata, run = self.table, self.metadata, self.journal
        assert run is not None, "the journal run starts before the first batch"
        written = WrittenPaths(None, run.writer)   # (each path journaled before its file)
        added: List[Any] = []
        kept: List[Any] = []
        entries: List[Dict[str, Any]] = []
        self.call = call = CommitCall()

        def stages(group: Any) -> Optional[Callable[[str, int, int, str], None]]:
            if progress is None:
                return None
            part = entry_partition(metadata, group)

            def report(stage: str, done: int, of: int, unit: str) -> None:
                assert progress is not None
                progress(self.done, total, {"partition": part, "stage": stage, "done": done,
                                            "total": of, "unit": unit})
            return report

        def finished(group: Any, files: List[Any], entry: Dict[str, Any]) -> None:
            added.extend(files)
            kept.append(group)
            entries.append(entry)
            self.report["groups"].append(entry)
            self.done += 1
            if progress is not None:
                progress(self.done, total, entry)

        # SIGTERM as an exception, so that the cleanup runs for `kill` as for Ctrl-C.
        with written_journal(scheduler is not None) as journal, interrupts_as_exceptions():
            try:
                with deleted_on_failure(table.io, written, journal, call=call, run=run):
                    if scheduler is None:
                        for group in batch:
                            mark = len(written)
                            plan = self.out_of_core.get(id(group))
                            try:
                                if plan is not None:
                                    files, entry = write_group_out_of_core(
                                        metadata, table.io, group, self.names, self.ordering,
                                        plan, written, stages(group))
                                else:
                                    files, entry = write_group(
                                        metadata, table.io, group, self.names, self.ordering,
                                        target, written, self.first_reads.pop(id(group), None))
                            except Exception as exc:  # noqa: BLE001 - reported per group
                                if not self.partial:
                                    raise
                                left = delete_files(table.io, written[mark:])
                                del written[mark:]
                                self._failed_group(group, f"{type(exc).__name__}: {exc}"
                                                   + (f" (files left: {', '.join(left)})"
                                                      if left else ""), number)
                                continue
                            finished(group, files, entry)
                    else:
                        results = self._on_dask(scheduler, batch, target, written, journal,
                                                stages)
                        for group, r in zip(batch, results):
                            if "error" in r:
                                left = r.get("leftovers") or []
                                self._failed_group(group, r["error"]
                                                   + (f" (files left: {', '.join(left)})"
                                                      if left else ""), number)
                            else:
                                finished(group, r["files"], r["entry"])
                    if not kept:
                        return
                    removed = [t.file for g in kept for t in g.tasks]
                    check_counts(removed, added, "the table",
                                 sum(e.get("deleted_rows", 0) for e in entries))
                    check_checksums(sum(int(e["checksum"], 16) for e in entries) % 2**64,
                                    sum(int(e["written_checksum"], 16) for e in entries) % 2**64,
                                    "the table")
                    # (a lapsed heartbeat: a cleaner may have taken the files by now)
                    run.check_lease()
                    props = zorder_summary(self.ordering.curve.name, self.names,
                                           self.ordering.rank_bits)
                    props.update(self.extra_summary)
                    # With partial progress, an interrupt waits for the batch being
                    # committed: it lands (or not) and is recorded, then the job stops.
                    raise_if_interrupted()
                    with interrupts_deferred(self.partial), stage(COMMIT):
                        snapshot_id = commit_rewrite(table, removed, added, props, written,
                                                     metadata, self.branch, call,
                                                     entries=self.entries,
                                                     **self._delete_files(removed))
                        self._landed(number, snapshot_id, kept, removed, added, call)
            except IcebergRewriteError as exc:
                if not self.partial or exc.outcome_unknown:
                    raise
                # (its files were deleted, or are named in the error)
                for group in kept:
                    self._failed_group(group, f"the commit of batch {number} failed: {exc}",
                                       number)
            finally:
                self.journaled.extend(written)

    def _on_dask(self, scheduler: Any, batch: List[Any], target: int, written: List[str],
                 journal: Optional[str], stages: Callable[[Any], Any]) -> List[Dict[str, Any]]:
        """Each group of ``batch`` written on ``scheduler``: those in memory as one task
        each, those out of core with their ranges as tasks, one group after the other;
        the results in group order (a failed group fails them all without partial
        progress, its files deleted)."""
        assert self.journal is not None
        table = self.table
        small = [g for g in batch if id(g) not in self.out_of_core]
        found: Dict[int, Dict[str, Any]] = {}
        if small:
            for g, r in zip(small, run_on_dask(scheduler, self.metadata, table.io, small,
                                               self.names, self.ordering, target, written,
                                               journal, table_journal=self.journal.writer,
                                               keep_failures=self.partial)):
                found[id(g)] = r
        for g in batch:
            plan = self.out_of_core.get(id(g))
            if plan is None:
                continue
            try:
                r = run_group_on_dask(scheduler, self.metadata, table.io, g, self.names,
                                      self.ordering, plan, written, journal,
                                      self.journal.writer, stages(g))
            except IcebergRewriteError as exc:
                if not self.partial:
                    raise
                r = {"error": f"{type(exc).__name__}: {exc}", "leftovers": exc.leftovers}
            if "error" in r and not self.partial:
                raise IcebergRewriteError(f"{entry_partition(self.metadata, g) or 'the table'}: "
                                          f"{r['error']}; nothing was committed",
                                          r.get("leftovers") or [])
            found[id(g)] = r
        return [found[id(g)] for g in batch]

    def _landed(self, number: int, snapshot_id: int, groups: List[Any], removed: List[Any],
                added: List[Any], call: CommitCall) -> None:
        self.removed.extend(removed)
        self.added.extend(added)
        # (referenced by the snapshot now: their journal entries go, before anything else)
        if self.journal is not None:
            self.journal.forget([f.file_path for f in added])
        self.commits.append({"batch": number, "snapshot_id": snapshot_id,
                             "groups": len(groups), "rewritten_files": len(removed),
                             "added_files": len(added), "retries": call.retries})
        self.result.snapshot_id = snapshot_id
        self.report["commit_retries"] = sum(c["retries"] for c in self.commits)

    def stopped(self, exc: BaseException) -> None:
        """Raise what ends the job for ``exc``, saying what was committed before it."""
        from zorder.parquet.safety import Terminated

        call, landed = self.call, self._landed_text()
        if isinstance(exc, IcebergRewriteError):
            if not self.commits:
                raise exc
            error = IcebergRewriteError(f"{exc}; before it, {landed}",
                                        outcome_unknown=exc.outcome_unknown,
                                        committed=self.commits)
            error.leftovers = exc.leftovers
            raise error from exc.__cause__
        if isinstance(exc, Exception):
            if not self.commits:
                raise exc
            raise IcebergRewriteError(f"the rewrite failed: {exc}; before it, {landed}",
                                      committed=self.commits) from exc
        if not self.commits and not call.started:
            raise exc   # nothing was committed, every file written was deleted
        stopped = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        if call.started and not call.landed:   # (converted by the commit: not reached)
            raise IcebergRewriteError(f"{stopped} during the catalog call: the commit may "
                                      f"have landed", outcome_unknown=True,
                                      committed=self.commits) from exc
        rest = ("" if not self.partial else
                "; the other file groups were not committed, and the files written for "
                "them were deleted")
        raise IcebergRewriteError(f"{stopped} after {landed}{rest}",
                                  committed=self.commits) from exc

    def _landed_text(self) -> str:
        if not self.commits:
            return "nothing was committed"
        if not self.partial:
            return f"snapshot {self.commits[0]['snapshot_id']} was committed"
        return (f"{len(self.commits)} batch(es) were committed: "
                + ", ".join(f"batch {c['batch']} as snapshot {c['snapshot_id']}"
                            for c in self.commits))

    def finish(self) -> None:
        """Fill in the result; with partial progress, fail if nothing could be committed."""
        result = self.result
        if self.partial and self.failed and not self.commits:
            first = self.failed[0]
            raise IcebergRewriteError(
                f"every file group failed and nothing was committed; the first, partition "
                f"{first['partition'] or '(unpartitioned)'}: {first['error']}")
        if self.partial:
            result.rewritten_files = len(self.removed)
            result.rewritten_bytes = sum(f.file_size_in_bytes for f in self.removed)
            result.removed_paths = [f.file_path for f in self.removed]
            # (what the committed batches removed between them)
            self.report["removed_delete_files"] = [d.file_path for d in dangling_deletes(
                self.delete_references, result.removed_paths)]
        # (each commit left `table` at its snapshot: PyIceberg takes the catalog's answer)
        result.added_files = len(self.added)
        result.added_paths = [f.file_path for f in self.added]
