"""Stubs for the Cython string kernels of zorder.ordered.strings (private)."""

from typing import Tuple

import numpy

def encode_objects(items: list, length: int, out: numpy.ndarray,
                   other: numpy.ndarray) -> Tuple[int, int]: ...
def encode_ucs4(chars: numpy.ndarray, length: int, out: numpy.ndarray) -> None: ...
def gather(data: numpy.ndarray, starts: numpy.ndarray, lens: numpy.ndarray, length: int,
           utf8: bool, out: numpy.ndarray) -> None: ...
