from typing import Optional

import numpy as np
import numpy.typing as npt

AVX2: bool

def rank_rows(ordered: npt.NDArray[np.uint8], pairs: npt.NDArray[np.uint64],
              table: npt.NDArray[np.uint32], lo: int, shift: int,
              out: npt.NDArray[np.uint8]) -> None: ...
def rank_rows_near(ordered: npt.NDArray[np.uint8], entries: npt.NDArray[np.uint32],
                   offsets: npt.NDArray[np.int32], codes: npt.NDArray[np.uint8], origin: int,
                   shift: int, crowded: bool, out: npt.NDArray[np.uint8], *,
                   vector: bool = True) -> None: ...
def rank_rows_two_level(ordered: npt.NDArray[np.uint8], first: npt.NDArray[np.uint32],
                        second: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int32],
                        points: Optional[npt.NDArray[np.uint64]], codes: npt.NDArray[np.uint8],
                        origin: int, shift: int, crowded: bool, out: npt.NDArray[np.uint8], *,
                        vector: bool = True) -> None: ...
def sorted_keys(ordered: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]: ...
