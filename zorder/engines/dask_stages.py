"""The Dask stages of ``cluster``, each run on one partition: survey (row count, a
sample of Z-values, encoded and Arrow size estimates), assign (each row's Z-range number
and its Z-value as words for the shuffle), and write (one range sorted and written as
Parquet files of about the target size). The split keys and file cuts between them are
``zorder.engines.cuts``.

Out of core, the shuffle is replaced by spill runs on disk (``zorder.parquet.external``):
``spill_partition`` appends each row of a partition, with its curve value, to the run of
its range (one file per partition and range), and ``sort_spilled_range`` reads one
range's runs in partition order, sorts them stably and writes its files, so no task ever
holds more than one partition or one range."""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from zorder.engines.cuts import file_cuts
from zorder.engines.interrupts import Interrupted, interrupted
from zorder.ordered.errors import ColumnError
from zorder.parquet.external import KEY_COLUMN, Budget, spill_ranges
from zorder.parquet.sort import write_in_order
from zorder.parquet.spill import SpillFolder
from zorder.values.codec import as_matrix, from_words, sort_keys, to_words
from zorder.values.ordering import Ordering
from zorder.values.sort import argsort_zvalues
from zorder.values.stages import WRITE, stage

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


def _encoded_size(pdf, compression: str, head_rows: int = 50_000,
                  zvalues_of: Optional[Callable[[Any], np.ndarray]] = None) -> Tuple[float, float]:
    """(Estimated Parquet bytes, estimated Arrow bytes) of a partition: the first rows
    encoded, scaled up; the Parquet bytes with their curve values as one more column when
    ``zvalues_of(head)`` gives them (the output keeps them: a random 24-byte value per
    row is as big as the rest of a table of a few numbers)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(pdf)
    if n == 0:
        return 0.0, 0.0
    head = pdf.iloc[: min(n, head_rows)]
    table = pa.Table.from_pandas(head, preserve_index=False)
    arrow = table.nbytes * n / len(head)
    if zvalues_of is not None:
        z = np.ascontiguousarray(zvalues_of(head))
        table = table.append_column(
            "zvalue", pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(z.shape[1]), len(z), [None, pa.py_buffer(z.tobytes())]))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().size * n / len(head), arrow


def survey(pdf, index: int, columns, ordering: Ordering, sample_rows: int, compression: str,
           keep_zvalue: bool = False):
    """(rows, a sample of each column's ordered bytes, estimated Parquet bytes, estimated
    Arrow bytes) of one partition: the one sampling pass, from which the client learns
    rank boundaries (for encoding="rank") and cuts the ranges, and chooses between the
    shuffle and the spill runs. ``keep_zvalue``: the output keeps the curve values, so
    they count in its Parquet size."""
    n = len(pdf)
    try:
        encoded = ordering.parts(_arrow_of(pdf, columns), list(columns))
    except ColumnError as exc:
        # (its row index is the partition's: say which partition)
        exc.where = f"partition {index}'s {exc.where}"
        raise
    parts = sample_parts(encoded, index, sample_rows)
    zvalues_of = None
    if keep_zvalue:
        def zvalues_of(head: Any) -> np.ndarray:
            local = ordering
            if ordering.encoding == "rank" and ordering.boundaries is None:
                # rank boundaries come later, from every partition's sample: for a size,
                # the head's own will do
                local = learn_boundaries(
                    ordering, [len(head)],
                    [ordering.parts(_arrow_of(head, columns), list(columns))], columns)
            return zvalue_matrix_of(head, columns, local)
    return (n, parts, *_encoded_size(pdf, compression, zvalues_of=zvalues_of))


def sample_parts(parts: Sequence[np.ndarray], index: int, sample_rows: int) -> List[np.ndarray]:
    """At most ``sample_rows`` rows (without replacement, in row order) of one piece's
    ordered bytes, the same rows for the same piece ``index`` every run."""
    n = parts[0].shape[0] if len(parts) else 0
    k = min(n, sample_rows)
    if k < n:
        rng = np.random.default_rng([SEED, index])
        pick = np.sort(rng.choice(n, size=k, replace=False))
        parts = [p[pick] for p in parts]
    return [np.ascontiguousarray(p) for p in parts]


def learn_boundaries(ordering: Ordering, counts: Sequence[int], samples: Sequence[list],
                     names: Sequence[str]) -> Ordering:
    """``ordering`` with rank boundaries from the partitions' samples (each row weighted
    by its partition's size, as the split points are); unchanged when it has them or
    encodes Iceberg's bytes."""
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
    if not complete:
        rng = np.random.default_rng(SEED)
        rows = rng.choice(len(weights), size=len(weights), p=weights / weights.sum())
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
    order = argsort_zvalues(matrix)
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
    return _write_sorted(table, np.ascontiguousarray(matrix[order]), number, tmp_dir,
                         rows_per_file, row_group_rows, compression, name_width, order)


