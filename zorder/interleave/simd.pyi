from zorder.interleave._contract import _assemble as _assemble
from zorder.interleave._contract import _stream_min as _stream_min
from zorder.interleave._contract import _vector_rows as _vector_rows
from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows
from zorder.interleave._frontend import Backend

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
backend: Backend
