from typing import Any, Optional, Sequence, Tuple, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from zorder.interleave._contract import BytesLike, RowsInput

__all__ = ["hilbert_index", "hilbert_rows"]

_Out = TypeVar("_Out")

TRANSFORMS: Tuple[str, ...]
TRANSFORM: str

@overload
def hilbert_index(
    columns: Sequence[BytesLike], bits_per_column: int = ..., out: None = ...
) -> bytes: ...
@overload
def hilbert_index(columns: Sequence[BytesLike], bits_per_column: int, out: _Out) -> _Out: ...
@overload
def hilbert_index(
    columns: Sequence[BytesLike], bits_per_column: int = ..., *, out: _Out
) -> _Out: ...
def hilbert_rows(
    columns: RowsInput,
    bits_per_column: int = ...,
    out: Optional[NDArray[np.uint8]] = ...,
    *,
    threads: int = ...,
) -> NDArray[np.uint8]: ...
def check_bits_per_column(bits_per_column: int) -> int: ...
def untranspose_rows(block: NDArray[np.uint8], n_columns: int, bits_per_column: int) -> None: ...

# Tests only: the same through a named interleave backend and transform level.
def _hilbert_index_with(
    backend: str,
    columns: Sequence[BytesLike],
    bits_per_column: int = ...,
    out: Any = ...,
    *,
    transform: Optional[str] = ...,
) -> Any: ...
def _hilbert_rows_with(
    backend: str,
    columns: RowsInput,
    bits_per_column: int = ...,
    out: Optional[NDArray[np.uint8]] = ...,
    *,
    threads: int = ...,
    transform: Optional[str] = ...,
) -> NDArray[np.uint8]: ...
