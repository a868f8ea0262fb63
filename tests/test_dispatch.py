"""auto: the per-call dispatcher. Its plan is a pure function of the CPU description, each
call's shape class is computed as documented, and every class gives bitloop's bytes."""

import json
from pathlib import Path

import numpy as np
import pytest

import zorder
from zorder.cpu.select import (
    DISPATCH, NEON_DISPATCH, SHAPE_CLASSES, describe_plan, dispatch_plan,
)
from zorder.bench.matrix import parse_widths
from zorder.interleave import auto

AVX512 = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6, "os_avx512": True,
          "flags": ["avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"]}
AVX2_CLASSES = {shape: "avx2" for shape in SHAPE_CLASSES}
NEON_CLASSES = {shape: "neon" for shape in SHAPE_CLASSES}
# AVX2 and a fast PDEP: avx2 in every class too, measured faster than pdep everywhere since
# avx2 stores rows truncated inside a slab from its registers (4x8->8: 1.6 ns against 2.9).
AVX2_PDEP = dict(AVX2_CLASSES)
SIMD_PLAN = {"uniform-8n-full": "simd", "uniform-8n-truncated-1-3": "avx2",
             "uniform-8n-truncated-4-8": "simd", "uniform-narrow": "simd",
             "ragged-full": "avx2", "ragged-truncated-first": "simd",
             "ragged-truncated-first-wide": "avx2",
             "ragged-truncated-later": "avx2", "ragged-narrow": "simd", "many-columns": "simd",
             "uniform-8n-prefix": "avx2", "uniform-6x8-truncated": "avx2",
             "many-columns-8n-prefix": "avx2", "many-columns-short": "avx2"}


def x86(vendor, family, model, **extra):
    return dict({"arch": "X86_64", "vendor_id_raw": vendor, "family": family, "model": model,
                 "flags": ["avx", "avx2", "bmi1", "bmi2"]}, **extra)


CPUS = {
    # name: (description, the expected backend of every shape class)
    "sapphire rapids": (AVX512, SIMD_PLAN),
    "zen 4": (dict(AVX512, vendor_id_raw="AuthenticAMD", family=0x19), SIMD_PLAN),
    # Zen 3: PDEP in 3 cycles, so pdep where it measured faster
    "zen 3": (x86("AuthenticAMD", 0x19, 0x21), AVX2_PDEP),
    # Zen 2 (and Hygon): microcoded PDEP, so avx2 for every class
    "zen 2": (x86("AuthenticAMD", 0x17, 0x31), AVX2_CLASSES),
    "hygon": (x86("HygonGenuine", 0x18, 0x00), AVX2_CLASSES),
    "alder lake": (x86("GenuineIntel", 6, 0x97, os_avx=True, os_avx512=False), AVX2_PDEP),
    "haswell": (x86("GenuineIntel", 6, 0x3C), AVX2_PDEP),
    # Sandy Bridge: AVX without AVX2 or BMI2
    "sandy bridge": ({"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
                      "model": 0x2A, "flags": ["avx"]}, {s: "table" for s in SHAPE_CLASSES}),
    "graviton 3": ({"arch": "ARM_8", "vendor_id_raw": "0x41",
                    "flags": ["fp", "asimd", "asimdhp", "sve", "sha2"]}, NEON_CLASSES),
    "apple m": ({"arch": "ARM_8", "flags": ["asimd"]}, NEON_CLASSES),
    "apple m (macos: no flags)": ({"arch": "ARM_8", "vendor_id_raw": "Apple", "flags": []},
                                  NEON_CLASSES),
}


@pytest.mark.parametrize("name", CPUS)
def test_plan_for_cpu(name):
    cpu, expected = CPUS[name]
    plan = dispatch_plan(cpu)
    assert {shape: chosen for shape, (chosen, _) in plan.items()} == expected
    main = expected["uniform-8n-full"]
    assert main == zorder.choose_backend(cpu)
    for shape, (chosen, why) in plan.items():
        preference, measured = DISPATCH[shape]
        if chosen == "neon":
            # aarch64: each class with neon's estimate (no measurement possible here), and
            # no x86-64 kernel named
            assert NEON_DISPATCH[shape] in why and "pdep" not in why and "simd" not in why
            continue
        assert measured in why and "neon" not in why
        # the backends preferred before the chosen one are named with why they were passed
        for skipped in preference[:preference.index(chosen)] if chosen in preference else ():
            assert f"{skipped}: " in why
    others = sorted({b for b in expected.values() if b != main})
    assert describe_plan(plan).startswith(f"auto ({main}")
    for other in others:
        assert f"; {other} for " in describe_plan(plan)


