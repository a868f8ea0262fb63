"""hilbert_rows beside interleave_rows and a numpy copy of the same bytes.

One pytest-benchmark group per column count ("hilbert Cx8B"), on the same ROWS rows
(ZORDER_BENCH_ROWS, default 1,000,000) of random 8-byte columns as the interleave
benchmarks; each hilbert row names its transform (avx512, avx2, plain) and interleave
backend, so the same run shows what vectorizing the transform buys. Divide a mean by
``extra_info["rows"]`` for ns per row. Run with ``pytest benchmarks/test_bench_hilbert.py
--benchmark-only``.
"""

import numpy as np
import pytest

import zorder
from zorder.hilbert import _transform as _hilbert

pytest.importorskip("pytest_benchmark", reason="these benchmarks need pytest-benchmark")

COLUMNS = [2, 3, 4, 8]
TRANSFORMS = _hilbert.TRANSFORMS[: _hilbert.TRANSFORMS.index(_hilbert.TRANSFORM) + 1]
WHAT = ["copy", "interleave_rows"] + [f"hilbert_rows/{t}" for t in reversed(TRANSFORMS)]


@pytest.mark.parametrize("what", WHAT)
@pytest.mark.parametrize("columns", COLUMNS, ids=[f"{c}x8B" for c in COLUMNS])
def test_hilbert_batch(benchmark, interleave_block, columns, what):
    data = interleave_block(columns)
    rows = data.shape[0]
    benchmark.group = f"hilbert {columns}x8B"
    benchmark.extra_info["rows"] = rows
    out = np.empty((rows, columns * 8), np.uint8)
    if what == "copy":
        benchmark.extra_info["what"] = "np.copyto of the same bytes"
        benchmark(np.copyto, out, data.reshape(rows, -1))
        return
    if what == "interleave_rows":
        benchmark.extra_info["backend"] = zorder.backend
        benchmark(zorder.interleave_rows, data, None, out)
        return
    transform = what.split("/")[1]
    benchmark.extra_info["transform"] = transform
    benchmark.extra_info["backend"] = zorder.backend
    if transform == "plain":
        # Many times slower than the vector code: a few rounds, no calibration.
        benchmark.pedantic(_hilbert._hilbert_rows_with,
                           args=(zorder.backend, data, 64, out), kwargs={"transform": transform},
                           rounds=3, iterations=1)
    else:
        benchmark(_hilbert._hilbert_rows_with, zorder.backend, data, 64, out,
                  transform=transform)
    check = min(rows, 200)
    assert np.array_equal(out[:check], zorder.hilbert_rows(data[:check]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("columns", [2, 8], ids=["2x8B", "8x8B"])
def test_hilbert_threads(benchmark, interleave_block, columns, threads):
    data = interleave_block(columns)
    benchmark.group = f"hilbert threads {columns}x8B"
    benchmark.extra_info["rows"] = data.shape[0]
    out = np.empty((data.shape[0], columns * 8), np.uint8)
    benchmark(zorder.hilbert_rows, data, 64, out, threads=threads)


# Other Python packages a user might pick for Hilbert codes (pip install 'zorder[compare]').
# Their curve orientation differs from Iceberg's, so only their speed is comparable. Both
# take one integer per dimension: two 32-bit coordinates here (numpy-hilbert-curve packs
# its index into 64 bits), against hilbert_rows on the same two 4-byte columns.
OTHER_ROWS = 100_000


@pytest.mark.parametrize("what", ["zorder.hilbert_rows", "numpy-hilbert-curve", "hilbertcurve"])
def test_hilbert_other_packages(benchmark, what):
    rng = np.random.default_rng(5)
    points = rng.integers(0, 2**32, (OTHER_ROWS, 2), dtype=np.uint64)
    benchmark.group = "hilbert 2 x 32-bit coordinates, other packages"
    benchmark.extra_info["rows"] = OTHER_ROWS
    if what == "zorder.hilbert_rows":
        be = points.astype(">u4").view(np.uint8).reshape(OTHER_ROWS, 2, 4)
        benchmark(zorder.hilbert_rows, be, 32)
    elif what == "numpy-hilbert-curve":
        hilbert = pytest.importorskip("hilbert", reason="pip install numpy-hilbert-curve")
        benchmark(hilbert.encode, points.astype(np.int64), 2, 32)
    else:
        curve_module = pytest.importorskip("hilbertcurve.hilbertcurve",
                                           reason="pip install hilbertcurve")
        curve = curve_module.HilbertCurve(32, 2)
        few = points[:2_000].tolist()   # pure Python: ns per row from fewer rows
        benchmark.extra_info["rows"] = len(few)
        benchmark.pedantic(curve.distances_from_points, args=(few,), rounds=3)
