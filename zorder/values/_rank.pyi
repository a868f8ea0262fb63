from typing import Optional

import numpy as np
import numpy.typing as npt

def rank_rows(ordered: npt.NDArray[np.uint8], pairs: npt.NDArray[np.uint64],
              table: npt.NDArray[np.uint32], lo: int, shift: int,
              out: npt.NDArray[np.uint8]) -> None: ...
def sorted_keys(ordered: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]: ...
