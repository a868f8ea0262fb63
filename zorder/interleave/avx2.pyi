from typing import Optional, Sequence, Tuple

from zorder.interleave._contract import _assemble as _assemble
from zorder.interleave._contract import _stream_min as _stream_min
from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows
from zorder.interleave._frontend import Backend

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
backend: Backend

# Tests only: the byte-plane path's mode (0 never, 1 chosen shapes, 2 every shape it can
# take) and fewest rows; sets those given, returns the old values.
def _planar(mode: Optional[int] = ..., min_rows: Optional[int] = ...) -> Tuple[int, int]: ...

# Tests only: the rows the byte-plane path would do of such a call (0: not taken).
def _planar_rows(widths: Sequence[int], size: int, nrows: int,
                 row_strides: Optional[Sequence[int]] = ...,
                 out_stride: Optional[int] = ...) -> int: ...
