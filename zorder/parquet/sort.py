"""Rewrite one Parquet file in Iceberg's Z-order, and say what the new layout lets
readers skip (the library side of ``zorder sort``).

The whole file is read into memory (Arrow), sorted by ``sort_indices`` (the same Z-values
as Iceberg's Spark rewrite, with its options), and written row group by row group, with
the input's row group size and compression unless told otherwise. On two cores: the
curve columns are read first and ordered while a thread reads the other columns, and
each output row group is taken while the ones before it are encoded, on every core
(``zorder.parquet.parallel_writer``). A file whose Arrow size, times
``IN_MEMORY_PEAK``, is over the memory limit takes the out-of-core path
(``zorder.parquet.external``): the same rows in the same order and the same row groups,
in memory bounded by the limit, with spill runs in a temporary folder. Needs pyarrow
(``pip install 'zorder[arrow]'``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption
from zorder.parquet.external import Budget, external_sort, regroup
from zorder.parquet.files import check_reorderable, require_pyarrow
from zorder.parquet.gather import combined_for_take, take_rows
from zorder.parquet.memory import arrow_bytes, format_bytes, memory_limit_of
from zorder.parquet.metadata import without_range_index
from zorder.parquet.parallel_writer import ParallelParquetWriter
from zorder.parquet.safety import (
    atomic_file, check_apart, check_file_output, interrupts_as_exceptions, physical,
    temporary_folder,
)
from zorder.parquet.skipping import REPORT_VALUES, check_report_arguments, skipping_report
from zorder.values.ordering import CURVES, ZORDER, Ordering
from zorder.values.rank import ENCODINGS
from zorder.values.stages import READ, REORDER, REPORT, stage
from zorder.values.sort import sort_order

__all__ = ["IN_MEMORY_PEAK", "ProgressCallback", "check_compression", "check_row_group_size",
           "curve_columns_first", "read_columns", "sort_parquet", "with_columns",
           "write_in_order"]

#: The in-memory path's peak, in times the file's Arrow size (the file, its curve values
#: and the reordered copy): README, "Memory".
IN_MEMORY_PEAK = 4
#: The out-of-core path needs this many times the larger of an input and an output row
#: group in Arrow (the row group being read, the one being written, a range to sort).
_MIN_ROW_GROUPS = 6

#: ``progress(stage, done, total, unit)``: how far the rewrite is.
ProgressCallback = Callable[[str, int, int, str], None]


def check_compression(compression: str, schema: Any) -> None:
    """ValueError naming ``compression`` if pyarrow cannot write Parquet with it (checked
    on an in-memory file, before any work)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.ParquetWriter(pa.BufferOutputStream(), schema, compression=compression).close()
        # A codec the format names but this pyarrow cannot write (lzo) passes the empty
        # file above, which compresses no page; it must also be one Arrow can run.
        codecs = compression.values() if isinstance(compression, dict) else [compression]
        for codec in codecs:
            if isinstance(codec, str) and codec.lower() != "none" \
                    and not pa.Codec.is_available(codec):
                raise ValueError(f"this pyarrow cannot compress with {codec!r}")
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise ValueError(f"compression {compression!r} is not a Parquet codec pyarrow can "
                         f"write ({exc}); use e.g. zstd, snappy, gzip, lz4 or none") from None


def check_row_group_size(row_group_size: Any) -> None:
    """ValueError unless ``row_group_size`` is None or a positive int (rows per group)."""
    if row_group_size is not None and (isinstance(row_group_size, bool) or
                                       not hasattr(row_group_size, "__index__") or
                                       not 0 < row_group_size < 1 << 63):
        # (2**63 and above overflowed pyarrow's int64 with a traceback)
        raise ValueError(f"row_group_size must be a positive int (rows) below 2**63, got "
                         f"{row_group_size!r}")


