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

import contextlib
import json
import math
import os
import re
import shutil
import sys
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

# The skipping report is zorder._skipping's (shared with `python -m zorder sort`; pyarrow
# is imported only when it runs); the picture is drawn here.
from zorder._skipping import format_report, skipping_report

__all__ = [
    "ClusterResult",
    "FileInfo",
    "cluster",
    "parse_size",
    "zvalue_words",
    "skipping_report",
    "format_report",
    "plot_report",
    "add_arguments",
    "run",
]

#: Iceberg's name for the internal Z-value column (``SparkZOrderFileRewriteRunner``).
ZVALUE_COLUMN = "ICEZVALUE"
_PART = "__zorder_part"
_WORD = "__zorder_w{}"
_SEED = 0x5A4F52
_MAX_SAMPLE = 1_000_000
MANIFEST = "_zorder.json"

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def _require(what: str = "zorder.dask"):
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


def parse_size(value: Union[int, str], name: str = "size") -> int:
    """Bytes from ``128MB`` (SI, as Dask's ``parse_bytes``), ``128MiB`` (binary) or an int.

    >>> parse_size("128MB"), parse_size("1MiB"), parse_size(4096)
    (128000000, 1048576, 4096)
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a byte count or a string like '128MB', not bool")
    if isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        unit = match.group(2).lower() if match else None
        if not match or unit not in _SIZE_UNITS:
            raise ValueError(
                f"{name}={value!r} is not a size; use e.g. 128MB, 512MiB, 1GB or a byte count"
            )
        number = int(float(match.group(1)) * _SIZE_UNITS[unit])
    else:
        raise TypeError(f"{name} must be a byte count or a string like '128MB', "
                        f"not {type(value).__name__}")
    if number <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return number


# ---------------------------------------------------------------------------------------
# Z-values as sortable keys


def _zorder_options(var_length_contribution, max_output_size, iceberg, spark,
                    timestamp=None) -> Dict[str, Any]:
    options = {
        "var_length_contribution": var_length_contribution,
        "max_output_size": max_output_size,
        "iceberg": iceberg,
        "spark": spark,
    }
    if timestamp is not None:  # only when asked: the default infers it from each column's type
        options["timestamp"] = timestamp
    return options


def _zvalue_matrix(pdf, columns: Sequence[str], options: Dict[str, Any]) -> np.ndarray:
    """(N, size) uint8 Z-values of a pandas partition, through pyarrow so that every column
    arrives with its exact Arrow (= Parquet = Spark) type."""
    import pyarrow as pa

    import zorder

    table = pa.Table.from_pandas(pdf[list(columns)], preserve_index=False)
    z = zorder.zorder_values(table, columns=list(columns), **options)
    return _binary_matrix(z)


def _binary_matrix(z) -> np.ndarray:
    """A FixedSizeBinary array (or an (N, size) uint8 array) as (N, size) uint8, no copy."""
    if isinstance(z, np.ndarray):
        if z.dtype != np.uint8 or z.ndim != 2:
            raise TypeError(f"expected (N, size) uint8 Z-values, got {z.dtype} {z.shape}")
        return np.ascontiguousarray(z)
    import pyarrow as pa

    if isinstance(z, pa.ChunkedArray):
        z = z.combine_chunks() if z.num_chunks != 1 else z.chunk(0)
    if not pa.types.is_fixed_size_binary(z.type):
        raise TypeError(f"expected FixedSizeBinary Z-values, got {z.type}")
    size = z.type.byte_width
    n = len(z)
    if n == 0:
        return np.zeros((0, size), np.uint8)
    buf = z.buffers()[1]
    return np.frombuffer(buf, dtype=np.uint8, count=n * size, offset=z.offset * size).reshape(n, size)


def _keys(matrix: np.ndarray) -> np.ndarray:
    """(N, size) uint8 -> (N,) numpy ``S<size>``: compares as unsigned bytes, exactly."""
    matrix = np.ascontiguousarray(matrix)
    return matrix.view(f"S{matrix.shape[1]}").reshape(matrix.shape[0])


def zvalue_words(matrix: np.ndarray) -> np.ndarray:
    """(N, size) uint8 Z-values -> (N, ceil(size/8)) uint64 big-endian words, zero-padded.

    Word-by-word order (``numpy.lexsort`` on the words, first word most significant) is the
    byte order of the Z-values.

    >>> zvalue_words(np.array([[1, 2, 3]], np.uint8))[0, 0] == 0x0102030000000000
    True
    """
    matrix = np.asarray(matrix)
    if matrix.dtype != np.uint8 or matrix.ndim != 2:
        raise TypeError(f"matrix must be (N, size) uint8, got {matrix.dtype} {matrix.shape}")
    n, size = matrix.shape
    nwords = max(1, -(-size // 8))
    padded = np.zeros((n, nwords * 8), np.uint8)
    padded[:, :size] = matrix
    return padded.view(">u8").astype(np.uint64)


def _words_matrix(words: np.ndarray, size: int) -> np.ndarray:
    n = words.shape[0]
    return np.ascontiguousarray(
        np.ascontiguousarray(words.astype(">u8")).view(np.uint8).reshape(n, -1)[:, :size]
    )


# ---------------------------------------------------------------------------------------
# The three Dask steps: survey (sample + sizes), assign ranges, sort and write


def _encoded_size(pdf, compression: str, head_rows: int = 50_000) -> float:
    """Estimated Parquet bytes of a partition: the first rows encoded, scaled up."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(pdf)
    if n == 0:
        return 0.0
    head = pdf.iloc[: min(n, head_rows)]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(head, preserve_index=False), sink, compression=compression)
    return sink.getvalue().size * n / len(head)


