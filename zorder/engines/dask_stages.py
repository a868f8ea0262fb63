"""The Dask stages of ``cluster``, each run on one partition: survey (row count, a
sample of Z-values, encoded and Arrow size estimates), assign (each row's Z-range number
and its Z-value as words for the shuffle), and write (one range sorted and written as
Parquet files of about the target size). The split keys and file cuts between them are
``zorder.engines.cuts``.

Out of core, the shuffle is replaced by spill runs on disk (``zorder.parquet.external``):
``spill_partition`` appends each row of a partition, with its curve value, to the run of
its range (one file per partition and range), and ``sort_spilled_range`` reads one
range's runs in partition order, sorts them stably through the core (a range too large
for its share split again, or streamed when it is one value) and cuts its files as the
sorted rows stream, so no task ever holds more than one partition or its share of a
range."""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from zorder.engines.cuts import cut_files, file_cuts
from zorder.engines.interrupts import Interrupted, interrupted
from zorder.ordered.errors import ColumnError
from zorder.parquet.external import KEY_COLUMN, Budget, sorted_ranges, spill_ranges
from zorder.parquet.parallel_writer import ParallelParquetWriter
from zorder.parquet.safety import temporary_folder
from zorder.parquet.sort import write_in_order
from zorder.parquet.spill import JoinedRun, SpillFolder
from zorder.values.codec import from_words, sort_keys, to_words
from zorder.values.ordering import Ordering
from zorder.values.sort import _argsort_zvalues

PART = "__zorder_part"
WORD = "__zorder_w{}"
SEED = 0x5A4F52
MAX_SAMPLE = 1_000_000


# ---------------------------------------------------------------------------------------
# Z-values as sortable keys


def _arrow_of(pdf, columns: Sequence[str]):
    import pyarrow as pa

    return pa.Table.from_pandas(pdf[list(columns)], preserve_index=False)


def zvalue_matrix_of(pdf, columns: Sequence[str], ordering: Ordering) -> np.ndarray:
    """(N, size) uint8 curve values of a pandas partition, through pyarrow so that every
    column arrives with its exact Arrow (= Parquet = Spark) type."""
    return ordering.matrix(_arrow_of(pdf, columns), list(columns))


# ---------------------------------------------------------------------------------------
# The three Dask steps: survey (sample + sizes), assign ranges, sort and write


