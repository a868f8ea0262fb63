"""Buffers with an inaccessible page right beside them, so that a kernel's load or store
one byte outside faults and the test process dies, failing the run (Linux: mprotect)."""

import ctypes
import mmap

import numpy as np

PAGE = mmap.PAGESIZE
PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.restype = ctypes.c_int


class Guarded:
    """n writable bytes with an inaccessible page right after them (guard="after") or
    right before them (guard="before")."""

    def __init__(self, n, guard):
        pages = -(-n // PAGE) + 2
        self._map = mmap.mmap(-1, pages * PAGE)
        self._anchor = ctypes.c_char.from_buffer(self._map)   # the mapping's address
        base = ctypes.addressof(self._anchor)
        for page in (0, pages - 1):
            if _libc.mprotect(base + page * PAGE, PAGE, PROT_NONE) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
        start = PAGE if guard == "before" else (pages - 1) * PAGE - n
        self.array = np.frombuffer(self._map, np.uint8, count=n, offset=start)
