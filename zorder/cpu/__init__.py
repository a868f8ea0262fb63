"""The CPU floor: what this CPU can run, read once, and the pure backend selector.

- ``facts()``: this CPU as a py-cpuinfo-shaped dict (``arch``, ``vendor_id_raw``,
  ``family``, ``model``, ``flags``, ``os_avx``, ``os_avx512``, ``usable``), read with CPUID and XGETBV
  the first time it is asked for. This is the only place zorder reads CPUID: the kernels
  ask ``usable(feature)`` before they run.
- ``features``: the one table of the CPU features (CPUID bit, OS state, implies) and of
  what each kernel needs; the CPUID reading, ``usable``, ``ISA_FLAGS`` and the Hilbert
  transform's choice all come from it.
- ``select``: pure functions from a CPU description to a backend name and the reason,
  with ``ISA_FLAGS``, the flags each ISA-specific kernel needs. They look at nothing but
  their argument, so any CPU can be described to them in a test.

Imports nothing from zorder: it is the ground floor.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from zorder.cpu.select import (
    BACKEND_ARCHES,
    BACKEND_NAMES,
    ISA_FLAGS,
    avx2_verdict,
    backend_applies,
    choose_backend,
    explain_choice,
    neon_verdict,
    pdep_verdict,
    simd_verdict,
)

__all__ = [
    "BACKEND_ARCHES",
    "BACKEND_NAMES",
    "ISA_FLAGS",
    "avx2_verdict",
    "backend_applies",
    "choose_backend",
    "explain_choice",
    "facts",
    "neon_verdict",
    "pdep_verdict",
    "simd_verdict",
    "usable",
]

_FACTS: Optional[Dict[str, Any]] = None


def _read() -> Dict[str, Any]:
    global _FACTS
    if _FACTS is None:
        from zorder.cpu._facts import cpu_facts

        _FACTS = cpu_facts()
    return _FACTS


def facts() -> Dict[str, Any]:
    """This CPU's facts (a fresh copy; CPUID itself runs once per process)."""
    return {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in _read().items()}


def usable(feature: str) -> bool:
    """Whether this CPU and OS run ``feature`` ("bmi2", "avx2", "avx512_vbmi_gfni": the
    backends' checks in ``features.TARGETS``)."""
    return bool(_read()["usable"].get(feature, False))
