"""Whole-table Z-values and the Z-order sort: 1,000,000 rows of four mixed columns.

Run with ``python -m pytest benchmarks/test_bench_values.py``. The columns are what a
clustered table typically holds: a BIGINT id range, a DOUBLE measurement, a STRING
with a shared prefix and a TIMESTAMP within one year. Their high bytes tie a lot, which
is the hard case for sorting Z-values (see zorder.values._radix).

``test_sort_indices_*`` is the end-to-end figure (columns in, permutation out); the
issue asks for well under a second on this machine, and the test fails above one.
"""

import numpy as np
import pytest

import zorder

N = 1_000_000


def _numpy_columns():
    rng = np.random.default_rng(20260101)
    ids = rng.integers(-5_000_000, 5_000_000, N)
    measure = rng.normal(100.0, 15.0, N)
    names = np.char.add("user", rng.integers(0, 10**7, N).astype("U7"))
    start = np.datetime64("2025-01-01T00:00:00", "us")
    stamps = start + rng.integers(0, 365 * 86400 * 10**6, N).astype("timedelta64[us]")
    return {"id": ids, "measure": measure, "name": names, "at": stamps}


@pytest.fixture(scope="module")
def numpy_columns():
    return _numpy_columns()


@pytest.fixture(scope="module")
def arrow_table(numpy_columns):
    pa = pytest.importorskip("pyarrow")
    cols = dict(numpy_columns)
    cols["at"] = pa.array(cols["at"]).cast(pa.timestamp("us", tz="UTC"))
    return pa.table(cols)


def _under_a_second(benchmark):
    if benchmark.stats is not None:  # None under --benchmark-disable
        assert benchmark.stats.stats.min < 1.0


def test_sort_indices_arrow_table(benchmark, arrow_table):
    perm = benchmark(zorder.sort_indices, arrow_table)
    assert perm.shape == (N,)
    _under_a_second(benchmark)


def test_sort_indices_numpy_columns(benchmark, numpy_columns):
    perm = benchmark(zorder.sort_indices, numpy_columns)
    assert perm.shape == (N,)
    _under_a_second(benchmark)


def test_zorder_values_arrow_table(benchmark, arrow_table):
    z = benchmark(zorder.zorder_values, arrow_table)
    assert len(z) == N


@pytest.fixture(scope="module")
def zvalues(numpy_columns):
    return zorder.zorder_values(numpy_columns)


def test_argsort_zvalues(benchmark, zvalues):
    perm = benchmark(zorder.argsort_zvalues, zvalues)
    assert perm.shape == (N,)


def test_argsort_zvalues_random_bytes(benchmark):
    z = np.random.default_rng(1).integers(0, 256, (N, 32), dtype=np.uint8)
    perm = benchmark(zorder.argsort_zvalues, z)
    assert perm.shape == (N,)


def test_numpy_void_argsort_for_comparison(benchmark, zvalues):
    # What numpy alone offers for a stable bytewise sort of (N, 32) rows.
    void = np.ascontiguousarray(zvalues).view(f"V{zvalues.shape[1]}").ravel()
    perm = benchmark.pedantic(np.argsort, args=(void,), kwargs={"kind": "stable"},
                              rounds=3, iterations=1)
    assert perm.shape == (N,)


def test_numpy_lexsort_for_comparison(benchmark, zvalues):
    # The other numpy route: big-endian 64-bit words, lexsort (last key primary).
    words = zvalues.view(">u8").astype(np.uint64)
    perm = benchmark.pedantic(np.lexsort, args=(words.T[::-1],), rounds=3, iterations=1)
    assert perm.shape == (N,)


def test_deinterleave_rows(benchmark, zvalues):
    cols = benchmark(zorder.deinterleave_rows, zvalues, [8, 8, 8, 8])
    assert len(cols) == 4
