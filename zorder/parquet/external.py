"""The out-of-core sort: any number of rows in curve order, in memory bounded by a limit.

Engine-neutral: it takes record batches in input order and an ``Ordering``, and gives
sorted tables; it knows nothing of Parquet files, Iceberg or Dask. The steps:

1. ``Sampler``: one streamed pass over the curve columns gathers the ordered bytes of the
   rows ``rank.sample_indices`` draws (the rows the in-memory path samples, so rank
   boundaries come out identical), learns the rank boundaries from them, and gives
   their curve values, from which ``range_splits`` cuts ranges of about equal rows.
2. ``spill_ranges``: a second pass computes each batch's curve values and appends each
   row, with its value, to its range's spill run (``spill.SpillRun``), in input order.
3. ``sorted_ranges``: range by range in curve order, load the run, sort it stably by
   curve value, give it. A run too large for the limit is split again from its own
   values; a run whose rows all share one value is given as it is, batch by batch. Runs
   are in input order, so a stable sort of each keeps ties in input order, and the whole
   is row for row the order of one stable sort of all the rows.

``regroup`` cuts the sorted tables into tables of exactly ``rows`` rows (the last one
shorter), carrying a partial one across range boundaries, so a writer makes the same row
groups as the in-memory path.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass, replace
from typing import (
    Any, Callable, Generator, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple,
)

import numpy

from zorder.parquet.gather import take_rows
from zorder.parquet.spill import SpillFolder, SpillRun
from zorder.values.codec import as_matrix
from zorder.values.ordering import Ordering
from zorder.values.rank import (
    DEFAULT_SAMPLE, DEFAULT_SEED, RankBoundaries, check_shapes, sample_indices,
)
from zorder.values.sort import argsort_zvalues

__all__ = ["KEY_COLUMN", "Budget", "Sampler", "Sorted", "external_sort", "prefetched",
           "range_splits", "regroup", "sorted_ranges", "spill_ranges"]

#: The name of the curve value column of the spill runs: always their last column,
#: found by position, so an input column of the same name is no matter.
KEY_COLUMN = "__zorder_curve_value"
#: ``progress(stage, done, total, unit)``.
Progress = Optional[Callable[[str, int, int, str], None]]
#: Curve values sampled from a run too large for the limit, to split it again.
_RESPLIT_SAMPLE = 65_536
#: Sampled curve values the first ranges are cut from.
_SPLIT_SAMPLE = 65_536
#: At most this many ranges at once (one open spill file each).
_MAX_RANGES = 512


@dataclass(frozen=True)
class Budget:
    """How a memory limit is shared out. A range is sorted with its rows, their sorted
    copy and the permutation in memory at once, so it gets a quarter of the limit; an
    input batch with its curve values and its rows grouped by range, with the next one
    read ahead (``prefetched``), a sixteenth."""

    limit: int

    @property
    def range_bytes(self) -> int:
        return max(1, self.limit // 4)

    @property
    def batch_bytes(self) -> int:
        return max(1, self.limit // 16)

    def batch_rows(self, row_bytes: float, ranges: int = 1) -> int:
        """Rows per input batch: a sixteenth of the limit, and enough for about 4,096 rows
        per range piece where that fits."""
        fit = int(self.batch_bytes / max(1.0, row_bytes))
        return max(1, min(fit, max(65_536, 4_096 * ranges)))


_END = object()


def prefetched(items: Iterable[Any], depth: int = 1) -> Generator[Any, None, None]:
    """``items``, produced by a thread of their own up to ``depth`` ahead, so reading the
    next batch overlaps the work on this one. An error in the thread is raised here;
    leaving the loop early (an error, an interrupt) stops the thread."""
    box: "queue.Queue[Tuple[Optional[BaseException], Any]]" = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: Tuple[Optional[BaseException], Any]) -> bool:
        while not stop.is_set():
            try:
                box.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((None, item)):
                    return
            put((None, _END))
        except BaseException as exc:   # (handed to the consumer, raised there)
            put((exc, None))

    thread = threading.Thread(target=work, name="zorder-reader", daemon=True)
    thread.start()
    try:
        while True:
            error, item = box.get()
            if error is not None:
                raise error
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join()


def _report(progress: Progress, stage: str, done: int, total: int, unit: str) -> None:
    if progress is not None:
        progress(stage, done, total, unit)


class Sampler:
    """Gathers, from batches of the curve columns streamed in row order, the ordered
    bytes of the rows ``sample_indices(nrows, sample, seed)`` draws (every row when there
    are no more); ``finish`` gives the ordering with its rank boundaries and the curve
    values of those rows."""

    def __init__(self, nrows: int, ordering: Ordering, columns: Sequence[str],
                 sample: int = DEFAULT_SAMPLE, seed: int = DEFAULT_SEED) -> None:
        self.nrows = nrows
        self.ordering = ordering
        self.columns = list(columns)
        rows = sample_indices(nrows, sample, seed)
        self._every = rows is None
        # the rows drawn (with repeats, in the order drawn) and the distinct ones, sorted
        self._drawn = rows
        self._wanted = numpy.arange(nrows, dtype=numpy.int64) if rows is None \
            else numpy.unique(rows)
        self._seen = 0
        self._parts: List[List[numpy.ndarray]] = []

    def add(self, batch: Any) -> None:
        """The next batch of rows (at least the curve columns), in row order."""
        n = batch.num_rows
        lo, hi = numpy.searchsorted(self._wanted, [self._seen, self._seen + n])
        if hi > lo:
            # (ordered bytes are a row's own: those of the sampled rows only)
            rows = batch.select(self.columns).take(self._wanted[lo:hi] - self._seen)
            self._parts.append(self.ordering.parts(rows, self.columns))
        self._seen += n

    def finish(self, empty: Any) -> Tuple[Ordering, numpy.ndarray]:
        """(the ordering, with rank boundaries learned from the sample where its encoding
        is rank and it has none; the ``(S, size)`` curve values of the sampled rows, or of
        an even share of them, to cut ranges from).
        ``empty``: an empty table of the columns' types, for a file of no rows."""
        if self._seen != self.nrows:
            raise ValueError(f"the input gave {self._seen:,} rows, not the {self.nrows:,} "
                             "it said it holds")
        if self._parts:
            parts = [numpy.concatenate([p[c] for p in self._parts])
                     for c in range(len(self.columns))]
        else:
            parts = self.ordering.parts(empty, self.columns)
        self._parts = []
        if self._drawn is not None:
            at = numpy.searchsorted(self._wanted, self._drawn)
            parts = [p[at] for p in parts]
            del at
        ordering = self.ordering
        if ordering.encoding == "rank":
            boundaries = ordering.boundaries
            if boundaries is None:
                boundaries = RankBoundaries.from_ordered(
                    parts, int(ordering.rank_bits or 0), self.columns, complete=self._every)
            check_shapes(parts, boundaries, self.columns)
            ordering = replace(ordering, boundaries=boundaries)
        # Ranges need far fewer rows than rank boundaries: an even share of the sample.
        rows = len(parts[0])
        if rows > _SPLIT_SAMPLE:
            keep = numpy.linspace(0, rows - 1, _SPLIT_SAMPLE).astype(numpy.int64)
            parts = [p[keep] for p in parts]
        return ordering, ordering.values(parts)


