"""Which file groups an Iceberg rewrite rewrites (incremental by default), and the record
that makes it possible: how a file was clustered.

A rewrite records its clustering (curve, columns, encoding, Iceberg options, rank bits and
a fingerprint of the rank boundaries) under ``zorder.clustering`` in its snapshot's summary
and in each written Parquet file's key-value metadata, with the file's range of curve
values (``zorder.curve-range``). A later run asks, per file group:

- ``rewrite_all``: every group;
- files not clustered by this run's clustering (appended since, or clustered otherwise):
  the group is re-clustered whole, since a curve sort of part of a partition leaves its
  files overlapping the rest;
- Iceberg's size criteria (``SizeBasedFileRewritePlanner`` and
  ``BinPackRewriteFilePlanner`` in apache/iceberg's core ``actions`` package, with their
  option names and defaults): the files outside [``min_file_size``, ``max_file_size``]
  (75% and 180% of the target) or with at least ``delete_file_threshold`` delete files,
  when there are enough of them (``min_input_files``), they add up to more than the target
  or one file, or one of them has too many deletes;
- the overlap criterion of Iceberg PR 17504 (``min-overlap-depth``): the most files whose
  curve ranges cover one curve value, at least ``min_overlap_depth``.

``max_files_to_rewrite`` then caps the files rewritten, the last group cut to fit, as
Iceberg's planner cuts it. Which file a snapshot added comes from the manifests; a file
whose snapshot was expired is asked its own footer.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from zorder.engines.iceberg_manifests import ManifestEntries
from zorder.engines.iceberg_plan import FileGroup, entry_partition
from zorder.values.ordering import Ordering

#: The snapshot summary and Parquet key-value key of a rewrite's clustering.
CLUSTERING_KEY = "zorder.clustering"
#: The Parquet key-value key of a written file's curve values, ``min-hex:max-hex``.
RANGE_KEY = "zorder.curve-range"

# Iceberg's defaults (SizeBasedFileRewritePlanner, BinPackRewriteFilePlanner).
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.80
MIN_INPUT_FILES = 5
DELETE_FILE_THRESHOLD = 2**31 - 1     # Integer.MAX_VALUE: off


@dataclass(frozen=True)
class Selection:
    """The selection options, as Iceberg names them (``min-file-size-bytes``...)."""

    min_file_size: Optional[int] = None      # None: 75% of the target
    max_file_size: Optional[int] = None      # None: 180% of the target
    min_input_files: int = MIN_INPUT_FILES
    rewrite_all: bool = False
    delete_file_threshold: int = DELETE_FILE_THRESHOLD
    max_files_to_rewrite: Optional[int] = None
    min_overlap_depth: Optional[int] = None   # None: off, as in PR 17504

    @classmethod
    def of(cls, *, min_file_size: Any = None, max_file_size: Any = None,
           min_input_files: Any = MIN_INPUT_FILES, rewrite_all: Any = False,
           delete_file_threshold: Any = None, max_files_to_rewrite: Any = None,
           min_overlap_depth: Any = None) -> "Selection":
        """The options checked (sizes as bytes or ``"384MB"``), each error naming its
        keyword and flag."""
        from zorder.parquet.sizes import parse_size

        def whole(value: Any, name: str, least: int) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name}={value!r} (--{name.replace('_', '-')}) must be a "
                                 f"whole number >= {least}")
            return value

        if not isinstance(rewrite_all, bool):
            raise TypeError(f"rewrite_all must be a bool, not {type(rewrite_all).__name__}")
        return cls(
            None if min_file_size is None else parse_size(min_file_size, "min_file_size"),
            None if max_file_size is None else parse_size(max_file_size, "max_file_size"),
            whole(min_input_files, "min_input_files", 1), rewrite_all,
            DELETE_FILE_THRESHOLD if delete_file_threshold is None
            else whole(delete_file_threshold, "delete_file_threshold", 0),
            None if max_files_to_rewrite is None
            else whole(max_files_to_rewrite, "max_files_to_rewrite", 1),
            None if min_overlap_depth is None
            else whole(min_overlap_depth, "min_overlap_depth", 2))

    def sizes(self, target: int) -> Tuple[int, int]:
        """(min, max) file sizes for ``target``, refused as Iceberg refuses them."""
        low = int(target * MIN_FILE_SIZE_RATIO) if self.min_file_size is None else self.min_file_size
        high = int(target * MAX_FILE_SIZE_RATIO) if self.max_file_size is None else self.max_file_size
        if not low < target:
            raise ValueError(f"min_file_size={low} (--min-file-size) must be below the target "
                             f"file size ({target}): every new file would be too small")
        if not target < high:
            raise ValueError(f"max_file_size={high} (--max-file-size) must be above the target "
                             f"file size ({target}): every new file would be too large")
        return low, high


# ---------------------------------------------------------------------------------------
# The record of a clustering.

def clustering_record(ordering: Ordering, names: Sequence[str]) -> Dict[str, Any]:
    """What defines a clustering: the curve, its columns, encoding and Iceberg options,
    and for the rank encoding its bits and a fingerprint of its boundaries."""
    record = {k: v for k, v in ordering.as_dict().items() if k != "rank_boundaries"}
    record["columns"] = list(names)
    if ordering.encoding == "rank":
        boundaries = ordering.boundaries
        record["boundaries"] = None if boundaries is None else hashlib.sha256(
            json.dumps(boundaries.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
    return record


def clustering_text(record: Dict[str, Any]) -> str:
    """The record as the summary and the files keep it: canonical JSON."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=64)
