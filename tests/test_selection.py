"""choose_backend on made-up CPU descriptions: runs the same on any machine."""

import pytest

import zorder
from zorder.cpu.select import (avx2_verdict, explain_choice, neon_verdict, pdep_verdict,
                                 simd_verdict)


def x86(vendor, family, model, *flags):
    return {"arch": "X86_64", "vendor_id_raw": vendor, "family": family, "model": model,
            "flags": list(flags)}


AVX512_GFNI = ("avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni")

CPUS = {
    # name: (description, auto's pick)
    "Intel Ivy Bridge (no BMI2)": (x86("GenuineIntel", 6, 58, "avx", "sse4_2"), "table"),
    "Intel Haswell": (x86("GenuineIntel", 6, 0x3C, "avx2", "bmi1", "bmi2"), "avx2"),
    "Intel Haswell, OS without the YMM state": (
        dict(x86("GenuineIntel", 6, 0x3C, "avx2", "bmi1", "bmi2"), os_avx=False), "pdep"),
    "Intel Skylake-X (AVX-512 without VBMI)": (
        x86("GenuineIntel", 6, 85, "avx2", "bmi2", "avx512f", "avx512bw"), "avx2"),
    "Intel Ice Lake": (x86("GenuineIntel", 6, 106, *AVX512_GFNI), "simd"),
    "Intel Alder Lake (AVX2 + GFNI, no AVX-512)": (
        x86("GenuineIntel", 6, 0x97, "avx2", "bmi2", "gfni"), "avx2"),
    "AMD Excavator": (x86("AuthenticAMD", 0x15, 0x60, "avx2", "bmi2"), "avx2"),
    "AMD Zen 1": (x86("AuthenticAMD", 0x17, 0x01, "avx2", "bmi1", "bmi2"), "avx2"),
    "AMD Zen 2": (x86("AuthenticAMD", 0x17, 0x31, "avx2", "bmi1", "bmi2"), "avx2"),
    "Hygon Dhyana": (x86("HygonGenuine", 0x18, 0x00, "avx2", "bmi2"), "avx2"),
    "AMD Zen 3": (x86("AuthenticAMD", 0x19, 0x21, "avx2", "bmi1", "bmi2"), "avx2"),
    "AMD Zen 4": (x86("AuthenticAMD", 0x19, 0x61, *AVX512_GFNI), "simd"),
    "AMD Zen 5": (x86("AuthenticAMD", 0x1A, 0x02, *AVX512_GFNI), "simd"),
    "AMD without a family": ({"arch": "X86_64", "vendor_id_raw": "AuthenticAMD",
                              "flags": ["bmi2"]}, "table"),
    # aarch64: Advanced SIMD is mandatory, so neon whatever the flags say (macOS lists none).
    "AWS Graviton 3 (Neoverse V1)": ({"arch": "ARM_8", "vendor_id_raw": "0x41",
                                      "brand_raw": "implementer 0x41 part 0xd40",
                                      "flags": ["fp", "asimd", "asimdhp", "sve", "sha2"]}, "neon"),
    "Apple M-series (macOS: no flags)": ({"arch": "ARM_8", "vendor_id_raw": "Apple",
                                          "brand_raw": "Apple M2", "flags": []}, "neon"),
    "Apple M-series (Linux)": ({"arch": "ARM_8", "flags": ["asimd"]}, "neon"),
    "aarch64 that claims bmi2 (nonsense flags)": ({"arch": "ARM_8", "flags": ["bmi2"]}, "neon"),
    "AVX-512 flags but the OS does not save ZMM": (
        dict(x86("GenuineIntel", 6, 106, *AVX512_GFNI), os_avx512=False), "avx2"),
    # Descriptions written by hand or by a VM's CPU model, not by CPUID on real silicon:
    # an OS that saves no YMM state saves no ZMM state either, whatever os_avx512 says
    # (here it says nothing); simd's kernels use AVX2 instructions, so AVX-512 without
    # the avx2 flag is not simd; and the vendor in another case is still AMD.
    "AVX-512 flags, os_avx false and os_avx512 not given": (
        dict(x86("GenuineIntel", 6, 106, *AVX512_GFNI), os_avx=False), "pdep"),
    "AVX-512 VBMI + GFNI without the avx2 flag (a VM's CPU model)": (
        x86("GenuineIntel", 6, 106, "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"),
        "pdep"),
    "AMD Zen 2 with the vendor in lower case": (
        x86("authenticamd", 0x17, 0x31, "bmi2"), "table"),
    "Hygon with the vendor padded": (x86(" HygonGenuine ", 0x18, 0x00, "bmi2"), "table"),
}


@pytest.mark.parametrize("name", CPUS)
def test_choice_for_cpu(name):
    cpu, expected = CPUS[name]
    assert zorder.choose_backend(cpu) == expected


@pytest.mark.parametrize("name", ["AMD Zen 1", "AMD Zen 2", "Hygon Dhyana", "AMD Excavator",
                                  "Intel Ivy Bridge (no BMI2)", "AWS Graviton 3 (Neoverse V1)",
                                  "AMD Zen 2 with the vendor in lower case",
                                  "Hygon with the vendor padded"])
def test_never_pdep_where_slow_or_absent(name):
    cpu, _ = CPUS[name]
    assert not pdep_verdict(cpu)[0]
    # Even when simd is not built, the fallback is never pdep there.
    assert zorder.choose_backend(cpu, available={"bitloop", "table", "nibble", "pdep"}) != "pdep"


def test_choice_respects_what_is_built():
    zen4, _ = CPUS["AMD Zen 4"]
    assert zorder.choose_backend(zen4, available={"bitloop", "table", "pdep"}) == "pdep"
    assert zorder.choose_backend(zen4, available={"bitloop", "table"}) == "table"
    assert zorder.choose_backend(zen4, available={"bitloop"}) == "bitloop"
    with pytest.raises(ValueError):
        zorder.choose_backend(zen4, available=set())


