"""The neon backend (aarch64 Advanced SIMD) against the bitloop oracle.

neon exists only on aarch64 builds: there the whole file runs (under emulation in
tools/aarch64.sh); elsewhere only the first test, which checks that the backend is absent.
``_vector_rows`` runs the vector kernel without the fallbacks, to show the covered shapes
really take it. The generic files (test_vectors, test_shapes, test_fuzz_harness) run neon
too, through the ``backend`` fixture, wherever it is available.
"""

import platform

import numpy as np
import pytest

import zorder

ON_AARCH64 = platform.machine().lower() in ("aarch64", "arm64")
bitloop = zorder.get_backend("bitloop")
neon = zorder.get_backend("neon") if "neon" in zorder.available_backends() else None
aarch64_only = pytest.mark.skipif(not ON_AARCH64, reason="neon is built only on aarch64")


def rng(seed):
    return np.random.default_rng(seed)


def check(columns, size=None, vector_only=False, **kwargs):
    want = bitloop.interleave_rows(columns, size)
    got = neon._vector_rows(columns, size, **kwargs) if vector_only \
        else neon.interleave_rows(columns, size, **kwargs)
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_available_exactly_on_aarch64():
    assert ("neon" in zorder.available_backends()) == ON_AARCH64
    if ON_AARCH64:
        assert neon is not None and neon.SUPPORTED and neon.UNSUPPORTED_REASON == ""
        assert neon.name == "neon"
        if zorder.dispatch():   # auto (not forced): neon for every class of shape
            assert {chosen for chosen, _ in zorder.dispatch().values()} == {"neon"}
    else:
        with pytest.raises(zorder.BackendError, match="'neon' is not available here"):
            zorder.get_backend("neon")


@aarch64_only
@pytest.mark.parametrize("n", range(2, 9))
def test_covered_shapes_take_the_vector_kernel(n):
    r = rng(n)
    for width in (8, 16, 24, 64):
        for nrows in (1, 2, 3, 5, 16, 17):
            block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
            views = {
                "3d": block,                                          # columns side by side
                "copies": [block[:, c].copy() for c in range(n)],     # rows back to back
                "reversed": [block[::-1, c] for c in range(n)],       # negative row strides
            }
            for columns in views.values():
                check(columns, vector_only=True)
                check(columns, n * width - 1, vector_only=True)


@aarch64_only
@pytest.mark.parametrize("n", range(2, 9))
def test_every_truncated_size_and_row_tail(n):
    # Two slabs (8 byte indices each) make a block: rows pair up for width 8, and an odd
    # slab count pairs a row's last slab with the next row's. Every size cuts every slab.
    r = rng(100 + n)
    for width in (8, 24):
        for nrows in (1, 2, 3, 4):
            block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
            for size in range(1, n * width + 1):
                check(block, size, vector_only=True)
    # output rows spaced out (a wider out=), which must stay untouched past `size`
    block = r.integers(0, 256, (9, n, 16), dtype=np.uint8)
    for size in (n * 8, n * 16 - 3, n * 16):
        wide = np.full((9, size + 5), 0xA5, np.uint8)
        check(block, size, vector_only=True, out=wide[:, :size])
        assert (wide[:, size:] == 0xA5).all()


@aarch64_only
@pytest.mark.parametrize("widths", [[8], [4, 4], [8, 16], [12, 12], [8] * 9])
def test_other_shapes_are_declined_by_the_vector_kernel(widths):
    columns = [rng(1).integers(0, 256, (3, w), dtype=np.uint8) for w in widths]
    with pytest.raises(LookupError):
        neon._vector_rows(columns)
    check(columns)   # and the backend runs them, through segments or the table kernel


@aarch64_only
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_narrow_columns_packed_and_spaced_out(n):
    # Rows back to back run as rows of 8 bytes; spaced-out rows (slices of a wider array)
    # are gathered into such rows from 8 rows up, and fewer go to the table kernel.
    r = rng(200 + n)
    for width in (1, 3, 4, 7, 12):
        for nrows in (1, 7, 8, 9, 100):
            block = r.integers(0, 256, (nrows, n, width + 2), dtype=np.uint8)
            spaced = [block[:, c, :width] for c in range(n)]
            packed = [np.ascontiguousarray(c) for c in spaced]
            for size in (n * width, max(n * width - 2, 1)):
                check(spaced, size)
                check(packed, size)


@aarch64_only
def test_threads_split_rows():
    block = rng(300).integers(0, 256, (1001, 8, 8), dtype=np.uint8)
    check(block, threads=2)
    check(block, 61, threads=2)
