"""Shared data for the pytest-benchmark suite (see benchmarks/README in NOTES.md).

Not collected by a plain `pytest` (testpaths = ["tests"]); run it with
`pytest benchmarks --benchmark-only`. ZORDER_BENCH_ROWS sets the batch rows (default
1,000,000, the bench command's default).
"""

import functools
import os

import pytest

pytest.importorskip("pytest_benchmark", reason="the benchmarks need pytest-benchmark")

from zorder import _bench  # noqa: E402

ROWS = int(os.environ.get("ZORDER_BENCH_ROWS", _bench.DEFAULT_ROWS))


@functools.lru_cache(maxsize=None)
def _block(columns):
    return _bench.make_block(columns, ROWS)


@pytest.fixture(scope="session")
def block():
    """block(columns): (ROWS, columns, 8) random bytes, the same for every backend."""
    return _block