# The CPUs the matrix was measured on, as their CPUID reads (benchmarks/NOTES.md)
MEASURED_CPUS = {
    "intel": {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6, "model": 167,
              "os_avx": True, "os_avx512": True,
              "flags": ["avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"]},
    "amd": {"arch": "X86_64", "vendor_id_raw": "AuthenticAMD", "family": 25, "model": 17,
            "os_avx": True, "os_avx512": True,
            "flags": ["avx2", "bmi2", "avx512f", "avx512bw", "avx512vbmi", "gfni"]},
    "amd zen 3": {"arch": "X86_64", "vendor_id_raw": "AuthenticAMD", "family": 25, "model": 1,
                  "os_avx": True, "os_avx512": False, "flags": ["avx2", "bmi2"]},
}
MATRICES = json.loads((Path(__file__).parent / "data" / "dispatch_matrices.json").read_text())


@pytest.mark.parametrize("name", MEASURED_CPUS)
def test_plan_within_measured_best(name):
    """On each CPU measured, auto's backend for every shape of its matrix is within 1.15x
    of the fastest backend there (the bound of issue 39), or a tenth of a nanosecond a row
    (the run-to-run spread of rows of a few bytes: Intel 2+2->4 avx2 0.29, simd 0.34, and
    auto, on simd's kernel, 0.29 in the same run)."""
    plan = dispatch_plan(MEASURED_CPUS[name])
    matrix = MATRICES["cpus"][name]
    shapes = matrix["shapes"]
    for cell in shapes:   # the class each shape falls in now, not when it was measured
        text, size = cell["shape"].split("->")
        assert auto.shape_class_of(parse_widths(text), int(size),
                                   rows=MATRICES["rows"]) == cell["class"], cell
    # every class measured on this CPU but those added after its run, which say so
    unmeasured = matrix.get("unmeasured", {})
    assert all(why for why in unmeasured.values())
    assert len(shapes) > 30
    assert {s["class"] for s in shapes} == set(SHAPE_CLASSES) - set(unmeasured)
    slow = []
    for cell in shapes:
        ns = cell["ns"]
        chosen = plan[cell["class"]][0]
        if ns[chosen] > max(1.15 * min(ns.values()), min(ns.values()) + 0.1):
            slow.append((cell["shape"], chosen, ns))
    assert slow == []


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
    ([8] * 4, 8, "uniform-8n-prefix"), ([8] * 4, 12, "uniform-8n-truncated-4-8"),
    ([8, 8], 9, "uniform-8n-truncated-1-3"), ([8, 8], 15, "uniform-8n-truncated-1-3"),
    ([8, 8], 8, "uniform-8n-truncated-1-3"), ([16, 16], 12, "uniform-8n-truncated-1-3"),
    ([8, 8, 8], 12, "uniform-8n-truncated-1-3"),
    ([16] * 6, 24, "uniform-8n-prefix"), ([8] * 7, 14, "uniform-8n-prefix"),
    ([8] * 5, 8, "uniform-8n-prefix"), ([8] * 7, 25, "uniform-8n-prefix"),
    ([8] * 4, 7, "uniform-8n-truncated-4-8"), ([8] * 7, 7, "uniform-8n-truncated-4-8"),
    ([8] * 6, 13, "uniform-6x8-truncated"), ([8] * 6, 40, "uniform-6x8-truncated"),
    ([16] * 6, 70, "uniform-8n-truncated-4-8"), ([8] * 6, 24, "uniform-8n-prefix"),
    ([8] * 5, 5, "uniform-8n-prefix"), ([8] * 8, 16, "uniform-8n-truncated-4-8"),
    ([4, 4], 8, "uniform-narrow"),
    ([4, 4, 4], 10, "uniform-narrow"), ([8, 16], 24, "ragged-full"),
    ([8, 16], 16, "ragged-truncated-first"), ([8, 16], 17, "ragged-truncated-later"),
    # the 8-byte pieces a row cut in its first segment needs: at most 16 bytes, or all used
    ([8, 16], 12, "ragged-truncated-first"), ([8, 24], 10, "ragged-truncated-first"),
    ([8, 8, 16], 24, "ragged-truncated-first"), ([16, 32], 32, "ragged-truncated-first"),
    ([32, 40], 48, "ragged-truncated-first"), ([8, 8, 16], 12, "ragged-truncated-first-wide"),
    ([8, 8, 16], 20, "ragged-truncated-first-wide"), ([16, 32], 17, "ragged-truncated-first-wide"),
    ([16, 32], 24, "ragged-truncated-first-wide"), ([24, 8, 16], 20, "ragged-truncated-first-wide"),
    ([16, 32], 31, "ragged-truncated-first-wide"), ([8, 8, 16], 1, "ragged-truncated-first-wide"),
    ([3, 5, 8], 16, "ragged-narrow"), ([3, 5, 8], 4, "ragged-narrow"), ([8, 12], 20, "ragged-narrow"), ([8] * 9, 72, "many-columns"), ([1] * 64, 3, "many-columns"),
    ([8] * 16, 64, "many-columns-8n-prefix"), ([8] * 16, 60, "many-columns-8n-prefix"),
    ([8] * 64, 128, "many-columns-8n-prefix"), ([16] * 24, 96, "many-columns-8n-prefix"),
    ([16] * 16, 32, "many-columns-8n-prefix"), ([8] * 16, 16, "many-columns-short"),
    ([8] * 16, 48, "many-columns"), ([8] * 16, 100, "many-columns"),
    ([8] * 16, 128, "many-columns"), ([8] * 48, 96, "many-columns"),
    ([8] * 40, 80, "many-columns"), ([8] * 15 + [16], 64, "many-columns"),
    ([4] * 16, 32, "many-columns"), ([16] * 16, 128, "many-columns"),
    # 9-32 columns of at most 8 bytes cut to at most 16: the rows must leave a whole byte
    # of some column unused (10x2->15 deals each column 12 bits: both its bytes)
    ([8] * 10, 10, "many-columns-short"), ([8] * 14, 16, "many-columns-short"),
    ([3] * 10, 10, "many-columns-short"), ([8] * 9, 9, "many-columns-short"),
    ([8] * 8 + [2, 2], 16, "many-columns-short"), ([2] * 10, 15, "many-columns"),
    ([2] * 9, 12, "many-columns"), ([1] * 12, 8, "many-columns"),
    ([8] * 15, 15, "many-columns-short"), ([2] * 32, 16, "many-columns-short"),
    ([8] * 33, 16, "many-columns"), ([2] * 32, 4, "many-columns-short"),
    ([1] * 32, 4, "many-columns"),
    ([8] * 9, 17, "many-columns"), ([16] * 10, 10, "many-columns-short"),
    ([16] * 16, 16, "many-columns-short"), ([24] * 9, 9, "many-columns-short"),
    ([8] * 10, 80, "many-columns"), ([1] * 9, 1, "many-columns-short"),  # one unused
    # ragged: 8+1*9 -> 2 deals 8 of the first column's 64 bits, leaving 7 of its bytes
    ([8] + [1] * 9, 2, "many-columns-short"), ([1] * 9 + [2], 11, "many-columns"),
])
def test_shape_classes(widths, size, shape):
    assert auto.shape_class_of(widths, size) == shape