def _survey(pdf, index: int, columns, options, sample_rows: int, compression: str):
    """(rows, sample of Z-value keys, estimated Parquet bytes) of one partition."""
    n = len(pdf)
    matrix = _zvalue_matrix(pdf, columns, options)
    k = min(n, sample_rows)
    if k < n:
        rng = np.random.default_rng([_SEED, index])
        pick = np.sort(rng.choice(n, size=k, replace=False))
        matrix = matrix[pick]
    return n, _keys(matrix).copy(), _encoded_size(pdf, compression)


def _choose_splits(counts: Sequence[int], samples: Sequence[np.ndarray], nranges: int) -> np.ndarray:
    """At most ``nranges - 1`` distinct split keys at the weighted quantiles of the samples.

    Each sampled key stands for ``rows / sample size`` rows of its partition, so small and
    large partitions count in proportion (Dask weighs its per-partition percentiles alike).
    """
    pairs = [(s, c / len(s)) for s, c in zip(samples, counts) if len(s)]
    if nranges <= 1 or not pairs:
        return np.array([], dtype=samples[0].dtype if samples else "S1")
    keys = np.concatenate([s for s, _ in pairs])
    weights = np.concatenate([np.full(len(s), w) for s, w in pairs])
    order = np.argsort(keys, kind="stable")
    keys, cum = keys[order], np.cumsum(weights[order])
    targets = cum[-1] * np.arange(1, nranges) / nranges
    pos = np.minimum(np.searchsorted(cum, targets, side="left"), len(keys) - 1)
    # A split equal to the smallest key would only make an empty first range.
    return np.unique(keys[pos][keys[pos] > keys[0]])


def _assign(pdf, columns, options, splits: np.ndarray, nwords: int):
    """The partition with its Z-value words and the number of its range."""
    matrix = _zvalue_matrix(pdf, columns, options)
    words = zvalue_words(matrix)
    out = pdf.copy(deep=False)
    for j in range(nwords):
        out[_WORD.format(j)] = words[:, j]
    out[_PART] = np.searchsorted(splits, _keys(matrix), side="right").astype(np.int64)
    return out