def _parsed(recorded: str) -> Optional[Dict[str, Any]]:
    """A recorded clustering read (once per distinct text: every file of a run has one)."""
    try:
        have = json.loads(recorded)
    except ValueError:
        return None
    return have if isinstance(have, dict) else None


def same_clustering(recorded: Optional[str], wanted: Dict[str, Any]) -> bool:
    """Whether a recorded clustering is ``wanted``. Rank boundaries still to be learned
    (``wanted["boundaries"]`` None) match any: each run learns its own."""
    have = _parsed(recorded) if recorded else None
    if have is None:
        return False
    if wanted.get("encoding") == "rank" and wanted.get("boundaries") is None:
        have = {k: v for k, v in have.items() if k != "boundaries"}
        wanted = {k: v for k, v in wanted.items() if k != "boundaries"}
    return bool(have == wanted)


def describe(record: Dict[str, Any]) -> str:
    """A clustering as one phrase: ``zorder(l, d)``, ``hilbert(l, d) rank 16 bits``."""
    text = f"{record['curve']}({', '.join(record['columns'])})"
    if record.get("encoding") == "rank":
        text += f" rank {record.get('rank_bits')} bits"
    return text


def check_summary_keys(properties: Dict[str, str]) -> None:
    """Refuse a caller's summary entry under a key zorder writes."""
    if CLUSTERING_KEY in properties:
        raise ValueError(f"snapshot_properties: {CLUSTERING_KEY!r} is a summary key zorder "
                         f"computes; use another name")


def identity_columns(table: Any, columns: Any, case_sensitive: bool) -> List[str]:
    """The identity-partition columns among ``columns`` (resolved as ``curve_columns``
    resolves them), which the rewrite drops: constant in each partition."""
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    schema = table.schema()
    identity = {f.source_id for f in table.spec().fields
                if type(f.transform).__name__ == "IdentityTransform"}
    out: List[str] = []
    for name in columns:
        field = schema.find_field(name, case_sensitive=case_sensitive)
        resolved = schema.find_column_name(field.field_id)
        if field.field_id in identity and resolved not in out:
            out.append(resolved)
    return out


def file_metadata(clustering: str, low: bytes, high: bytes) -> Dict[str, str]:
    """A written file's key-value metadata: its clustering and range of curve values."""
    return {CLUSTERING_KEY: clustering, RANGE_KEY: f"{low.hex()}:{high.hex()}"}


# ---------------------------------------------------------------------------------------
# What the table says of its files.

