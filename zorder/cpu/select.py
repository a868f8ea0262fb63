"""Backend selection: a pure function from a CPU description to a backend name.

The description is a py-cpuinfo-shaped dict (``arch``, ``vendor_id_raw``, ``family``,
``flags``, ...): what ``cpuinfo.get_cpu_info()`` returns, or zorder's own CPUID reading
(``zorder.cpu_info()``), or a made-up one in a test. Nothing here looks at the machine.
"""

from __future__ import annotations

from typing import Collection, Dict, Mapping, Optional, Tuple

from zorder.cpu import features

#: Every backend zorder knows, reference first.
BACKEND_NAMES: Tuple[str, ...] = ("bitloop", "table", "nibble", "pdep", "avx2", "simd", "neon")


#: The CPU flags (py-cpuinfo's spelling) each ISA-specific kernel needs, from the one
#: feature table (``zorder.cpu.features``). (neon needs none: Advanced SIMD is mandatory
#: on aarch64, and macOS lists no flags.)
ISA_FLAGS: Dict[str, Tuple[str, ...]] = {
    backend: features.needs(target) for backend, target in features.BACKEND_TARGETS.items()
}

#: The architectures (py-cpuinfo's arch names) a backend exists on; absent means every one.
BACKEND_ARCHES: Dict[str, Tuple[str, ...]] = {
    "pdep": ("X86_64",),
    "avx2": ("X86_64",),
    "simd": ("X86_64",),
    "neon": ("ARM_8",),
}

# PDEP/PEXT are microcoded, tens to hundreds of cycles depending on the mask, on AMD
# families up to 0x18: Excavator (0x15), Zen/Zen+/Zen 2 (0x17) and Hygon Dhyana (0x18, a
# Zen derivative). From Zen 3 (0x19) they take 3 cycles, as on Intel since Haswell.
# Sources: Agner Fog's instruction tables; llvm-project issue 217304; polars' cpuid.rs.
FIRST_FAST_PDEP_AMD_FAMILY = 0x19
SLOW_PDEP_VENDORS = ("AuthenticAMD", "HygonGenuine")


def _flags(cpu_info: Mapping) -> frozenset:
    flags = cpu_info.get("flags")
    if flags is None:
        return frozenset()
    # A string is iterable too, and would silently become a set of letters.
    if not isinstance(flags, (list, tuple, set, frozenset)):
        raise TypeError(
            "cpu_info['flags'] must be a list, tuple or set of flag names such as "
            f"['avx2', 'bmi2'], not {type(flags).__name__}"
        )
    bad = [f for f in flags if not isinstance(f, str)]
    if bad:
        raise TypeError(f"cpu_info['flags'] must hold str flag names, found "
                        f"{type(bad[0]).__name__} {bad[0]!r}")
    return frozenset(f.lower() for f in flags)


def is_x86_64(cpu_info: Mapping) -> bool:
    arch = str(cpu_info.get("arch") or cpu_info.get("arch_string_raw") or "").upper()
    return arch in ("X86_64", "AMD64", "X64")


def is_aarch64(cpu_info: Mapping) -> bool:
    """py-cpuinfo calls aarch64 (Linux ``aarch64``, macOS ``arm64``) ``ARM_8``."""
    arch = str(cpu_info.get("arch") or cpu_info.get("arch_string_raw") or "").upper()
    return arch in ("ARM_8", "AARCH64", "ARM64")


def backend_applies(name: str, cpu_info: Mapping) -> bool:
    """Whether backend ``name`` exists at all on ``cpu_info``'s architecture."""
    arches = BACKEND_ARCHES.get(name)
    if arches is None:
        return True
    arch = str(cpu_info.get("arch") or cpu_info.get("arch_string_raw") or "").upper()
    if is_x86_64(cpu_info):
        arch = "X86_64"
    elif is_aarch64(cpu_info):
        arch = "ARM_8"
    return arch in arches


