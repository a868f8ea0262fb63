"""Stubs for the one-pass column hashes of zorder.parquet.checksum (private)."""

from typing import Optional

import numpy

def add_fixed(h: numpy.ndarray, values: numpy.ndarray, offset: int, width: int,
              bitmap: Optional[numpy.ndarray] = ...) -> None: ...
def add_var(h: numpy.ndarray, offsets: numpy.ndarray, data: numpy.ndarray, offset: int,
            bitmap: Optional[numpy.ndarray] = ...) -> None: ...
def mixed_sum(h: numpy.ndarray) -> int: ...
