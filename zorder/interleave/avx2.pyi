from typing import Any, Optional, Sequence, Tuple

from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows
from zorder.interleave._frontend import Backend

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
backend: Backend

# Tests only: the output size from which non-temporal stores are used (sets it if given).
def _stream_min(value: Optional[int] = ...) -> int: ...

# Tests only: the byte-plane path's mode (0 never, 1 chosen shapes, 2 every shape it can
# take) and fewest rows; sets those given, returns the old values.
def _planar(mode: Optional[int] = ..., min_rows: Optional[int] = ...) -> Tuple[int, int]: ...

# Tests only: the rows the byte-plane path would do of such a call (0: not taken).
def _planar_rows(widths: Sequence[int], size: int, nrows: int,
                 row_strides: Optional[Sequence[int]] = ...,
                 out_stride: Optional[int] = ...) -> int: ...

# Tests only: the assembly of narrow ragged rows on caller-given buffers (rows assembled).
def _assemble(pieces: Sequence[Tuple[Any, int, int, int]], size: int, rows: int,
              out: Any) -> int: ...