def _keys(matrix: numpy.ndarray) -> numpy.ndarray:
    """Curve values ``(N, size)`` as ``S{size}``, which numpy compares as unsigned bytes."""
    matrix = numpy.ascontiguousarray(matrix)
    return matrix.view(f"S{matrix.shape[1]}").reshape(matrix.shape[0])


def _successor(key: bytes) -> Optional[bytes]:
    """The next value of the same width (None after all 0xFF bytes)."""
    value = int.from_bytes(key, "big") + 1
    if value >> (8 * len(key)):
        return None
    return value.to_bytes(len(key), "big")


def range_splits(values: numpy.ndarray, ranges: int) -> numpy.ndarray:
    """Sorted split keys (``S{size}``) cutting the rows that the sampled curve values
    ``(S, size)`` stand for into about ``ranges`` ranges of equal rows: range ``i`` holds
    the values from split ``i - 1`` (inclusive) up to split ``i``. A value sampled more
    often than a range's share gets a range of its own (it and its successor are both
    splits), which then needs no sort."""
    size = values.shape[1]
    if ranges <= 1 or len(values) == 0:
        return numpy.array([], dtype=f"S{size}")
    keys = numpy.sort(_keys(values))
    picks = numpy.unique(keys[(numpy.arange(1, ranges) * len(keys)) // ranges])
    share = len(keys) / ranges
    splits = {bytes(k).ljust(size, b"\0") for k in picks}
    for key in picks:
        count = numpy.searchsorted(keys, key, "right") - numpy.searchsorted(keys, key, "left")
        following = _successor(bytes(key).ljust(size, b"\0"))
        if count > share and following is not None:
            splits.add(following)
    found = numpy.array(sorted(splits), dtype=f"S{size}")
    return found[found > keys[0]]   # (a split at the smallest key: an empty first range)


def _single_key_ranges(splits: numpy.ndarray) -> List[bool]:
    """Per range of ``splits``, whether it holds one value only (``[k, k + 1)``)."""
    size = splits.dtype.itemsize
    edges = [bytes(k).ljust(size, b"\0") for k in splits]
    return [False] + [_successor(a) == b for a, b in zip(edges, edges[1:])] + [False]


def _key_array(matrix: numpy.ndarray) -> Any:
    import pyarrow as pa

    matrix = numpy.ascontiguousarray(matrix)
    n, size = matrix.shape
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(size), n,
                                                [None, pa.py_buffer(matrix)])


def _partition(batch: Any, keys: numpy.ndarray, splits: numpy.ndarray,
               runs: Sequence[SpillRun]) -> None:
    """Append each row of ``batch`` (with its key column) to the run of its range."""
    if len(runs) == 1:
        runs[0].append(batch)
        return
    ids = numpy.searchsorted(splits, keys, side="right")
    counts = numpy.bincount(ids, minlength=len(runs))
    order = numpy.argsort(ids, kind="stable")
    grouped = take_rows(batch, order)
    start = 0
    for r, count in enumerate(counts.tolist()):
        if count:
            runs[r].append(grouped.slice(start, count))
        start += count


def spill_ranges(batches: Iterable[Any], ordering: Ordering, columns: Sequence[str],
                 splits: numpy.ndarray, spill: SpillFolder, *, nrows: Optional[int] = None,
                 progress: Progress = None,
                 curve_input: Optional[Callable[[Any], Any]] = None) -> List[SpillRun]:
    """Append every row of ``batches`` (in input order), with its curve value in
    ``KEY_COLUMN``, to the spill run of its range (``range_splits``); the runs in curve
    order. ``spill``'s schema is the batches' with the key column last.
    ``curve_input(batch)``: what the ordering reads the curve columns from, where an
    engine converts them first (default the batch itself)."""
    import pyarrow as pa

    runs = [spill.new_run() for _ in range(len(splits) + 1)]
    for run, single in zip(runs, _single_key_ranges(splits)):
        run.single_key = single
    done = 0
    total = nrows or 0
    _report(progress, "spilling", 0, total, "rows")
    # (closed on the way out, so an error here stops the reading thread at once)
    with contextlib.closing(prefetched(batches)) as stream:
        for batch in stream:
            matrix = ordering.matrix(batch if curve_input is None else curve_input(batch),
                                     list(columns))
            batch = pa.RecordBatch.from_arrays([*batch.columns, _key_array(matrix)],
                                               schema=spill.schema)
            _partition(batch, _keys(matrix), splits, runs)
            done += batch.num_rows
            _report(progress, "spilling", done, max(total, done), "rows")
    for run in runs:
        run.close()
    return runs


def _run_keys(table: Any) -> numpy.ndarray:
    return as_matrix(table.column(table.num_columns - 1).combine_chunks())


def _key_of(batch: Any) -> Any:
    return batch.column(batch.num_columns - 1)


def _resplit(run: SpillRun, spill: SpillFolder, budget: Budget) -> List[SpillRun]:
    """Split a run too large for the limit into runs of its own ranges, in order."""
    step = max(1, -(-run.rows // _RESPLIT_SAMPLE))
    sampled, seen = [], 0
    for batch in run.batches():
        first = (-seen) % step
        rows = numpy.arange(first, batch.num_rows, step)
        if len(rows):
            column = _key_of(batch)
            sampled.append(as_matrix(column.take(rows)))
        seen += batch.num_rows
    values = numpy.concatenate(sampled)
    ranges = min(_MAX_RANGES, max(2, 2 * -(-run.nbytes // budget.range_bytes)))
    splits = range_splits(values, ranges)
    if len(splits) == 0:
        # every sampled row holds one value: give it a range of its own, so that what
        # is left on either side is smaller than the run
        key = bytes(values[0])
        following = _successor(key)
        edges = [key] if following is None else [key, following]
        splits = numpy.array(edges, dtype=f"S{values.shape[1]}")
    runs = [spill.new_run() for _ in range(len(splits) + 1)]
    for part, single in zip(runs, _single_key_ranges(splits)):
        part.single_key = single
    for batch in run.batches():
        _partition(batch, _keys(as_matrix(_key_of(batch))), splits, runs)
    run.remove()
    for part in runs:
        part.close()
    return runs


def _all_one_key(run: SpillRun) -> bool:
    first = None
    for batch in run.batches():
        keys = _keys(as_matrix(_key_of(batch)))
        if first is None:
            first = keys[0]
        if not numpy.all(keys == first):
            return False
    return True


def sorted_ranges(runs: Sequence[SpillRun], spill: SpillFolder, budget: Budget, *,
                  progress: Progress = None, keep_key: bool = False) -> Iterator[Any]:
    """The rows of ``runs`` (in curve order of their ranges, each in input order) as
    tables in curve order, ties in input order, without the key column (with it last,
    for ``keep_key``: a writer that cuts files on the curve's cells). Each run is
    removed once given."""
    import pyarrow as pa

    strip = (lambda batch: pa.Table.from_batches([batch])) if keep_key else _without_key
    pending = list(reversed(runs))
    done, total = 0, len(runs)
    _report(progress, "sorting", 0, total, "ranges")
    while pending:
        run = pending.pop()
        if run.rows and not run.single_key and run.nbytes > budget.range_bytes:
            if _all_one_key(run):
                run.single_key = True
            else:
                parts = _resplit(run, spill, budget)
                total += len(parts) - 1
                pending.extend(reversed(parts))
                continue
        if run.single_key:
            # one value: its rows are already in order (input order)
            for batch in run.batches():
                yield strip(batch)
        elif run.rows:
            table = run.read()
            perm = argsort_zvalues(_run_keys(table))
            if not keep_key:
                table = table.select(list(range(table.num_columns - 1)))
            ordered = take_rows(table, perm)
            del table, perm
            yield ordered
            del ordered
        run.remove()
        done += 1
        _report(progress, "sorting", done, total, "ranges")


def _without_key(batch: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches([batch.select(list(range(batch.num_columns - 1)))])


def regroup(tables: Iterable[Any], rows: int) -> Iterator[Any]:
    """``tables`` (of one schema) as tables of exactly ``rows`` rows, in order, the last
    one shorter. A partial group is copied before it is carried over, so it keeps no
    earlier table alive."""
    import pyarrow as pa

    carry: Optional[Any] = None
    for table in tables:
        start = 0
        if carry is not None:
            need = rows - carry.num_rows
            head = table.slice(0, need)
            carry = pa.concat_tables([carry, head])
            start = head.num_rows
            if carry.num_rows < rows:
                carry = carry.combine_chunks()
                continue
            yield carry
            carry = None
        while table.num_rows - start >= rows:
            yield table.slice(start, rows)
            start += rows
        if start < table.num_rows:
            tail = table.slice(start)
            carry = tail.take(numpy.arange(tail.num_rows))
    if carry is not None and carry.num_rows:
        yield carry


class Sorted(NamedTuple):
    """What ``external_sort`` gives: the ordering (with any rank boundaries learned), the
    bytes of one curve value, and the rows in curve order, as tables."""

    ordering: Ordering
    value_bytes: int
    tables: Iterator[Any]


def external_sort(sample_batches: Iterable[Any], batches: Callable[[int], Iterable[Any]],
                  nrows: int, ordering: Ordering, columns: Sequence[str], *,
                  schema: Any, budget: Budget, spill_folder: str, row_bytes: float,
                  progress: Progress = None, curve_input: Optional[Callable[[Any], Any]] = None,
                  keep_key: bool = False) -> Sorted:
    """The three steps above; the sort (and the spilling before it) runs as the tables
    are taken.

    ``sample_batches``: the input's curve columns (at least), streamed in row order;
    ``batches(rows)``: the whole input streamed again, in batches of about ``rows`` rows;
    ``nrows``: its row count; ``schema``: its Arrow schema; ``row_bytes``: its Arrow
    bytes a row (an estimate: ranges too large for the limit are split again). Spill runs
    go to ``spill_folder``, which the caller removes. ``curve_input`` as for
    ``spill_ranges`` (``sample_batches`` come converted already); ``keep_key`` as for
    ``sorted_ranges``."""
    import pyarrow as pa

    sampler = Sampler(nrows, ordering, columns)
    _report(progress, "sampling", 0, nrows, "rows")
    seen = 0
    with contextlib.closing(prefetched(sample_batches)) as stream:
        for batch in stream:
            sampler.add(batch)
            seen += batch.num_rows
            _report(progress, "sampling", seen, max(seen, nrows), "rows")
    ordering, sampled = sampler.finish(schema.empty_table())
    size = sampled.shape[1] if sampled.ndim == 2 else 0
    total = nrows * (row_bytes + size)
    ranges = min(_MAX_RANGES, max(1, -(-int(total * 1.25) // budget.range_bytes)))
    splits = range_splits(sampled, ranges)
    del sampled
    spill = SpillFolder(spill_folder, schema.append(pa.field(KEY_COLUMN, pa.binary(size))))
    runs = spill_ranges(batches(budget.batch_rows(row_bytes + size, len(splits) + 1)),
                        ordering, columns, splits, spill, nrows=nrows, progress=progress,
                        curve_input=curve_input)
    return Sorted(ordering, size, sorted_ranges(runs, spill, budget, progress=progress,
                                                keep_key=keep_key))