def pdep_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(fast, why): whether PDEP exists here and runs at full speed."""
    if not is_x86_64(cpu_info):
        return False, f"PDEP is an x86-64 instruction; arch is {cpu_info.get('arch')!r}"
    if not set(ISA_FLAGS["pdep"]) <= _flags(cpu_info):
        return False, "no bmi2 flag: this CPU has no PDEP"
    vendor = str(cpu_info.get("vendor_id_raw") or "").strip()
    # (CPUID spells the vendor one way; a description written by hand may not)
    if vendor.lower() in {v.lower() for v in SLOW_PDEP_VENDORS}:
        family = cpu_info.get("family")
        if not isinstance(family, int):
            return False, f"{vendor} without a known family: PDEP may be microcoded"
        if family < FIRST_FAST_PDEP_AMD_FAMILY:
            return False, (
                f"{vendor} family {family:#x} (before Zen 3): PDEP is microcoded and slow"
            )
    return True, "bmi2 present and PDEP runs in 3 cycles on this CPU family"


def os_state_missing(name: str, cpu_info: Mapping) -> Optional[str]:
    """Why the OS keeps backend ``name`` from running: the registers it does not save
    (XCR0), as ``os_avx``/``os_avx512`` say; None where it saves them or is not asked."""
    states = features.os_states(ISA_FLAGS.get(name, ()))
    if any(cpu_info.get(features.OS_STATES[s].fact) is False for s in states):
        # (named by the widest state the kernel needs: without YMM there is no ZMM either)
        registers = features.OS_STATES[states[-1]].registers
        return f"the OS does not save the {registers} registers (XCR0)"
    return None


def vector_verdict(name: str, cpu_info: Mapping, isa: str, absent: str,
                   present: str) -> Tuple[bool, str]:
    """(usable, why) of x86-64 backend ``name``: its ISA_FLAGS present (else ``absent``,
    where ``{}`` names those missing) and their registers saved by the OS."""
    if not is_x86_64(cpu_info):
        return False, f"{isa} is x86-64 only; arch is {cpu_info.get('arch')!r}"
    missing = [f for f in ISA_FLAGS[name] if f not in _flags(cpu_info)]
    if missing:
        return False, absent.format(", ".join(missing))
    why = os_state_missing(name, cpu_info)
    if why is not None:
        return False, why
    return True, present


def simd_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(usable, why): whether the AVX-512 VBMI + GFNI kernels can run here."""
    return vector_verdict("simd", cpu_info, "AVX-512", "missing {}",
                          "AVX2, AVX-512 F/BW/VBMI and GFNI present")


def avx2_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(usable, why): whether the AVX2 kernels can run here."""
    return vector_verdict("avx2", cpu_info, "AVX2", "no avx2 flag", "AVX2 present")


def neon_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(usable, why): whether the Advanced SIMD (NEON) kernel runs here: on every aarch64."""
    if not is_aarch64(cpu_info):
        return False, f"NEON here means aarch64's Advanced SIMD; arch is {cpu_info.get('arch')!r}"
    return True, "aarch64: Advanced SIMD is part of every CPU"