_INFO_COLUMNS = ["range", "file", "rows", "bytes", "row_groups", "zmin", "zmax"]


def _info_frame(rows):
    import pandas as pd

    frame = pd.DataFrame(rows, columns=_INFO_COLUMNS)
    return frame.astype({"range": "int64", "file": object, "rows": "int64", "bytes": "int64",
                         "row_groups": "int64", "zmin": object, "zmax": object})


def _file_cuts(keys: np.ndarray, rows_per_file: int) -> List[int]:
    """Row offsets [0, ..., n] splitting sorted keys into files of about rows_per_file rows,
    each cut moved forward to where the key changes, so equal keys share a file."""
    n = len(keys)
    nfiles = max(1, round(n / max(1, rows_per_file)))
    cuts = [0]
    for i in range(1, nfiles):
        at = i * n // nfiles
        at = int(np.searchsorted(keys, keys[at - 1], side="right"))
        if cuts[-1] < at < n:
            cuts.append(at)
    cuts.append(n)
    return cuts


def _write(pdf, tmp_dir: str, schema, size: int, nwords: int, keep_zvalue: bool,
           zvalue_column: str, rows_per_file: int, row_group_rows: int, compression: str,
           name_width: int):
    """Sort one range by Z-value and write it as one or more Parquet files into tmp_dir."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if len(pdf) == 0:
        return _info_frame([])
    number = int(pdf.index[0])
    word_cols = [_WORD.format(j) for j in range(nwords)]
    words = pdf[word_cols].to_numpy(dtype=np.uint64)
    order = np.lexsort(words.T[::-1])
    words = words[order]
    matrix = _words_matrix(words, size)
    keys = _keys(matrix)
    data = pdf.drop(columns=word_cols).reset_index(drop=True)
    table = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    table = table.take(pa.array(order))
    if keep_zvalue:
        zarr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(size), len(matrix), [None, pa.py_buffer(matrix.tobytes())]
        )
        table = table.append_column(pa.field(zvalue_column, pa.binary(size), nullable=False), zarr)
    rows = []
    cuts = _file_cuts(keys, rows_per_file)
    for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        name = f"part-{number:0{name_width}d}-{j:04d}.parquet"
        final = os.path.join(tmp_dir, name)
        partial = os.path.join(tmp_dir, f".{name}.{uuid.uuid4().hex}.partial")
        piece = table.slice(a, b - a)
        try:
            pq.write_table(piece, partial, row_group_size=row_group_rows, compression=compression,
                           write_statistics=True)
            os.replace(partial, final)  # a retried task replaces a whole file, never half of one
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise
        rows.append((number, name, b - a, os.path.getsize(final),
                     pq.ParquetFile(final).metadata.num_row_groups,
                     matrix[a].tobytes().hex(), matrix[b - 1].tobytes().hex()))
    return _info_frame(rows)


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


def _scheduler_context(scheduler):
    """(context manager, distributed client or None) for the scheduler argument."""
    if scheduler is None:
        try:
            from distributed import default_client

            return contextlib.nullcontext(), default_client()
        except (ImportError, ValueError):
            return contextlib.nullcontext(), None
    if isinstance(scheduler, str) and scheduler in ("threads", "processes", "sync", "synchronous"):
        import dask

        return dask.config.set(scheduler=scheduler), None
    if isinstance(scheduler, str):
        if not re.match(r"^[a-z0-9+]+://|^[\w.\-\[\]:]+:\d+$", scheduler):
            raise ValueError(
                f"scheduler={scheduler!r} is neither threads, processes, sync nor a scheduler "
                "address such as tcp://127.0.0.1:8786"
            )
        try:
            from distributed import Client
        except ImportError as exc:
            raise ImportError("a scheduler address needs distributed: "
                              "pip install 'zorder[dask]'") from exc
        client = Client(scheduler)
        return contextlib.closing(client), client
    if type(scheduler).__name__ == "Client" and hasattr(scheduler, "compute"):
        return contextlib.nullcontext(), scheduler
    raise TypeError(
        "scheduler must be None, 'threads', 'processes', 'sync', an address string or a "
        f"distributed.Client, not {type(scheduler).__name__}"
    )


def _compute(objs, client, progress: bool, label: str):
    """Compute a list of Dask collections, with a progress bar if asked."""
    import dask

    if progress:
        print(f"zorder cluster: {label}", file=sys.stderr, flush=True)
    if client is not None:
        futures = client.compute(list(objs))
        if progress:
            from distributed import progress as show

            show(futures)
            print(file=sys.stderr, flush=True)
        return client.gather(futures)
    if progress:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return list(dask.compute(*objs))
    return list(dask.compute(*objs))


def _parquet_files(path: str) -> List[str]:
    import pyarrow.dataset as ds

    return sorted(ds.dataset(path, format="parquet").files)


def _check_columns(columns, available) -> List[str]:
    if isinstance(columns, str):
        columns = [c for c in columns.split(",") if c]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise TypeError("columns must be a list of column names (or one comma-separated string)")
    if not columns:
        raise ValueError("columns must name at least one column to cluster on")
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns has duplicates: {columns}")
    missing = [c for c in columns if c not in available]
    if missing:
        raise ValueError(f"columns {missing} are not in the data; it has {list(available)}")
    return list(columns)


def _prepare_out_dir(out_dir: str, data_path: Optional[str], overwrite: bool) -> Tuple[str, str]:
    out_dir = os.path.abspath(out_dir)
    if data_path is not None:
        src = os.path.abspath(data_path)
        if out_dir == src or out_dir.startswith(src.rstrip(os.sep) + os.sep) or \
                src.startswith(out_dir.rstrip(os.sep) + os.sep):
            raise ValueError(
                f"out_dir {out_dir!r} must be apart from the input {src!r} "
                "(not the same folder, inside it, or around it)"
            )
    if os.path.exists(out_dir):
        if not os.path.isdir(out_dir):
            raise ValueError(f"out_dir {out_dir!r} exists and is not a folder")
        if os.listdir(out_dir) and not overwrite:
            raise ValueError(f"out_dir {out_dir!r} is not empty; pass overwrite=True "
                             "(--overwrite) to replace it")
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(out_dir)}.zorder-tmp-{uuid.uuid4().hex[:12]}")
    os.mkdir(tmp)
    return out_dir, tmp


def _commit(tmp: str, out_dir: str) -> None:
    """Move the finished folder into place (atomic rename on one filesystem)."""
    old = None
    if os.path.exists(out_dir):
        if os.listdir(out_dir):
            old = f"{out_dir}.zorder-old-{uuid.uuid4().hex[:12]}"
            os.rename(out_dir, old)
        else:
            os.rmdir(out_dir)
    os.rename(tmp, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def cluster(
    data,
    out_dir: str,
    columns: Union[Sequence[str], str],
    *,
    target_file_size: Union[int, str] = "128MB",
    row_group_size: Union[int, str] = "128MB",
    row_group_rows: Optional[int] = None,
    keep_zvalue: bool = False,
    zvalue_column: str = ZVALUE_COLUMN,
    var_length_contribution: int = 8,
    max_output_size: Optional[int] = None,
    iceberg: str = "main",
    spark: str = "4",
    timestamp=None,
    compression: str = "zstd",
    overwrite: bool = False,
    scheduler=None,
    shuffle_method: Optional[str] = None,
    sample_rows: int = 2_000,
    progress: bool = False,
) -> ClusterResult:
    """Z-order cluster ``data`` (a Dask DataFrame or a Parquet file/folder) into ``out_dir``.

    ``columns``: the clustering columns, in Z-order (as in ``zorder(a, b)``).
    ``target_file_size``/``row_group_size``: bytes or strings like ``"128MB"``/``"64MiB"``,
    turned into row counts with an estimate of the encoded bytes per row (a partition's
    first rows, encoded); ``row_group_rows`` sets the row group length in rows directly.
    ``var_length_contribution``, ``max_output_size``, ``iceberg``, ``spark``, ``timestamp``:
    passed to :func:`zorder.zorder_values`, with Iceberg's meaning (``timestamp`` says
    whether zone-less timestamps are Spark's TIMESTAMP or TIMESTAMP_NTZ).
    ``keep_zvalue`` keeps the Z-values as a FixedSizeBinary column named ``zvalue_column``
    (Iceberg drops it). ``sample_rows``: Z-values sampled per partition for the split points.
    ``scheduler``: ``None`` (a current ``distributed.Client`` if there is one, else Dask's
    default), ``"threads"``, ``"processes"``, ``"sync"``, a scheduler address, or a Client.
    A remote cluster's workers must see ``out_dir``'s folder at the same path.
    ``compression``: the Parquet codec (Iceberg's default is zstd).

    The index of a Dask DataFrame is not written (``reset_index()`` first to keep it).
    Returns a :class:`ClusterResult`; raises, leaving ``out_dir`` untouched, if anything fails.
    """
    _require()
    import dask
    import dask.dataframe as dd
    import pyarrow as pa

    import zorder

    if not hasattr(zorder, "zorder_values"):
        raise ImportError("this zorder build has no zorder_values; zorder.dask needs it")
    target = parse_size(target_file_size, "target_file_size")
    group_bytes = parse_size(row_group_size, "row_group_size")
    if row_group_rows is not None and (isinstance(row_group_rows, bool) or
                                       not isinstance(row_group_rows, (int, np.integer)) or
                                       row_group_rows <= 0):
        raise ValueError(f"row_group_rows must be a positive int, got {row_group_rows!r}")
    if not isinstance(sample_rows, (int, np.integer)) or isinstance(sample_rows, bool) or sample_rows < 1:
        raise ValueError(f"sample_rows must be a positive int, got {sample_rows!r}")
    if not isinstance(zvalue_column, str) or not zvalue_column:
        raise TypeError("zvalue_column must be a non-empty str")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a path, not {type(out_dir).__name__}")
    out_dir = os.fspath(out_dir)

    data_path = None
    schema = None
    if isinstance(data, (str, os.PathLike)):
        data_path = os.fspath(data)
        if not os.path.exists(data_path):
            raise ValueError(f"data {data_path!r} does not exist")
        files = _parquet_files(data_path)
        if not files:
            raise ValueError(f"data {data_path!r} holds no Parquet files")
        import pyarrow.dataset as ds

        schema = ds.dataset(data_path, format="parquet").schema.remove_metadata()
        ddf = dd.read_parquet(data_path, dtype_backend="pyarrow", index=False)
    elif isinstance(data, dd.DataFrame):
        ddf = data
    else:
        raise TypeError(f"data must be a dask DataFrame or a Parquet path, not {type(data).__name__}")

    columns = _check_columns(columns, list(ddf.columns))
    reserved = [c for c in ddf.columns if str(c).startswith("__zorder_")]
    if reserved:
        raise ValueError(f"column names starting with __zorder_ are reserved: {reserved}")
    if keep_zvalue and zvalue_column in ddf.columns:
        raise ValueError(f"zvalue_column {zvalue_column!r} is already a column of the data")
    options = _zorder_options(var_length_contribution, max_output_size, iceberg, spark, timestamp)
    # Fail here, on fake rows of the right types, rather than in a task on a worker.
    probe = _zvalue_matrix(ddf._meta_nonempty, columns, options)
    size = probe.shape[1]
    nwords = max(1, -(-size // 8))
    if schema is None:
        schema = pa.Schema.from_pandas(ddf._meta, preserve_index=False).remove_metadata()
        if any(pa.types.is_null(f.type) for f in schema):
            schema = None  # object columns: let each file infer its types

    if not (scheduler is None or isinstance(scheduler, str) or hasattr(scheduler, "compute")):
        raise TypeError(
            "scheduler must be None, 'threads', 'processes', 'sync', an address string or a "
            f"distributed.Client, not {type(scheduler).__name__}"
        )
    out_dir, tmp = _prepare_out_dir(out_dir, data_path, overwrite)
    try:
        ctx, client = _scheduler_context(scheduler)
        with ctx:
            if client is not None:
                seen = client.run(os.path.isdir, tmp)
                blind = sorted(w for w, ok in seen.items() if not ok)
                if blind:
                    raise ValueError(
                        f"workers {blind} cannot see {tmp!r}: out_dir must be on a filesystem "
                        "that every worker mounts at the same path"
                    )
            parts = ddf.to_delayed()
            # At most ~1M sampled keys reach the client, however many partitions there are.
            per_part = int(max(50, min(sample_rows, _MAX_SAMPLE // max(1, len(parts)))))
            survey = dask.delayed(_survey, pure=True)
            stats = _compute(
                [survey(p, i, columns, options, per_part, compression) for i, p in enumerate(parts)],
                client, progress, f"sampling Z-values of {len(parts)} partitions",
            )
            counts = [s[0] for s in stats]
            total_rows = int(sum(counts))
            est_bytes = float(sum(s[2] for s in stats))
            bytes_per_row = est_bytes / total_rows if total_rows else 1.0
            nranges = max(1, min(math.ceil(est_bytes / target), max(1, total_rows)))
            splits = _choose_splits(counts, [s[1] for s in stats], nranges)
            if len(splits) == 0:
                splits = np.array([], dtype=f"S{size}")
            nranges = len(splits) + 1
            rows_per_file = max(1, int(target / max(bytes_per_row, 1e-9)))
            group_rows = row_group_rows or max(1, int(group_bytes / max(bytes_per_row, 1e-9)))
            group_rows = int(min(group_rows, rows_per_file))

            meta = ddf._meta.copy()
            for j in range(nwords):
                meta[_WORD.format(j)] = np.array([], np.uint64)
            meta[_PART] = np.array([], np.int64)
            keyed = ddf.map_partitions(_assign, columns, options, splits, nwords, meta=meta)
            # p2p needs a distributed client; a local scheduler shuffles with tasks, even
            # while some distributed Client happens to exist in the process.
            method = shuffle_method or ("p2p" if client is not None else "tasks")
            kwargs = {"shuffle_method": method}
            ranged = keyed.set_index(_PART, divisions=list(range(nranges)) + [nranges - 1], **kwargs)
            written = ranged.map_partitions(
                _write, tmp, schema, size, nwords, keep_zvalue, zvalue_column, rows_per_file,
                group_rows, compression, max(5, len(str(nranges - 1))),
                meta=_info_frame([]), enforce_metadata=False,
            )
            (info,) = _compute([written], client, progress,
                               f"range-partitioning {total_rows} rows into {nranges} ranges and writing")
        result = _finish(info, tmp, out_dir, columns, total_rows, size, nranges, est_bytes, options,
                         keep_zvalue, zvalue_column)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def _finish(info, tmp, out_dir, columns, total_rows, size, nranges, est_bytes, options,
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
        "zorder": {"columns": columns, **options, "zvalue_size": size,
                   "zvalue_column": zvalue_column if keep_zvalue else None},
        "rows": total_rows,
        "ranges": nranges,
        "files": [{**asdict(f), "path": os.path.basename(f.path)} for f in files],
    }
    with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    _commit(tmp, out_dir)
    return ClusterResult(out_dir, list(columns), total_rows, size, files, nranges, est_bytes)


# ---------------------------------------------------------------------------------------
# What clustering bought: a picture of zorder._skipping's report


def plot_report(report: dict, path: str) -> None:
    """Bar chart of the skipping report (needs the ``plot`` extra, matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install 'zorder[plot]'") from exc
    names = list(report["columns"])
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(max(6, 2.2 * len(names) + 3), 4), sharey=True)
    for ax, unit, title in ((axes[0], "files_skipped", "files"),
                            (axes[1], "row_groups_skipped", "row groups")):
        before = [100 * report["columns"][n]["before"][unit] for n in names]
        after = [100 * report["columns"][n]["after"][unit] for n in names]
        for offset, values, label, color in ((-0.2, before, "before", "#999999"),
                                             (0.2, after, "after Z-order", "#1f77b4")):
            bars = ax.bar(x + offset, values, 0.4, label=label, color=color)
            ax.bar_label(bars, fmt="%.0f%%", fontsize=8)
        ax.set_xticks(x, names)
        ax.set_title(f"{title} skipped")
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(f"% skipped by a ~{report['fraction']:.0%} range predicate")
    axes[0].legend()
    fig.suptitle("min/max statistics skipping, before and after clustering")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------
# CLI: python -m zorder cluster IN_DIR OUT_DIR --columns a,b,c


def add_arguments(parser) -> None:
    parser.add_argument("in_dir", metavar="IN_DIR", help="Parquet file or folder to read")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (must not exist, "
                        "be empty, or --overwrite)")
    parser.add_argument("--columns", required=True, help="clustering columns, comma-separated")
    parser.add_argument("--target-file-size", default="128MB",
                        help="target Parquet file size, e.g. 128MB, 512MiB (default 128MB)")
    parser.add_argument("--row-group-size", default="128MB",
                        help="target row group size in bytes, e.g. 16MB (default 128MB)")
    parser.add_argument("--row-group-rows", type=int, default=None,
                        help="row group length in rows (overrides --row-group-size)")
    parser.add_argument("--scheduler", default="threads",
                        help="threads (default), processes, sync, or a Dask scheduler address "
                        "such as tcp://HOST:8786")
    parser.add_argument("--var-length-contribution", type=int, default=8,
                        help="bytes per string/binary column (Iceberg's var-length-contribution)")
    parser.add_argument("--max-output-size", type=int, default=None,
                        help="cap on the Z-value length (Iceberg's max-output-size)")
    parser.add_argument("--iceberg", default="main", help="Iceberg version whose bytes to match "
                        "(see zorder.zorder_values)")
    parser.add_argument("--spark", default="4", help="Spark version whose casts to match")
    parser.add_argument("--compression", default="zstd", help="Parquet codec (default zstd)")
    parser.add_argument("--keep-zvalue", action="store_true",
                        help=f"keep the Z-values as a binary column {ZVALUE_COLUMN}")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty OUT_DIR")
    parser.add_argument("--no-report", action="store_true", help="skip the skipping report")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="draw the skipping report (needs matplotlib)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args) -> int:
    try:
        _require("python -m zorder cluster")
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("error: --plot needs matplotlib: pip install 'zorder[plot]'", file=sys.stderr)
            return 2
    try:
        result = cluster(
            args.in_dir, args.out_dir, columns,
            target_file_size=args.target_file_size, row_group_size=args.row_group_size,
            row_group_rows=args.row_group_rows, keep_zvalue=args.keep_zvalue,
            var_length_contribution=args.var_length_contribution,
            max_output_size=args.max_output_size, iceberg=args.iceberg, spark=args.spark,
            compression=args.compression, overwrite=args.overwrite, scheduler=args.scheduler,
            progress=not args.quiet,
        )
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.rows} rows in {len(result.files)} files ({result.ranges} Z-ranges) "
          f"to {result.out_dir}")
    if not args.no_report or args.plot:
        report = skipping_report(args.in_dir, result.out_dir, columns)
        print(format_report(report))
        if args.plot:
            plot_report(report, args.plot)
            print(f"plot: {args.plot}")
    return 0