def estimated_size(head: Any, rows: int, columns: Sequence[str], ordering: Ordering,
                   compression: str, keep_zvalue: bool = False) -> Tuple[float, float]:
    """(Estimated Parquet bytes, estimated Arrow bytes) of ``rows`` rows like ``head`` (an
    Arrow table): the head encoded, scaled up; with their curve values as one more column
    when the output keeps them (a random 24-byte value per row is as big as the rest of a
    table of a few numbers; rank boundaries not learned yet are the head's own)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rows == 0 or head.num_rows == 0:
        return 0.0, 0.0
    scale = rows / head.num_rows
    table = head
    if keep_zvalue:
        local = ordering
        if ordering.encoding == "rank" and ordering.boundaries is None:
            local = learn_boundaries(ordering, [head.num_rows],
                                     [ordering.parts(head, list(columns))], columns)
        z = np.ascontiguousarray(local.matrix(head, list(columns)))
        table = table.append_column(
            "zvalue", pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(z.shape[1]), len(z), [None, pa.py_buffer(z.tobytes())]))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().size * scale, head.nbytes * scale


def survey(pdf, index: int, columns, ordering: Ordering, sample_rows: int, compression: str,
           keep_zvalue: bool = False, batch_bytes: Optional[int] = None):
    """(rows, a sample of each column's ordered bytes, estimated Parquet bytes, estimated
    Arrow bytes) of one partition: the one sampling pass, from which the client learns
    rank boundaries (for encoding="rank") and cuts the ranges, and chooses between the
    shuffle and the spill runs. ``keep_zvalue``: the output keeps the curve values, so
    they count in its Parquet size. The partition is read in slices of its curve
    columns of about ``batch_bytes`` (every value checked, the sampled rows' ordered
    bytes kept), and the sizes are estimated from a head of at most that size: beside
    the partition Dask hands over, the survey holds one slice, not a copy of it all."""
    import pyarrow as pa

    n = len(pdf)
    rows = _slice_rows(pdf, columns, batch_bytes)
    pick = sample_picks(n, index, sample_rows)
    gathered = []
    for lo in range(0, max(n, 1), rows):
        try:
            encoded = ordering.parts(_arrow_of(pdf.iloc[lo:lo + rows], columns),
                                     list(columns))
        except ColumnError as exc:
            # (its row index is the slice's: say which partition, and which row of it)
            exc.where = f"partition {index}'s {exc.where}"
            if exc.first is not None:
                exc.first += lo
            raise
        if pick is not None:
            at = pick[np.searchsorted(pick, lo):np.searchsorted(pick, lo + rows)] - lo
            encoded = [p[at] for p in encoded]
        gathered.append(encoded)
        del encoded
    parts = [np.ascontiguousarray(np.concatenate([g[j] for g in gathered]))
             for j in range(len(gathered[0]))]
    del gathered
    head_rows = 50_000 if batch_bytes is None else max(1_000, min(50_000, rows))
    head = pa.Table.from_pandas(pdf.iloc[:head_rows], preserve_index=False)
    return (n, parts, *estimated_size(head, n, columns, ordering, compression, keep_zvalue))


#: Rows of a partition measured for the Arrow bytes a row of its curve columns takes.
_PROBE_ROWS = 1_024


def _slice_rows(pdf, columns, batch_bytes: Optional[int]) -> int:
    """Rows of a slice the survey converts at once: ``batch_bytes`` of the curve columns
    in Arrow, with their ordered bytes (about as many again); all rows without it."""
    if batch_bytes is None or len(pdf) <= _PROBE_ROWS:
        return max(1, len(pdf))
    probe = _arrow_of(pdf.iloc[:_PROBE_ROWS], columns)
    row_bytes = 2.0 * probe.nbytes / probe.num_rows
    return max(_PROBE_ROWS, int(batch_bytes / max(1.0, row_bytes)))


def sample_picks(n: int, index: int, sample_rows: int) -> Optional[np.ndarray]:
    """The rows (sorted) of piece ``index``'s ``n`` that its sample takes: at most
    ``sample_rows``, without replacement, the same every run; None: every row."""
    k = min(n, sample_rows)
    if k >= n:
        return None
    rng = np.random.default_rng([SEED, index])
    return np.sort(rng.choice(n, size=k, replace=False))


def sample_parts(parts: Sequence[np.ndarray], index: int, sample_rows: int) -> List[np.ndarray]:
    """At most ``sample_rows`` rows (without replacement, in row order) of one piece's
    ordered bytes, the same rows for the same piece ``index`` every run
    (``sample_picks``)."""
    n = parts[0].shape[0] if len(parts) else 0
    pick = sample_picks(n, index, sample_rows)
    if pick is not None:
        parts = [p[pick] for p in parts]
    return [np.ascontiguousarray(p) for p in parts]


def learn_boundaries(ordering: Ordering, counts: Sequence[int], samples: Sequence[list],
                     names: Sequence[str]) -> Ordering:
    """``ordering`` with rank boundaries from the partitions' samples (each row weighted
    by its partition's size, as the split points are: partitions sampled at different
    rates are resampled by weight); unchanged when it has them or encodes Iceberg's bytes."""
    from dataclasses import replace

    from zorder.values.rank import RankBoundaries

    if ordering.encoding != "rank" or ordering.boundaries is not None:
        return ordering
    bits = int(ordering.rank_bits or 16)
    filled = [(s, c) for s, c in zip(samples, counts) if len(s[0])]
    if not filled:
        return replace(ordering, boundaries=RankBoundaries.from_ordered(
            [np.zeros((0, p.shape[1]), np.uint8) for p in samples[0]], bits, list(names)))
    weights = np.concatenate([np.full(len(s[0]), c / len(s[0])) for s, c in filled])
    pooled = [np.concatenate([s[j] for s, _ in filled]) for j in range(len(names))]
    complete = all(len(s[0]) == c for s, c in filled)
    # Rows of equal weight (one group, or groups sampled at one rate) are already a
    # uniform sample of all the rows: a resample would only repeat some and drop others.
    if not complete and weights.min() != weights.max():
        # Each draw is the first row whose cumulative weight passes a uniform number: the
        # rows rng.choice(p=...) draws, the boundaries of earlier releases. The numbers
        # are sorted, as the boundaries see only which rows were drawn: the search and
        # the take then go through memory in order.
        cumulative = np.cumsum(weights / weights.sum())
        cumulative /= cumulative[-1]
        draws = np.sort(np.random.default_rng(SEED).random(len(weights)))
        rows = cumulative.searchsorted(draws, side="right")
        pooled = [p[rows] for p in pooled]
    b = RankBoundaries.from_ordered(pooled, bits, list(names), complete=complete)
    return replace(ordering, boundaries=b)


