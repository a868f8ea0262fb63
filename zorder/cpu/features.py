"""The one table of the x86-64 CPU features zorder knows, and what each kernel needs.

Every other place reads it: the CPUID reader (``_facts.pyx``) decodes ``flags`` and the
OS state from it and derives ``usable``; the selector (``select.py``) takes the backends'
flags from it; the Hilbert transform asks it whether its AVX-512 code runs. A kernel's
needs are its feature list closed under ``implies`` (numpy's ``npy__cpu_have[]`` and
meson's ``implies`` are the model).

Pure data and pure functions of a CPU description: nothing here reads the machine.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple


class Feature(NamedTuple):
    """One CPUID feature bit, spelled as py-cpuinfo spells the flag."""

    name: str
    leaf: int       # CPUID leaf (subleaf 0)
    register: int   # 0 = eax, 1 = ebx, 2 = ecx, 3 = edx
    bit: int
    os_state: Optional[str] = None   # the register state the OS must save (OS_STATES)
    implies: Tuple[str, ...] = ()    # features a kernel using this one may also use


class OsState(NamedTuple):
    """Register state the OS must enable in XCR0 before the instructions run."""

    xcr0: int        # the XCR0 bits that must all be set
    fact: str        # the key of the CPU facts saying it is
    registers: str   # the registers, as the reasons name them


#: Narrowest first: an OS that does not save the YMM registers saves no ZMM ones either.
OS_STATES: Dict[str, OsState] = {
    # SSE and AVX state (XCR0 bits 1, 2)
    "avx": OsState(0x06, "os_avx", "YMM"),
    # and opmask, ZMM0-15 upper halves, ZMM16-31 (bits 5, 6, 7)
    "avx512": OsState(0xE6, "os_avx512", "AVX-512"),
}

#: Every feature reported in ``flags``.
FEATURES: Tuple[Feature, ...] = (
    Feature("sse2", 1, 3, 26),
    Feature("ssse3", 1, 2, 9),
    Feature("sse4_1", 1, 2, 19),
    Feature("sse4_2", 1, 2, 20),
    Feature("popcnt", 1, 2, 23),
    Feature("osxsave", 1, 2, 27),
    Feature("avx", 1, 2, 28, "avx"),
    Feature("bmi1", 7, 1, 3),
    Feature("avx2", 7, 1, 5, "avx"),
    Feature("bmi2", 7, 1, 8),
    # (avx2: the AVX-512 kernels' target attributes let the compiler use AVX2, and it does;
    # every real AVX-512 CPU has it, a hand-made VM CPU model may not)
    Feature("avx512f", 7, 1, 16, "avx512", ("avx2",)),
    Feature("avx512dq", 7, 1, 17, "avx512", ("avx512f",)),
    Feature("avx512bw", 7, 1, 30, "avx512", ("avx512f",)),
    Feature("avx512vl", 7, 1, 31, "avx512", ("avx512f",)),
    Feature("avx512vbmi", 7, 2, 1, "avx512", ("avx512bw",)),
    Feature("avx512vbmi2", 7, 2, 6, "avx512", ("avx512bw",)),
    Feature("gfni", 7, 2, 8),
)
FEATURE: Dict[str, Feature] = {f.name: f for f in FEATURES}

#: The kernels' checks (the keys of ``usable``): the features each one's code uses,
#: before ``implies``.
TARGETS: Dict[str, Tuple[str, ...]] = {
    "bmi2": ("bmi2",),
    "avx2": ("avx2",),
    "avx512_vbmi_gfni": ("avx512vbmi", "gfni"),
    "avx512_bw": ("avx512bw",),
}
#: The interleave backends' checks.
BACKEND_TARGETS: Dict[str, str] = {"pdep": "bmi2", "avx2": "avx2", "simd": "avx512_vbmi_gfni"}
#: The Hilbert transforms' checks (``zorder.hilbert``'s TRANSFORMS, "plain" needs none).
HILBERT_TARGETS: Dict[str, str] = {"avx2": "avx2", "avx512": "avx512_bw",
                                   "vbmi": "avx512_vbmi_gfni"}
#: The checks the CPU facts hold under ``usable``: the backends'.
USABLE_FEATURES: Tuple[str, ...] = tuple(BACKEND_TARGETS.values())


def needs(target: str) -> Tuple[str, ...]:
    """The features ``target`` needs, ``implies`` included, each after those it implies.

    >>> needs("avx512_vbmi_gfni")
    ('avx2', 'avx512f', 'avx512bw', 'avx512vbmi', 'gfni')
    """
    out: List[str] = []

    def visit(name: str) -> None:
        if name not in out:
            for implied in FEATURE[name].implies:
                visit(implied)
            out.append(name)

    for name in TARGETS[target]:
        visit(name)
    return tuple(out)


def os_states(names: Iterable[str]) -> Tuple[str, ...]:
    """The OS states (narrowest first) that features ``names`` need."""
    wanted = {FEATURE[n].os_state for n in names}
    return tuple(s for s in OS_STATES if s in wanted)


def decode(leaves: Mapping[int, Tuple[int, int, int, int]]) -> List[str]:
    """The names of the features CPUID reports, sorted; ``leaves`` maps a leaf read to its
    (eax, ebx, ecx, edx)."""
    return sorted(f.name for f in FEATURES
                  if f.leaf in leaves and (leaves[f.leaf][f.register] >> f.bit) & 1)


def os_facts(xcr0: int) -> Dict[str, bool]:
    """``os_avx``/``os_avx512`` from XCR0 (0 when the OS has no XSAVE)."""
    return {s.fact: (xcr0 & s.xcr0) == s.xcr0 for s in OS_STATES.values()}


def supported(target: str, cpu_info: Mapping) -> bool:
    """Whether ``cpu_info`` (CPU facts: ``flags`` and the OS state facts) runs ``target``.

    An OS state fact that is absent counts as saved (a description written by hand);
    ``False`` does not.
    """
    names = needs(target)
    flags = {str(f).lower() for f in cpu_info.get("flags") or ()}
    return (set(names) <= flags
            and all(cpu_info.get(OS_STATES[s].fact) is not False for s in os_states(names)))
