"""Stubs for the string and binary gather of zorder.parquet.gather (private)."""

import numpy

def gather_offsets(offsets: numpy.ndarray, offset: int, rows: numpy.ndarray,
                   out: numpy.ndarray, starts: numpy.ndarray) -> int: ...
def gather_bytes(data: numpy.ndarray, starts: numpy.ndarray, out_offsets: numpy.ndarray,
                 out: numpy.ndarray) -> None: ...
def gather_bits(bitmap: numpy.ndarray, offset: int, rows: numpy.ndarray,
                out: numpy.ndarray) -> int: ...
