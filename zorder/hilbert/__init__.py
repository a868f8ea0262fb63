"""The hilbert floor: Iceberg's Hilbert index (``HilbertByteUtils.hilbertIndex``).

``hilbert_index`` (one row) and ``hilbert_rows`` (many) read each column's leading
``bits_per_column / 8`` bytes as a big-endian word, run John Skilling's axes-to-transposed
index transform ("Programming the Hilbert curve", AIP Conf. Proc. 707, 2004) on the words
of each row, vectorized across rows in C (``csrc/hilbert_kernel.c``: for 2, 3 and 4 columns
with AVX-512 VBMI + GFNI, the same transform as a state machine over the levels, its
tables built at import from Skilling's steps, on 64 rows a register; with AVX2, the other
shapes of 2 to 8 columns of 64 bits, that machine as logic on bit planes of 256 rows;
else 8 rows per AVX-512 register, 4 per AVX2 register, plain C elsewhere), and interleave
the transposed words with an interleave backend's row kernel while the block of rows is in
cache (the state tables and the bit planes write the interleaved bytes themselves).
``untranspose_rows`` is the inverse transform, for the decoder in the values floor.

Imports the interleave floor (its front end and backends) and the CPU floor (which
transform this CPU runs); never the floors above.
"""

import functools
from typing import Any, Callable, Optional

from zorder import interleave
from zorder.hilbert import _transform
from zorder.hilbert._transform import (
    check_bits_per_column, hilbert_index, hilbert_rows, untranspose_rows,
)

__all__ = ["check_bits_per_column", "hilbert_index", "hilbert_rows", "rows_function",
           "untranspose_rows"]


def rows_function(backend: Optional[str] = None) -> Callable[..., Any]:
    """``hilbert_rows``, interleaving with backend ``backend`` (default: the chosen one)."""
    if backend is None:
        return hilbert_rows
    name = interleave.backend_name(backend)
    interleave.get_backend(name)   # (its BackendError, for a bad or missing name, now)
    return functools.partial(_transform._hilbert_rows_with, name)
