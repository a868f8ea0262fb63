"""pandas Series, Index and ExtensionArrays as columns for the numpy or Arrow path."""

from __future__ import annotations

from typing import Any

import numpy

from zorder.ordered.arrow_columns import arrow_module
from zorder.ordered.errors import ColumnTypeError
from zorder.ordered.numbers import bigint_objects, python_ints
from zorder.ordered.strings import is_null_object


def is_pandas(values: Any) -> bool:
    return type(values).__module__.startswith("pandas")


def pandas_to_column(values: Any):
    """A pandas Series/Index/ExtensionArray as (array for the numpy or Arrow path, mask).

    Whatever pandas calls missing (``isna``: NaN, None, NA, NaT) is a null, as when the
    frame is written to an Iceberg table through Arrow.
    """
    if getattr(values, "ndim", 1) != 1:
        raise ColumnTypeError(
            f"must be one column, not a {type(values).__name__} "
            f"(pass a Series, or use zorder_values for a DataFrame)"
        )
    import pandas

    dtype = values.dtype
    if isinstance(dtype, pandas.StringDtype) and getattr(dtype, "storage", "") == "python":
        # Python str objects, which may hold lone surrogates (Arrow could not): the
        # object path, with Iceberg's rule of stopping at the first one.
        return values.to_numpy(dtype=object, na_value=None), None
    if isinstance(dtype, numpy.dtype) and dtype.kind == "O":
        objects = numpy.asarray(values)
        nulls = numpy.fromiter(map(is_null_object, objects), dtype=bool, count=len(objects))
        first = next((x for x, null in zip(objects, nulls) if not null), None)
        pa = arrow_module()
        if isinstance(first, (int, numpy.integer)) and not isinstance(first, bool) and \
                bigint_objects([x for x, null in zip(objects, nulls) if not null]):
            # A BIGINT column of integers: exact, with a clear error past the long range
            # (Arrow's inference overflowed on [np.int64(-1), 2**63]).
            return python_ints([None if null else int(x) for x, null in zip(objects, nulls)],
                               nulls), (nulls if nulls.any() else None)
        if first is None or isinstance(first, (str, bytes)) or pa is None:
            # Strings and binary: the object path finds None/NaN/NA/NaT itself, and lone
            # surrogates keep Iceberg's behaviour (Arrow could not hold them).
            return objects, None
        # Other Python objects (what to_pandas() gives for Arrow dates, nullable booleans,
        # datetimes): Arrow infers the type (date32, bool, timestamp) and keeps the nulls.
        try:
            return pa.array(values, from_pandas=True), None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise ColumnTypeError(
                f"a pandas object column of {type(first).__name__} "
                f"values could not be read as one type ({exc})"
            ) from None
    if isinstance(dtype, numpy.dtype):
        # numpy-backed: the numpy path, with pandas' missing values as the mask
        mask = numpy.asarray(pandas.isna(values), dtype=bool)
        return numpy.asarray(values), (mask if mask.any() else None)
    pa = arrow_module()
    if pa is not None:
        try:
            return pa.array(values, from_pandas=True), None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise ColumnTypeError(
                f"pandas dtype {dtype} could not be read ({exc})"
            ) from None
    numpy_dtype = getattr(dtype, "numpy_dtype", None)  # masked Int64/Float64/boolean
    if numpy_dtype is not None:
        mask = numpy.asarray(pandas.isna(values), dtype=bool)
        fill = False if numpy_dtype.kind == "b" else 0
        return values.to_numpy(dtype=numpy_dtype, na_value=fill), (mask if mask.any() else None)
    raise ColumnTypeError(
        f"pandas dtype {dtype} needs pyarrow (pip install pyarrow)")