def _in_memory_layout(table: Any, perm: Any, row_group_size: int, compression: str) -> Any:
    """The Parquet metadata of ``table`` in order ``perm``, written to memory only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, compression=compression) as writer:
        for k in range(0, table.num_rows, row_group_size):
            writer.write_table(take_rows(table, perm[k:k + row_group_size]),
                               row_group_size=row_group_size)
    return pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata


def read_columns(sources: Sequence[Any], names: Optional[List[str]],
                 progress: Optional[ProgressCallback] = None, schema: Any = None,
                 labels: Optional[Sequence[str]] = None,
                 before_group: Optional[Callable[[], None]] = None,
                 keep_chunks: bool = True) -> Any:
    """Columns ``names`` (None: all) of every row group of ``sources`` (ParquetFiles,
    one after another), ready for ``take_rows`` (``gather.combined_for_take``, with
    ``keep_chunks``). ``schema``: the types every file's columns are cast to (a
    dataset's files may differ in width or nullability; a file that cannot be is a
    ValueError naming its entry of ``labels``). ``before_group()`` runs before each row
    group is read (an engine's check for an interrupt)."""
    import pyarrow as pa

    if schema is not None:
        schema = pa.schema(list(schema) if names is None else [schema.field(n) for n in names])
    total = sum(source.metadata.num_row_groups for source in sources)
    pieces: List[Any] = []
    for k, source in enumerate(sources):
        for g in range(source.metadata.num_row_groups):
            if progress is not None:
                progress("reading", len(pieces), total, "row groups")
            if before_group is not None:
                before_group()
            with stage(READ):
                piece = source.read_row_group(g, columns=names)
                if schema is not None and not piece.schema.equals(schema):
                    try:
                        piece = piece.select(schema.names).cast(schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
                        where = labels[k] if labels is not None else f"file {k}"
                        raise ValueError(f"{where} does not cast to the first file's column "
                                         f"types ({exc})") from None
            pieces.append(piece)
    if progress is not None:
        progress("reading", total, total, "row groups")
    with stage(READ):
        if not pieces:
            if schema is None:
                schema = sources[0].schema_arrow
                if names is not None:
                    schema = pa.schema([schema.field(n) for n in names])
            return schema.empty_table()
        holder = [pa.concat_tables(pieces)]
        del pieces
        return combined_for_take(holder, keep_chunks)


def curve_columns_first(names: Sequence[str], columns: Sequence[str]
                        ) -> Tuple[Optional[List[str]], List[str]]:
    """(the curve ``columns`` to read first, the other ``names`` to read beside them), so
    that the curve order is computed while the rest is read; (None: all, []) where the
    columns cannot be read apart by name (a duplicate name, or a dotted one, which could
    be a nested field's path)."""
    curve = list(dict.fromkeys(columns))
    others = [n for n in names if n not in curve]
    if not others or len(set(names)) != len(names) or any("." in n for n in names):
        return None, []
    return curve, others


def with_columns(first: Any, second: Any, schema: Any) -> Any:
    """The columns of two reads of the same rows, in ``schema``'s order."""
    import pyarrow as pa

    found = {**dict(zip(first.column_names, first.columns)),
             **dict(zip(second.column_names, second.columns))}
    return pa.Table.from_arrays([found[n] for n in schema.names], schema=schema)


def write_in_order(writer: ParallelParquetWriter, table: Any, perm: Any, rows: int,
                   progress: Optional[ProgressCallback] = None,
                   before_group: Optional[Callable[[], None]] = None) -> None:
    """Write the rows ``perm`` of ``table`` (``take_rows``' columns), in that order, with
    ``writer``, ``rows`` to a row group: each group is taken here while the ones before
    it are encoded on the writer's threads (Arrow's take and Parquet writer let go of the
    GIL), so the reorder and the write overlap on every core, with at most the writer's
    ``workers`` + 1 groups beside the table. ``before_group()`` runs before each group is
    taken (an engine's check for an interrupt)."""
    ngroups = -(-len(perm) // rows)

    def bar(done: int) -> None:
        if progress is not None:
            progress("writing", done, ngroups, "row groups")

    bar(0)
    for k in range(ngroups):
        if before_group is not None:
            before_group()
        with stage(REORDER):
            group = take_rows(table, perm[k * rows:(k + 1) * rows])
        writer.write_table(group)   # (waits while every worker is busy)
        del group
        bar(writer.placed)
    writer.drain()
    bar(ngroups)


def _input_compression(md) -> str:
    if md.num_row_groups and md.num_columns:
        codec = str(md.row_group(0).column(0).compression).lower()
        return "none" if codec == "uncompressed" else codec
    return "snappy"


def _result(rows: int, md: Any, output: str, size: int) -> Dict[str, Any]:
    """sort_parquet's result for a file written to ``output`` (its report still None)."""
    import pyarrow.parquet as pq

    return {"rows": rows, "row_groups_in": md.num_row_groups,
            "row_groups_out": pq.ParquetFile(output).metadata.num_row_groups,
            "zvalue_bytes": size, "report": None}


def sort_parquet(input: str, output: str, columns: Sequence[str], *,
                 var_length_contribution: int = 8, max_output_size: Optional[int] = None,
                 iceberg: str = ICEBERG_DEFAULT, spark: str = "4", timestamp: TimestampOption = None,
                 options: Optional[IcebergOptions] = None, row_group_size: Optional[int] = None,
                 compression: Optional[str] = None, overwrite: bool = False,
                 progress: Optional[ProgressCallback] = None, report: bool = True,
                 predicates: int = 25, fraction: float = 0.01,
                 curve: str = "zorder", encoding: str = "iceberg",
                 rank_bits: Optional[int] = None,
                 compare: Sequence[str] = (),
                 memory_limit: Union[int, str, None] = None,
                 temp_dir: Optional[str] = None) -> Dict[str, Any]:
    """Rewrite the Parquet file ``input`` to ``output`` with its rows in Z-order (or in
    Hilbert order: ``curve="hilbert"``).

    Args:
        input, output: file paths; ``output`` is written to a temporary file beside it
            and renamed into place when complete. It must differ from ``input``.
        columns: the Z-order columns, in order.
        var_length_contribution, max_output_size, iceberg, spark, timestamp, options:
            as for ``zorder.zorder_values`` (Iceberg's rewrite options).
        row_group_size: rows per output row group (default: the input's largest).
        compression: output codec (default: the input's).
        overwrite: replace an existing ``output``.
        progress: called as ``progress(stage, done, total, unit)`` as the work goes on
            (the command line passes a progress bar's ``update``), or None.
        report, predicates, fraction: compute ``zorder.parquet.skipping.skipping_report`` for
            the Z-order columns, before and after.
        curve: "zorder" (Iceberg's Z-order, the default), "hilbert" (Spark 4.1's Hilbert
            order), or "both": the output in Z-order, and the report also shows what the
            Hilbert order gives (measured on a copy written in memory).
        encoding, rank_bits: "iceberg" (Iceberg's bytes, the default) or "rank" (balanced
            column ranks: not Iceberg's order), as for ``zorder.sort_indices``.
        compare: ("encoding", "curve", or both): the report also shows every other
            encoding and/or curve on the same rows, each written to memory only (out of
            core: to the temporary folder, and removed).
        memory_limit: bytes the rewrite may hold (``2GB``, ``512MiB`` or an int; default
            ``zorder.parquet.memory.DEFAULT_FRACTION`` of the available memory). A file
            whose Arrow size times ``IN_MEMORY_PEAK`` is over it is sorted out of core:
            the same output, spilling ranges of rows to disk. A limit too small for the
            file's row groups is a ValueError, before anything is written.
        temp_dir: an existing folder for the spill runs (default: a hidden folder beside
            ``output``); removed however the rewrite ends.

    Returns:
        ``{"rows", "row_groups_in", "row_groups_out", "zvalue_bytes", "report"}``
        (``report`` None when not asked for).

    Example:
        >>> sort_parquet("events.parquet", "events.z.parquet", ["ts", "user"])  # doctest: +SKIP
    """
    require_pyarrow("zorder sort")
    import pyarrow as pa
    import pyarrow.parquet as pq

    if curve not in (*CURVES, "both"):
        raise ValueError(f"curve must be 'zorder', 'hilbert' or 'both', got {curve!r}")
    # Every argument is checked before the output is touched (a row group size of 0 or
    # less wrote an empty file over it).
    check_row_group_size(row_group_size)
    if report:
        check_report_arguments(predicates, fraction)
    ordering = Ordering.of(options, ZORDER if curve == "both" else curve, encoding, rank_bits,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    unknown = [c for c in compare if c not in ("encoding", "curve")]
    if unknown or isinstance(compare, str):
        raise ValueError(f"compare must name 'encoding' and/or 'curve', got {compare!r}")
    # The report's layouts: this ordering, and those it is compared with (checked now).
    layouts = {"after": ordering}
    curves = list(CURVES.values()) if curve == "both" or "curve" in compare else [ordering.curve]
    encodings = ENCODINGS if "encoding" in compare else (encoding,)
    if report and len(curves) * len(encodings) > 1:
        layouts = {c.name if len(encodings) == 1 else f"{e}/{c.name}" if len(curves) > 1 else e:
                   replace(ordering, curve=c, encoding=e, rank_bits=rank_bits if e == "rank" else None)
                   for e in encodings for c in curves}

    input, output = os.fspath(input), os.fspath(output)
    check_apart(output, input)
    output = physical(output)
    try:
        # INT96 (Spark's legacy timestamps) in microseconds: the nanoseconds pyarrow reads
        # by default wrap dates outside 1677-2262 with no error (9999-12-31 -> 1816).
        source = pq.ParquetFile(input, coerce_int96_timestamp_unit="us")
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {input}") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{input} is not a readable Parquet file ({exc})") from None
    md = source.metadata
    names = source.schema_arrow.names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"columns: {input} has no column {', '.join(map(repr, missing))}; "
            f"its columns: {', '.join(names)}"
        )
    if not columns:
        raise ValueError("columns is empty: name at least one column to Z-order by")
    # Unsupported column types fail here, from the schema, before any data is read.
    ordering.parts(source.schema_arrow.empty_table(), list(columns))
    check_reorderable(source.schema_arrow, repr(input))
    check_file_output(output, overwrite)
    if row_group_size is None:
        row_group_size = max((md.row_group(g).num_rows for g in range(md.num_row_groups)),
                             default=0) or 1 << 20
    if compression is None:
        compression = _input_compression(md)
    check_compression(compression, source.schema_arrow)

    limit = memory_limit_of(memory_limit)
    if temp_dir is not None and not os.path.isdir(temp_dir):
        raise FileNotFoundError(f"temp_dir={temp_dir!r} (--temp-dir) is not an existing folder")

    def bar(stage: str, done: int, total: int, unit: str) -> None:
        if progress is not None:
            progress(stage, done, total, unit)

    decoded = arrow_bytes(md)
    if decoded * IN_MEMORY_PEAK > limit:
        return _sort_out_of_core(
            source, input, output, list(columns), ordering, layouts, limit=limit,
            decoded=decoded, temp_dir=temp_dir, row_group_size=row_group_size,
            compression=compression, progress=bar, report=report, predicates=predicates,
            fraction=fraction)

    # The curve columns first; the order is computed from them while a thread reads the
    # other columns, so the reading and the curve overlap on two cores.
    first, others = curve_columns_first(source.schema_arrow.names, columns)
    with ThreadPoolExecutor(1, thread_name_prefix="zorder-reader") as reader:
        read = read_columns([source], first, bar)
        rest = reader.submit(read_columns, [source], others) if others else None
        bar("z-order", 0, 1, "sort")
        perm, size = sort_order(ordering, read, list(columns))
        bar("z-order", 1, 1, "sort")
        if rest is not None:
            read = with_columns(read, rest.result(), source.schema_arrow)
    # the input's metadata, but a pandas RangeIndex, whose labels would name other rows
    table = read.replace_schema_metadata(without_range_index(source.schema_arrow.metadata))
    del read

    nrows = table.num_rows
    # Written beside the output and renamed over it when complete; a kill (SIGTERM) runs
    # the same cleanup as Ctrl-C, so the old output stays whole until then.
    with interrupts_as_exceptions(), atomic_file(output) as tmp:
        with ParallelParquetWriter(tmp, table.schema, compression=compression) as writer:
            write_in_order(writer, table, perm, row_group_size, bar)

    result = _result(nrows, md, output, size)
    if report:
        with stage(REPORT):
            values = {c: table.column(c) for c in columns}
            written = {name: output if o == ordering else [_in_memory_layout(
                table, sort_order(o, table, list(columns))[0], row_group_size, compression)]
                for name, o in layouts.items()}
            result["report"] = skipping_report(input, written, columns, fraction=fraction,
                                               predicates=predicates, values=values)
    return result


def _check_limit(md: Any, decoded: int, limit: int, row_group_size: int) -> None:
    """ValueError naming ``memory_limit`` when it cannot hold what the out-of-core path
    holds at once: a row group read, one written, a range to sort."""
    row_bytes = decoded / max(1, md.num_rows)
    largest = max((md.row_group(g).num_rows for g in range(md.num_row_groups)), default=0)
    need = int(_MIN_ROW_GROUPS * row_bytes * max(largest, row_group_size)) + 1
    if limit < need:
        advice = (f"or fewer rows per output row group than row_group_size={row_group_size} "
                  f"(--row-group-size)"
                  if row_group_size >= largest else
                  f"the input's row groups hold up to {largest:,} rows")
        raise ValueError(
            f"memory_limit={limit} (--memory-limit) is too small for this file: its rows "
            f"take about {format_bytes(row_bytes)} each in Arrow, and the rewrite holds "
            f"row groups of {max(largest, row_group_size):,} rows several times at once; "
            f"give at least {format_bytes(need)}, {advice}")


class _ReportValues:
    """The values the skipping report cuts its predicates from, gathered from the input
    streamed twice, never holding a whole column: the first pass counts each column's
    non-null, non-NaN values, the second keeps those ``skipping.sorted_sample`` would
    take from the whole column (evenly spaced, at most ``REPORT_VALUES``), so the
    report is the in-memory path's."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.counts = [0] * len(self.columns)
        self.kept: List[List[Any]] = [[] for _ in self.columns]
        self.wanted: List[Any] = []
        self.seen: List[int] = []

    @staticmethod
    def _valid(column: Any) -> Any:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = pc.is_valid(column)
        if pa.types.is_floating(column.type):
            mask = pc.and_kleene(mask, pc.invert(pc.is_nan(column)))
        return np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))

    def count(self, batches: Any) -> Iterator[Any]:
        """``batches`` (the first pass), counting as they go by."""
        for batch in batches:
            for i, name in enumerate(self.columns):
                self.counts[i] += len(self._valid(batch.column(name)))
            yield batch

    def gather(self, batches: Any) -> Iterator[Any]:
        """``batches`` (the second pass), keeping the report's values as they go by."""
        import numpy as np

        for total in self.counts:
            if total > REPORT_VALUES:
                step = total / REPORT_VALUES
                self.wanted.append(np.array([int(i * step) for i in range(REPORT_VALUES)]))
            else:
                self.wanted.append(None)
        self.seen = [0] * len(self.columns)
        for batch in batches:
            for i, name in enumerate(self.columns):
                column = batch.column(name)
                valid = self._valid(column)
                if self.wanted[i] is None:
                    at = valid
                else:
                    lo, hi = np.searchsorted(self.wanted[i],
                                             [self.seen[i], self.seen[i] + len(valid)])
                    at = valid[self.wanted[i][lo:hi] - self.seen[i]]
                if len(at):
                    self.kept[i].append(column.take(at))
                self.seen[i] += len(valid)
            yield batch

    def values(self, schema: Any) -> Dict[str, Any]:
        import pyarrow as pa

        return {name: pa.chunked_array(self.kept[i], type=schema.field(name).type)
                for i, name in enumerate(self.columns)}


def _sort_out_of_core(source: Any, input: str, output: str, columns: List[str],
                      ordering: Ordering, layouts: Dict[str, Ordering], *, limit: int,
                      decoded: int, temp_dir: Optional[str], row_group_size: int,
                      compression: str, progress: ProgressCallback, report: bool,
                      predicates: int, fraction: float) -> Dict[str, Any]:
    """``sort_parquet`` with the rows streamed through spill runs (``external_sort``)."""
    import pyarrow.parquet as pq

    md = source.metadata
    nrows = md.num_rows
    _check_limit(md, decoded, limit, row_group_size)
    # Read as a stream: pre-buffering (pyarrow's default) reads ahead the whole file's
    # column chunks into memory.
    source = pq.ParquetFile(input, coerce_int96_timestamp_unit="us", pre_buffer=False)
    metadata = without_range_index(source.schema_arrow.metadata)
    schema = source.schema_arrow.remove_metadata()
    if metadata:
        schema = schema.with_metadata(metadata)
    row_bytes = decoded / max(1, nrows)
    budget = Budget(limit)
    ngroups = -(-nrows // row_group_size)
    wanted = _ReportValues(columns) if report else None

    def sort_into(path: str, layout: Ordering, folder: str,
                  values: Optional[_ReportValues]) -> int:
        sample_rows = budget.batch_rows(row_bytes)
        sample = source.iter_batches(batch_size=sample_rows, columns=columns)

        def batches(rows: int) -> Any:
            stream = source.iter_batches(batch_size=rows)
            return stream if values is None else values.gather(stream)

        done = external_sort(
            sample if values is None else values.count(sample), batches, nrows, layout,
            columns, schema=schema, budget=budget, spill_folder=folder,
            row_bytes=row_bytes, progress=progress)
        with pq.ParquetWriter(path, schema, compression=compression) as writer:
            progress("writing", 0, ngroups, "row groups")
            for k, group in enumerate(regroup(done.tables, row_group_size)):
                writer.write_table(group, row_group_size=row_group_size)
                progress("writing", k + 1, ngroups, "row groups")
        return done.value_bytes

    # Spill runs in a folder of their own, and the output beside its place, both removed
    # on any failure or interrupt (SIGTERM included); the old output stays whole.
    with interrupts_as_exceptions(), temporary_folder(output, "spill", temp_dir) as folder:
        with atomic_file(output) as tmp:
            size = sort_into(tmp, ordering, folder, wanted)
        result = _result(nrows, md, output, size)
        if wanted is not None:
            written: Dict[str, Any] = {}
            for name, layout in layouts.items():
                if layout == ordering:
                    written[name] = output
                    continue
                path = os.path.join(folder, f"layout-{len(written)}.parquet")
                sort_into(path, layout, folder, None)
                written[name] = [pq.read_metadata(path)]
                os.remove(path)
            result["report"] = skipping_report(input, written, columns, fraction=fraction,
                                               predicates=predicates,
                                               values=wanted.values(schema))
    return result
