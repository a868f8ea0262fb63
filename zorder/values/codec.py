"""The Z-value codec: one place that converts Z-values between their three forms.

- an ``(N, size)`` uint8 matrix, what the kernels read and write;
- a pyarrow ``FixedSizeBinary(size)`` array, what ``zorder_values`` returns for Arrow
  input and what a ``ICEZVALUE`` column holds;
- ``(N, ceil(size / 8))`` big-endian ``uint64`` words, zero-padded, whose lexicographic
  order (first word most significant) is the byte order: what a Dask shuffle carries.

A Z-value is never null: every conversion refuses nulls, with one message.
"""

from __future__ import annotations

from typing import Any

import numpy

__all__ = ["HVALUE_COLUMN", "ZVALUE_COLUMN", "as_matrix", "from_words", "sort_keys",
           "to_arrow", "to_words"]

#: Iceberg's internal Z-value column (``SparkZOrderFileRewriteRunner``). Its rewrite
#: rejects a table column of this name; zorder adds no column unless asked to.
ZVALUE_COLUMN = "ICEZVALUE"
#: Iceberg's internal Hilbert-value column (``SparkHilbertFileRewriteRunner``).
HVALUE_COLUMN = "ICEHVALUE"

_FORMS = "a 2-D uint8 array (rows, bytes) or a pyarrow FixedSizeBinary array"


def as_matrix(values: Any, name: str = "values") -> numpy.ndarray:
    """Z-values as an ``(N, size)`` uint8 array: a numpy array as it is (any strides), a
    pyarrow FixedSizeBinary Array or ChunkedArray as a view of its buffer.

    Raises TypeError for another type or dtype, ValueError for another shape or nulls;
    messages name the argument ``name``.
    """
    if type(values).__module__.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(values, pa.ChunkedArray):
            values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
        if not (isinstance(values, pa.Array) and pa.types.is_fixed_size_binary(values.type)):
            shown = values.type if hasattr(values, "type") else type(values).__name__
            raise TypeError(f"{name} must be {_FORMS}, not {shown}")
        if values.null_count:
            raise ValueError(f"{name} has nulls; a Z-value is never null")
        width = values.type.byte_width
        n = len(values)
        if n == 0 or width == 0:
            return numpy.zeros((n, width), numpy.uint8)
        data = numpy.frombuffer(values.buffers()[1], dtype=numpy.uint8)
        start = values.offset * width
        return data[start:start + n * width].reshape(n, width)
    arr = numpy.asarray(values)
    if arr.dtype != numpy.uint8:
        raise TypeError(f"{name} must be {_FORMS}, not dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be {_FORMS}, got a {arr.ndim}-D array")
    return arr


def to_arrow(matrix: numpy.ndarray) -> Any:
    """An ``(N, size)`` uint8 matrix as a pyarrow ``FixedSizeBinary(size)`` array (no copy
    for a C-contiguous matrix)."""
    import pyarrow as pa

    matrix = numpy.ascontiguousarray(as_matrix(matrix, "matrix"))
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(matrix.shape[1]), matrix.shape[0], [None, pa.py_buffer(matrix)]
    )


def to_words(matrix: Any) -> numpy.ndarray:
    """Z-values -> ``(N, ceil(size/8))`` uint64 big-endian words, zero-padded.

    Word-by-word order (``numpy.lexsort`` on the words, first word most significant) is the
    byte order of the Z-values.

    >>> hex(int(to_words(numpy.array([[1, 2, 3]], numpy.uint8))[0, 0]))
    '0x102030000000000'
    """
    m = as_matrix(matrix, "matrix")
    n, size = m.shape
    nwords = max(1, -(-size // 8))
    padded = numpy.zeros((n, nwords * 8), numpy.uint8)
    padded[:, :size] = m
    return padded.view(">u8").astype(numpy.uint64)


def from_words(words: numpy.ndarray, size: int) -> numpy.ndarray:
    """The inverse of ``to_words``: ``(N, size)`` uint8 from big-endian uint64 words."""
    words = numpy.asarray(words, dtype=numpy.uint64)
    n = words.shape[0]
    be = numpy.ascontiguousarray(words.astype(">u8")).view(numpy.uint8).reshape(n, -1)
    return numpy.ascontiguousarray(be[:, :size])


def sort_keys(matrix: Any) -> numpy.ndarray:
    """Z-values as ``(N,)`` numpy ``S<size>`` keys, which compare as unsigned bytes.

    All keys have one width, so the zero padding numpy trims never makes two different
    keys equal.
    """
    m = numpy.ascontiguousarray(as_matrix(matrix, "matrix"))
    return m.view(f"S{m.shape[1]}").reshape(m.shape[0])
