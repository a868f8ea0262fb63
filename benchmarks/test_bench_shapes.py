"""The shape matrix (issue 13) under pytest-benchmark: one group per column shape, every
backend and the per-call ``auto`` beside a numpy copy of the same input bytes.

    pytest benchmarks/test_bench_shapes.py --benchmark-only          # ZORDER_BENCH_ROWS rows
    pytest benchmarks/test_bench_shapes.py --benchmark-only -k "8+16"

Ratios to the copy are what to read (the machine is shared); `zorder bench` prints the same
matrix with the ratios computed in one run.
"""

import functools
import os

import numpy as np
import pytest

import zorder
from zorder.bench import MATRIX_SHAPES, parse_widths

ROWS = int(os.environ.get("ZORDER_BENCH_ROWS", 1_000_000))
pytest.importorskip("pytest_benchmark", reason="these benchmarks need pytest-benchmark")

KERNELS = [n for n in zorder.available_backends() if n != "bitloop"] + ["auto", "memcpy"]
SHAPES = [pytest.param(s, id=f"{s[0]}->{s[1]}") for s in MATRIX_SHAPES]


@functools.lru_cache(maxsize=None)
def columns_of(text):
    widths = parse_widths(text)
    block = np.random.default_rng(len(widths)).integers(0, 256, (ROWS, sum(widths)), np.uint8)
    cols, at = [], 0
    for w in widths:
        cols.append(np.ascontiguousarray(block[:, at:at + w]))
        at += w
    return block, cols


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("shape", SHAPES)
def test_shape(benchmark, shape, name):
    text, size = shape
    block, cols = columns_of(text)
    benchmark.group = f"shape {text}->{size}"
    benchmark.extra_info["class"] = zorder.interleave.auto.shape_class_of(parse_widths(text), size,
                                                                          rows=ROWS)
    if name == "memcpy":
        copy = np.empty_like(block)
        benchmark(np.copyto, copy, block)
        return
    fn = zorder.interleave_rows if name == "auto" else zorder.get_backend(name).interleave_rows
    out = np.empty((ROWS, size), np.uint8)
    benchmark(fn, cols, size, out=out)
    np.testing.assert_array_equal(out[:50], zorder.get_backend("bitloop").interleave_rows(
        [c[:50] for c in cols], size))


#: Columns that are not rows back to back: views of wider rows (every column its own
#: array), or cut side by side from one block. simd gathered such rows until 2026-12-04.
STRIDED = {"8x8, rows 16 apart": (8, 16), "4x8, rows 16 apart": (4, 16),
           "2x8, rows 16 apart": (2, 16), "3x8 cut from one block": (3, 0)}


@functools.lru_cache(maxsize=None)
def strided_columns(layout):
    k, stride = STRIDED[layout]
    rng = np.random.default_rng(k)
    if stride:
        wide = rng.integers(0, 256, (ROWS, k, stride), np.uint8)
        return wide, [wide[:, i, :8] for i in range(k)]
    block = rng.integers(0, 256, (ROWS, 8 * k), np.uint8)
    return block, [block[:, 8 * i:8 * i + 8] for i in range(k)]


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("layout", list(STRIDED))
def test_strided_columns(benchmark, layout, name):
    """Against a copy of the arrays the columns are views of (the bytes the rows span)."""
    source, cols = strided_columns(layout)
    benchmark.group = f"strided {layout}"
    if name == "memcpy":
        copy = np.empty_like(source)
        benchmark(np.copyto, copy, source)
        return
    fn = zorder.interleave_rows if name == "auto" else zorder.get_backend(name).interleave_rows
    size = 8 * len(cols)
    out = np.empty((ROWS, size), np.uint8)
    benchmark(fn, cols, size, out=out)
    np.testing.assert_array_equal(out[:50], zorder.get_backend("bitloop").interleave_rows(
        [c[:50] for c in cols], size))
