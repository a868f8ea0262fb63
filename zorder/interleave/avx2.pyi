from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
