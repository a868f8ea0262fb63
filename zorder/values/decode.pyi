from typing import Any, List, Sequence, Union

import numpy as np
import numpy.typing as npt

__all__ = ["deinterleave_bits", "deinterleave_rows"]

def deinterleave_rows(values: Any, widths: Sequence[int]) -> List[npt.NDArray[np.uint8]]: ...
def deinterleave_bits(
    value: Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]], widths: Sequence[int]
) -> List[bytes]: ...
