"""A plain-Python model of Iceberg's ``HilbertByteUtils.hilbertIndex``: the tests' oracle.

Slow on purpose (Python ints, one bit decision at a time) and written straight from
Skilling's description, "Programming the Hilbert curve", AIP Conf. Proc. 707 (2004):
the C kernel in _hilbert_kernel.c is checked against it, never the other way round.
"""

from __future__ import annotations

from typing import List, Sequence

__all__ = ["axes_to_transposed", "transposed_to_axes", "hilbert_index", "hilbert_decode"]


def axes_to_transposed(axes: Sequence[int], bits: int) -> List[int]:
    """Skilling's AxestoTranspose on ``bits``-bit coordinates (Iceberg's axesToTranspose)."""
    x = list(axes)
    n = len(x)
    # Inverse undo, from the top bit down: at level q every column either inverts the
    # low bits of x[0] (its own bit q is set) or swaps its low bits with x[0]'s.
    for level in range(bits - 1, 0, -1):
        low = (1 << level) - 1
        for i in range(n):
            if (x[i] >> level) & 1:
                x[0] ^= low
            else:
                swap = (x[0] ^ x[i]) & low
                x[0] ^= swap
                x[i] ^= swap
    # Gray encode across the columns.
    for i in range(1, n):
        x[i] ^= x[i - 1]
    # Final adjustment: each set bit of the last column flips every bit below it.
    flip = 0
    for level in range(bits - 1, 0, -1):
        if (x[n - 1] >> level) & 1:
            flip ^= (1 << level) - 1
    return [v ^ flip for v in x]


def transposed_to_axes(transposed: Sequence[int], bits: int) -> List[int]:
    """Skilling's TransposetoAxes: the inverse of axes_to_transposed."""
    x = list(transposed)
    n = len(x)
    # Gray decode; the final adjustment cancels out of the differences and is undone
    # on x[0] by x[n-1] >> 1.
    flip = x[n - 1] >> 1
    for i in range(n - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= flip
    # Redo the undo steps in reverse order (each one is its own inverse).
    for level in range(1, bits):
        low = (1 << level) - 1
        for i in range(n - 1, -1, -1):
            if (x[i] >> level) & 1:
                x[0] ^= low
            else:
                swap = (x[0] ^ x[i]) & low
                x[0] ^= swap
                x[i] ^= swap
    return x


def _check(columns: Sequence[bytes], bits: int) -> int:
    # Iceberg's order: bits, bits <= 64, at least one column, each column long enough.
    if bits <= 0 or bits % 8:
        raise ValueError(f"bits_per_column must be a positive multiple of 8, got {bits}")
    if bits > 64:
        raise ValueError(f"bits_per_column must be at most 64, got {bits}")
    if len(columns) == 0:
        raise ValueError("columns is empty: at least one column is needed")
    nbytes = bits // 8
    for i, col in enumerate(columns):
        if len(col) < nbytes:
            raise ValueError(f"columns[{i}] has {len(col)} bytes, fewer than {nbytes}")
    return nbytes


def hilbert_index(columns: Sequence[bytes], bits: int = 64) -> bytes:
    """Iceberg's hilbertIndex(columns, bits): transform, then interleaveBits."""
    nbytes = _check(columns, bits)
    axes = [int.from_bytes(bytes(col[:nbytes]), "big") for col in columns]
    transposed = axes_to_transposed(axes, bits)
    # interleaveBits of equal-width columns: the top bit of every column in turn, then
    # the next bit of every column, and so on.
    value = 0
    for level in range(bits - 1, -1, -1):
        for word in transposed:
            value = (value << 1) | ((word >> level) & 1)
    return value.to_bytes(len(columns) * nbytes, "big")


def hilbert_decode(value: bytes, n_columns: int, bits: int = 64) -> List[bytes]:
    """The columns' leading ``bits`` bits back from a Hilbert index of ``n_columns``."""
    nbytes = bits // 8
    if len(value) != n_columns * nbytes:
        raise ValueError(f"value has {len(value)} bytes, expected {n_columns * nbytes}")
    number = int.from_bytes(bytes(value), "big")
    total = n_columns * bits
    transposed = [0] * n_columns
    for position in range(total):
        bit = (number >> (total - 1 - position)) & 1
        transposed[position % n_columns] = (transposed[position % n_columns] << 1) | bit
    return [w.to_bytes(nbytes, "big") for w in transposed_to_axes(transposed, bits)]
