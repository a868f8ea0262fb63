"""The bench floor: the timing harness behind ``zorder bench``, benchmarks/ and
tools/bench_report.py.

- ``timing``: the per-row and batch timings of every backend against a memory copy, with
  thread scaling (``run_bench``), the clock they use and the random input blocks.
- ``matrix``: the shape matrix, every backend and ``auto`` on every column shape, and
  Iceberg's Hilbert rows beside the interleave (``run_matrix``).
- ``report``: the text tables of both reports, with the one table formatter.

A library, not a command: it prints nothing and takes its progress line from the caller.
It sits above the public face, whose chosen backend and version its reports name, and
below the command line (``zorder.cli.bench`` parses the flags and calls it).
"""

from zorder.bench.matrix import MATRIX_ROWS, MATRIX_SHAPES, parse_widths, run_matrix
from zorder.bench.report import format_matrix, format_report, format_table, ns_cell
from zorder.bench.timing import (
    BASELINE, CLOCK, DEFAULT_CALLS, DEFAULT_ROWS, DEFAULT_SHAPES, REFERENCE, Steps,
    check_shapes_fit, make_block, run_bench,
)

__all__ = [
    "BASELINE", "CLOCK", "DEFAULT_CALLS", "DEFAULT_ROWS", "DEFAULT_SHAPES", "MATRIX_ROWS",
    "MATRIX_SHAPES", "REFERENCE", "Steps", "check_shapes_fit", "format_matrix",
    "format_report", "format_table", "make_block", "ns_cell", "parse_widths", "run_bench",
    "run_matrix",
]
