"""Key-value metadata in the Parquet files an Iceberg rewrite writes through PyIceberg's
own ``write_file``, which takes none: PyIceberg's Parquet format model is wrapped once, in
its format registry, so that a writer for a path registered here (``footer_metadata``)
adds that path's entries before its footer is written. Every other file is written exactly
as before. Where PyIceberg or pyarrow offer no such hook (older releases), files are
written without the entries, and the snapshot summary alone records the clustering."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, List, Optional

_PENDING: Dict[str, Dict[str, str]] = {}
_LOCK = threading.Lock()


class _KeyValueModel:
    """PyIceberg's Parquet format model, whose writers add the registered entries."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_writer(self, output_file: Any, *args: Any, **kwargs: Any) -> Any:
        writer = self._inner.create_writer(output_file, *args, **kwargs)
        with _LOCK:
            entries = _PENDING.get(getattr(output_file, "location", None) or "")
        if entries is None:
            return writer
        first_write = writer.write
        added: List[bool] = []

        def write(table: Any) -> None:
            first_write(table)
            parquet_writer = getattr(writer, "_writer", None)
            if not added and parquet_writer is not None:
                parquet_writer.add_key_value_metadata(entries)
                added.append(True)

        writer.write = write
        return writer


def _install() -> bool:
    """Wrap PyIceberg's Parquet format model (once); whether files can get entries."""
    try:
        import pyarrow.parquet as pq
        from pyiceberg.io.fileformat import FileFormatFactory
        from pyiceberg.manifest import FileFormat
    except ImportError:
        return False
    if not hasattr(pq.ParquetWriter, "add_key_value_metadata"):
        return False
    registry = getattr(FileFormatFactory, "_registry", None)
    if not isinstance(registry, dict):
        return False
    with _LOCK:
        model = registry.get(FileFormat.PARQUET)
        if model is None:
            return False
        if not isinstance(model, _KeyValueModel):
            registry[FileFormat.PARQUET] = _KeyValueModel(model)
    return True


@contextlib.contextmanager
def footer_metadata(path: str, entries: Optional[Dict[str, str]]) -> Iterator[None]:
    """While the block runs, the Parquet file written at ``path`` gets ``entries`` in its
    key-value metadata (None: nothing to add)."""
    if not entries or not _install():
        yield
        return
    with _LOCK:
        _PENDING[path] = dict(entries)
    try:
        yield
    finally:
        with _LOCK:
            _PENDING.pop(path, None)


def add_footer_metadata(writer: Any, entries: Dict[str, str]) -> bool:
    """Add ``entries`` to the key-value metadata of the Parquet file a PyIceberg format
    writer (``FileFormatModel.create_writer``) is writing, before it is closed; whether
    they could be (False: a writer of no Parquet file yet, or an older release)."""
    parquet_writer = getattr(writer, "_writer", None)
    if parquet_writer is None or not hasattr(parquet_writer, "add_key_value_metadata"):
        return False
    parquet_writer.add_key_value_metadata(entries)
    return True
