"""The CPU feature table, the selector and the CPUID reader agree (zorder.cpu.features)."""

import itertools
import platform

import pytest

import zorder.cpu as cpu
from zorder.cpu import features
from zorder.cpu.features import FEATURES, OS_STATES, TARGETS, decode, needs, supported
from zorder.cpu.select import ISA_FLAGS, avx2_verdict, is_x86_64, os_state_missing, simd_verdict


def test_table_is_consistent():
    names = [f.name for f in FEATURES]
    assert len(set(names)) == len(names)
    bits = [(f.leaf, f.register, f.bit) for f in FEATURES]
    assert len(set(bits)) == len(bits)
    for f in FEATURES:
        assert f.os_state is None or f.os_state in OS_STATES
        assert all(i in features.FEATURE for i in f.implies)
    for target, wanted in TARGETS.items():
        closed = needs(target)
        assert set(wanted) <= set(closed)
        for name in closed:
            assert set(features.FEATURE[name].implies) <= set(closed)
    # every backend and Hilbert transform check is a target; usable holds the backends'
    assert set(features.BACKEND_TARGETS.values()) | set(features.HILBERT_TARGETS.values()) \
        <= set(TARGETS)
    assert features.USABLE_FEATURES == ("bmi2", "avx2", "avx512_vbmi_gfni")
    # a wider OS state holds the narrower ones
    masks = [s.xcr0 for s in OS_STATES.values()]
    assert all(a & b == a for a, b in zip(masks, masks[1:]))


def test_selector_flags_come_from_the_table():
    assert ISA_FLAGS == {
        "pdep": ("bmi2",),
        "avx2": ("avx2",),
        "simd": ("avx2", "avx512f", "avx512bw", "avx512vbmi", "gfni"),
    }
    for backend, target in features.BACKEND_TARGETS.items():
        assert ISA_FLAGS[backend] == needs(target)


def test_decode_reads_each_bit():
    for f in FEATURES:
        regs = [0, 0, 0, 0]
        regs[f.register] = 1 << f.bit
        assert decode({f.leaf: tuple(regs)}) == [f.name]
    assert decode({}) == []
    assert features.os_facts(0xE7) == {"os_avx": True, "os_avx512": True}
    assert features.os_facts(0x07) == {"os_avx": True, "os_avx512": False}
    assert features.os_facts(0) == {"os_avx": False, "os_avx512": False}


SIMD = ("avx2", "avx512f", "avx512bw", "avx512vbmi", "gfni")


def made_up_cpus():
    """Every subset of the AVX-512 kernels' flags, with each OS state True, False or absent."""
    for n in range(len(SIMD) + 1):
        for flags in itertools.combinations(SIMD, n):
            for os_avx, os_avx512 in itertools.product((True, False, None), repeat=2):
                info = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
                        "flags": list(flags)}
                if os_avx is not None:
                    info["os_avx"] = os_avx
                if os_avx512 is not None:
                    info["os_avx512"] = os_avx512
                yield info


def test_verdicts_agree_with_the_table():
    for info in made_up_cpus():
        assert simd_verdict(info)[0] == supported("avx512_vbmi_gfni", info), info
        assert avx2_verdict(info)[0] == supported("avx2", info), info
        flags = set(info["flags"])
        # the Hilbert transform's rule before the table: F and BW, the ZMM state, and AVX2
        # with the YMM state (usable("avx2"))
        old_hilbert = ({"avx512f", "avx512bw", "avx2"} <= flags and bool(info.get("os_avx512"))
                       and info.get("os_avx") is not False)
        if "os_avx512" in info:
            assert supported("avx512_bw", info) == old_hilbert, info
    no_ymm = {"arch": "X86_64", "flags": list(SIMD), "os_avx": False}
    assert os_state_missing("simd", no_ymm) == "the OS does not save the AVX-512 registers (XCR0)"
    assert os_state_missing("avx2", no_ymm) == "the OS does not save the YMM registers (XCR0)"
    assert os_state_missing("pdep", no_ymm) is None


def test_reader_agrees_with_table_and_selector():
    facts = cpu.facts()
    assert set(facts["usable"]) == set(features.USABLE_FEATURES)
    if facts["source"] != "cpuid":
        assert not any(facts["usable"].values())
        return
    for target in features.USABLE_FEATURES:
        assert cpu.usable(target) == supported(target, facts)
    assert cpu.usable("bmi2") == ("bmi2" in facts["flags"])
    if is_x86_64(facts):
        assert cpu.usable("avx2") == avx2_verdict(facts)[0]
        assert cpu.usable("avx512_vbmi_gfni") == simd_verdict(facts)[0]


# The Linux kernel's spelling where it differs; osxsave is not in its list.
LINUX_NAMES = {"avx512vbmi2": "avx512_vbmi2"}


@pytest.mark.skipif(platform.system() != "Linux" or platform.machine() != "x86_64",
                    reason="compares with Linux's /proc/cpuinfo on x86-64")
def test_reader_bits_match_linux():
    """Each table bit read by CPUID says what Linux's own decode of CPUID says."""
    facts = cpu.facts()
    try:
        with open("/proc/cpuinfo") as f:
            line = next(l for l in f if l.startswith("flags"))
    except (OSError, StopIteration):
        pytest.skip("no flags line in /proc/cpuinfo")
    linux = set(line.split(":", 1)[1].split())
    for feature in FEATURES:
        if feature.name == "osxsave":
            continue
        assert (feature.name in facts["flags"]) == (
            LINUX_NAMES.get(feature.name, feature.name) in linux), feature.name


def test_hilbert_transform_reads_the_table():
    from zorder.hilbert import _transform

    facts = cpu.facts()
    if _transform.TRANSFORM == "vbmi":
        assert supported(features.HILBERT_TARGETS["vbmi"], facts)
    if supported(features.HILBERT_TARGETS["vbmi"], facts):
        assert _transform.TRANSFORM == "vbmi"   # its tables are built at import
    if _transform.TRANSFORM == "avx512":
        assert supported(features.HILBERT_TARGETS["avx512"], facts)
    if _transform.TRANSFORM == "avx2":
        assert supported(features.HILBERT_TARGETS["avx2"], facts)
    if not supported("avx2", facts):
        assert _transform.TRANSFORM == "plain"