def sample_keys(ordering: Ordering, sample: list) -> np.ndarray:
    """Sort keys of one partition's sampled rows, in the ordering's curve values."""
    return sort_keys(ordering.values(sample)).copy()


def assign(pdf, columns, ordering: Ordering, splits: np.ndarray, nwords: int):
    """The partition with its Z-value words and the number of its range."""
    matrix = zvalue_matrix_of(pdf, columns, ordering)
    words = to_words(matrix)
    out = pdf.copy(deep=False)
    for j in range(nwords):
        out[WORD.format(j)] = words[:, j]
    out[PART] = np.searchsorted(splits, sort_keys(matrix), side="right").astype(np.int64)
    return out


INFO_COLUMNS = ["range", "file", "rows", "bytes", "row_groups", "zmin", "zmax"]


def info_frame(rows):
    import pandas as pd

    frame = pd.DataFrame(rows, columns=INFO_COLUMNS)
    return frame.astype({"range": "int64", "file": object, "rows": "int64", "bytes": "int64",
                         "row_groups": "int64", "zmin": object, "zmax": object})


def write_range(pdf, tmp_dir: str, schema, metadata, size: int, nwords: int,
                keep_zvalue: bool, zvalue_column: str, rows_per_file: int, row_group_rows: int,
                compression: str, name_width: int):
    """Sort one range by Z-value and write it as one or more Parquet files into tmp_dir,
    with ``schema`` and, when given, the input's schema ``metadata`` (not the metadata
    pandas would write for this frame; an empty dict: none). ``None``: a Dask DataFrame's
    input, written with the pandas metadata of its frames."""
    import pyarrow as pa

    if interrupted():
        raise Interrupted("stopped before sorting a range")
    if len(pdf) == 0:
        return info_frame([])
    number = int(pdf.index[0])
    word_cols = [WORD.format(j) for j in range(nwords)]
    # The words' lexicographic order is the values' byte order (the padding is zeros in
    # every row): the radix sort of the values gives lexsort's stable order, faster.
    matrix = from_words(pdf[word_cols].to_numpy(dtype=np.uint64), size)
    # (on this task's thread: the scheduler runs a task on each core already)
    order = _argsort_zvalues(matrix, None, threads=1)
    data = pdf.drop(columns=word_cols).reset_index(drop=True)
    # (left in the shuffle's chunks: a combined copy beside the frame the task is given,
    # which Dask keeps alive, would raise the peak by a copy of the range)
    table = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    if metadata is not None:
        table = table.replace_schema_metadata(metadata or None)
    if keep_zvalue:
        zarr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(size), len(matrix), [None, pa.py_buffer(matrix.tobytes())]
        )
        table = table.append_column(pa.field(zvalue_column, pa.binary(size), nullable=False), zarr)
    # the rows stay in input order: each row group is taken as the one before is written
    keys = sort_keys(matrix)[order]
    cuts = file_cuts(keys, rows_per_file)
    return info_frame([write_file(table, order, keys, a, b, number, j, tmp_dir,
                                  row_group_rows, compression, name_width)
                       for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:]))])


