"""CPU facts where there is no CPUID: the same keys, read from /proc/cpuinfo and ``platform``.

``zorder.cpu._facts.cpu_facts`` reads CPUID on x86-64; on every other architecture it
calls :func:`facts_without_cpuid`. Both give every key in :data:`FACT_KEYS`, so code that
reads ``brand_raw`` or ``family`` works on any machine. Facts that only exist on x86-64
(``family``, ``model``, ``stepping``) are ``None`` elsewhere; ``os_avx``/``os_avx512``
are ``False`` (no such registers).
"""

from __future__ import annotations

import platform
from typing import Any, Dict, Optional

from zorder.cpu import features

#: The keys of every CPU-facts dict, on every platform.
FACT_KEYS = (
    "arch", "source", "vendor_id_raw", "brand_raw", "family", "model", "stepping",
    "flags", "os_avx", "os_avx512", "usable",
)

#: The kernels' own feature checks (the feature table's); none exists without CPUID.
USABLE_FEATURES = features.USABLE_FEATURES

# platform.machine() spellings -> py-cpuinfo's arch names.
_ARCH_NAMES = {
    "x86_64": "X86_64", "amd64": "X86_64", "i386": "X86_32", "i686": "X86_32",
    "aarch64": "ARM_8", "arm64": "ARM_8", "armv7l": "ARM_7", "ppc64le": "PPC_64",
    "ppc64": "PPC_64", "s390x": "S390X", "riscv64": "RISCV_64",
}

# /proc/cpuinfo names the brand differently per architecture (x86 and some arm kernels:
# "model name"; older arm: "Hardware"; ppc: "cpu"; s390x: "machine"); the first present wins.
_BRAND_FIELDS = ("model name", "Hardware", "cpu model", "cpu", "machine")
# The vendor: x86's "vendor_id", s390x's "vendor_id", arm's numeric "CPU implementer".
_VENDOR_FIELDS = ("vendor_id", "CPU implementer")
# ISA extensions: arm's "Features", riscv's "isa" extensions are one word, so not split.
_FLAG_FIELDS = ("Features",)


def arch_name(machine: str) -> str:
    """py-cpuinfo's arch name (``X86_64``, ``ARM_8``, ...) for a ``platform.machine()`` string."""
    machine = machine.lower()
    return _ARCH_NAMES.get(machine, machine.upper())


def read_proc_cpuinfo(path: str = "/proc/cpuinfo") -> Optional[str]:
    """The text of /proc/cpuinfo, or None where there is none (macOS, Windows, sandboxes)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _first_cpu_fields(text: str) -> Dict[str, str]:
    # Fields of the first processor block, plus machine-wide ones printed after the last
    # block (arm's "Hardware"); the first spelling of a field wins.
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        fields.setdefault(key.strip(), value.strip())
    return fields


def facts_without_cpuid(machine: str, cpuinfo_text: Optional[str]) -> Dict[str, Any]:
    """The CPU facts for a machine without CPUID, from ``platform.machine()`` and /proc/cpuinfo.

    ``cpuinfo_text`` is /proc/cpuinfo's text, or None where there is none. The brand falls
    back to ``platform.processor()`` and then to ``machine`` so it is never empty.
    """
    if not isinstance(machine, str):
        raise TypeError(f"machine must be a str such as 'aarch64', not {type(machine).__name__}")
    fields = _first_cpu_fields(cpuinfo_text) if cpuinfo_text else {}
    brand = next((fields[k] for k in _BRAND_FIELDS if fields.get(k)), "")
    vendor = next((fields[k] for k in _VENDOR_FIELDS if fields.get(k)), "")
    if not brand and "CPU part" in fields:
        # arm kernels often name no model: the implementer and part numbers identify it.
        brand = f"implementer {vendor or '?'} part {fields['CPU part']}"
    flags = sorted({f for k in _FLAG_FIELDS for f in fields.get(k, "").split()})
    return {
        "arch": arch_name(machine),
        "source": "/proc/cpuinfo" if fields else "platform",
        "vendor_id_raw": vendor,
        "brand_raw": brand or platform.processor() or machine,
        "family": None,
        "model": None,
        "stepping": None,
        "flags": flags,
        "os_avx": False,
        "os_avx512": False,
        "usable": {name: False for name in USABLE_FEATURES},
    }
