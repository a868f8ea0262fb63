"""The interleave floor: Iceberg's ``interleaveBits`` in interchangeable backends.

- ``_contract.pyi`` and ``kernel.pxd`` (with ``csrc/kernel.h``) are the contract: the
  Python signatures every backend shares, and the C ``RowsKernel`` each one implements.
- ``_frontend.pyx`` checks every argument once for all backends and hands one kernel all
  the rows of a call; its ``Backend`` is each backend module's public face.
- ``csrc/generic/``: the one driver of every backend (``driver.h``), run on a backend's
  table of stage functions, costs and fallback (``backend.h``); the segment machinery,
  the table kernel and the bit loop, which every backend may fall back to.
- One module per backend, each filling its table: ``bitloop`` (the reference),
  ``table``, ``nibble``, ``pdep`` (BMI2), ``avx2``, ``simd`` (AVX-512 VBMI + GFNI),
  ``neon`` (aarch64 Advanced SIMD). No backend imports another.
- ``auto``: the per-call dispatcher, which runs each call's shape class on the backend
  measured fastest for it (the table and its numbers are ``zorder.cpu.select.DISPATCH``).
- This module is the registry: which backends this build and CPU run, the module of one by
  name, ``resolve``, which turns a wish (``auto`` or a name) into what runs, and ``use``,
  which installs it as the default the floors above get from ``rows_function()``.

Imports only the CPU floor (``zorder.cpu``), whose facts say what can run; the choice
itself is ``zorder.cpu.select``'s.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Dict, Mapping, Optional, Tuple

from zorder import cpu
from zorder.cpu.select import (
    BACKEND_ARCHES, BACKEND_NAMES, ISA_FLAGS, SHAPE_CLASSES, backend_applies, describe_plan,
    dispatch_plan, os_state_missing,
)

__all__ = [
    "BACKEND_NAMES", "BackendError", "available_backends", "backend_name", "describe", "dispatch",
    "get_backend", "resolve", "row_kernel_capsule", "rows_function", "use",
]


class BackendError(ImportError, ValueError):
    """An unknown backend name, or one this CPU or build cannot run."""


_loaded: Dict[str, ModuleType] = {}


def backend_name(name: Any) -> str:
    """A backend name as given by a user (any case, spaces around it), as zorder spells it:
    the one normalization of ``ZORDER_BACKEND``, ``get_backend`` and ``--backends``."""
    if not isinstance(name, str):
        raise BackendError(f"a backend name must be a str such as 'table', "
                           f"not {type(name).__name__} {name!r}")
    return name.strip().lower()


#: py-cpuinfo's architecture names, as people say them.
_ARCH_WORDS = {"X86_64": "x86-64", "ARM_8": "aarch64"}


def _other_arch(name: str, cpu_info: Mapping[str, Any]) -> Optional[str]:
    """Why backend ``name`` does not exist on ``cpu_info``'s architecture (None if it does)."""
    if not cpu_info.get("arch") or backend_applies(name, cpu_info):
        return None
    where = " and ".join(_ARCH_WORDS.get(a, a) for a in BACKEND_ARCHES[name])
    return f"it exists only on {where}, and this is {cpu_info.get('arch')}"


def _lacking(name: str, cpu_info: Mapping[str, Any]) -> Optional[str]:
    """Why a described CPU cannot run backend ``name`` (None if it can)."""
    other = _other_arch(name, cpu_info)
    if other is not None:
        return other
    flags = {str(f).lower() for f in cpu_info.get("flags") or ()}
    missing = [f for f in ISA_FLAGS.get(name, ()) if f not in flags]
    if missing:
        return "this CPU lacks " + ", ".join(missing)
    return os_state_missing(name, cpu_info)


def load(name: str, cpu_info: Optional[Mapping[str, Any]] = None) -> Tuple[Optional[ModuleType], Optional[str]]:
    """(module, None) if backend ``name`` runs here, else (None, why not).

    ``cpu_info`` describes another CPU (py-cpuinfo's keys): the backend must then also
    have its ISA flags there. By default this machine's CPU facts decide.
    """
    if cpu_info is not None:
        why = _lacking(name, cpu_info)
        if why is not None:
            return None, why
    if name in _loaded:
        return _loaded[name], None
    # (a backend of another architecture is not built here: say that, not the ImportError)
    other = _other_arch(name, cpu.facts())
    if other is not None:
        return None, other
    try:
        module = importlib.import_module(f"zorder.interleave.{name}")
    except ImportError as exc:
        return None, f"not built ({exc})"
    if not getattr(module, "SUPPORTED", True):
        return None, module.UNSUPPORTED_REASON
    _loaded[name] = module
    return module, None


def available_backends(cpu_info: Optional[Mapping[str, Any]] = None) -> Tuple[str, ...]:
    """Names of the backends this build has and this CPU (or ``cpu_info``) runs, in
    ``BACKEND_NAMES`` order."""
    return tuple(name for name in BACKEND_NAMES if load(name, cpu_info)[0] is not None)


