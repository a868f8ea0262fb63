# The signatures every backend module shares (stub only: each backend's .pyi re-exports these).
from typing import Any, Optional, Sequence, Tuple, TypeVar, Union, overload

import numpy as np
from numpy.typing import NDArray

BytesLike = Union[bytes, bytearray, memoryview, NDArray[np.uint8]]
RowsInput = Union[Sequence[NDArray[np.uint8]], NDArray[np.uint8]]
_Out = TypeVar("_Out")

@overload
def interleave_bits(
    columns: Sequence[BytesLike], interleaved_size: Optional[int] = ..., out: None = ...
) -> bytes: ...
@overload
def interleave_bits(columns: Sequence[BytesLike], interleaved_size: Optional[int], out: _Out) -> _Out: ...
@overload
def interleave_bits(
    columns: Sequence[BytesLike], interleaved_size: Optional[int] = ..., *, out: _Out
) -> _Out: ...
def interleave_rows(
    columns: RowsInput,
    interleaved_size: Optional[int] = ...,
    out: Optional[NDArray[np.uint8]] = ...,
    *,
    threads: int = ...,
) -> NDArray[np.uint8]: ...

# Tests only, in the backends that have them: the vector kernel alone (LookupError for a
# shape it does not cover); the output size from which non-temporal stores are used (sets
# it if given); the assembly of narrow ragged rows on caller-given buffers (rows assembled).
def _vector_rows(
    columns: RowsInput,
    interleaved_size: Optional[int] = ...,
    out: Optional[NDArray[np.uint8]] = ...,
) -> NDArray[np.uint8]: ...
def _stream_min(value: Optional[int] = ...) -> int: ...
def _assemble(pieces: Sequence[Tuple[Any, int, int, int]], size: int, rows: int,
              out: Any) -> int: ...