@pytest.mark.parametrize("widths, size", [([16, 32], 24), ([8, 8, 16], 20), ([16, 16, 32], 40)])
def test_wide_cuts_run_as_the_first_class_while_in_the_cache(widths, size):
    """Rows cut inside wide pieces are ragged-truncated-first while the call's columns and
    output stay in the cache (simd leads there), ragged-truncated-first-wide from
    CACHE_BYTES (NOTES.md "Dispatch: ragged-truncated-first-wide"); auto's bytes are
    bitloop's on both sides of the line."""
    edge = -(-auto.CACHE_BYTES // (sum(widths) + size))   # the fewest rows out of the cache
    assert auto.shape_class_of(widths, size, rows=edge - 1) == "ragged-truncated-first"
    assert auto.shape_class_of(widths, size, rows=edge) == "ragged-truncated-first-wide"
    assert auto.shape_class_of(widths, size) == "ragged-truncated-first-wide"
    rng = np.random.default_rng(size)
    bitloop = zorder.get_backend("bitloop")
    for nrows in (edge - 1, edge):
        cols = [rng.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]
        np.testing.assert_array_equal(zorder.interleave_rows(cols, size),
                                      bitloop.interleave_rows(cols, size))


@pytest.mark.parametrize("widths, size", [([8, 8, 16], 12), ([8, 8, 16], 6), ([8, 8, 16], 3),
                                          ([24, 8, 16], 12)])
def test_wide_cuts_to_a_prefix_of_every_column_are_wide_at_any_size(widths, size):
    """Rows of a whole 1-, 2- or 4-byte prefix of every column: avx2 leads in the cache too."""
    for rows in (1, 1000, 10**6):
        assert auto.shape_class_of(widths, size, rows=rows) == "ragged-truncated-first-wide"


@pytest.mark.parametrize("widths, row_strides, size, out_stride, shape", [
    ([8] * 10, [8] * 10, 10, 10, "many-columns-short"),
    ([1] * 5 + [8] * 5, [1] * 5 + [8] * 5, 10, 10, "many-columns-short"),
    # rows further apart than 8 bytes where the rows use at most a column's first 8: the
    # columns of an (N, 10, 8) block (rows 80 apart), a column sliced from 16-byte rows
    ([8] * 10, [80] * 10, 10, 10, "many-columns-short"),
    ([8] * 9 + [8], [8] * 9 + [16], 10, 10, "many-columns-short"),
    ([2] * 12, [24] * 12, 12, 12, "many-columns-short"),
    # columns read whole, their rows apart: the other paths read the bytes between
    ([2] * 10, [8] * 10, 16, 16, "many-columns-short"),
    ([1] * 10, [16] * 10, 10, 10, "many-columns-short"),
    ([2] * 10, [2] * 10, 16, 16, "many-columns"),
    # only what avx2's byte planes take: a column 16 bytes apart whose rows use 9 of its
    # bytes, output rows apart, rows 0 bytes apart
    ([16] + [0] * 8, [16] + [1] * 8, 9, 9, "many-columns"),
    ([8] * 10, [8] * 10, 10, 13, "many-columns"), ([8] * 10, [0] * 10, 10, 10, "many-columns"),
])
def test_many_columns_short_only_where_the_planes_run(widths, row_strides, size, out_stride,
                                                      shape):
    assert auto.shape_class_of(widths, size, row_strides, out_stride) == shape


@pytest.mark.parametrize("shape", SHAPE_CLASSES)
def test_auto_gives_bitloops_bytes_in_every_class(shape):
    if not zorder.dispatch():
        pytest.skip("ZORDER_BACKEND forces one backend: no dispatch installed")
    rng = np.random.default_rng(abs(hash(shape)) % 2**32)
    bitloop = zorder.get_backend("bitloop")
    cases = {
        "uniform-8n-full": ([8, 8, 8], 24), "uniform-8n-truncated-1-3": ([16, 16], 9),
        "uniform-8n-truncated-4-8": ([8] * 5, 13), "uniform-narrow": ([3, 3, 3], 7),
        "ragged-full": ([8, 24, 16], 48), "ragged-truncated-first": ([8, 24], 5),
        "ragged-truncated-first-wide": ([8, 24, 16], 5),
        "ragged-truncated-later": ([8, 24, 16], 30), "ragged-narrow": ([8, 24, 2], 34),
        "many-columns": ([8] * 11 + [3], 70), "uniform-8n-prefix": ([16] * 5, 10),
        "uniform-6x8-truncated": ([8] * 6, 41), "many-columns-8n-prefix": ([16] * 16, 60),
        "many-columns-short": ([8] * 10 + [4, 2], 14),
    }
    widths, size = cases[shape]
    assert auto.shape_class_of(widths, size) == shape
    for nrows in (1, 3, 50, 1000):
        cols = [rng.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]
        out = np.full((nrows, size + 3), 0xEE, np.uint8)
        zorder.interleave_rows(cols, size, out=out[:, :size])
        np.testing.assert_array_equal(out[:, :size], bitloop.interleave_rows(cols, size))
        assert (out[:, size:] == 0xEE).all()
        # rows back to back (the paths that store whole registers over the next row)
        np.testing.assert_array_equal(zorder.interleave_rows(cols, size),
                                      bitloop.interleave_rows(cols, size))
        row = [c[0].tobytes() for c in cols]
        assert zorder.interleave_bits(row, size) == bitloop.interleave_bits(row, size)


def test_shape_classes_are_csrc_shape_h():
    # select.py (pure Python, the lowest floor) keeps DISPATCH's keys in csrc/shape.h's
    # order; the compiled enum is the one list
    assert auto.SHAPE_NAMES == SHAPE_CLASSES == tuple(DISPATCH)


def test_backend_functions_pickle_by_reference():
    import pickle
    for name in ("bitloop", "table", "auto"):
        module = zorder.get_backend(name) if name != "auto" else auto
        assert pickle.loads(pickle.dumps(module.interleave_rows)) is module.interleave_rows
        assert pickle.loads(pickle.dumps(module.backend)) is module.backend
