"""``python -m zorder info``: zorder's version, what it detected and what it chose, and why
(numpy's show_runtime, for us). The measurements behind the choices are in
benchmarks/NOTES.md, not here."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Tuple

import zorder
from zorder import interleave
from zorder.cpu import avx2_verdict, backend_applies, neon_verdict, pdep_verdict, simd_verdict
from zorder.cpu.select import is_x86_64
from zorder.parquet.memory import (
    DEFAULT_FRACTION, available_memory, default_memory_limit, format_bytes,
)

# The verdict functions of the ISA-specific backends, printed where the backend applies.
_VERDICTS: Dict[str, Callable[[Mapping], Tuple[bool, str]]] = {
    "pdep": pdep_verdict,
    "avx2": avx2_verdict,
    "simd": simd_verdict,
    "neon": neon_verdict,
}


def runtime_info(with_cpuinfo: bool = False) -> Dict[str, Any]:
    """The version, the chosen backend and why, every backend's availability, the CPU facts
    used, and the backend each shape class runs under ``auto`` with its reason."""
    backends = {}
    for name in zorder.BACKEND_NAMES:
        module, reason = interleave.load(name)
        backends[name] = "available" if module is not None else reason
    cpu = zorder.cpu_info()
    info: Dict[str, Any] = {
        "version": zorder.__version__,
        "backend": zorder.backend,
        "reason": zorder.backend_reason,
        "env": {zorder.ENV_VAR: os.environ.get(zorder.ENV_VAR)},
        "backends": backends,
        "cpu": cpu,
        "verdicts": {name: verdict(cpu) for name, verdict in _VERDICTS.items()
                     if backend_applies(name, cpu)},
        "dispatch": {shape: {"backend": chosen, "why": why}
                     for shape, (chosen, why) in interleave.dispatch().items()},
        "memory": _memory_facts(),
    }
    if with_cpuinfo:
        info["py_cpuinfo"] = _py_cpuinfo_facts()
    return info


def _memory_facts() -> Dict[str, Any]:
    """The default --memory-limit of sort (and what it is a share of), and Arrow's memory
    pool in this process (the command's: ``use_command_pool``)."""
    try:
        import pyarrow as pa
    except ImportError:   # (zorder without its Arrow extra)
        pool = None
    else:
        pool = pa.default_memory_pool().backend_name
    available, source = available_memory()
    return {"available": available, "source": source, "fraction": DEFAULT_FRACTION,
            "default_limit": default_memory_limit(), "arrow_pool": pool}


def _py_cpuinfo_facts() -> Dict[str, Any]:
    # Either distribution (py-cpuinfo or py-cpuinfo2) provides the `cpuinfo` module.
    try:
        import cpuinfo  # type: ignore[import-untyped]
    except ImportError:
        return {"error": "cpuinfo is not installed (pip install 'zorder[cpuinfo]')"}
    facts = cpuinfo.get_cpu_info()
    keys = ("arch", "vendor_id_raw", "brand_raw", "family", "model", "flags")
    return {k: facts.get(k) for k in keys}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--cpuinfo", action="store_true",
        help="also ask py-cpuinfo (slower: it starts a child process) and compare flags",
    )


def run(args: argparse.Namespace) -> int:
    info = runtime_info(with_cpuinfo=args.cpuinfo)
    if args.json:
        json.dump(info, sys.stdout, indent=2, default=str)
        print()
        return 0
    for line in format_info(info):
        print(line)
    return 0


def format_info(info: Mapping[str, Any]) -> List[str]:
    """The text report of ``runtime_info()``'s dict: only what applies to its CPU's platform.

    x86-64 facts (family, model, the OS's AVX-512 state) and the verdicts of backends that
    do not exist on the platform are left out rather than printed as ``None``.
    """
    cpu = info["cpu"]
    x86 = is_x86_64(cpu)
    lines = [f"zorder {info['version']}", f"backend:   {info['backend']}  ({info['reason']})"]
    forced = info["env"][zorder.ENV_VAR]
    lines.append(f"{zorder.ENV_VAR}: {forced if forced is not None else '(unset: auto)'}")
    lines.append("backends:")
    elsewhere = []
    for name, state in info["backends"].items():
        if backend_applies(name, cpu):
            lines.append(f"  {name:<8} {state}")
        else:
            elsewhere.append(name)
    if elsewhere:
        lines.append(f"  (not on {cpu.get('arch')}: {', '.join(elsewhere)})")
    lines.append("cpu:")
    for key in ("brand_raw", "arch", "vendor_id_raw", "family", "model", "source"):
        value = cpu.get(key)
        if value is None or value == "":
            continue
        lines.append(f"  {key:<14} {hex(value) if key == 'family' else value}")
    if x86:
        lines.append(f"  {'os_avx':<14} {cpu.get('os_avx')}")
        lines.append(f"  {'os_avx512':<14} {cpu.get('os_avx512')}")
    if cpu.get("flags"):
        lines.append(f"  {'flags':<14} {' '.join(cpu['flags'])}")
    for name, (ok, why) in info["verdicts"].items():
        lines.append(f"  {name + ' verdict':<14} {'yes' if ok else 'no'}: {why}")
    if info.get("dispatch"):
        lines.append("dispatch (auto: the backend each shape class runs, and why):")
        for shape, entry in info["dispatch"].items():
            lines.append(f"  {shape:<26} {entry['backend']:<8} {entry['why']}")
    memory = info.get("memory")
    if memory:
        available = memory["available"]
        why = (f"{memory['fraction']:.0%} of {format_bytes(available)} available, from "
               f"{memory['source']}" if available is not None else memory["source"])
        lines.append(f"memory:    default --memory-limit "
                     f"{format_bytes(memory['default_limit'])} ({why})")
        if memory.get("arrow_pool") is not None:
            lines.append(f"           Arrow's pool {memory['arrow_pool']} "
                         "(ARROW_DEFAULT_MEMORY_POOL to choose another)")
    if "py_cpuinfo" in info:
        other = info["py_cpuinfo"]
        lines.append("py-cpuinfo:")
        if "error" in other:
            lines.append(f"  {other['error']}")
        else:
            ours = set(cpu["flags"])
            theirs = set(other.get("flags") or ())
            lines.append(f"  brand_raw      {other.get('brand_raw')}")
            if x86:
                lines.append(f"  family/model   {other.get('family')}/{other.get('model')}")
            missing = sorted(ours - theirs)
            lines.append(f"  flags zorder sees that py-cpuinfo lacks: {' '.join(missing) or 'none'}")
    return lines
