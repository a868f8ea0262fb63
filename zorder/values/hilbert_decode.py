"""Hilbert indices decoded: Iceberg's interleave undone (``deinterleave_rows``), then
Skilling's transform undone (``zorder.hilbert``)."""

from __future__ import annotations

import operator
from typing import Any

import numpy

from zorder.hilbert import check_bits_per_column, untranspose_rows
from zorder.values.codec import as_matrix
from zorder.values.decode import deinterleave_rows

__all__ = ["hilbert_decode_rows"]


def hilbert_decode_rows(values: Any, n_columns: int, bits_per_column: int = 64) -> numpy.ndarray:
    """The columns back from Hilbert indices: the inverse of ``hilbert_rows``.

    Args:
        values: Hilbert indices as a 2-D uint8 array (N, n_columns * bits_per_column / 8)
            (any strides), or a pyarrow FixedSizeBinary array of that width.
        n_columns: how many columns were indexed (at least 1).
        bits_per_column: as given to ``hilbert_rows``.

    Returns:
        a new C-contiguous (N, n_columns, bits_per_column / 8) uint8 array: row i,
        column c holds the leading bytes of column c of row i. It is itself an input
        ``hilbert_rows`` accepts, so ``hilbert_rows(hilbert_decode_rows(v, n, b), b)``
        equals ``v``. Bytes beyond the leading ones never reach the index, so they cannot
        come back.

    Example:
        >>> import numpy as np
        >>> hilbert_decode_rows(np.array([[0, 3]], np.uint8), 2, 8).tolist()
        [[[0], [1]]]
    """
    bits = check_bits_per_column(bits_per_column)
    nbytes = bits // 8
    if isinstance(n_columns, bool):
        raise TypeError("n_columns must be an int, not bool")
    try:
        n = operator.index(n_columns)
    except TypeError:
        raise TypeError(f"n_columns must be an int, not {type(n_columns).__name__}") from None
    if n < 1:
        raise ValueError(f"n_columns must be >= 1, got {n}")
    arr = as_matrix(values)
    if arr.shape[1] != n * nbytes:
        raise ValueError(
            f"values have {arr.shape[1]} bytes per row; {n} columns of "
            f"bits_per_column={bits} give {n * nbytes}"
        )
    nrows = arr.shape[0]
    # deinterleave_rows returns views of one new C-contiguous (N, n * bits/8) block.
    block = deinterleave_rows(arr, [nbytes] * n)[0].base
    if block is None or block.shape != (nrows, n * nbytes) or not block.flags.c_contiguous:
        block = numpy.ascontiguousarray(numpy.concatenate(deinterleave_rows(arr, [nbytes] * n), axis=1))
    untranspose_rows(block, n, bits)
    return block.reshape(nrows, n, nbytes)
