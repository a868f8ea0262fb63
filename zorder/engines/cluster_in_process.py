"""``zorder cluster`` in this process: the Parquet files read once, with pyarrow.

On a scheduler that runs its tasks in this process (Dask's threads, ``sync``) a shuffle
only moves rows from one place in memory to another, and the Dask path pays for it twice:
its survey reads every partition before the shuffle reads it again, and both go through
pandas. Here, where the files fit in memory, they are read once into Arrow: the curve
columns first, and while a thread reads the other columns, their ordered bytes, each
file's sample (what a Dask partition's survey takes), the rank boundaries and the stable
sort of all rows by curve value (ties in input order, as the shuffled ranges and the spill
runs keep them). The driver cuts the ranges from the samples as it does for Dask's
partitions; each range is cut into files by ``file_cuts``, and the files are written two
at a time, each row group taken while the one before it is written. The files, their
names and their rows are those of the Dask path on the same splits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import numpy as np

from zorder.engines.cuts import file_cuts
from zorder.engines.dask_scheduler import announce
from zorder.engines.dask_stages import (
    estimated_size, info_frame, learn_boundaries, sample_parts, write_file,
)
from zorder.engines.interrupts import Interrupted, StoppablePool, interrupted
from zorder.ordered.errors import ColumnError
from zorder.parquet.sort import curve_columns_first, read_columns, with_columns
from zorder.values.codec import sort_keys
from zorder.values.ordering import Ordering
from zorder.values.sort import argsort_zvalues

__all__ = ["Survey", "survey_files", "write_ranges"]


@dataclass
class Survey:
    """The files' rows in Arrow, the ordering (rank boundaries learned), the rows' curve
    values as sort keys and the order that sorts them, and per file what a Dask
    partition's survey gives: ``(rows, sampled ordered bytes, estimated Parquet bytes,
    estimated Arrow bytes)``."""

    table: Any
    ordering: Ordering
    keys: np.ndarray
    order: np.ndarray
    stats: List[Tuple[int, List[np.ndarray], float, float]]


def survey_files(paths: Sequence[str], schema: Any, columns: Sequence[str],
                 ordering: Ordering, sample_rows: int, compression: str,
                 keep_zvalue: bool, progress: bool) -> Survey:
    """Read ``paths`` (cast to ``schema``) once, survey each file as a partition
    (``dask_stages.survey``'s sample: the same rows of a piece of the same size and
    index), learn the rank boundaries from those samples as the driver does, and sort
    the rows by their curve values, while a thread reads the columns not in the curve.
    A bad value is a ValueError naming its file and its row there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sources = [pq.ParquetFile(path) for path in paths]
    labels = [repr(path) for path in paths]
    names = list(schema.names)
    first, others = curve_columns_first(names, columns)
    counts = [source.metadata.num_rows for source in sources]
    starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    announce(progress, f"reading {len(paths)} files in this process")
    # (an interrupt here stops the reader at its next row group, not after the read)
    with StoppablePool(1, "zorder-reader") as reader:
        # (combined: the chunks of many files keep their reader's slack, about a third
        # more than the rows, for the whole write: NOTES "Reorder: columns of several
        # chunks")
        read = read_columns(sources, first, schema=schema, labels=labels, keep_chunks=False)
        rest = reader.submit(read_columns, sources, others, schema=schema, labels=labels,
                             before_group=_check, keep_chunks=False) if others else None
        try:
            parts = ordering.parts(read, list(columns))
        except ColumnError as exc:
            if exc.first is not None:
                k = int(np.searchsorted(starts[1:], exc.first, side="right"))
                exc.where = f"{labels[k]}'s {exc.where}"
                exc.first -= int(starts[k])
            raise
        samples = [sample_parts([p[starts[k]:starts[k + 1]] for p in parts], k, sample_rows)
                   for k in range(len(paths))]
        ordering = learn_boundaries(ordering, counts, samples, columns)
        values = ordering.values(parts)
        del parts
        order = argsort_zvalues(values)
        if rest is not None:
            read = with_columns(read, rest.result(), schema)
    table = read.select(names)
    del read
    n = table.num_rows
    if keep_zvalue:
        size = values.shape[1]
        table = table.append_column(
            pa.field(KEPT_VALUES, pa.binary(size), nullable=False),
            pa.FixedSizeBinaryArray.from_buffers(pa.binary(size), n,
                                                 [None, pa.py_buffer(values)]))
    keys = sort_keys(values)
    # the sizes from about as many rows as one partition's head, spread over the files
    head_rows = max(1, -(-50_000 // max(1, len(paths))))
    heads = [table.slice(int(starts[k]), min(counts[k], head_rows)).select(names)
             for k in range(len(paths))]
    head = pa.concat_tables(heads) if heads else table.select(names).schema.empty_table()
    parquet, arrow = estimated_size(head, n, columns, ordering, compression, keep_zvalue)
    stats = [(rows, samples[k], parquet * rows / n, arrow * rows / n) if n else
             (rows, samples[k], 0.0, 0.0) for k, rows in enumerate(counts)]
    return Survey(table, ordering, keys, order, stats)


def _check() -> None:
    if interrupted():
        raise Interrupted("stopped while reading")


#: The curve values' column while the surveyed rows are held (renamed when written).
KEPT_VALUES = "__zorder_values"
#: Files written at once: each takes its row groups while its writer thread writes the
#: one before (a Parquet writer encodes a row group on one core).
WRITERS = 2


def write_ranges(survey: Survey, splits: np.ndarray, tmp_dir: str, metadata: Any,
                 keep_zvalue: bool, zvalue_column: str, rows_per_file: int,
                 row_group_rows: int, compression: str, name_width: int,
                 progress: bool) -> Any:
    """The surveyed rows, in their curve order, written range by range (``splits``, as
    the Dask path's ranges, each cut into files by ``file_cuts``) into ``tmp_dir``,
    ``WRITERS`` files at a time; the info frame of the files
    (``dask_stages.INFO_COLUMNS``)."""
    table, order = survey.table, survey.order
    if keep_zvalue:
        table = table.rename_columns([zvalue_column if name == KEPT_VALUES else name
                                      for name in table.column_names])
    table = table.replace_schema_metadata(metadata or None)
    keys = survey.keys[order]
    n = len(keys)
    bounds = [0, *np.searchsorted(keys, splits, side="left").tolist(), n]
    files: List[Tuple[int, int, int, int]] = []
    for number, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        if lo < hi:
            cuts = [lo + c for c in file_cuts(keys[lo:hi], rows_per_file)]
            files.extend((number, j, a, b) for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])))
    announce(progress, f"writing {n} rows in {len(bounds) - 1} ranges, {len(files)} files")
    with StoppablePool(WRITERS, "zorder-writer") as pool:
        jobs = [pool.submit(write_file, table, order, keys, a, b, number, j, tmp_dir,
                            row_group_rows, compression, name_width)
                for number, j, a, b in files]
        return info_frame([job.result() for job in jobs])
