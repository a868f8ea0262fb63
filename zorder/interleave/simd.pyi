from typing import Any, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from zorder.interleave._contract import RowsInput
from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows
from zorder.interleave._frontend import Backend

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
backend: Backend

# Tests only: the vector kernel alone; LookupError for a shape it does not cover.
def _vector_rows(
    columns: RowsInput,
    interleaved_size: Optional[int] = ...,
    out: Optional[NDArray[np.uint8]] = ...,
) -> NDArray[np.uint8]: ...
def _stream_min(value: Optional[int] = ...) -> int: ...

# Tests only: the assembly of narrow ragged rows on caller-given buffers (rows assembled).
def _assemble(pieces: Sequence[Tuple[Any, int, int, int]], size: int, rows: int,
              out: Any) -> int: ...
