"""numpy arrays as ordered bytes: one Spark type per dtype."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy

from zorder.ordered.errors import ColumnTypeError
from zorder.ordered.numbers import be8, booleans, datetime64, floats, whole_numbers
from zorder.ordered.strings import fixed_bytes, objects, unicode


def numpy_column(v: numpy.ndarray, length: int, mode: str, spark: str, kind: Optional[str],
                 given_nulls: Optional[numpy.ndarray] = None
                 ) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    """(bytes, inherent null mask or None) for a 1-D numpy array; ``given_nulls``: the rows
    the caller's mask makes null, whose dates and timestamps are not range-checked."""
    k = v.dtype.kind
    if k == "i":
        return whole_numbers(v), None
    if k == "u":
        return be8(v.astype(numpy.uint64, copy=False)), None
    if k == "f":
        if v.dtype.itemsize > 8:
            raise ColumnTypeError(
                f"unsupported dtype {v.dtype} (long double): Iceberg's DOUBLE has 64 bits, and "
                f"rounding would give different values the same bytes; convert to float64 "
                f"yourself if that is what you mean"
            )
        return floats(v, mode), None
    if k == "b":
        return booleans(v), None
    if k == "M":
        return datetime64(v, spark, kind, given_nulls)
    if k == "U":
        return unicode(v, length), None
    if k == "S":
        return fixed_bytes(v, length), None
    if k == "O":
        return objects(v, length)
    if k == "T":  # numpy 2 StringDType
        return objects(v.astype(object), length)
    raise ColumnTypeError(
        f"unsupported dtype {v.dtype}; Iceberg's Spark UDF takes "
        f"integers, floats, booleans, dates, timestamps, strings and binary"
    )
