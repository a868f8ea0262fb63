"""Byte sizes as users write them (``128MB``, ``512MiB``, ``4096``)."""

from __future__ import annotations

import re
from typing import Union

__all__ = ["parse_size"]

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}


def parse_size(value: Union[int, str], name: str = "size") -> int:
    """Bytes from ``128MB`` (SI, as Dask's ``parse_bytes``), ``128MiB`` (binary) or an int.

    >>> parse_size("128MB"), parse_size("1MiB"), parse_size(4096)
    (128000000, 1048576, 4096)
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a byte count or a string like '128MB', not bool")
    if hasattr(value, "__index__") and not isinstance(value, str):
        number = value.__index__()
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        unit = match.group(2).lower() if match else None
        if not match or unit not in _SIZE_UNITS:
            raise ValueError(
                f"{name}={value!r} is not a size; use e.g. 128MB, 512MiB, 1GB or a byte count"
            )
        number = int(float(match.group(1)) * _SIZE_UNITS[unit])
    else:
        raise TypeError(f"{name} must be a byte count or a string like '128MB', "
                        f"not {type(value).__name__}")
    if number <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return number
