"""Z-order (Morton) values exactly as Apache Iceberg computes them.

The interleave of Iceberg's ``ZOrderByteUtils.interleaveBits`` comes in interchangeable
backends with one contract (``bitloop``, ``table``, ``nibble``, ``pdep``, ``avx2``, ``simd``,
and ``neon`` on aarch64), and so does Iceberg's Hilbert index.
``zorder.backend`` says what runs: by default ``auto``, which picks for each call the
backend measured fastest for its shape on this CPU (``zorder.dispatch()``), or the one
backend named by the ``ZORDER_BACKEND`` environment variable.

This module is the public face: every public name is importable from here. The package
is built in floors, each importing only the ones below it (``ordered`` and ``hilbert``
are siblings that do not import each other)::

    cli -> bench -> the face (this module, zorder.dask, zorder.iceberg, zorder.spark)
        -> engines -> parquet -> values -> ordered | hilbert -> interleave -> cpu

>>> import zorder
>>> zorder.interleave_bits([b"\\x80", b"\\x40", b"\\x20"]).hex()
'888000'
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Tuple

try:
    from zorder.cpu import _facts  # noqa: F401  (the first compiled module)
except ImportError as _exc:  # pragma: no cover - only in an unbuilt source tree
    # (Python reports a missing extension module of a package that imports it as "cannot
    # import name", a plain ImportError: look for the file itself.)
    from importlib.machinery import EXTENSION_SUFFIXES as _SUFFIXES

    if any(os.path.exists(os.path.join(os.path.dirname(__file__), "cpu", "_facts" + _suffix))
           for _suffix in _SUFFIXES):
        raise   # built, but it does not load: that error says why
    raise ImportError(
        f"zorder's compiled kernels are missing from {os.path.dirname(__file__)}: this looks "
        "like the source folder, which Python finds first when run from it. Run from another "
        "folder (or use the `zorder` command), or build in place with "
        "`python setup.py build_ext --inplace`."
    ) from _exc

from zorder import cpu as _cpu
from zorder import interleave as _interleave
from zorder import ordered as _ordered
from zorder import values as _values
from zorder.hilbert import hilbert_index, hilbert_rows
from zorder.cpu import BACKEND_NAMES, choose_backend, explain_choice
from zorder.interleave import BackendError, available_backends, dispatch, get_backend
from zorder.ordered import *  # noqa: F401,F403  (the names in zorder.ordered.__all__)
from zorder.values import *  # noqa: F401,F403  (the names in zorder.values.__all__)

__all__ = [
    "BACKEND_NAMES",
    "BackendError",
    "available_backends",
    "backend",
    "backend_reason",
    "choose_backend",
    "cpu_info",
    "dispatch",
    "explain_choice",
    "get_backend",
    "interleave_bits",
    "interleave_rows",
]
# Iceberg's ordered bytes and options; Z-values of tables, sorting and decoding.
__all__ += _ordered.__all__ + _values.__all__
# Iceberg's Hilbert index (HilbertByteUtils), one row or many (its inverse is in values).
__all__ += ["hilbert_index", "hilbert_rows"]



def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source); from a
    source tree that was never installed, ``0+unknown``."""
    from importlib import metadata

    try:
        return metadata.version("zorder")
    except metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = _version()

#: The environment variable that forces a backend; read once, here, at import.
ENV_VAR = "ZORDER_BACKEND"


def cpu_info() -> Dict[str, Any]:
    """The CPU facts the selector used (py-cpuinfo's keys, read with CPUID)."""
    return _cpu.facts()


def _select() -> Tuple[str, str]:
    return _interleave.resolve(os.environ.get(ENV_VAR, "auto"), source=ENV_VAR)


def _run_as_command() -> bool:
    """Whether this process is the zorder command (its console script, or ``python -m
    zorder``), which ends a bad ZORDER_BACKEND with one line, not a traceback: it imports
    this package before its own code can catch anything."""
    if os.path.basename(sys.argv[0]) == "zorder":
        return True
    argv = list(getattr(sys, "orig_argv", ()))
    return any(a == "-m" and b == "zorder" for a, b in zip(argv, argv[1:]))


try:
    _wish, backend_reason = _select()
    _backend_module = _interleave.use(_wish)
except BackendError as _error:
    if not _run_as_command():
        raise
    print(f"error: {_error}", file=sys.stderr)
    raise SystemExit(2) from None   # (the command's status for a bad argument)
#: What runs: a backend name (forced), or ``auto (simd; avx2 for ...)``: the per-call
#: dispatch, its main backend and the shape classes that go elsewhere.
backend = _interleave.describe()

if TYPE_CHECKING:
    from zorder.interleave._contract import interleave_bits, interleave_rows
else:
    #: The chosen backend's functions (see their docstrings).
    interleave_bits = _backend_module.interleave_bits
    interleave_rows = _backend_module.interleave_rows
