from typing import Optional

from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str

# Tests only: the output size from which non-temporal stores are used (sets it if given).
def _stream_min(value: Optional[int] = ...) -> int: ...
