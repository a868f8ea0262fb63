# The signatures every backend module shares (stub only: each backend's .pyi re-exports these).
from typing import Optional, Sequence, TypeVar, Union, overload

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
