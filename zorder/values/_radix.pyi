from typing import Optional, Tuple

import numpy as np
import numpy.typing as npt

def rows_scratch(n: int) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
PARALLEL_ROWS: int

def argsort_rows(values: npt.NDArray[np.uint8], scratch: Optional[Tuple[np.ndarray, ...]] = ...,
                 threads: int = ...) -> npt.NDArray[np.int64]: ...
def argsort_short(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]: ...