def get_backend(name: str, cpu_info: Optional[Mapping[str, Any]] = None) -> ModuleType:
    """The backend module ``name``, with the same ``interleave_bits``/``interleave_rows``.

    Raises BackendError for an unknown name or one this CPU (or ``cpu_info``) cannot run.

    >>> get_backend("bitloop").interleave_bits([b"\\xff", b"\\x00"]).hex()
    'aaaa'
    """
    name = backend_name(name)
    if name not in BACKEND_NAMES:
        if name == "auto":
            raise BackendError(
                "'auto' is not one backend but the default's per-call choice: leave the "
                "backend out (None) to use the default, which ZORDER_BACKEND sets at import"
            )
        raise BackendError(
            f"unknown zorder backend {name!r}; valid names: {', '.join(BACKEND_NAMES)}"
        )
    module, reason = load(name, cpu_info)
    if module is None:
        raise BackendError(
            f"zorder backend {name!r} is not available here: {reason}; "
            f"available: {', '.join(available_backends(cpu_info))}"
        )
    return module


def resolve(wish: Optional[str], source: str = "the wish",
            cpu_info: Optional[Mapping[str, Any]] = None) -> Tuple[str, str]:
    """(backend name, why) for ``wish``: ``"auto"`` (or None/empty) or a backend name.

    ``source`` names where the wish came from, for messages (e.g. ``ZORDER_BACKEND``).
    ``auto`` asks ``zorder.cpu.explain_choice`` among the available backends; a name must be
    one that runs here, never silently replaced. Raises BackendError otherwise.
    """
    name = backend_name(wish or "auto") or "auto"
    facts = cpu.facts() if cpu_info is None else dict(cpu_info)
    if name == "auto":
        main, why = cpu.explain_choice(facts, available=available_backends(cpu_info))
        return "auto", f"per call, by shape; {main} for uniform 8-byte columns: {why}"
    if name not in BACKEND_NAMES:
        raise BackendError(
            f"{source}={name!r} is not a zorder backend; "
            f"valid values: auto, {', '.join(BACKEND_NAMES)}"
        )
    get_backend(name, cpu_info)  # raises, naming the available ones, if it cannot run
    return name, f"forced by {source}={name}"


# The backend that calls without an explicit one use: set once by the package face
# (zorder/__init__.py, from ZORDER_BACKEND), so that the floors above get the chosen
# kernel passed down instead of importing the face.
_default: Optional[ModuleType] = None
_plan: Dict[str, Tuple[str, str]] = {}

def row_kernel_capsule(name: str) -> Any:
    """The capsule of backend ``name``'s C RowsKernel (for kernels that call it: the
    dispatcher, the Hilbert transform)."""
    return get_backend(name).backend.capsule


def use(name: str, cpu_info: Optional[Mapping[str, Any]] = None) -> ModuleType:
    """Make ``name`` (a backend, or ``auto``: the per-call dispatcher with the plan of
    ``zorder.cpu.select.dispatch_plan``) the default of ``rows_function()``."""
    global _default, _plan
    name = backend_name(name)
    if name != "auto":
        _default, _plan = get_backend(name, cpu_info), {}
        return _default
    from zorder.interleave import auto

    facts = cpu.facts() if cpu_info is None else dict(cpu_info)
    plan = dispatch_plan(facts, available_backends(cpu_info))
    auto.configure({shape: chosen for shape, (chosen, _) in plan.items()},
                   {chosen: row_kernel_capsule(chosen) for chosen, _ in plan.values()})
    _default, _plan = auto, plan
    return auto


def dispatch() -> Dict[str, Tuple[str, str]]:
    """The installed per-call plan ({shape class: (backend, why)}); empty when one
    backend was forced."""
    return dict(_plan)


def describe() -> str:
    """What the default is: a backend name, or ``auto (simd; pdep for ...)``."""
    if _default is None:
        raise RuntimeError("no default interleave backend: zorder.interleave.use() was not called")
    return describe_plan(_plan) if _plan else str(_default.name)


def default_name() -> str:
    """The backend that interleaves whole uniform rows by default (the dispatcher's
    choice for uniform 8-byte columns, or the forced backend)."""
    if _default is None:
        raise RuntimeError("no default interleave backend: zorder.interleave.use() was not called")
    return _plan[SHAPE_CLASSES[0]][0] if _plan else str(_default.name)


def rows_function(name: Optional[str] = None) -> Any:
    """``interleave_rows`` of backend ``name``, or of the default backend (see ``use``)."""
    if name is not None:
        return get_backend(name).interleave_rows
    if _default is None:
        raise RuntimeError("no default interleave backend: zorder.interleave.use() was not called")
    return _default.interleave_rows
