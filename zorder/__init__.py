"""Z-order (Morton) values exactly as Apache Iceberg computes them.

The interleave of Iceberg's ``ZOrderByteUtils.interleaveBits`` comes in interchangeable
backends with one contract (``bitloop``, ``table``, ``nibble``, ``pdep``, ``simd``).
``zorder.backend`` names the one chosen at import: the fastest this CPU runs well, or
the one named by the ``ZORDER_BACKEND`` environment variable.

>>> import zorder
>>> zorder.interleave_bits([b"\\x80", b"\\x40", b"\\x20"]).hex()
'888000'
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Dict, Tuple

try:
    from zorder._cpu import cpu_facts as _cpu_facts
except ModuleNotFoundError as _exc:  # pragma: no cover - only in an unbuilt source tree
    if _exc.name != "zorder._cpu":
        raise
    raise ImportError(
        f"zorder's compiled kernels are missing from {os.path.dirname(__file__)}: this looks "
        "like the source folder, which Python finds first when run from it. Run from another "
        "folder (or use the `zorder` command), or build in place with "
        "`python setup.py build_ext --inplace`."
    ) from _exc
from zorder._select import BACKEND_NAMES, choose_backend, explain_choice
from zorder._ordered import (
    ICEBERG_VERSIONS,
    PRIMITIVE_BUFFER_SIZE,
    SPARK_VERSIONS,
    TIMESTAMP_KINDS,
    byte_truncate_or_fill,
    double_to_ordered_bytes,
    float_to_ordered_bytes,
    floating_point_ordered_bytes,
    int_to_ordered_bytes,
    long_to_ordered_bytes,
    ordered_bytes,
    short_to_ordered_bytes,
    string_to_ordered_bytes,
    tinyint_to_ordered_bytes,
    whole_number_ordered_bytes,
)
from zorder import _deinterleave, _ordered, _values
from zorder._deinterleave import deinterleave_bits, deinterleave_rows
from zorder._values import argsort_zvalues, sort, sort_indices, zorder_values, zorder_widths
from zorder import _hilbert
from zorder._hilbert import hilbert_decode_rows, hilbert_index, hilbert_rows

__all__ = [
    "BACKEND_NAMES",
    "BackendError",
    "available_backends",
    "backend",
    "backend_reason",
    "choose_backend",
    "cpu_info",
    "explain_choice",
    "get_backend",
    "interleave_bits",
    "interleave_rows",
]
# Iceberg's ordered bytes; Z-values of tables, sorting and decoding.
__all__ += _ordered.__all__ + _values.__all__ + _deinterleave.__all__
# Iceberg's Hilbert index (HilbertByteUtils), one row or many, and its inverse.
__all__ += _hilbert.__all__

__version__ = "0.1.0"

ENV_VAR = "ZORDER_BACKEND"


class BackendError(ImportError, ValueError):
    """An unknown backend name, or one this CPU or build cannot run."""


_CPU = _cpu_facts()
_loaded: Dict[str, ModuleType] = {}


def cpu_info() -> dict:
    """The CPU facts the selector used (py-cpuinfo's keys, read with CPUID)."""
    return {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in _CPU.items()}


def _try_load(name: str):
    """(module, None) if the backend runs here, else (None, reason)."""
    if name in _loaded:
        return _loaded[name], None
    try:
        module = importlib.import_module(f"zorder._{name}")
    except ImportError as exc:
        return None, f"not built ({exc})"
    if not getattr(module, "SUPPORTED", True):
        return None, module.UNSUPPORTED_REASON
    _loaded[name] = module
    return module, None


def available_backends() -> Tuple[str, ...]:
    """Names of the backends this build has and this CPU runs, in BACKEND_NAMES order."""
    return tuple(name for name in BACKEND_NAMES if _try_load(name)[0] is not None)


def get_backend(name: str) -> ModuleType:
    """The backend module ``name``, with the same ``interleave_bits``/``interleave_rows``.

    >>> get_backend("bitloop").interleave_bits([b"\\xff", b"\\x00"]).hex()
    'aaaa'
    """
    if name not in BACKEND_NAMES:
        raise BackendError(
            f"unknown zorder backend {name!r}; valid names: {', '.join(BACKEND_NAMES)}"
        )
    module, reason = _try_load(name)
    if module is None:
        raise BackendError(
            f"zorder backend {name!r} is not available here: {reason}; "
            f"available: {', '.join(available_backends())}"
        )
    return module


def _select() -> Tuple[str, str]:
    wish = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if wish == "auto":
        return explain_choice(_CPU, available=available_backends())
    if wish not in BACKEND_NAMES:
        raise BackendError(
            f"{ENV_VAR}={wish!r} is not a zorder backend; "
            f"valid values: auto, {', '.join(BACKEND_NAMES)}"
        )
    get_backend(wish)  # raises, naming the available ones, if this CPU cannot run it
    return wish, f"forced by {ENV_VAR}={wish}"


backend, backend_reason = _select()
_backend_module = get_backend(backend)

if TYPE_CHECKING:
    from zorder._contract import interleave_bits, interleave_rows
else:
    #: The chosen backend's functions (see their docstrings).
    interleave_bits = _backend_module.interleave_bits
    interleave_rows = _backend_module.interleave_rows
