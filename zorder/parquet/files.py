"""What a Parquet dataset holds: the one file lister every command and report uses.

A folder is read as ``pyarrow.dataset`` discovers it (and so as Dask's ``read_parquet``
reads it): every file below it, hive partition folders included, except names starting
with ``_`` or ``.`` (``_SUCCESS``, ``_zorder.json``, temporary files). The jobs read the
list this returns, so a report and the job it describes never disagree on the files.
"""

from __future__ import annotations

import os
from typing import Any, List, Sequence, Union

__all__ = ["Where", "parquet_files", "require_pyarrow"]

Where = Union[str, "os.PathLike[str]", Sequence[Any]]


def require_pyarrow(what: str) -> None:
    """Raise ImportError naming the extra if pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{what} needs pyarrow: pip install 'zorder[arrow]' (or pip install pyarrow) ({exc})"
        ) from None


def parquet_files(where: Where) -> List[Any]:
    """The Parquet files of ``where``, sorted by path: a file, a folder (as
    ``pyarrow.dataset`` discovers it), or a list, which is returned as it is (it may hold
    paths, ``pyarrow.parquet.ParquetFile`` or ``FileMetaData`` objects)."""
    if isinstance(where, (str, os.PathLike)):
        path = os.fspath(where)
        if os.path.isdir(path):
            import pyarrow.dataset as ds

            return sorted(ds.dataset(path, format="parquet", partitioning="hive").files)
        if not os.path.exists(path):
            raise ValueError(f"no such Parquet file or folder: {path!r}")
        return [path]
    if isinstance(where, (list, tuple)):
        return list(where)
    raise TypeError(f"expected a path or a list of Parquet files, not {type(where).__name__}")
