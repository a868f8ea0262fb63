"""Key-value metadata in the Parquet files an Iceberg rewrite writes: each file's
clustering and range of curve values (``iceberg_select.file_metadata``), added to its
PyIceberg format writer before the footer is written. Where pyarrow offers no way to add
them (older releases), files are written without the entries, and the snapshot summary
alone records the clustering."""

from __future__ import annotations

from typing import Any, Dict


def add_footer_metadata(writer: Any, entries: Dict[str, str]) -> bool:
    """Add ``entries`` to the key-value metadata of the Parquet file a PyIceberg format
    writer (``FileFormatModel.create_writer``) is writing, before it is closed; whether
    they could be (False: a writer of no Parquet file yet, or an older release)."""
    parquet_writer = getattr(writer, "_writer", None)
    if parquet_writer is None or not hasattr(parquet_writer, "add_key_value_metadata"):
        return False
    parquet_writer.add_key_value_metadata(entries)
    return True