def explain_choice(
    cpu_info: Mapping, available: Optional[Collection[str]] = None
) -> Tuple[str, str]:
    """The backend ``auto`` picks for ``cpu_info``, and why.

    ``available`` (optional) limits the choice to backends this build has; by default
    every backend is assumed built.
    """
    candidates = []
    neon_ok, neon_why = neon_verdict(cpu_info)
    if neon_ok:
        candidates.append(("neon", neon_why))
    simd_ok, simd_why = simd_verdict(cpu_info)
    if simd_ok:
        candidates.append(("simd", simd_why))
    avx2_ok, avx2_why = avx2_verdict(cpu_info)
    pdep_ok, pdep_why = pdep_verdict(cpu_info)
    # avx2 and pdep in the order measured for uniform 8-byte columns (DISPATCH)
    for name in DISPATCH[SHAPE_CLASSES[0]][0]:
        if name == "avx2" and avx2_ok:
            candidates.append(("avx2", avx2_why + (
                "; measured faster than pdep on uniform 8-byte columns" if pdep_ok else "")))
        elif name == "pdep" and pdep_ok:
            candidates.append(("pdep", pdep_why))
    skipped = []
    if not neon_ok:  # on aarch64 the x86-64 kernels are not worth naming
        if not simd_ok:
            skipped.append(f"simd: {simd_why}")
        if not avx2_ok:
            skipped.append(f"avx2: {avx2_why}")
        if not pdep_ok:
            skipped.append(f"pdep: {pdep_why}")
    candidates.append(("table", "the fastest portable kernel"))
    candidates.append(("bitloop", "the reference loop"))
    for name, why in candidates:
        if available is None or name in available:
            return name, "; ".join([why] + skipped)
        skipped.append(f"{name}: not built")
    raise ValueError(f"none of zorder's backends is available (got {sorted(available or ())})")


def choose_backend(cpu_info: Mapping, available: Optional[Collection[str]] = None) -> str:
    """The backend name ``auto`` picks for a py-cpuinfo-shaped CPU description.

    neon on aarch64; simd where AVX-512 VBMI and GFNI exist; else avx2 where AVX2 exists;
    else pdep where BMI2 exists and PDEP is fast (never on AMD before Zen 3 nor Hygon); else
    table.

    >>> choose_backend({"arch": "X86_64", "vendor_id_raw": "GenuineIntel",
    ...                 "family": 6, "flags": ["avx2", "bmi2"]})
    'avx2'
    >>> choose_backend({"arch": "X86_64", "vendor_id_raw": "GenuineIntel",
    ...                 "family": 6, "flags": ["bmi2"]})
    'pdep'
    >>> choose_backend({"arch": "ARM_8", "flags": []})
    'neon'
    >>> choose_backend({"arch": "ARM_8", "flags": []}, available={"bitloop", "table"})
    'table'
    """
    if not isinstance(cpu_info, Mapping):
        raise TypeError(f"cpu_info must be a dict like py-cpuinfo's, not {type(cpu_info).__name__}")
    _flags(cpu_info)  # checked even on a CPU where no flag is ever looked at
    return explain_choice(cpu_info, available)[0]


# --------------------------------------------------------------------------------------
# The per-call dispatch of `auto`: for each shape class of csrc/shape.h (in its order), the
# backends measured fastest, in order of preference, on both CPUs measured; the CPU decides
# through the verdicts above (which backends run well at all). The measurements are in
# benchmarks/NOTES.md, one section per class.

#: class -> (preference, where its measurement is).
DISPATCH: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "uniform-8n-full": (("simd", "avx2", "pdep", "table"), 'NOTES.md "Dispatch: uniform-8n-full"'),
    "uniform-8n-truncated-1-3": (("avx2", "simd", "pdep", "table"),
                                 'NOTES.md "Dispatch: uniform-8n-truncated-1-3"'),
    "uniform-8n-truncated-4-8": (("simd", "avx2", "pdep", "table"),
                                 'NOTES.md "Dispatch: uniform-8n-truncated-4-8"'),
    "uniform-narrow": (("simd", "avx2", "pdep", "table"), 'NOTES.md "Dispatch: uniform-narrow"'),
    "ragged-full": (("avx2", "pdep", "simd", "table"), 'NOTES.md "Dispatch: ragged-full"'),
    "ragged-truncated-first": (("simd", "avx2", "pdep", "table"),
                               'NOTES.md "Dispatch: ragged-truncated-first"'),
    "ragged-truncated-first-wide": (("avx2", "simd", "pdep", "table"),
                                    'NOTES.md "Dispatch: ragged-truncated-first-wide"'),
    "ragged-truncated-later": (("avx2", "pdep", "simd", "table"),
                               'NOTES.md "Dispatch: ragged-truncated-later"'),
    "ragged-narrow": (("simd", "avx2", "pdep", "table"), 'NOTES.md "Dispatch: ragged-narrow"'),
    "many-columns": (("simd", "avx2", "pdep", "table"), 'NOTES.md "Dispatch: many-columns"'),
    "uniform-8n-prefix": (("avx2", "simd", "pdep", "table"),
                          'NOTES.md "Dispatch: uniform-8n-prefix"'),
    "uniform-6x8-truncated": (("avx2", "simd", "pdep", "table"),
                              'NOTES.md "Dispatch: uniform-6x8-truncated"'),
    "many-columns-8n-prefix": (("avx2", "simd", "pdep", "table"),
                               'NOTES.md "Dispatch: many-columns-8n-prefix"'),
    "many-columns-short": (("avx2", "simd", "pdep", "table"),
                           'NOTES.md "Dispatch: many-columns-short"'),
}

