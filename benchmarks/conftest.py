"""Shared data for the interleave benchmarks (test_bench_interleave.py).

Not collected by a plain `pytest` (testpaths = ["tests"]); run it with
`pytest benchmarks --benchmark-only`. ZORDER_BENCH_ROWS sets the batch rows (default
1,000,000, the bench command's default).
"""

import functools
import os

import pytest

from zorder import bench as _bench

ROWS = int(os.environ.get("ZORDER_BENCH_ROWS", _bench.DEFAULT_ROWS))


@functools.lru_cache(maxsize=None)
def _block(columns):
    return _bench.make_block(columns, ROWS)


@pytest.fixture(scope="session")
def interleave_block():
    """interleave_block(columns): (ROWS, columns, 8) random bytes, the same for every backend."""
    return _block