def _footer(io: Any, path: str) -> Dict[str, str]:
    """A data file's zorder key-value metadata ({} if none or unreadable)."""
    import pyarrow.parquet as pq

    try:
        with io.new_input(path).open() as f:
            kv = pq.read_metadata(f).metadata or {}
    except Exception:  # noqa: BLE001 - a file we cannot ask is one not known clustered
        return {}
    return {k.decode(): v.decode() for k, v in kv.items()
            if k in (CLUSTERING_KEY.encode(), RANGE_KEY.encode())}


def _footers(io: Any, paths: Sequence[str]) -> Dict[str, Dict[str, str]]:
    from concurrent.futures import ThreadPoolExecutor

    if not paths:
        return {}
    with ThreadPoolExecutor(8) as pool:
        return dict(zip(paths, pool.map(lambda p: _footer(io, p), paths)))


def recorded_clusterings(table: Any, groups: Sequence[FileGroup], snapshot: Any,
                         entries: Optional[ManifestEntries] = None) -> Dict[str, Optional[str]]:
    """Each planned data file's recorded clustering (None: none): the summary of the
    snapshot that added it, read from ``snapshot``'s manifests (only those that may hold
    files of a zorder snapshot; through ``entries``, the plan's reads), or the file's own
    footer when that snapshot has expired."""
    from pyiceberg.manifest import ManifestContent

    wanted = {t.file.file_path for g in groups for t in g.tasks}
    out: Dict[str, Optional[str]] = dict.fromkeys(wanted)
    if snapshot is None or not wanted:
        return out
    summaries = {s.snapshot_id: (s.summary.additional_properties if s.summary else {})
                 for s in table.snapshots()}
    zorder_snapshots = {i for i, p in summaries.items() if CLUSTERING_KEY in p}
    entries = entries or ManifestEntries(table.io)
    expired: List[str] = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        # A manifest of one ordinary commit's added files holds no clustered file.
        known = manifest.added_snapshot_id in summaries
        if known and manifest.added_snapshot_id not in zorder_snapshots \
                and manifest.existing_files_count == 0:
            continue
        for entry in entries.live(manifest):
            path = entry.data_file.file_path
            if path not in wanted:
                continue
            if entry.snapshot_id in summaries:
                out[path] = summaries[entry.snapshot_id].get(CLUSTERING_KEY)
            else:
                expired.append(path)
    for path, kv in _footers(table.io, expired).items():
        out[path] = kv.get(CLUSTERING_KEY)
    return out


def overlap_depth(ranges: Sequence[Optional[Tuple[bytes, bytes]]]) -> int:
    """The most ranges that cover one curve value (a sweep over their ends; None: the
    whole curve, an unknown range)."""
    if not ranges:
        return 0
    lowest, highest = b"", b"\xff" * 1024
    events = []
    for r in ranges:
        low, high = r if r is not None else (lowest, highest)
        events.append((low, 0))    # (starts sort before ends at one value: closed ranges)
        events.append((high, 1))
    depth = best = 0
    for _, kind in sorted(events):
        depth += 1 if kind == 0 else -1
        best = max(best, depth)
    return best


def _curve_ranges(io: Any, paths: Sequence[str],
                  clustering: Dict[str, Any]) -> List[Optional[Tuple[bytes, bytes]]]:
    out: List[Optional[Tuple[bytes, bytes]]] = []
    for path, kv in _footers(io, paths).items():
        text = kv.get(RANGE_KEY)
        if text and same_clustering(kv.get(CLUSTERING_KEY), clustering):
            low, _, high = text.partition(":")
            try:
                out.append((bytes.fromhex(low), bytes.fromhex(high)))
                continue
            except ValueError:
                pass
        out.append(None)
    return out


# ---------------------------------------------------------------------------------------
# The selection.

