"""What clustering buys: how many row groups (and files) min/max statistics let a reader
skip for a range predicate, before and after a rewrite.

A reader with ``lo <= column <= hi`` skips a row group whose statistics say its values
all lie outside ``[lo, hi]`` (or are all null). For each column, ``skipping_report``
cuts ``predicates`` such ranges, each holding about ``fraction`` of the column's values
(cut from a sample of the data, so skewed columns get ranges where the data is), spread
over the whole distribution, and averages how many row groups each side lets a reader
skip. The same predicates are used before and after, so the numbers compare layouts.

Needs pyarrow. Used by the ``sort`` and ``cluster`` commands, and meant for any other
rewrite that wants to report the same thing over files and row groups.

>>> report = skipping_report("in.parquet", "out.parquet", ["a", "b"])  # doctest: +SKIP
>>> print(format_report(report))                                       # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from zorder.parquet.files import Where, parquet_files

__all__ = [
    "RowGroupStats",
    "can_skip",
    "check_report_arguments",
    "format_report",
    "parquet_files",
    "range_predicates",
    "row_group_stats",
    "sample_values",
    "skipping_report",
    "sorted_sample",
    "stats_report",
]

@dataclass(frozen=True)
class RowGroupStats:
    """One row group's statistics for one column."""

    file: int            # index of its file in the list given
    row_group: int
    rows: int
    min: Any             # None when the writer stored no usable min/max
    max: Any
    all_null: bool


def _comparable(value: Any) -> Any:
    """Statistics and values in one domain; NaN (unordered) becomes None."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _metadata(item: Any):
    import pyarrow.parquet as pq

    if isinstance(item, pq.FileMetaData):
        return item
    if isinstance(item, pq.ParquetFile):
        return item.metadata
    return pq.ParquetFile(os.fspath(item)).metadata


def _column_index(md, column: str) -> Optional[int]:
    for i in range(md.num_columns):
        if md.schema.column(i).path == column:
            return i
    return None


def row_group_stats(files: Where, column: str) -> List[RowGroupStats]:
    """Every row group's min/max/null statistics of ``column`` in ``files``.

    A column missing from a file, or stored without statistics, gives ``min`` and
    ``max`` None (such a row group can never be skipped).
    """
    out = []
    for fi, item in enumerate(parquet_files(files)):
        md = _metadata(item)
        index = _column_index(md, column)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            lo = hi = None
            all_null = False
            if index is not None:
                st = rg.column(index).statistics
                if st is not None:
                    all_null = bool(st.has_null_count and st.null_count == rg.num_rows
                                    and rg.num_rows > 0)
                    if st.has_min_max:
                        lo, hi = _comparable(st.min), _comparable(st.max)
            out.append(RowGroupStats(fi, g, rg.num_rows, lo, hi, all_null))
    return out


#: Values of a column the report samples its predicates from (evenly spaced, sorted).
REPORT_VALUES = 100_000


def sorted_sample(arr, max_values: int = REPORT_VALUES) -> List[Any]:
    """Sorted non-null, non-NaN Python values of an Arrow array, at most ~max_values of
    them, evenly spaced through it: what ``range_predicates`` cuts ranges from."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = pc.drop_null(arr)
    if pa.types.is_floating(arr.type):
        arr = arr.filter(pc.invert(pc.is_nan(arr)))
    if len(arr) > max_values:
        step = len(arr) / max_values
        arr = arr.take(pa.array([int(i * step) for i in range(max_values)]))
    try:
        arr = arr.take(pc.sort_indices(arr))
        return arr.to_pylist()
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        values = [v for v in arr.to_pylist() if _comparable(v) is not None]
        try:
            values.sort()
        except TypeError as exc:
            raise TypeError(f"values of type {arr.type} cannot be ordered ({exc})") from exc
        return values