def _write_sorted(table, matrix: np.ndarray, number: int, tmp_dir: str, rows_per_file: int,
                  row_group_rows: int, compression: str, name_width: int,
                  order: Optional[np.ndarray] = None):
    """Write range ``number``'s rows, sorted (``matrix``: their curve values), as files of
    about ``rows_per_file`` rows (``file_cuts``) into ``tmp_dir``; their info frame.
    ``order``: ``table`` is not sorted, its rows ``order`` are (taken as written)."""
    import pyarrow.parquet as pq

    def check() -> None:
        if interrupted():
            raise Interrupted(f"stopped before writing {name}")

    keys = sort_keys(matrix)
    rows = []
    cuts = file_cuts(keys, rows_per_file)
    for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        name = f"part-{number:0{name_width}d}-{j:04d}.parquet"
        final = os.path.join(tmp_dir, name)
        partial = os.path.join(tmp_dir, f".{name}.{uuid.uuid4().hex}.partial")
        piece = table.slice(a, b - a) if order is None else table
        try:
            # Row group by row group (the same groups as one write_table): an interrupt of
            # the threads scheduler ends the task at the next one (threads cannot be killed).
            with pq.ParquetWriter(partial, piece.schema, compression=compression,
                                  write_statistics=True) as writer:
                if order is not None:
                    write_in_order(writer, table, order[a:b], row_group_rows,
                                   before_group=check)
                for start in range(0, piece.num_rows if order is None else 0, row_group_rows):
                    check()
                    with stage(WRITE):
                        writer.write_table(piece.slice(start, row_group_rows),
                                           row_group_size=row_group_rows)
            os.replace(partial, final)  # a retried task replaces a whole file, never half of one
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise
        rows.append((number, name, b - a, os.path.getsize(final),
                     pq.ParquetFile(final).metadata.num_row_groups,
                     matrix[a].tobytes().hex(), matrix[b - 1].tobytes().hex()))
    return info_frame(rows)


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


def sort_spilled_range(number: int, runs: Sequence[Tuple[str, int, int]], tmp_dir: str,
                       metadata, size: int, keep_zvalue: bool, zvalue_column: str,
                       rows_per_file: int, row_group_rows: int, compression: str,
                       name_width: int, remove: bool = True):
    """Range ``number`` from its spill runs (one per partition, in partition order: the
    input order), sorted stably by curve value and written as ``write_range`` writes a
    shuffled range; the runs are removed once it is written if ``remove``."""
    import pyarrow as pa

    if interrupted():
        raise Interrupted("stopped before sorting a range")
    paths = [path for path, rows, _ in runs if rows]
    if not paths:
        return info_frame([])
    pieces = []
    for path in paths:
        with pa.OSFile(path, "rb") as source:
            pieces.append(pa.ipc.open_stream(source).read_all())
    table = pa.concat_tables(pieces, promote_options="default").combine_chunks()
    del pieces
    matrix = as_matrix(table.column(table.num_columns - 1))
    order = argsort_zvalues(matrix)
    matrix = np.ascontiguousarray(matrix[order])
    table = table.select(list(range(table.num_columns - 1))).take(order)
    del order
    if metadata is not None:
        table = table.replace_schema_metadata(metadata or None)
    if keep_zvalue:
        zarr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(size), len(matrix), [None, pa.py_buffer(matrix.tobytes())])
        table = table.append_column(pa.field(zvalue_column, pa.binary(size), nullable=False),
                                    zarr)
    info = _write_sorted(table, matrix, number, tmp_dir, rows_per_file, row_group_rows,
                         compression, name_width)
    for path in paths if remove else ():
        with contextlib.suppress(OSError):
            os.remove(path)
    return info


def range_budget(task_bytes: int) -> int:
    """The Arrow bytes (rows and curve values) of one range that a task holding at most
    ``task_bytes`` can sort: the core's share (``Budget``)."""
    return Budget(task_bytes).range_bytes
