import numpy as np
import numpy.typing as npt

def argsort_rows(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]: ...