def sample_values(files: Where, column: str, *, max_values: int = REPORT_VALUES,
                  max_row_groups: int = 64) -> List[Any]:
    """A sorted sample of ``column``'s non-null values, read from up to ``max_row_groups``
    row groups spread evenly over ``files``: what the predicates are cut from."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    groups: List[Tuple[Any, int]] = []
    for item in parquet_files(files):
        f = item if isinstance(item, pq.ParquetFile) else pq.ParquetFile(os.fspath(item))
        if _column_index(f.metadata, column) is None:
            continue
        groups.extend((f, g) for g in range(f.metadata.num_row_groups))
    if not groups:
        return []
    step = max(1, len(groups) // max_row_groups)
    chosen = groups[::step][:max_row_groups]
    per_group = max(1, max_values // len(chosen))
    parts = []
    for f, g in chosen:
        col = f.read_row_group(g, columns=[column]).column(0)
        parts.append(pa.array(sorted_sample(col, per_group), type=col.type))
    if not parts:
        return []
    return sorted_sample(pa.chunked_array(parts), max_values)


def range_predicates(values: Sequence[Any], fraction: float = 0.01,
                     count: int = 25) -> List[Tuple[Any, Any]]:
    """``count`` ranges ``(lo, hi)``, each holding about ``fraction`` of the sorted
    ``values``, centred evenly over the distribution (the first near the low end, the
    last near the high end).

    >>> range_predicates(list(range(1000)), 0.01, 3)
    [(165, 174), (495, 504), (825, 834)]
    """
    _check_fraction(fraction)
    _check_count(count)
    n = len(values)
    if n == 0:
        return []
    width = max(1, int(round(fraction * n)))
    out = []
    for k in range(count):
        start = int((n - width) * (k + 0.5) / count)
        out.append((values[start], values[min(n - 1, start + width - 1)]))
    return out


def can_skip(group: RowGroupStats, lo: Any, hi: Any) -> bool:
    """Whether min/max statistics prove no value of ``group`` is in ``[lo, hi]``."""
    if group.all_null:
        return True
    if group.min is None or group.max is None:
        return False
    try:
        return bool(group.max < lo or group.min > hi)
    except TypeError:  # incomparable statistics: a reader could not skip either
        return False


def _tally(groups: Sequence[RowGroupStats], predicates: Sequence[Tuple[Any, Any]]) -> dict:
    nfiles = len({g.file for g in groups})
    result = {"files": nfiles, "row_groups": len(groups), "files_skipped": 0.0,
              "row_groups_skipped": 0.0, "files_skipped_mean": 0.0,
              "row_groups_skipped_mean": 0.0}
    if not predicates or not groups:
        return result
    skipped_groups = skipped_files = 0
    for lo, hi in predicates:
        needed = set()
        for g in groups:
            if can_skip(g, lo, hi):
                skipped_groups += 1
            else:
                needed.add(g.file)
        skipped_files += nfiles - len(needed)
    p = len(predicates)
    result["row_groups_skipped_mean"] = skipped_groups / p
    result["files_skipped_mean"] = skipped_files / p
    result["row_groups_skipped"] = skipped_groups / p / len(groups)
    result["files_skipped"] = skipped_files / p / max(1, nfiles)
    return result


def check_report_arguments(predicates: Any, fraction: Any) -> None:
    """ValueError unless ``predicates`` is a positive int and ``fraction`` in (0, 1), as
    the reports need them (for callers that check before their work)."""
    _check_count(predicates)
    _check_fraction(fraction)


def _check_fraction(fraction: Any) -> None:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 < fraction < 1:
        raise ValueError(f"fraction must be a number in (0, 1), got {fraction!r}")


def _check_count(count: Any) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"predicates must be a positive int, got {count!r}")


def skipping_report(before: Where, after: Any, columns: Iterable[str], *,
                    fraction: float = 0.01, predicates: int = 25,
                    values: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """How many row groups and files min/max statistics let a reader skip, before and
    after, for range predicates on each column.

    Args:
        before, after: the data as written before and after: a Parquet file, a folder of
            them, or a list (paths, ``ParquetFile`` or ``FileMetaData`` objects).
            ``after`` may also be a mapping ``{name: data}`` of several layouts of the same
            rows (e.g. ``{"zorder": ..., "hilbert": ...}``), reported side by side.
        columns: the columns to report on (typically the Z-order columns).
        fraction: the share of the values each predicate selects (default 1%).
        predicates: predicates per column, spread over the distribution.
        values: optional ``{column: values}`` (a pyarrow array, a numpy array or a list)
            to cut the predicates from; by default a sample of ``before`` is read.

    Returns:
        ``{"fraction": f, "predicates": p, "columns": {name: {"before": side,
        "after": side}}}`` (with a mapping ``after``, its names instead of "after"),
        where each side has ``files``, ``row_groups``, the mean
        counts skipped per predicate ``files_skipped_mean`` and
        ``row_groups_skipped_mean``, and the same as shares of the total
        ``files_skipped`` and ``row_groups_skipped``.
    """
    _check_fraction(fraction)
    _check_count(predicates)
    before_files = parquet_files(before)
    layouts = dict(after) if isinstance(after, Mapping) else {"after": after}
    if not layouts or "before" in layouts:
        raise ValueError("after must name at least one layout, and none of them 'before'")
    after_files = {name: parquet_files(where) for name, where in layouts.items()}

    def sample(column: str) -> List[Any]:
        if values is not None and column in values:
            import pyarrow as pa

            given = values[column]
            arr = given if isinstance(given, (pa.Array, pa.ChunkedArray)) else pa.array(given)
            return sorted_sample(arr, REPORT_VALUES)
        return sample_values(before_files, column)

    sides: Dict[str, Callable[[str], Sequence[RowGroupStats]]] = {
        "before": functools.partial(row_group_stats, before_files)}
    for name, files in after_files.items():
        sides[name] = functools.partial(row_group_stats, files)
    return stats_report(columns, sample, sides, fraction=fraction, predicates=predicates)


def stats_report(columns: Iterable[str], sample: Callable[[str], Sequence[Any]],
                 sides: Mapping[str, Callable[[str], Sequence[RowGroupStats]]], *,
                 fraction: float = 0.01, predicates: int = 25,
                 level: str = "row_groups") -> Dict[str, Any]:
    """The skipping math of ``skipping_report`` on statistics from anywhere (Parquet
    footers, an Iceberg table's manifests): for each column, ``predicates`` ranges of
    about ``fraction`` of its values cut from ``sample(column)`` (sorted values, in the
    domain of the statistics' min and max), and how many of each side's
    ``sides[name](column)`` entries and files they let a reader skip.

    ``level``: ``"row_groups"`` (entries are row groups) or ``"files"`` (one entry per
    file, e.g. a data file's bounds in a manifest); ``format_report`` shows files only
    for the latter. Returns ``skipping_report``'s dict, with ``level``."""
    _check_fraction(fraction)
    _check_count(predicates)
    if level not in ("row_groups", "files"):
        raise ValueError(f"level must be 'row_groups' or 'files', got {level!r}")
    report: Dict[str, Any] = {"fraction": fraction, "predicates": predicates, "level": level,
                              "columns": {}}
    for column in columns:
        preds = range_predicates(sample(column), fraction, predicates)
        report["columns"][column] = {name: _tally(stats(column), preds)
                                     for name, stats in sides.items()}
    return report


def format_report(report: Mapping[str, Any]) -> str:
    """``skipping_report``'s result as a small text table, one line per column; with
    files as well as row groups when either side has more than one file, and files only
    for a report of file-level statistics (``level="files"``)."""
    entries = report["columns"]
    sides = list(next(iter(entries.values()))) if entries else ["before", "after"]
    files_only = report.get("level") == "files"
    with_files = files_only or any(e[side]["files"] > 1 for e in entries.values() for side in sides)
    what = "files" if files_only else "files and row groups" if with_files else "row groups"
    lines = [
        f"{what} a reader can skip with min/max statistics"
        f"{' (data file bounds in the table manifests)' if files_only else ''}, mean over "
        f"{report['predicates']} range predicates per column each selecting "
        f"~{report['fraction']:.0%} of the values:",
    ]
    group_w = [max(22, len("row groups " + s) + 1) for s in sides]
    file_w = [max(20, len("files " + s) + 1) for s in sides]
    if files_only:
        group_w = []
    header = f"  {'column':<20} " + " ".join(f"{'row groups ' + s:>{w}}" for s, w in zip(sides, group_w))
    if with_files:
        header += " " + " ".join(f"{'files ' + s:>{w}}" for s, w in zip(sides, file_w))
    lines.append(header)
    for column, entry in entries.items():
        cells = []
        kinds = [] if files_only else [("row_groups", "row_groups_skipped")]
        if with_files:
            kinds.append(("files", "files_skipped"))
        for total_key, share_key in kinds:
            for side in sides:
                s = entry[side]
                cells.append(f"{s[share_key + '_mean']:.1f} of {s[total_key]} "
                             f"({s[share_key]:.0%})")
        widths = group_w + file_w
        lines.append(f"  {str(column):<20} " + " ".join(
            f"{c:>{w}}" for c, w in zip(cells, widths)))
    return "\n".join(lines)
