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
SIMD_FLAGS = ISA_FLAGS["simd"]

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


def simd_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(usable, why): whether the AVX-512 VBMI + GFNI kernels can run here."""
    if not is_x86_64(cpu_info):
        return False, f"AVX-512 is x86-64 only; arch is {cpu_info.get('arch')!r}"
    missing = [f for f in SIMD_FLAGS if f not in _flags(cpu_info)]
    if missing:
        return False, "missing " + ", ".join(missing)
    why = os_state_missing("simd", cpu_info)
    if why is not None:
        return False, why
    return True, "AVX2, AVX-512 F/BW/VBMI and GFNI present"


def avx2_verdict(cpu_info: Mapping) -> Tuple[bool, str]:
    """(usable, why): whether the AVX2 kernels can run here."""
    if not is_x86_64(cpu_info):
        return False, f"AVX2 is x86-64 only; arch is {cpu_info.get('arch')!r}"
    if not set(ISA_FLAGS["avx2"]) <= _flags(cpu_info):
        return False, "no avx2 flag"
    why = os_state_missing("avx2", cpu_info)
    if why is not None:
        return False, why
    return True, "AVX2 present"


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
# The per-call dispatch of `auto`: for each class of call shape, the backend measured
# fastest, in order of preference. The measurements behind each row (ns per row for
# 1,000,000 rows, ratio to numpy.copyto of the same bytes) are from
# benchmarks/shapes_matrix.py on two CPUs, each a KVM guest with 2 shared vCPUs:
#   Intel: "Intel Xeon" family 6 model 167 (AVX-512 VBMI + GFNI), 2026-12-02;
#   AMD:   "AMD EPYC" family 25 (0x19) model 17, Zen 4 (AVX-512 VBMI + GFNI), 2026-12-03.
# benchmarks/NOTES.md has both matrices. The two agree on the order of every class (where
# they differ it is within the run-to-run noise: pdep and simd tie on ragged-full and
# ragged-truncated-later on the AMD), so there is one table, not one per vendor; the CPU
# decides only through the verdicts (which backends run well at all).

#: Shape classes, in the order zorder/interleave/auto.pyx computes them.
SHAPE_CLASSES: Tuple[str, ...] = (
    "uniform-8n-full",              # 1-8 columns of one width, a multiple of 8 bytes, all bytes
    "uniform-8n-truncated-1-3",     # the same, truncated, 1-3 columns
    "uniform-8n-truncated-4-8",     # the same, truncated, 4-8 columns (but the prefixes below)
    "uniform-narrow",               # 1-8 columns of one width that is not a multiple of 8
    "ragged-full",                  # 1-8 columns of different widths, all bytes
    "ragged-truncated-first",       # ragged, truncated within the first segment
    "ragged-truncated-later",       # ragged, truncated in a later segment
    "ragged-narrow",                # ragged with a width that is not a multiple of 8, any size
    "many-columns",                 # more than 8 columns
    "uniform-8n-prefix",            # 4-6 such columns cut to a whole 1-, 2- or 4-byte prefix
                                    # of each, or 5-7 whose rows use a 2- or 4-byte prefix
    "uniform-6x8-truncated",        # 6 columns of 8 bytes cut inside, but not to a prefix
    "many-columns-8n-prefix",       # 16, 24, 32 or 64 columns of one width, a multiple of 8,
                                    # whose rows use a 2- or 4-byte prefix of each
    "many-columns-short",           # 9-32 columns cut to rows of at most 16 bytes back to
                                    # back that use fewer bytes of some column than its
                                    # rows are apart, each column's rows 1-8 bytes apart or
                                    # the rows using at most its first 8 bytes
)

#: class -> (preference, the measurements that decided it). Intel: a Xeon (family 6 model
#: 167); AMD: an EPYC (Zen 4, family 0x19 model 0x11); both with AVX-512 VBMI + GFNI and a
#: fast PDEP, 2 shared vCPUs, each backend forced, 1,000,000 rows unless said. On CPUs
#: without simd's flags avx2 is chosen wherever it precedes pdep (benchmarks/NOTES.md, avx2).
DISPATCH: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "uniform-8n-full": (("simd", "avx2", "pdep", "table"),
                        "4x8->32: Intel simd 3.0 ns (0.7x copy), pdep 10.0, table 11.9; "
                        "AMD simd 1.7 (0.7x), avx2 3.3 (1.5x), pdep 7.7-11.8, table 14.0"),
    # simd runs whole rows of 8-byte columns into scratch and copies the prefix out, and
    # sends 1-3 columns of 16+ bytes cut to a third or less to pdep (simd.pyx); the Intel
    # figures are from before both. 2 columns of 8 bytes cut to 9-15 were a class of their
    # own, simd first, until avx2 stored such rows' registers whole over the next rows
    # (b4b6993): 2x8->9..15 avx2 1.1-1.8 ns, simd 1.8-4.1, pdep 4.3-10.1 (AMD, 1M rows,
    # one run, 2026-12-03 18:05 UTC)
    "uniform-8n-truncated-1-3": (("avx2", "simd", "pdep", "table"),
                                 "8+8->8: AMD avx2 0.9 ns (0.8x), simd 1.3-1.6 (1.2-1.4x), "
                                 "pdep 2.0-2.1, table 2.9; 2x8->12: AMD avx2 1.4 (0.8x), "
                                 "simd 3.6, pdep 9.1; 16+16->20: AMD simd 3.2, pdep 6.6; "
                                 "Intel (before) pdep 2.9 (1.4x), simd 4.1, table 4.0"),
    # avx2 stores rows that end inside a slab straight from its registers and gathers
    # 1-4 byte prefixes with vector loads (benchmarks/NOTES.md, "avx2 on truncated shapes")
    "uniform-8n-truncated-4-8": (("simd", "avx2", "pdep", "table"),
                                 "4x8->8: Intel simd 2.3 ns (0.6x), pdep 2.5, table 3.4; "
                                 "AMD avx2 1.6 (0.5x), simd 1.9, pdep 2.9, table 3.7; "
                                 "8x8->40: AMD simd 6.7 (1.0x), avx2 9.8, pdep 19.3, "
                                 "table 20.3; 8x8->8: AMD simd 4.6, avx2 7.7, pdep 7.8"),
    # avx2 gathers 1-4 byte prefixes with vector loads (rows cut inside them, or 5 and 7
    # columns, through scratch: prefix_staged); simd computes whole rows and copies their
    # prefixes (1M rows, AMD EPYC Zen 4, alternating, 2026-12-03). Where simd wins or ties
    # it is left out of the class: 8 columns (8x8->8 simd 5.0, avx2 8.6), 4 columns cut
    # inside a prefix (4x8->7 simd 2.7, avx2 3.7), 1-byte prefixes of 7 (7x8->7 simd 6.5,
    # avx2 7.3), prefixes of 3 and 5-7 bytes (7x8->20 simd 8.6, avx2 11.0)
    "uniform-8n-prefix": (("avx2", "simd", "pdep", "table"),
                          "AMD 4x8->8 avx2 1.35 ns (0.5x copy), simd 1.86; 5x8->10 avx2 2.6, "
                          "simd 5.6; 6x8->24 avx2 3.2, simd 6.2; 4x16->16 avx2 3.3, simd 6.2; "
                          "5x8->8 avx2 5.2, simd 7.1; 7x8->10 avx2 5.0, simd 7.0; 7x8->14 "
                          "avx2 5.0, simd 7.2; 6x8->20 avx2 5.0, simd 6.5; 5x8->17 avx2 5.6, "
                          "simd 5.2"),
    # Out of uniform-8n-truncated-4-8, where simd wins 4, 5, 7 and 8 columns (4x8->24 simd
    # 2.4 ns, avx2 3.1; 5x8->30 5.7 / 7.5; 7x8->30 7.8 / 8.1; 8x8->40 4.2 / 6.1): since avx2
    # stores rows cut inside their slab whole (its k = 6 nibble lookups write 16 + 32 bytes
    # a row, simd computes 64 and keeps 48) avx2 is ahead on 6 columns of 8 bytes (AMD
    # EPYC Zen 4, 1M rows, one run each, 2026-12-03 18:55 UTC; the matrix run before had
    # auto at 1.17x avx2 on 6x8->40)
    "uniform-6x8-truncated": (("avx2", "simd", "pdep", "table"),
                              "AMD 6x8->40 avx2 6.0-6.6 ns (1.5-1.7x copy), simd 7.0-7.2, "
                              "table 13.3; 6x8->30 avx2 5.6, simd 6.7; 6x8->44 6.3 / 7.2; "
                              "6x8->13 5.4 / 5.9"),
    "uniform-narrow": (("simd", "avx2", "pdep", "table"),
                       "4+4->8: Intel simd 1.24 ns (1.3x), pdep 2.1, table 3.0; "
                       "AMD simd 1.2 (1.6x), avx2 0.63-1.3, pdep 1.5-2.6, table 3.3"),
    "ragged-full": (("avx2", "pdep", "simd", "table"),
                    "8+16->24: Intel pdep 5.3 ns (1.6x), simd 6.7; AMD avx2 2.1 (1.3x), "
                    "pdep 3.6-5.2, simd 5.1; 8+32->40: Intel pdep 8.2, simd 9.4; "
                    "AMD pdep 8.8, simd 8.4"),
    # alternating runs, 1M rows, AMD EPYC Zen 4, 2026-12-03: avx2 ahead on 5 of 7 shapes
    # (8+16->9 3.0 vs 3.3, 8+16->15 2.4 vs 3.5, 16+8->12 2.7 vs 3.1, 8+8+16->20 3.8 vs 4.3,
    # 16+32->24 4.2 vs 6.1), behind on 8+24->10 (4.6 vs 4.3) and 8+16->12 (4.4 vs 4.1)
    "ragged-truncated-first": (("avx2", "simd", "pdep", "table"),
                               "8+16->12: Intel simd 5.5 ns (1.7x), pdep 6.8; "
                               "AMD avx2 2.7-4.4 (1.3-2.5x), simd 3.6-4.6, pdep 4.8-5.6; "
                               "16+32->24: AMD avx2 4.2, simd 6.1"),
    "ragged-truncated-later": (("avx2", "pdep", "simd", "table"),
                               "8+16->20: Intel pdep 10.3 ns (3.1x), simd 11.4; AMD pdep 4.1 "
                               "(2.3x), simd 3.8; 8+32->30: AMD avx2 3.9 (1.3x), pdep 5.3, "
                               "simd 5.9"),
    # Every backend runs narrow ragged rows by segments, all of a chunk's put in place
    # together (csrc/segments.h, zorder_seg_narrow), on its own uniform kernel; simd's is
    # the fastest there (AMD, 1M rows, two runs, 2026-12-03). The Intel figures are from a
    # 200,000-row run before that change.
    "ragged-narrow": (("simd", "avx2", "pdep", "table"),
                      "3+5+8->16: Intel simd 7.8 ns (4.7x), pdep 15.9, table 14.7; "
                      "1+2+3+4->10: Intel simd 11.8, pdep 18.9; AMD: 3+5+8->16 simd 6.9-7.1 "
                      "(3.5-4.4x), avx2 7.4-7.8, pdep 10.6-11.0, table 12.2-12.8; 3+5+8->10 "
                      "simd 4.1-5.0 (3.0-3.7x), avx2 4.4-5.6; 1+2+3+4->10 simd 4.2-4.9 "
                      "(4.7-5.8x), avx2 5.2-5.4, pdep 7.1-7.6; AMD after avx2's own slices "
                      "(16:12 UTC): 3+5+8->16 simd 3.4, avx2 4.3, pdep 7.3; 1+2+3+4->10 "
                      "simd 2.8, avx2 4.2, pdep 5.6; after avx2's own row assembly (18:55 "
                      "UTC): 3+5+8->16 simd 3.2, avx2 3.2; 1+2+3+4->10 simd 3.1, avx2 3.3"),
    # One class for 9-64 columns: with the staged plans of csrc/segments.h (per-backend
    # stage costs, padding and an AVX-512 squeeze for k with a prime factor above 7) simd
    # measured fastest or tied at every k of 9-64, full, truncated and narrow (AMD figures:
    # 1,000,000 rows, best of 3 alternating backends, load average 5-7; benchmarks/NOTES.md,
    # "More than 8 columns")
    "many-columns": (("simd", "avx2", "pdep", "table"),
                     "AMD 12x8->96 simd 32 ns (1.3x copy), avx2 49, pdep 140; 29x8->232 simd "
                     "84 (2.1x), avx2 261, pdep 512; 64x8->512 simd 187 (2.2x), avx2 224, "
                     "pdep 774; 16x8->128 simd 36-44, avx2 32-45 (a tie); 64x8->64 simd 158, "
                     "pdep 161; 11x8->88 (padded, squeezed) simd 16.7 (2.3x), avx2 29.7 "
                     "(its AVX2 squeeze; 22-23 with squeeze16, 18:55 UTC), pdep 94.5; Intel (before the staged plans) "
                     "12x8->96 simd 20.3 ns (2.0x), pdep 61.2, table 68.9"),
    # Out of many-columns since avx2's planes interleave only the column prefixes that the
    # kept bytes come from (0c8cfa5): AMD EPYC Zen 4, 1M rows, one run each, 2026-12-04
    # 12:49 UTC, ns/row. avx2 led at every such shape measured but one, 16x16->32 (avx2
    # 33.1, simd 37.8, pdep 16.9). Left in many-columns, where avx2 did not lead: 1-byte
    # prefixes (16x8->16 avx2 14.0, simd 12.3, pdep 10.3; 64x8->64 65.1 / 60.8 / 54.2), 3
    # bytes (16x8->48 14.4 / 13.7), 5-7 (16x8->100 22.3 / 19.7), and 40, 48 and 56 columns,
    # which avx2 does not run as planes (48x8->96 94.3 / 61.5; 40x8->80 84.8 / 42.6)
    "many-columns-8n-prefix": (("avx2", "simd", "pdep", "table"),
                               "AMD 16x8->64 avx2 12.6 ns (1.2x copy), simd 15.6, pdep 27.3, "
                               "table 29.9; 16x8->32 avx2 8.2, simd 13.0, pdep 15.2; "
                               "24x8->48 avx2 14.4, simd 19.8; 32x8->64 avx2 22.3, simd "
                               "34.6; 32x8->128 avx2 25.1, simd 36.6; 64x8->128 avx2 46.2, "
                               "simd 62.9; 64x8->256 avx2 53.8, simd 78.8; 16x16->64 avx2 "
                               "15.8, simd 42.5; 32x16->128 avx2 34.7, simd 77.2"),
    # Out of many-columns since avx2 runs these rows as byte planes (7c9b6cb): its blocks
    # of 32 rows build only the bytes kept. Intel Xeon (family 6 model 167), 1M rows, best
    # of 3 alternating, 2026-12-05 04:00 UTC, ns/row. pdep ties avx2 on 1-byte prefixes of
    # 8-byte columns (10x8->10 pdep 5.8, avx2 5.9; 14x8->14 8.1 / 9.1). Left in
    # many-columns: rows that use every byte of each column they reach (9x2->12 simd 2.5,
    # avx2 3.1; 12x2->16 3.6 / 4.7; 12x1->8 1.4 / 2.3), which avx2 does not run as planes.
    # AMD EPYC Zen 4, avx2 only (the planar commit): 10x8->10 4.0, 12x8->16 5.3. 15-32
    # columns (Intel, 400,000 rows, 04:22 UTC): avx2 ahead of simd on 77 of 78 shapes of
    # 2, 4 and 8 bytes cut to 7-16 (18x2->8 avx2 3.6, simd 27.3, pdep 32.1; 20x8->8 8.9 /
    # 35.8 / 13.3; 16x8->16, on avx2's 8-column planes, 5.4 / 20.8 / 8.2; 32x8->16 18.2 /
    # 56.7 / 18.4), behind on 15x2->16 (6.0 / 4.4). Columns whose rows are more than 8
    # bytes apart joined the class when the planes learnt to read 8 bytes of each such row
    # (Intel, 1M rows, best of 5, 2026-12-05 06:05 UTC, avx2 / simd / pdep / table, ns a
    # row): 10x16->10 13.0 / 21.9 / 10.6 / 11.7, 12x16->16 16.9 / 24.8 / 18.6 / 20.8,
    # 20x16->8 25.0 / 49.0 / 24.5 / 25.7 (memory-bound: every backend reads 160-320 bytes
    # a row); the columns of one (N, k * 8) block, rows k * 8 apart: 10x8->10 8.6 / 24.4 /
    # 10.3 / 11.0, 20x8->8 20.7 / 67.0 / 35.1 / 37.3, 12x4->12 8.8 / 13.5 / 14.9 / 15.1
    "many-columns-short": (("avx2", "simd", "pdep", "table"),
                           "Intel 9x8->9 avx2 5.4 ns, simd 13.4, pdep 11.4, table 10.8; "
                           "12x8->16 avx2 8.3, simd 16.3, pdep 12.5; 11x8->11 avx2 7.3, "
                           "simd 23.7; 12x2->12 avx2 3.2, simd 11.7; 10x4->10 avx2 3.3, "
                           "simd 4.4; 8+8+4+4+2+2+1+1+1+1->10 avx2 2.9, simd 4.6; 10x3->10 "
                           "avx2 3.2, simd 4.7"),
}

#: aarch64: class -> why neon comes first there. Not measured (no aarch64 machine here, and
#: emulation says nothing about speed): instructions executed per row, counted under
#: qemu-user for GCC 12 -O3 builds of both kernels (benchmarks/NOTES.md, section neon).
NEON_DISPATCH: Dict[str, str] = {
    "uniform-8n-full": "estimate, instructions a row: 8x8->64 neon 64, table 461; "
                       "4x8->32 neon 50, table 206; 2x8->16 neon 34, table 94",
    "uniform-8n-truncated-1-3": "estimate: 8+8->8 neon 35 instructions a row, table 56",
    "uniform-8n-truncated-4-8": "estimate: 4x8->8 neon 49 instructions a row, table 78",
    "uniform-narrow": "estimate: 4+4->8 neon 17 instructions a row, table 47; "
                      "spaced-out rows 39, table 56",
    "ragged-full": "estimate: 8+16->24 neon 45 instructions a row, table 102",
    "ragged-truncated-first": "estimate: 8+16->12 neon 35 instructions a row, table 117",
    "ragged-truncated-later": "estimate: 8+16->20 neon 52 instructions a row, table 109",
    "ragged-narrow": "estimate: 3+5+8->16 neon 101 instructions a row, table 154",
    "many-columns": "estimate: 12x8->96 neon 360 instructions a row, table 1052",
    "uniform-8n-prefix": "estimate: 4x8->8 neon 49 instructions a row, table 78",
    "uniform-6x8-truncated": "estimate: as uniform-8n-truncated-4-8 (neon's 8x8 transposes "
                             "with zero columns; 4x8->8 neon 49 instructions a row, table 78)",
    "many-columns-8n-prefix": "estimate: as many-columns, whose planes these are (12x8->96 "
                              "neon 360 instructions a row, table 1052)",
    "many-columns-short": "estimate: as many-columns (12x8->96 neon 360 instructions a "
                          "row, table 1052)",
}


def dispatch_plan(cpu_info: Mapping, available: Optional[Collection[str]] = None
                  ) -> Dict[str, Tuple[str, str]]:
    """For each shape class, the backend ``auto`` runs on ``cpu_info`` and why: the first
    of the class's measured preference that this CPU runs well (the verdicts above) and
    this build has; the bit loop where none is.

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
