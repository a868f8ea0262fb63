from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from zorder.interleave._contract import interleave_bits as interleave_bits
from zorder.interleave._contract import interleave_rows as interleave_rows
from zorder.interleave._frontend import Backend

name: str
SUPPORTED: bool
UNSUPPORTED_REASON: str
backend: Backend
PLAN: Dict[str, str]
CACHE_BYTES: int

def configure(plan: Mapping[str, str], capsules: Mapping[str, Any]) -> None: ...
def shape_class_of(widths: Sequence[int], size: int, row_strides: Optional[Sequence[int]] = ...,
                   out_stride: Optional[int] = ..., rows: Optional[int] = ...) -> str: ...
SHAPE_NAMES: Tuple[str, ...]