def counted(n: int, noun: str) -> str:
    """``1 file``, ``3 files``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _size_reason(group: FileGroup, selection: Selection, target: int, low: int,
                 high: int) -> Optional[str]:
    """Why Iceberg's size and delete criteria select the group, or None."""
    def deletes(task: Any) -> int:
        return len(getattr(task, "delete_files", None) or ())

    outside = [t for t in group.tasks if not low <= t.file.file_size_in_bytes <= high
               or deletes(t) >= selection.delete_file_threshold]
    size = sum(t.file.file_size_in_bytes for t in outside)
    if any(deletes(t) >= selection.delete_file_threshold for t in outside):
        return (f"a file has at least {selection.delete_file_threshold} delete files "
                f"(delete_file_threshold)")
    if len(outside) > 1 and len(outside) >= selection.min_input_files:
        return (f"{counted(len(outside), 'file')} outside {low}-{high} bytes, at least "
                f"min_input_files {selection.min_input_files}")
    if len(outside) > 1 and size > target:
        return (f"{counted(len(outside), 'file')} outside {low}-{high} bytes hold {size} bytes, "
                f"more than the target {target}")
    if outside and size > high:
        return f"a file of {size} bytes, above max_file_size {high}"
    return None


def select_groups(table: Any, groups: Sequence[FileGroup], clustering: Dict[str, Any],
                  selection: Selection, target: int, snapshot: Any,
                  entries: Optional[ManifestEntries] = None,
                  ) -> Tuple[List[FileGroup], List[Dict[str, Any]]]:
    """(the groups to rewrite, each planned group's decision: ``partition``,
    ``selected``, ``reason``, ``input_files``), of the groups planned from ``snapshot``
    (the branch's head; its manifests read through ``entries``). Selected groups carry
    the clustering text their written files record."""
    low, high = selection.sizes(target)
    text = clustering_text(clustering)
    described = describe(clustering)
    recorded = ({} if selection.rewrite_all
                else recorded_clusterings(table, groups, snapshot, entries))
    # (whether each recorded text is this clustering, asked once per text, not per file)
    same: Dict[Optional[str], bool] = {}

    def clustered(task: Any) -> bool:
        have = recorded.get(task.file.file_path)
        found = same.get(have)
        if found is None:
            found = same[have] = same_clustering(have, clustering)
        return found

    chosen: List[FileGroup] = []
    decisions: List[Dict[str, Any]] = []
    budget = selection.max_files_to_rewrite
    for group in groups:
        reason: Optional[str] = None
        skip: str = ""
        if selection.rewrite_all:
            reason = "rewrite_all"
        elif group.repartition:
            reason = "files of an older partition spec"
        else:
            stale = [t for t in group.tasks if not clustered(t)]
            if stale:
                reason = (f"{len(stale)} of {counted(len(group.tasks), 'file')} not clustered "
                          f"by {described}")
            else:
                reason = _size_reason(group, selection, target, low, high)
            if reason is None and selection.min_overlap_depth is not None:
                depth = overlap_depth(_curve_ranges(
                    table.io, [t.file.file_path for t in group.tasks], clustering))
                if depth >= selection.min_overlap_depth:
                    reason = (f"curve ranges of its files overlap {depth} deep, at least "
                              f"min_overlap_depth {selection.min_overlap_depth}")
                else:
                    skip = f", overlap depth {depth}"
        decision = {"partition": entry_partition(table.metadata, group),
                    "input_files": len(group.tasks), "selected": reason is not None}
        if reason is not None and budget is not None:
            if budget <= 0:
                reason, skip = None, ""
                decision.update(selected=False)
                decision["reason"] = "max_files_to_rewrite reached"
            elif len(group.tasks) > budget:
                # Iceberg's planner takes the first files of the last group that fits.
                reason += f" (cut to {budget} files by max_files_to_rewrite)"
                group = FileGroup(group.partition, group.spec_id, group.tasks[:budget],
                                  group.repartition)
        if reason is not None:
            budget = None if budget is None else budget - len(group.tasks)
            group.clustering = text
            chosen.append(group)
            decision["reason"] = reason
        elif "reason" not in decision:
            decision["reason"] = (f"clustered by {described}, "
                                  f"{counted(len(group.tasks), 'file')} within the size "
                                  f"criteria{skip}")
        decisions.append(decision)
    return chosen, decisions
