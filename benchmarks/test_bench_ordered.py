"""ordered_bytes per column type: 1,000,000 values each.

Run with ``python -m pytest benchmarks/test_bench_ordered.py``. Fixed-width types are
whole-array numpy operations; strings go through the Cython kernels of
``zorder.ordered._strings`` (str objects, numpy 'U' code points, Arrow offsets).
"""

import numpy as np
import pytest

from zorder.ordered import ordered_bytes

N = 1_000_000
RNG = np.random.default_rng(17758)

NUMPY = {
    "int64": RNG.integers(-(2**63), 2**63 - 1, N, dtype=np.int64),
    "int32": RNG.integers(-(2**31), 2**31 - 1, N, dtype=np.int32),
    "uint64": RNG.integers(0, 2**64 - 1, N, dtype=np.uint64),
    "float64": RNG.normal(size=N),
    "float32": RNG.normal(size=N).astype(np.float32),
    "bool": RNG.integers(0, 2, N).astype(bool),
    "date": RNG.integers(-100_000, 100_000, N).astype("M8[D]"),
    "timestamp_us": RNG.integers(-(2**60), 2**60, N).astype("M8[us]"),
    "timestamp_ns": RNG.integers(-(2**62), 2**62, N).astype("M8[ns]"),
    "str_U": np.char.add("user-é", RNG.integers(0, 10**7, N).astype("U7")),
}
NUMPY["str_object"] = NUMPY["str_U"].astype(object)
NUMPY["bytes_object"] = np.array([s.encode() for s in NUMPY["str_U"][:N]], dtype=object)


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy(benchmark, name):
    out = benchmark(ordered_bytes, NUMPY[name])
    assert out.shape == (N, 8)


@pytest.mark.parametrize("name", ["float64", "float32"])
def test_numpy_main_floats(benchmark, name):
    out = benchmark(ordered_bytes, NUMPY[name], iceberg="main")  # the default is 1.11
    assert out.shape == (N, 8)


@pytest.mark.parametrize("length", [8, 16])
def test_arrow_strings(benchmark, length):
    pa = pytest.importorskip("pyarrow")
    arr = pa.array(NUMPY["str_object"])
    out = benchmark(ordered_bytes, arr, length)
    assert out.shape == (N, length)


def test_arrow_timestamps_with_zone(benchmark):
    pa = pytest.importorskip("pyarrow")
    arr = pa.array(NUMPY["timestamp_us"]).cast(pa.timestamp("us", tz="UTC"))
    out = benchmark(ordered_bytes, arr)
    assert out.shape == (N, 8)