def test_reason_names_what_was_skipped():
    name, why = explain_choice(CPUS["AMD Zen 2"][0])
    assert name == "avx2"
    assert "microcoded" in why and "simd: missing" in why
    name, why = explain_choice(CPUS["Intel Haswell"][0])
    assert name == "avx2" and "faster than pdep" in why


@pytest.mark.parametrize("name", ["AMD Zen 1", "AMD Zen 2", "Hygon Dhyana", "AMD Excavator"])
def test_avx2_always_before_zen_3(name):
    """AMD before Zen 3 and Hygon: avx2, whatever pdep would do, in every dispatch class."""
    cpu, _ = CPUS[name]
    plan = zorder.cpu.select.dispatch_plan(cpu)
    assert {chosen for chosen, _ in plan.values()} == {"avx2"}


def test_avx2_verdict():
    assert avx2_verdict(CPUS["Intel Haswell"][0]) == (True, "AVX2 present")
    assert not avx2_verdict(CPUS["Intel Ivy Bridge (no BMI2)"][0])[0]
    assert "YMM" in avx2_verdict(CPUS["Intel Haswell, OS without the YMM state"][0])[1]
    assert "x86-64 only" in avx2_verdict(CPUS["AWS Graviton 3 (Neoverse V1)"][0])[1]


@pytest.mark.parametrize("name", ["AWS Graviton 3 (Neoverse V1)", "Apple M-series (macOS: no flags)"])
def test_aarch64_without_neon_built_falls_to_table(name):
    cpu, _ = CPUS[name]
    assert neon_verdict(cpu)[0]
    name, why = explain_choice(cpu, available={"bitloop", "table", "nibble"})
    assert name == "table" and "neon: not built" in why


@pytest.mark.parametrize("name", ["Intel Ice Lake", "AMD Zen 2", "Intel Haswell"])
def test_neon_never_on_x86_64(name):
    ok, why = neon_verdict(CPUS[name][0])
    assert not ok and "aarch64" in why
    assert zorder.choose_backend(CPUS[name][0], available=zorder.BACKEND_NAMES) != "neon"


def test_simd_verdict_lists_missing_flags():
    ok, why = simd_verdict(CPUS["Intel Haswell"][0])
    assert not ok and "avx512f" in why and "gfni" in why
    ok, why = simd_verdict(CPUS["AVX-512 VBMI + GFNI without the avx2 flag (a VM's CPU model)"][0])
    assert not ok and why == "missing avx2"
    ok, why = simd_verdict(CPUS["AVX-512 flags, os_avx false and os_avx512 not given"][0])
    assert not ok and "XCR0" in why


def test_the_loader_refuses_simd_where_the_selector_does():
    """The registry's own check of a described CPU agrees with simd_verdict on both."""
    from zorder import interleave

    for name in ("AVX-512 VBMI + GFNI without the avx2 flag (a VM's CPU model)",
                 "AVX-512 flags, os_avx false and os_avx512 not given"):
        cpu = CPUS[name][0]
        assert "simd" not in interleave.available_backends(cpu)
        with pytest.raises(zorder.BackendError, match="'simd' is not available here"):
            interleave.get_backend("simd", cpu)


def test_flags_are_case_insensitive_and_family_from_py_cpuinfo():
    cpu = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6, "flags": ["BMI2"]}
    assert zorder.choose_backend(cpu) == "pdep"


def test_cpu_info_must_be_a_mapping():
    with pytest.raises(TypeError, match="cpu_info"):
        zorder.choose_backend(["bmi2"])


def test_this_machine_is_described_and_chosen_consistently():
    cpu = zorder.cpu_info()
    assert {"arch", "flags"} <= set(cpu)
    if "ZORDER_BACKEND" in __import__("os").environ:
        assert zorder.backend in zorder.available_backends()
    else:
        plan = zorder.cpu.select.dispatch_plan(cpu, available=zorder.available_backends())
        assert zorder.backend == zorder.cpu.select.describe_plan(plan)
        assert plan["uniform-8n-full"][0] == zorder.choose_backend(cpu, available=zorder.available_backends())
        assert zorder.dispatch() == plan


def test_native_flags_agree_with_py_cpuinfo():
    cpuinfo = pytest.importorskip("cpuinfo", reason="py-cpuinfo (either distribution) not installed")
    theirs = cpuinfo.get_cpu_info()
    ours = zorder.cpu_info()
    if ours["arch"] != "X86_64":
        assert theirs.get("arch") == ours["arch"]
        return
    for flag in ("bmi2", "avx2", "avx512f", "avx512bw", "avx512vbmi", "gfni"):
        assert (flag in ours["flags"]) == (flag in theirs.get("flags", [])), flag
    assert ours["vendor_id_raw"] == theirs.get("vendor_id_raw")
    assert ours["family"] == theirs.get("family")
    # And both descriptions lead to the same choice.
    assert zorder.choose_backend(theirs) == zorder.choose_backend(ours)


def test_one_distribution_owns_the_cpuinfo_module():
    # py-cpuinfo and its fork py-cpuinfo2 both install `cpuinfo/`; zorder's dependencies
    # (and its test extra) must never bring in both, or one silently overwrites the other.
    from importlib import metadata
    owners = sorted(
        dist.metadata["Name"] for dist in metadata.distributions()
        if "cpuinfo" in (dist.read_text("top_level.txt") or "").split()
        or any(str(f).startswith("cpuinfo/") for f in (dist.files or ()))
    )
    assert len(set(o.lower() for o in owners)) <= 1, owners