def write_file(table, order: np.ndarray, keys: np.ndarray, a: int, b: int, number: int,
               j: int, tmp_dir: str, row_group_rows: int, compression: str,
               name_width: int) -> tuple:
    """Write sorted rows ``a:b`` (the rows ``order[a:b]`` of ``table``, whose curve values
    are ``keys[a:b]``) as file ``j`` of range ``number`` into ``tmp_dir``; its row of the
    info frame (``INFO_COLUMNS``). The file is written under a partial name and renamed
    when whole: a retried task replaces a whole file, never half of one."""
    import pyarrow.parquet as pq

    name = f"part-{number:0{name_width}d}-{j:04d}.parquet"

    def check() -> None:
        if interrupted():
            raise Interrupted(f"stopped before writing {name}")

    final = os.path.join(tmp_dir, name)
    partial = os.path.join(tmp_dir, f".{name}.{uuid.uuid4().hex}.partial")
    try:
        # Row group by row group (the same groups as one write_table): an interrupt of
        # a stoppable thread pool ends the task at the next one (threads cannot be killed).
        # One worker (one ParquetWriter, on a thread of its own): the files of a job are
        # themselves written side by side, and encoding each one's row groups apart
        # raised the peak for no gain (NOTES, "One file's row groups on every core").
        with ParallelParquetWriter(partial, table.schema, workers=1,
                                   compression=compression) as writer:
            write_in_order(writer, table, order[a:b], row_group_rows, before_group=check)
        os.replace(partial, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise
    # (the keys' full width: a numpy S item would drop trailing zero bytes)
    return (number, name, b - a, os.path.getsize(final),
            pq.ParquetFile(final).metadata.num_row_groups, keys[a:a + 1].tobytes().hex(),
            keys[b - 1:b].tobytes().hex())


def _table_of(pdf, schema, index: int):
    """A partition as Arrow, with ``schema`` where the input's is known."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(pdf, schema=schema, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"partition {index} does not match the first partition's types "
                         f"({exc})") from None


def spill_partition(pdf, index: int, columns: Sequence[str], ordering: Ordering,
                    splits: np.ndarray, folder: str, schema, size: int,
                    batch_bytes: int) -> List[Tuple[str, int, int]]:
    """Append each row of partition ``index``, with its curve value, to the spill run of
    its range (``splits``), in a folder of its own under ``folder``; per range, (the
    run's path, rows, Arrow bytes); a range with no row of this partition has no file
    (path ""). The names depend on the partition only: a retried task writes the same
    files again from their start."""
    import pyarrow as pa

    if interrupted():
        raise Interrupted("stopped before spilling a partition")
    table = _table_of(pdf, schema, index)
    del pdf
    place = os.path.join(folder, f"part-{index:06d}")
    os.makedirs(place, exist_ok=True)
    spill = SpillFolder(place, table.schema.append(pa.field(KEY_COLUMN, pa.binary(size))))
    rows = max(1, int(batch_bytes / max(1.0, table.nbytes / max(1, table.num_rows) + size)))
    try:
        runs = spill_ranges(_checked(table.to_batches(max_chunksize=rows)), ordering,
                            list(columns), splits, spill)
    except ColumnError as exc:
        exc.where = f"partition {index}'s {exc.where}"
        raise
    found = []
    for run in runs:
        if run.rows == 0:
            run.remove()
        found.append((run.path if run.rows else "", run.rows, run.nbytes))
    return found


def _checked(batches):
    for batch in batches:
        if interrupted():
            raise Interrupted("stopped while spilling a partition")
        yield batch


def sort_spilled_range(number: int, runs: Sequence[Tuple[str, int, int]], folder: str,
                       tmp_dir: str, metadata, size: int, keep_zvalue: bool,
                       zvalue_column: str, rows_per_file: int, row_group_rows: int,
                       compression: str, name_width: int, sort_bytes: int,
                       remove: bool = True):
    """Range ``number`` from its spill runs (one per partition, in partition order: the
    input order), sorted stably by curve value by the core (``sorted_ranges``, within
    ``sort_bytes``: a range still too large, a heavy value, is split again from its own
    values or, all one value, streamed as it is) and written as files of about
    ``rows_per_file`` rows cut as the sorted rows stream (``cut_files``: equal values in
    one file, as ``write_range`` cuts a shuffled range). Re-split runs go to a folder of
    this task's own under ``folder``; the partitions' runs are removed as they are read
    if ``remove``."""
    import pyarrow as pa

    if interrupted():
        raise Interrupted("stopped before sorting a range")
    found = [(path, rows, nbytes) for path, rows, nbytes in runs if rows]
    if not found:
        return info_frame([])
    run = JoinedRun([path for path, _, _ in found], sum(rows for _, rows, _ in found),
                    sum(nbytes for _, _, nbytes in found), owned=remove)
    fields = list(run.schema)[:-1]
    if keep_zvalue:
        fields.append(pa.field(zvalue_column, pa.binary(size), nullable=False))
    schema = pa.schema(fields, metadata=run.schema.metadata if metadata is None
                       else metadata or None)
    writer = _RangeWriter(number, tmp_dir, schema, keep_zvalue, row_group_rows, compression,
                          name_width)
    try:
        with temporary_folder(os.path.join(folder, f"range-{number:06d}"), "sort",
                              folder) as own:
            tables = sorted_ranges([run], SpillFolder(own, run.schema), Budget(sort_bytes),
                                   keep_key=True)
            cut_files(tables, run.rows, max(1, round(run.rows / max(1, rows_per_file))),
                      writer, whole_keys=True)
    except BaseException:
        writer.abort()
        raise
    return info_frame(writer.info)


class _RangeWriter:
    """Writes the rows ``cut_files`` hands on (curve value column last) as range
    ``number``'s Parquet files, ``part-NUMBER-J.parquet``, one at a time: each under a
    partial name, renamed when whole (a retried task replaces a whole file, never half of
    one), in row groups of ``row_group_rows`` (the groups ``write_range`` makes: one
    gathered at a time; rows waiting for the next call are copied out of the table they
    came in where they are less than half of it, so they keep at most twice their size
    alive). ``info``: a row of ``INFO_COLUMNS`` per file written."""

    def __init__(self, number: int, tmp_dir: str, schema, keep_zvalue: bool,
                 row_group_rows: int, compression: str, name_width: int) -> None:
        self.number, self.tmp_dir, self.schema = number, tmp_dir, schema
        self.keep_zvalue, self.row_group_rows = keep_zvalue, row_group_rows
        self.compression, self.name_width = compression, name_width
        self.info: List[tuple] = []
        self._writer: Any = None
        self._name = self._partial = ""
        self._pending: List[Any] = []
        self._pending_rows = 0
        self._rows = self._groups = 0
        self._first = self._last = b""

    def __call__(self, rows, last: bool) -> None:
        import pyarrow as pa

        if rows is not None and rows.num_rows:
            keys = rows.column(rows.num_columns - 1)
            if not self._rows + self._pending_rows:
                self._first = keys[0].as_py()
            self._last = keys[len(keys) - 1].as_py()
            columns = rows.columns if self.keep_zvalue else rows.columns[:-1]
            piece = pa.Table.from_arrays(columns, schema=self.schema)
            came = piece.num_rows
            del rows, keys, columns
            while piece.num_rows:
                need = self.row_group_rows - self._pending_rows
                if piece.num_rows < need:
                    # (what waits for the next rows is copied where it is a small part
                    # of the table it came in, which a slice would keep alive; each row
                    # is copied once at most)
                    if 2 * piece.num_rows < came:
                        piece = piece.take(np.arange(piece.num_rows))
                    self._pending.append(piece)
                    self._pending_rows += piece.num_rows
                    break
                self._pending.append(piece.slice(0, need))
                piece = piece.slice(need)
                self._write_group()
        if last:
            if self._pending_rows:
                self._write_group()
            self._close()

    def _write_group(self) -> None:
        """Write the pending rows as one row group."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        group = pa.concat_tables(self._pending)
        self._pending, self._pending_rows = [], 0
        if self._writer is None:
            self._name = (f"part-{self.number:0{self.name_width}d}-"
                          f"{len(self.info):04d}.parquet")
            self._partial = os.path.join(self.tmp_dir,
                                         f".{self._name}.{uuid.uuid4().hex}.partial")
            self._writer = pq.ParquetWriter(self._partial, self.schema,
                                            compression=self.compression,
                                            write_statistics=True)
        # (an interrupt of the threads scheduler ends the task at the next row group:
        # threads cannot be killed)
        if interrupted():
            raise Interrupted(f"stopped before writing {self._name}")
        self._writer.write_table(group, row_group_size=self.row_group_rows)
        self._rows += group.num_rows
        self._groups += 1

    def _close(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._writer = None
        final = os.path.join(self.tmp_dir, self._name)
        os.replace(self._partial, final)
        self.info.append((self.number, self._name, self._rows, os.path.getsize(final),
                          self._groups, self._first.hex(), self._last.hex()))
        self._rows = self._groups = 0

    def abort(self) -> None:
        """Close and remove the file being written (after an error or an interrupt)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
            with contextlib.suppress(OSError):
                os.remove(self._partial)


#: Of a range task's share, what the core's sort gets (``Budget``); the rest holds the
#: file being cut, its window and row group, each at most a range's rows.
SORT_SHARE = 0.75


def sort_share(task_bytes: int) -> int:
    """The bytes the core's sort of one range may hold in a task holding at most
    ``task_bytes``."""
    return max(1, int(task_bytes * SORT_SHARE))
