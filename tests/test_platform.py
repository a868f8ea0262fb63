"""Every platform gets the same CPU facts, and `zorder info` prints only what applies to it."""

import platform

import pytest

import zorder
from zorder.cli.info import format_info, runtime_info
from zorder.cpu import backend_applies
from zorder.cpu.platform_facts import FACT_KEYS, facts_without_cpuid, read_proc_cpuinfo

# /proc/cpuinfo of an AWS Graviton 3 (Neoverse V1) as Linux prints it: no model name.
GRAVITON3_CPUINFO = """\
processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 2100.00
Features\t: fp asimd
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1
"""


def test_this_machine_has_every_fact_key():
    assert set(zorder.cpu_info()) == set(FACT_KEYS)


def test_aarch64_facts_have_every_key_and_say_no_x86_isa():
    facts = facts_without_cpuid("aarch64", GRAVITON3_CPUINFO)
    assert set(facts) == set(FACT_KEYS)
    assert facts["arch"] == "ARM_8"
    assert facts["source"] == "/proc/cpuinfo"
    assert facts["vendor_id_raw"] == "0x41"
    assert facts["brand_raw"] == "implementer 0x41 part 0xd40"
    assert "asimd" in facts["flags"] and "sve" in facts["flags"]
    assert facts["family"] is None and facts["model"] is None and facts["stepping"] is None
    assert facts["os_avx"] is False and facts["os_avx512"] is False
    assert facts["usable"] == {"bmi2": False, "avx2": False, "avx512_vbmi_gfni": False}
    assert zorder.cpu.choose_backend(facts) == "neon"
    assert zorder.cpu.choose_backend(facts, available=("bitloop", "table", "nibble")) == "table"


def test_a_model_name_line_is_the_brand():
    text = "processor : 0\nmodel name : ARMv8 Processor rev 1 (v8l)\nFeatures : fp asimd\n"
    assert facts_without_cpuid("aarch64", text)["brand_raw"] == "ARMv8 Processor rev 1 (v8l)"


def test_without_proc_cpuinfo_the_brand_comes_from_platform(monkeypatch, tmp_path):
    assert read_proc_cpuinfo(str(tmp_path / "absent")) is None
    monkeypatch.setattr(platform, "processor", lambda: "arm")
    facts = facts_without_cpuid("arm64", None)
    assert set(facts) == set(FACT_KEYS)
    assert (facts["source"], facts["brand_raw"], facts["flags"]) == ("platform", "arm", [])
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert facts_without_cpuid("riscv64", "")["brand_raw"] == "riscv64"


def test_machine_must_be_a_string():
    with pytest.raises(TypeError, match="machine must be a str"):
        facts_without_cpuid(None, None)  # type: ignore[arg-type]


def test_x86_only_backends_apply_only_to_x86_64_and_neon_only_to_aarch64():
    arm = {"arch": "ARM_8"}
    x86 = {"arch": "X86_64"}
    assert not backend_applies("pdep", arm) and not backend_applies("simd", arm)
    assert not backend_applies("avx2", arm) and backend_applies("avx2", x86)
    assert backend_applies("pdep", x86) and backend_applies("simd", x86)
    assert backend_applies("neon", arm) and not backend_applies("neon", x86)
    assert backend_applies("neon", {"arch_string_raw": "arm64"})   # macOS's spelling
    assert not backend_applies("neon", {"arch": "ARM_7"})          # 32-bit arm: not built
    assert all(backend_applies(name, arm) for name in ("bitloop", "table", "nibble"))


def _aarch64_info(monkeypatch):
    facts = facts_without_cpuid("aarch64", GRAVITON3_CPUINFO)
    monkeypatch.setattr(zorder, "cpu_info", lambda: dict(facts))
    monkeypatch.setattr(zorder, "backend", "neon")
    monkeypatch.setattr(zorder, "backend_reason", "aarch64: Advanced SIMD is part of every CPU")
    info = runtime_info()
    assert info["cpu"]["arch"] == "ARM_8"
    return info


def test_info_on_aarch64_leaves_out_x86_facts(monkeypatch):
    info = _aarch64_info(monkeypatch)
    assert info["verdicts"] == {"neon": (True, "aarch64: Advanced SIMD is part of every CPU")}
    lines = format_info(info)
    text = "\n".join(lines)
    assert "None" not in text
    for absent in ("os_avx", "family", "model ", "pdep verdict", "avx2 verdict", "simd verdict"):
        assert absent not in text
    assert not [line for line in lines if line.startswith(("  pdep ", "  avx2 ", "  simd "))]
    assert "(not on ARM_8: pdep, avx2, simd)" in text
    assert "neon verdict   yes: aarch64" in text
    assert "brand_raw      implementer 0x41 part 0xd40" in text
    assert "flags" in text and "asimd" in text
    for name in ("bitloop", "table", "nibble", "neon"):
        assert f"  {name:<8} " in text


def test_info_on_x86_64_keeps_its_facts_and_verdicts():
    info = runtime_info()
    if info["cpu"]["arch"] != "X86_64":
        pytest.skip("the x86-64 report needs an x86-64 machine")
    text = "\n".join(format_info(info))
    for present in ("os_avx ", "os_avx512", "family", "pdep verdict", "avx2 verdict",
                    "simd verdict", "  pdep ", "  avx2 ", "  simd "):
        assert present in text
    assert "(not on X86_64: neon)" in text and "neon verdict" not in text


def test_the_version_comes_from_the_package_metadata(capsys):
    from importlib import metadata

    from zorder.cli import main

    try:
        expected = metadata.version("zorder")
    except metadata.PackageNotFoundError:
        expected = "0+unknown"   # a source tree that was never installed
    assert zorder.__version__ == expected
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"zorder {expected}\n"
    assert format_info(runtime_info())[0] == f"zorder {expected}"
