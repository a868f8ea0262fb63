"""Every backend side by side, one pytest-benchmark group per path and shape.

Groups: "per-row CxB->S" (interleave_bits on one row, reused out, next to b"".join of the
same columns) and "batch CxB->S" (interleave_rows on ROWS rows into a reused array, next
to a numpy copy of the same bytes), plus "threads CxB->S" for the auto backend. bitloop
runs on the same rows (ZORDER_BENCH_ROWS, default 1,000,000) as the others, so it takes a few seconds a shape; leave it out
with `-k "not bitloop"`.
"""

import os

import numpy as np
import pytest

import zorder
from zorder import bench as _bench

pytest.importorskip("pytest_benchmark", reason="these benchmarks need pytest-benchmark")

SHAPES = [pytest.param(s, id=f"{s[0]}x8B->{s[1]}B") for s in _bench.DEFAULT_SHAPES]
BACKENDS = list(zorder.available_backends())


def label(shape):
    return f"{shape[0]}x8B->{shape[1]}B"


@pytest.mark.parametrize("name", BACKENDS + ["memcpy"])
@pytest.mark.parametrize("shape", SHAPES)
def test_per_row(benchmark, interleave_block, shape, name):
    cols_n, size = shape
    cols = [interleave_block(cols_n)[0, c].tobytes() for c in range(cols_n)]
    benchmark.group = f"per-row {label(shape)}"
    if name == "memcpy":
        benchmark.extra_info["what"] = 'b"".join(columns)'
        benchmark(b"".join, cols)
        return
    fn = zorder.get_backend(name).interleave_bits
    buf = bytearray(size)
    benchmark(fn, cols, size, buf)
    assert bytes(buf) == zorder.get_backend("bitloop").interleave_bits(cols, size)


@pytest.mark.parametrize("name", BACKENDS + ["memcpy"])
@pytest.mark.parametrize("shape", SHAPES)
def test_batch(benchmark, interleave_block, shape, name):
    cols_n, size = shape
    data = interleave_block(cols_n)
    rows = data.shape[0]
    benchmark.group = f"batch {label(shape)}"
    benchmark.extra_info["rows"] = rows
    if name == "memcpy":
        flat = data.reshape(rows, -1)
        copy = np.empty_like(flat)
        benchmark(np.copyto, copy, flat)
        return
    fn = zorder.get_backend(name).interleave_rows
    out = np.empty((rows, size), np.uint8)
    if name == "bitloop":
        # Hundreds of times slower: a few rounds, no calibration.
        benchmark.pedantic(fn, args=(data, size, out), rounds=3, iterations=1)
    else:
        benchmark(fn, data, size, out)
    check = min(rows, 200)
    assert np.array_equal(out[:check],
                          zorder.get_backend("bitloop").interleave_rows(data[:check], size))


@pytest.mark.parametrize("threads", sorted({1, 2, os.cpu_count() or 1}))
@pytest.mark.parametrize("shape", SHAPES)
def test_batch_threads(benchmark, interleave_block, shape, threads):
    cols_n, size = shape
    data = interleave_block(cols_n)
    benchmark.group = f"threads {label(shape)} ({zorder.backend})"
    out = np.empty((data.shape[0], size), np.uint8)
    benchmark(zorder.interleave_rows, data, size, out, threads=threads)
