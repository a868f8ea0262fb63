"""Z-order clustering of a partitioned Parquet dataset on Dask (optional extra ``dask``).

``cluster`` does what Iceberg's ``rewrite_data_files(strategy='sort',
sort_order='zorder(a, b)')`` does on Spark, with Dask as the engine and ``zorder`` as the
kernel:

1. every partition computes its Z-values with :func:`zorder.zorder_values` (Iceberg's Spark
   UDF, byte for byte; the kernels run without the GIL);
2. a sample of Z-values from every partition gives ``n - 1`` split points, weighted by
   partition size, as Dask's own ``set_index``/``sort_values`` do;
3. each row gets the number of the range its Z-value falls in, Dask shuffles on that
   number (one output partition per range), and each output partition is sorted by Z-value
   and written as Parquet files of about ``target_file_size``;
4. the files land in a temporary folder next to ``out_dir`` that is renamed into place only
   when every file is written and the row count checks out, so a failed job leaves no
   partial output.

On a scheduler in this process (``threads``, ``sync``), a Parquet input that fits in
memory takes steps 1-3 without Dask: read once with pyarrow, sorted once, the ranges cut
alike (``cluster_in_process``).

The output is globally ordered: file names sort in Z-order and each file's Z-values are all
below the next file's. Equal Z-values never straddle two files. The Z-value column is
dropped before writing, as Iceberg does, unless ``keep_zvalue=True``.

Why not hand the Z-values to Dask's ``sort_values``/``set_index``: they are fixed-size byte
strings compared as unsigned bytes, which Dask has no column type for. As big-endian
``uint64`` words, ``sort_values(by=[w0, w1, ...])`` takes its divisions from ``w0`` alone,
and Iceberg's bytes often leave the first word nearly constant (a 32-bit integer widened
to 8 bytes carries one bit of information in its top 33), so the ranges would be skewed; Dask also interpolates
under-sampled percentiles in float64, which cannot hold a 64-bit word. As hex strings the
order is right but every key doubles in size and compares as a Python string. So here the
split points are real Z-values from the sample, compared exactly (numpy's fixed-width
``S`` strings compare as unsigned bytes; all keys have one width, so the zero padding
numpy trims never makes two different keys equal), and Dask only ever shuffles on a small
integer range number (``set_index`` with explicit divisions ``0, 1, ..., n-1``). The
Z-value travels through the shuffle as big-endian ``uint64`` words, zero-padded to a
multiple of 8 bytes: plain numeric columns that every shuffle method carries losslessly,
whose lexicographic order (``numpy.lexsort``, first word most significant) is exactly the
byte order, for the sort inside each range.

>>> from zorder.dask import cluster                                   # doctest: +SKIP
>>> result = cluster("events/", "events_z/", ["ts", "user_id"],       # doctest: +SKIP
...                  target_file_size="128MB", scheduler="tcp://scheduler:8786")
>>> result.files[0].path, result.rows                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from zorder.cpu.cores import usable_cores
from zorder.engines import dask_stages as stages
from zorder.engines.cluster_in_process import survey_files, write_ranges
from zorder.engines.cuts import choose_splits
from zorder.engines.dask_scheduler import (
    WORKER_DATA_SHARE, check_connect_timeout, check_scheduler, compute, local_workers,
    running_on, worker_memory,
)
from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption
from zorder.parquet.external import Budget
from zorder.parquet.files import dataset_schema, parquet_files
from zorder.parquet.memory import arrow_bytes, format_bytes, memory_limit_of
from zorder.parquet.metadata import without_range_index
from zorder.parquet.safety import (
    check_apart, check_folder_output, check_no_shared_files, interrupts_as_exceptions,
    physical, replace_folder, sibling, temporary_folder,
)
from zorder.parquet.sort import IN_MEMORY_PEAK, check_compression, check_row_group_size
from zorder.parquet.sizes import parse_size
from zorder.values.ordering import Ordering
from zorder.values.stages import COMMIT, stage
from zorder.values.table import check_column_names

__all__ = ["ClusterResult", "FileInfo", "MANIFEST", "cluster", "require_dask"]

MANIFEST = "_zorder.json"

def require_dask(what: str = "zorder.dask") -> None:
    """Import dask, dask.dataframe and pyarrow, or say which extra installs them."""
    try:
        import dask  # noqa: F401
        import dask.dataframe  # noqa: F401
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{what} needs dask[dataframe] and pyarrow ({exc}); "
            "install them with: pip install 'zorder[dask]'"
        ) from exc


# ---------------------------------------------------------------------------------------
# Driver


@dataclass(frozen=True)
class FileInfo:
    """One written file: its path, row count, size, row groups and Z-value range (hex)."""

    path: str
    rows: int
    bytes: int
    row_groups: int
    zmin: str
    zmax: str


@dataclass
class ClusterResult:
    """What ``cluster`` wrote, in Z-order."""

    out_dir: str
    columns: List[str]
    rows: int
    zvalue_size: int
    files: List[FileInfo] = field(default_factory=list)
    ranges: int = 0
    estimated_bytes: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _files_read_by(ddf) -> Optional[List[str]]:
    """The files a Dask DataFrame reads (dask-expr read_parquet/read_csv/...), [] when it
    reads none, None when that cannot be told."""
    expr = getattr(ddf, "expr", None)
    if expr is None or not hasattr(expr, "walk"):
        return None
    found: List[str] = []
    for node in expr.walk():
        if not type(node).__name__.startswith("Read"):
            continue
        info = getattr(node, "_dataset_info", None)
        if isinstance(info, dict) and "ds" in info:
            found.extend(str(f) for f in info["ds"].files)
            continue
        path = getattr(node, "path", None) if "path" in getattr(node, "_parameters", ()) else None
        if path is None:
            return None
        found.extend(str(p) for p in (path if isinstance(path, (list, tuple)) else [path]))
    return found


def _holds_parquet(folder: str) -> bool:
    return os.path.isdir(folder) and any(
        name.endswith(".parquet") for _, _, names in os.walk(folder) for name in names)


def cluster(
    data,
    out_dir: str,
    columns: Union[Sequence[str], str],
    *,
    target_file_size: Union[int, str] = "128MB",
    row_group_size: Optional[int] = None,
    row_group_bytes: Union[int, str] = "128MB",
    keep_zvalue: bool = False,
    zvalue_column: Optional[str] = None,
    var_length_contribution: int = 8,
    max_output_size: Optional[int] = None,
    iceberg: str = ICEBERG_DEFAULT,
    spark: str = "4",
    timestamp: TimestampOption = None,
    options: Optional[IcebergOptions] = None,
    curve: str = "zorder",
    encoding: str = "iceberg",
    rank_bits: Optional[int] = None,
    boundaries: Any = None,
    compression: str = "zstd",
    overwrite: bool = False,
    scheduler=None,
    connect_timeout: float = 10.0,
    input_is_elsewhere: bool = False,
    shuffle_method: Optional[str] = None,
    sample_rows: int = 2_000,
    progress: bool = False,
    memory_limit: Union[int, str, None] = None,
    temp_dir: Optional[str] = None,
) -> ClusterResult:
    """Z-order cluster ``data`` (a Dask DataFrame or a Parquet file/folder) into ``out_dir``.

    ``columns``: the clustering columns, in Z-order (as in ``zorder(a, b)``).
    ``target_file_size``: bytes or a string like ``"128MB"``/``"64MiB"``, turned into a row
    count with an estimate of the encoded bytes per row (a partition's first rows,
    encoded). ``row_group_size``: rows per row group, as pyarrow's; without it,
    ``row_group_bytes`` (bytes or a size string) is turned into rows the same way.
    ``var_length_contribution``, ``max_output_size``, ``iceberg``, ``spark``, ``timestamp``,
    or all of them at once as ``options`` (an ``IcebergOptions``): passed to
    :func:`zorder.zorder_values`, with Iceberg's meaning.
    ``curve``: "zorder" (Iceberg's Z-order) or "hilbert" (Spark 4.1's Hilbert order).
    ``encoding``: "iceberg" (Iceberg's bytes) or "rank" (balanced column ranks, not
    Iceberg's order): ``boundaries`` (a ``RankBoundaries``, e.g. from an earlier run's
    ``_zorder.json``) or, by default, learned from the same sample that cuts the ranges;
    they are recorded in ``_zorder.json`` for the next increment.
    ``keep_zvalue`` keeps the curve values as a FixedSizeBinary column named ``zvalue_column``
    (default Iceberg's name, ICEZVALUE or ICEHVALUE)
    (Iceberg drops it). ``sample_rows``: Z-values sampled per partition for the split points.
    ``scheduler``: ``None`` (a current ``distributed.Client`` if there is one, else Dask's
    default), ``"threads"``, ``"processes"``, ``"sync"``, ``"local:N"`` (a
    ``distributed.LocalCluster`` of N worker processes sharing ``memory_limit``, started
    for the job and stopped after it), a scheduler address, or a Client.
    A remote cluster's workers must see ``out_dir``'s folder at the same path. On a
    scheduler in this process (``threads``, ``sync``, or none and no current Client), a
    Parquet input that fits in memory skips the survey's second read and the shuffle: it
    is read once and sorted once here (``zorder.engines.cluster_in_process``), the same
    rows in the same order.
    ``memory_limit``: bytes the job may hold (``4GB``, ``512MiB`` or an int; default
    ``zorder.parquet.memory.DEFAULT_FRACTION`` of the available memory); on a distributed
    cluster, its workers' own limits count instead. Data whose Arrow size times
    ``IN_MEMORY_PEAK`` is over it is clustered out of core: no shuffle, each partition's
    rows appended to spill runs on disk, one per range, and each range, sized to fit one
    task's share of the memory, sorted and written by a task of its own (a range still
    too large, a heavily repeated value, is split again or streamed in that task). A
    limit too small for the input's partitions is a ValueError, before anything is
    written.
    ``temp_dir``: an existing folder for the spill runs (default: a hidden folder beside
    ``out_dir``; on a cluster, every worker must see it); removed however the job ends.
    ``connect_timeout``: seconds to reach a scheduler address before giving up.
    ``out_dir`` is never the input under any name (checked through symbolic and hard
    links, both ways); for a Dask DataFrame, against the files it reads. Where those cannot
    be found, ``overwrite`` onto a folder holding Parquet files is refused unless
    ``input_is_elsewhere=True`` says the data does not come from there.
    ``compression``: the Parquet codec (Iceberg's default is zstd).

    The index of a Dask DataFrame is not written (``reset_index()`` first to keep it).
    Returns a :class:`ClusterResult`; raises, leaving ``out_dir`` untouched, if anything fails.
    """
    require_dask()
    import dask
    import dask.dataframe as dd
    import pyarrow as pa

    ordering = Ordering.of(options, curve, encoding, rank_bits, boundaries,
                           var_length_contribution=var_length_contribution,
                           max_output_size=max_output_size, iceberg=iceberg, spark=spark,
                           timestamp=timestamp)
    target = parse_size(target_file_size, "target_file_size")
    group_bytes = parse_size(row_group_bytes, "row_group_bytes")
    check_row_group_size(row_group_size)
    check_connect_timeout(connect_timeout)
    if not isinstance(sample_rows, (int, np.integer)) or isinstance(sample_rows, bool) or sample_rows < 1:
        raise ValueError(f"sample_rows must be a positive int, got {sample_rows!r}")
    if zvalue_column is None:
        zvalue_column = ordering.curve.value_column
    if not isinstance(zvalue_column, str) or not zvalue_column:
        raise TypeError("zvalue_column must be a non-empty str")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a path, not {type(out_dir).__name__}")
    out_dir = os.fspath(out_dir)

    data_path = None
    schema = metadata = None
    if isinstance(data, (str, os.PathLike)):
        data_path = os.fspath(data)
        if not os.path.exists(data_path):
            raise ValueError(f"data {data_path!r} does not exist")
        files = parquet_files(data_path) if os.path.isdir(data_path) else [data_path]
        if not files:
            raise ValueError(f"data {data_path!r} holds no Parquet files")
        # Every footer read and compared first; then Dask reads exactly these files (not
        # the folder, whose _metadata file Dask would trust: a stale one lost the rows of
        # files written after it), so the job, its check and its report agree.
        schema = dataset_schema(data_path, files)
        # (none in common is none written: not the metadata pandas writes for its frames,
        # whose types, int64[pyarrow] and the like, change how pandas reads the files back)
        metadata = without_range_index(schema.metadata) or {}
        schema = schema.remove_metadata()
        ddf = dd.read_parquet(files, dtype_backend="pyarrow", index=False,
                              ignore_metadata_file=True,
                              blocksize=_blocksize(scheduler, memory_limit_of(memory_limit)))
    elif isinstance(data, dd.DataFrame):
        ddf = data
        sources = _files_read_by(ddf)
        for source in sources or ():
            check_apart(out_dir, source, "out_dir", "a file the DataFrame reads")
        if sources is None and overwrite and not input_is_elsewhere and _holds_parquet(out_dir):
            raise ValueError(
                f"out_dir {out_dir!r} holds Parquet files and zorder cannot tell which files "
                "the DataFrame reads; pass input_is_elsewhere=True if they are not these"
            )
    else:
        raise TypeError(f"data must be a dask DataFrame or a Parquet path, not {type(data).__name__}")

    columns = check_column_names(columns, list(ddf.columns))
    reserved = [c for c in ddf.columns if str(c).startswith("__zorder_")]
    if reserved:
        raise ValueError(f"column names starting with __zorder_ are reserved: {reserved}")
    if keep_zvalue and zvalue_column in ddf.columns:
        raise ValueError(f"zvalue_column {zvalue_column!r} is already a column of the data")
    # Fail here, on fake rows of the right types, rather than in a task on a worker.
    probe = ordering.parts(stages._arrow_of(ddf._meta_nonempty, columns), list(columns))
    size = ordering.size([p.shape[1] for p in probe])
    nwords = max(1, -(-size // 8))
    if schema is None:
        schema = pa.Schema.from_pandas(ddf._meta, preserve_index=False).remove_metadata()
        if any(pa.types.is_null(f.type) for f in schema):
            schema = None  # object columns: let each file infer its types

    check_scheduler(scheduler)
    limit = memory_limit_of(memory_limit)
    if temp_dir is not None:
        temp_dir = os.fspath(temp_dir)
        if not os.path.isdir(temp_dir):
            raise FileNotFoundError(f"temp_dir={temp_dir!r} (--temp-dir) is not an existing "
                                    "folder")
    if data_path is not None:
        check_apart(out_dir, data_path, "out_dir", "the input")
        check_no_shared_files(out_dir, files)
    check_folder_output(out_dir, overwrite)
    check_compression(compression, schema if schema is not None else pa.schema([]))
    out_dir = physical(out_dir)
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    tmp = sibling(out_dir, "tmp")
    try:
        # Inside the try: a Ctrl-C landing just after mkdir returns still removes the folder.
        os.mkdir(tmp)
        with interrupts_as_exceptions(), running_on(
                scheduler, connect_timeout, memory_limit=limit,
                local_directory=temp_dir) as client:
            if client is not None:
                seen = client.run(os.path.isdir, tmp)
                blind = sorted(w for w, ok in seen.items() if not ok)
                if blind:
                    raise ValueError(
                        f"workers {blind} cannot see {tmp!r}: out_dir must be on a filesystem "
                        "that every worker mounts at the same path"
                    )
            task_bytes, slots = _task_memory(client, scheduler, limit)
            in_process = False
            if data_path is not None:
                # a partition is read whole by Dask for the survey: one too large for a
                # task's share (a row group past the blocksize) is refused before
                total_arrow, largest = _footer_sizes(files)
                if total_arrow * IN_MEMORY_PEAK > task_bytes * slots:
                    _check_partitions(largest, task_bytes, slots, limit, client is not None)
                else:
                    # tasks in this process: the files read once, no shuffle
                    in_process = client is None and scheduler != "processes"
            # At most ~1M sampled keys reach the client, however many partitions there are.
            pieces = len(files) if in_process else ddf.npartitions
            per_part = int(max(50, min(sample_rows, stages.MAX_SAMPLE // max(1, pieces))))
            if in_process:
                held = survey_files(files, schema, columns, ordering, per_part, compression,
                                    keep_zvalue, progress)
                stats, ordering = held.stats, held.ordering
            else:
                parts = ddf.to_delayed()
                survey = dask.delayed(stages.survey, pure=True)
                batch_bytes = Budget(task_bytes).batch_bytes
                stats = compute(
                    [survey(p, i, columns, ordering, per_part, compression, keep_zvalue,
                            batch_bytes)
                     for i, p in enumerate(parts)],
                    client, progress, f"sampling Z-values of {len(parts)} partitions",
                )
            counts = [s[0] for s in stats]
            ordering = stages.learn_boundaries(ordering, counts, [s[1] for s in stats], columns)
            total_rows = int(sum(counts))
            est_bytes = float(sum(s[2] for s in stats))
            arrow_total = float(sum(s[3] for s in stats))
            bytes_per_row = est_bytes / total_rows if total_rows else 1.0
            nranges = max(1, min(math.ceil(est_bytes / target), max(1, total_rows)))
            rows_per_file = max(1, int(target / max(bytes_per_row, 1e-9)))
            group_rows = row_group_size or max(1, int(group_bytes / max(bytes_per_row, 1e-9)))
            group_rows = int(min(group_rows, rows_per_file))
            out_of_core = not in_process and arrow_total * IN_MEMORY_PEAK > task_bytes * slots
            sort_bytes = stages.sort_share(task_bytes) if out_of_core else task_bytes
            if out_of_core or client is not None:
                # every range, with its curve values, sorted within one task's share
                if out_of_core:
                    _check_partitions(max((float(s[3]) for s in stats), default=0.0),
                                      task_bytes, slots, limit, client is not None)
                range_bytes = Budget(sort_bytes).range_bytes
                fit = math.ceil((arrow_total + total_rows * size) * 1.25 / range_bytes)
                nranges = max(1, min(max(nranges, fit), max(1, total_rows)))
                if out_of_core:
                    # a range task holds the file it cuts (a window of a quarter of a
                    # file, a row group) beside the sort: at most a range's rows each,
                    # as when a range was written whole (a heavy value, a range past
                    # its share, gets files of that size, not of the target's)
                    fit_rows = max(1, int(range_bytes / (arrow_total / max(1, total_rows)
                                                         + size)))
                    rows_per_file = min(rows_per_file, fit_rows)
                    group_rows = min(group_rows, rows_per_file)
            keys = [stages.sample_keys(ordering, s[1]) for s in stats]
            splits = choose_splits(counts, keys, nranges)
            if len(splits) == 0:
                splits = np.array([], dtype=f"S{size}")
            nranges = len(splits) + 1
            name_width = max(5, len(str(nranges - 1)))

            if in_process:
                info = write_ranges(held, splits, tmp, metadata, keep_zvalue,
                                    zvalue_column, rows_per_file, group_rows, compression,
                                    name_width, progress)
                del held
            elif out_of_core:
                with temporary_folder(out_dir, "spill", temp_dir) as folder:
                    if client is not None:
                        _check_seen(client, folder, "temp_dir (--temp-dir)" if temp_dir
                                    else "out_dir")
                    info = _spilled(parts, client, progress, columns, ordering, splits,
                                    folder, tmp, schema, metadata, size, keep_zvalue,
                                    zvalue_column, rows_per_file, group_rows, compression,
                                    name_width, task_bytes, sort_bytes, total_rows)
            else:
                meta = ddf._meta.copy()
                for j in range(nwords):
                    meta[stages.WORD.format(j)] = np.array([], np.uint64)
                meta[stages.PART] = np.array([], np.int64)
                keyed = ddf.map_partitions(stages.assign, columns, ordering, splits, nwords,
                                           meta=meta)
                # p2p needs a distributed client; a local scheduler shuffles with tasks,
                # even while some distributed Client happens to exist in the process.
                method = shuffle_method or ("p2p" if client is not None else "tasks")
                kwargs = {"shuffle_method": method}
                ranged = keyed.set_index(stages.PART,
                                         divisions=list(range(nranges)) + [nranges - 1], **kwargs)
                written = ranged.map_partitions(
                    stages.write_range, tmp, schema, metadata, size, nwords, keep_zvalue,
                    zvalue_column, rows_per_file, group_rows, compression, name_width,
                    meta=stages.info_frame([]), enforce_metadata=False,
                )
                (info,) = compute([written], client, progress,
                                  f"range-partitioning {total_rows} rows into {nranges} ranges "
                                  "and writing")
            with stage(COMMIT):
                result = _finish(info, tmp, out_dir, columns, total_rows, size, nranges,
                                 est_bytes, ordering, keep_zvalue, zvalue_column)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.lexists(tmp):
            note = getattr(exc, "add_note", None)
            if note is not None:
                note(f"zorder could not remove its temporary folder {tmp!r}")
        raise
    return result


#: Dask's own partition size for Parquet (uncompressed bytes), the most asked for.
_DASK_BLOCKSIZE = 256 << 20


def _blocksize(scheduler, limit: int) -> int:
    """Partitions of a Parquet input (Dask's ``blocksize``, which splits files at row
    groups) small enough that a task's share of ``limit`` holds one several times:
    Dask's default where it fits."""
    workers = local_workers(scheduler)
    if workers is not None:
        share = int(limit / workers * WORKER_DATA_SHARE)
    elif scheduler in ("sync", "synchronous"):
        share = limit
    elif scheduler is None or scheduler in ("threads", "processes"):
        share = limit // usable_cores()
    else:
        return _DASK_BLOCKSIZE   # a cluster's workers: their limits are not known yet
    return max(1 << 20, min(_DASK_BLOCKSIZE, share // (2 * _PARTITION_PEAK)))


def _task_memory(client, scheduler, limit: int) -> Tuple[int, int]:
    """(bytes of data one task may hold, tasks running at once): a distributed cluster's
    own worker limits where they are stated, else ``limit`` shared by the local
    scheduler's threads or processes."""
    if client is not None:
        found = worker_memory(client)
        if found is not None:
            return found
        slots = max(1, sum(client.nthreads().values()))
    else:
        slots = 1 if scheduler in ("sync", "synchronous") else usable_cores()
    return max(1, limit // slots), slots


#: A spilling task holds its partition, in pandas and in Arrow, and a batch of it with
#: its curve values: about this many times the partition's Arrow size.
_PARTITION_PEAK = 2


def _footer_sizes(files: Sequence[str]) -> Tuple[int, int]:
    """(the Arrow bytes of ``files``' rows, of their largest row group), estimated from
    their footers (``parquet.memory.arrow_bytes``)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    def one(path: str) -> Tuple[int, int]:
        metadata = pq.ParquetFile(path).metadata
        groups = [arrow_bytes(metadata, range(g, g + 1))
                  for g in range(metadata.num_row_groups)]
        return sum(groups), max(groups, default=0)

    with ThreadPoolExecutor(4) as pool:
        sizes = list(pool.map(one, files))
    return sum(t for t, _ in sizes), max((g for _, g in sizes), default=0)


def _check_partitions(largest: float, task_bytes: int, slots: int, limit: int,
                      cluster: bool) -> None:
    """ValueError naming ``memory_limit`` (on a cluster: the workers' limits) when one
    task's share cannot hold the ``largest`` partition the input comes in (its Arrow
    bytes)."""
    need = int(_PARTITION_PEAK * largest) + 1
    if task_bytes >= need:
        return
    if cluster:
        raise ValueError(
            f"the Dask workers' memory limits leave {format_bytes(task_bytes)} to each task, "
            f"too little for the input's largest partition ({format_bytes(largest)} in "
            f"Arrow, held about {_PARTITION_PEAK} times): give the workers more memory "
            "(local:N: --memory-limit) or the input smaller partitions")
    raise ValueError(
        f"memory_limit={limit} (--memory-limit) is too small for this input: "
        f"{slots} task(s) run at once and each holds a partition of up to "
        f"{format_bytes(largest)} in Arrow, about {_PARTITION_PEAK} times; give at least "
        f"{format_bytes(need * slots)}, or the input smaller partitions (files or row groups)")


def _check_seen(client, folder: str, what: str) -> None:
    seen = client.run(os.path.isdir, folder)
    blind = sorted(w for w, ok in seen.items() if not ok)
    if blind:
        raise ValueError(f"workers {blind} cannot see {folder!r}: {what} must be on a "
                         "filesystem that every worker mounts at the same path")


def _spilled(parts, client, progress: bool, columns, ordering, splits, folder: str, tmp: str,
             schema, metadata, size: int, keep_zvalue: bool, zvalue_column: str,
             rows_per_file: int, group_rows: int, compression: str, name_width: int,
             task_bytes: int, sort_bytes: int, total_rows: int):
    """The ranges through spill runs instead of a shuffle: one task per partition spills
    its rows to one run per range, then one task per range sorts it within
    ``sort_bytes`` and writes it."""
    import dask
    import pandas as pd

    nranges = len(splits) + 1
    spill = dask.delayed(stages.spill_partition, pure=True)
    batch_bytes = Budget(task_bytes).batch_bytes
    runs = compute([spill(p, i, columns, ordering, splits, folder, schema, size, batch_bytes)
                    for i, p in enumerate(parts)], client, progress,
                   f"spilling {total_rows} rows of {len(parts)} partitions into {nranges} ranges")
    spilled = sum(rows for part in runs for _, rows, _ in part)
    if spilled != total_rows:
        raise RuntimeError(f"zorder cluster spilled {spilled} rows but read {total_rows}; "
                           "nothing was written to the output folder")
    sort = dask.delayed(stages.sort_spilled_range, pure=True)
    # A task retried on a distributed worker must find its runs again: there they go
    # with the spill folder.
    remove = client is None
    frames = compute([sort(r, [part[r] for part in runs], folder, tmp, metadata, size,
                           keep_zvalue, zvalue_column, rows_per_file, group_rows, compression,
                           name_width, sort_bytes, remove)
                      for r in range(nranges)], client, progress,
                     f"sorting and writing {nranges} ranges")
    return pd.concat(frames, ignore_index=True) if frames else stages.info_frame([])


def _finish(info, tmp, out_dir, columns, total_rows, size, nranges, est_bytes, ordering,
            keep_zvalue, zvalue_column) -> ClusterResult:
    """Check what the tasks wrote, drop leftovers of retried tasks, and move it into place."""
    info = info.sort_values("file").reset_index(drop=True)
    written_rows = int(info["rows"].sum())
    if written_rows != total_rows:
        raise RuntimeError(f"zorder cluster wrote {written_rows} rows but read {total_rows}; "
                           "nothing was written to the output folder")
    if info["file"].duplicated().any():
        raise RuntimeError("zorder cluster: two tasks reported the same file")
    for a, b in zip(info.itertuples(), info.iloc[1:].itertuples()):
        if not a.zmax < b.zmin:
            raise RuntimeError(f"zorder cluster: Z-ranges of {a.file} and {b.file} overlap")
    present = set(os.listdir(tmp))
    expected = set(info["file"])
    if expected - present:
        raise RuntimeError(f"zorder cluster: files missing after the job: {sorted(expected - present)}")
    for stray in present - expected:  # partial files of attempts on workers that died
        path = os.path.join(tmp, stray)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    files = [FileInfo(os.path.join(out_dir, r.file), int(r.rows), int(r.bytes), int(r.row_groups),
                      r.zmin, r.zmax) for r in info.itertuples()]
    manifest = {
        "zorder": {"columns": columns, **ordering.as_dict(), "zvalue_size": size,
                   "zvalue_column": zvalue_column if keep_zvalue else None},
        "rows": total_rows,
        "ranges": nranges,
        "files": [{**asdict(f), "path": os.path.basename(f.path)} for f in files],
    }
    with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    replace_folder(tmp, out_dir)
    return ClusterResult(out_dir, list(columns), total_rows, size, files, nranges, est_bytes)
