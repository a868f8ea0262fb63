"""auto: the per-call dispatcher. Its plan is a pure function of the CPU description, each
call's shape class is computed as documented, and every class gives bitloop's bytes."""

import numpy as np
import pytest

import zorder
from zorder.cpu.select import DISPATCH, NEON_DISPATCH, SHAPE_CLASSES, describe_plan, dispatch_plan
from zorder.interleave import auto

AVX512 = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6, "os_avx512": True,
          "flags": ["avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"]}
CPUS = {
    # name: (description, the backend of each class where it is not the main one, main)
    "sapphire rapids": (AVX512, "simd"),
    "zen 4": (dict(AVX512, vendor_id_raw="AuthenticAMD", family=0x19), "simd"),
    "zen 3": ({"arch": "X86_64", "vendor_id_raw": "AuthenticAMD", "family": 0x19,
               "flags": ["avx2", "bmi2"]}, "pdep"),
    "zen 2": ({"arch": "X86_64", "vendor_id_raw": "AuthenticAMD", "family": 0x17,
               "flags": ["avx2", "bmi2"]}, "table"),
    "hygon": ({"arch": "X86_64", "vendor_id_raw": "HygonGenuine", "family": 0x18,
               "flags": ["avx2", "bmi2"]}, "table"),
    "alder lake": ({"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
                    "flags": ["avx2", "bmi2"], "os_avx512": False}, "pdep"),
    "haswell": ({"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
                 "flags": ["avx2", "bmi2"]}, "pdep"),
    "graviton 3": ({"arch": "ARM_8", "vendor_id_raw": "0x41",
                    "flags": ["fp", "asimd", "asimdhp", "sve", "sha2"]}, "neon"),
    "apple m": ({"arch": "ARM_8", "flags": ["asimd"]}, "neon"),
    "apple m (macos: no flags)": ({"arch": "ARM_8", "vendor_id_raw": "Apple", "flags": []}, "neon"),
}


@pytest.mark.parametrize("name", CPUS)
def test_plan_for_cpu(name):
    cpu, main = CPUS[name]
    plan = dispatch_plan(cpu)
    assert set(plan) == set(SHAPE_CLASSES)
    assert plan["uniform-8n-full"][0] == main == zorder.choose_backend(cpu)
    if main == "neon":
        # aarch64: every class on neon, each with its estimate (no measurement possible here)
        assert {chosen for chosen, _ in plan.values()} == {"neon"}
        assert all(NEON_DISPATCH[shape] in why and "pdep" not in why and "simd" not in why
                   for shape, (_, why) in plan.items())
        assert describe_plan(plan) == "auto (neon)"
        return
    for shape, (chosen, why) in plan.items():
        preference, measured = DISPATCH[shape]
        assert measured in why and "neon" not in why
        # the first preferred backend this CPU runs well, never one it runs badly
        assert chosen == next(b for b in preference + ("bitloop",)
                              if b in ("table", "bitloop") or b == main or
                              (b == "pdep" and main in ("simd", "pdep")))
    if main == "simd":
        assert plan["ragged-full"][0] == "pdep" and plan["many-columns"][0] == "simd"
        assert describe_plan(plan).startswith("auto (simd; pdep for ")
    else:
        assert describe_plan(plan) == f"auto ({main})"


def test_plan_respects_what_is_built():
    plan = dispatch_plan(AVX512, available=("bitloop", "table"))
    assert {chosen for chosen, _ in plan.values()} == {"table"}
    # aarch64 without the neon module (a build that lacks it): table, the portable kernel
    plan = dispatch_plan(CPUS["graviton 3"][0], available=("bitloop", "table", "nibble"))
    assert {chosen for chosen, _ in plan.values()} == {"table"}
    # x86-64 never gets neon, even from a list that names it
    plan = dispatch_plan(AVX512, available=zorder.BACKEND_NAMES)
    assert "neon" not in {chosen for chosen, _ in plan.values()}
    with pytest.raises(ValueError, match="none of zorder's backends"):
        dispatch_plan(AVX512, available=())
    with pytest.raises(TypeError, match="cpu_info"):
        dispatch_plan(["avx2"])


@pytest.mark.parametrize("widths, size, shape", [
    ([8, 8, 8, 8], 32, "uniform-8n-full"), ([16, 16], 32, "uniform-8n-full"),
    ([8, 8], 8, "uniform-8n-truncated-1-3"), ([8, 8, 8], 23, "uniform-8n-truncated-1-3"),
    ([8] * 4, 8, "uniform-8n-truncated-4-8"), ([4, 4], 8, "uniform-narrow"),
    ([4, 4, 4], 10, "uniform-narrow"), ([8, 16], 24, "ragged-full"),
    ([8, 16], 16, "ragged-truncated-first"), ([8, 16], 17, "ragged-truncated-later"),
    ([3, 5, 8], 16, "ragged-narrow"), ([3, 5, 8], 4, "ragged-narrow"), ([8, 12], 20, "ragged-narrow"), ([8] * 9, 72, "many-columns"), ([1] * 64, 3, "many-columns"),
])
def test_shape_classes(widths, size, shape):
    assert auto.shape_class_of(widths, size) == shape


@pytest.mark.parametrize("shape", SHAPE_CLASSES)
def test_auto_gives_bitloops_bytes_in_every_class(shape):
    if not zorder.dispatch():
        pytest.skip("ZORDER_BACKEND forces one backend: no dispatch installed")
    rng = np.random.default_rng(abs(hash(shape)) % 2**32)
    bitloop = zorder.get_backend("bitloop")
    cases = {
        "uniform-8n-full": ([8, 8, 8], 24), "uniform-8n-truncated-1-3": ([16, 16], 9),
        "uniform-8n-truncated-4-8": ([8] * 5, 17), "uniform-narrow": ([3, 3, 3], 7),
        "ragged-full": ([8, 24, 16], 48), "ragged-truncated-first": ([8, 24, 16], 5),
        "ragged-truncated-later": ([8, 24, 16], 30), "ragged-narrow": ([8, 24, 2], 34),
        "many-columns": ([8] * 11 + [3], 70),
    }
    widths, size = cases[shape]
    assert auto.shape_class_of(widths, size) == shape
    for nrows in (1, 3, 50, 1000):
        cols = [rng.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]
        out = np.full((nrows, size + 3), 0xEE, np.uint8)
        zorder.interleave_rows(cols, size, out=out[:, :size])
        np.testing.assert_array_equal(out[:, :size], bitloop.interleave_rows(cols, size))
        assert (out[:, size:] == 0xEE).all()
        row = [c[0].tobytes() for c in cols]
        assert zorder.interleave_bits(row, size) == bitloop.interleave_bits(row, size)
