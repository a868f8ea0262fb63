"""The three Dask stages of ``cluster``, each run on one partition: survey (row count, a
sample of Z-values, an encoded-size estimate), assign (each row's Z-range number and its
Z-value as words for the shuffle), and write (one range sorted and written as Parquet
files of about the target size). The split keys and file cuts between them are
``zorder.engines.cuts``."""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from zorder.engines.cuts import file_cuts
from zorder.engines.interrupts import Interrupted, interrupted
from zorder.ordered.errors import ColumnError
from zorder.values.codec import from_words, sort_keys, to_words
from zorder.values.ordering import Ordering

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
                  zvalues_of: Optional[Callable[[Any], np.ndarray]] = None) -> float:
    """Estimated Parquet bytes of a partition: the first rows encoded, scaled up; with
    their curve values as one more column when ``zvalues_of(head)`` gives them (the
    output keeps them: a random 24-byte value per row is as big as the rest of a table
    of a few numbers)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(pdf)
    if n == 0:
        return 0.0
    head = pdf.iloc[: min(n, head_rows)]
    table = pa.Table.from_pandas(head, preserve_index=False)
    if zvalues_of is not None:
        z = np.ascontiguousarray(zvalues_of(head))
        table = table.append_column(
            "zvalue", pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(z.shape[1]), len(z), [None, pa.py_buffer(z.tobytes())]))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().size * n / len(head)


def survey(pdf, index: int, columns, ordering: Ordering, sample_rows: int, compression: str,
           keep_zvalue: bool = False):
    """(rows, a sample of each column's ordered bytes, estimated Parquet bytes) of one
    partition: the one sampling pass, from which the client learns rank boundaries (for
    encoding="rank") and cuts the ranges. ``keep_zvalue``: the output keeps the curve
    values, so they count in its size."""
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
    return n, parts, _encoded_size(pdf, compression, zvalues_of=zvalues_of)


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
    import pyarrow.parquet as pq

    if interrupted():
        raise Interrupted("stopped before sorting a range")
    if len(pdf) == 0:
        return info_frame([])
    number = int(pdf.index[0])
    word_cols = [WORD.format(j) for j in range(nwords)]
    words = pdf[word_cols].to_numpy(dtype=np.uint64)
    order = np.lexsort(words.T[::-1])
    words = words[order]
    matrix = from_words(words, size)
    keys = sort_keys(matrix)
    data = pdf.drop(columns=word_cols).reset_index(drop=True)
    table = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    table = table.take(pa.array(order))
    if metadata is not None:
        table = table.replace_schema_metadata(metadata or None)
    if keep_zvalue:
        zarr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(size), len(matrix), [None, pa.py_buffer(matrix.tobytes())]
        )
        table = table.append_column(pa.field(zvalue_column, pa.binary(size), nullable=False), zarr)
    rows = []
    cuts = file_cuts(keys, rows_per_file)
    for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        name = f"part-{number:0{name_width}d}-{j:04d}.parquet"
        final = os.path.join(tmp_dir, name)
        partial = os.path.join(tmp_dir, f".{name}.{uuid.uuid4().hex}.partial")
        piece = table.slice(a, b - a)
        try:
            # Row group by row group (the same groups as one write_table): an interrupt of
            # the threads scheduler ends the task at the next one (threads cannot be killed).
            with pq.ParquetWriter(partial, piece.schema, compression=compression,
                                  write_statistics=True) as writer:
                for start in range(0, piece.num_rows, row_group_rows):
                    if interrupted():
                        raise Interrupted(f"stopped before writing {name}")
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


