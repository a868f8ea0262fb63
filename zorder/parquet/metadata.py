"""Schema metadata of rows put in another order: what stays true and what must change.

pandas records its index in the ``pandas`` schema metadata. An index stored as a column
moves with its rows, so it stays true. A ``RangeIndex`` is not stored: its ``start``,
``stop`` and ``step`` label the rows by position, and after a Z-order sort those labels
would name other rows. It is left out, so pandas numbers the rows as they now are; it is
not written out as a column, which would change the schema every other reader (Spark,
Iceberg) sees. Everything else in the metadata (other keys, GeoParquet's ``geo``, field
metadata) is kept as it was.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

__all__ = ["without_range_index"]

_PANDAS = b"pandas"


def _pandas_metadata(metadata: Optional[Dict[bytes, bytes]]) -> Optional[Dict[str, Any]]:
    if not metadata or _PANDAS not in metadata:
        return None
    try:
        pandas = json.loads(metadata[_PANDAS])
    except (ValueError, RecursionError):   # (RecursionError: nested too deeply for json)
        return None   # (not pandas' own: left as it is)
    return pandas if isinstance(pandas, dict) else None


def _is_range(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("kind") == "range"


def without_range_index(metadata: Optional[Dict[bytes, bytes]]) -> Optional[Dict[bytes, bytes]]:
    """``metadata`` with any pandas ``RangeIndex`` left out of its index (pandas then reads
    a default one, numbering the rows as they now are)."""
    pandas = _pandas_metadata(metadata)
    index = None if pandas is None else pandas.get("index_columns")
    if not isinstance(index, list) or not any(map(_is_range, index)):
        return metadata   # (no RangeIndex, or not metadata pandas wrote: left as it is)
    assert metadata is not None and pandas is not None
    pandas["index_columns"] = [e for e in index if not _is_range(e)]
    return {**metadata, _PANDAS: json.dumps(pandas).encode()}
