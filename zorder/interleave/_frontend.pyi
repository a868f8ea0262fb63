from typing import Any, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from zorder.interleave._contract import BytesLike, RowsInput

INTERLEAVE_BITS_DOC: str
INTERLEAVE_ROWS_DOC: str

class Backend:
    """A backend module's face (made by the module itself)."""
    @property
    def name(self) -> str: ...
    @property
    def supported(self) -> bool: ...
    @property
    def reason(self) -> str: ...
    @property
    def capsule(self) -> Any: ...
    def vector_rows(self, columns: RowsInput, interleaved_size: Optional[int] = ...,
                    out: Optional[NDArray[np.uint8]] = ...) -> NDArray[np.uint8]: ...
    def stream_min(self, value: Optional[int] = ...) -> int: ...
    def assemble(self, pieces: Sequence[Tuple[Any, int, int, int]], size: int, rows: int,
                 out: Any) -> int: ...

def backend_of(name: str) -> Backend: ...