#: Shape classes, in the order of csrc/shape.h (which zorder.interleave.auto checks).
SHAPE_CLASSES: Tuple[str, ...] = tuple(DISPATCH)

#: aarch64: neon comes first in every class. Not measured (no aarch64 machine here):
#: instructions a row, counted under emulation.
NEON_DISPATCH: Dict[str, str] = {shape: 'estimate, NOTES.md "Dispatch: neon"'
                                 for shape in SHAPE_CLASSES}


def dispatch_plan(cpu_info: Mapping, available: Optional[Collection[str]] = None
                  ) -> Dict[str, Tuple[str, str]]:
    """For each shape class, the backend ``auto`` runs on ``cpu_info`` and why: the first
    of the class's measured preference (``DISPATCH``) that this CPU runs well (the verdicts
    above) and this build has; the bit loop where none is.

    >>> plan = dispatch_plan({"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
    ...                       "flags": ["avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"]})
    >>> plan["uniform-8n-full"][0], plan["ragged-full"][0]
    ('simd', 'avx2')
    """
    if not isinstance(cpu_info, Mapping):
        raise TypeError(f"cpu_info must be a dict like py-cpuinfo's, not {type(cpu_info).__name__}")
    runs = {"simd": simd_verdict(cpu_info), "avx2": avx2_verdict(cpu_info),
            "pdep": pdep_verdict(cpu_info), "neon": neon_verdict(cpu_info),
            "table": (True, "portable"), "bitloop": (True, "the reference")}
    plan = {}
    for shape in SHAPE_CLASSES:
        preference, measured = DISPATCH[shape]
        if shape in NEON_DISPATCH:
            # neon and the x86-64 kernels never run on one CPU: neon first costs x86 nothing
            preference = ("neon",) + preference
        chosen = next((name for name in preference + ("bitloop",) if runs[name][0]
                       and (available is None or name in available)), None)
        if chosen is None:
            raise ValueError(f"none of zorder's backends is available (got {sorted(available or ())})")
        if chosen == "neon":
            measured = NEON_DISPATCH[shape]
        # the backends passed over that exist on this architecture but do not run well here
        passed = [f"{n}: {runs[n][1]}" for n in preference[:preference.index(chosen)]
                  if chosen in preference and not runs[n][0] and backend_applies(n, cpu_info)]
        plan[shape] = (chosen, "; ".join([measured] + passed))
    return plan


def describe_plan(plan: Mapping[str, Tuple[str, str]]) -> str:
    """``auto (simd; pdep for ragged-full, ...)``: the main backend and the exceptions."""
    main = plan[SHAPE_CLASSES[0]][0]
    others: Dict[str, list] = {}
    for shape in SHAPE_CLASSES[1:]:
        name = plan[shape][0]
        if name != main:
            others.setdefault(name, []).append(shape)
    extra = "".join(f"; {name} for {', '.join(shapes)}" for name, shapes in others.items())
    return f"auto ({main}{extra})"
