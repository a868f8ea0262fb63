"""``python -m zorder bench``: every backend against bitloop and against a memory copy.

This module parses the flags; the timing is ``zorder.bench`` (``timing.run_bench`` for the
per-row, batch and thread timings of 8-byte columns, ``matrix.run_matrix`` for every column
shape and the Hilbert rows), and the chart ``zorder.cli.plot.plot_bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, List, Tuple

import zorder
from zorder.bench import (
    CLOCK, DEFAULT_CALLS, DEFAULT_ROWS, DEFAULT_SHAPES, MATRIX_ROWS, Steps, check_shapes_fit,
    format_matrix, format_report, run_bench, run_matrix,
)
from zorder.bench.timing import BITLOOP_CALLS, BITLOOP_ROWS, COLUMN_BYTES
from zorder.cli.plot import plot_bench, plot_format, require_matplotlib
from zorder.cli.progress import Progress
from zorder.cpu.cores import usable_cores


def parse_shapes(text: str) -> List[Tuple[int, int]]:
    """``"4x32,2x8"`` -> [(4, 32), (2, 8)]: columns of 8 bytes x output bytes."""
    shapes = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            cols, size = (int(v) for v in part.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad shape {part!r}: write COLUMNSxBYTES, for example 4x32"
            ) from None
        if cols < 1 or size < 1 or size > cols * COLUMN_BYTES:
            raise argparse.ArgumentTypeError(
                f"bad shape {part!r}: need 1 <= bytes <= {COLUMN_BYTES} x columns"
            )
        if (cols, size) in shapes:
            raise argparse.ArgumentTypeError(f"shape {cols}x{size} is given twice")
        shapes.append((cols, size))
    if not shapes:
        raise argparse.ArgumentTypeError("no shapes given")
    return shapes


def backends_option(text: str) -> List[str]:
    """--backends: comma-separated names, each one that runs here, once (BackendError)."""
    from zorder.interleave import backend_name

    names: List[str] = []
    for given in text.split(","):
        name = backend_name(given)
        if not name:
            continue
        if name == "auto":
            raise zorder.BackendError(
                "--backends: 'auto' is not one backend but the per-call choice among them; "
                "the report says what it picks, and the shape matrix times it beside them")
        zorder.get_backend(name)   # raises, naming the ones that run here
        if name in names:
            raise zorder.BackendError(f"--backends: {name} is given twice")
        names.append(name)
    return names


def progress_line(enabled: bool) -> Callable[[int], Steps]:
    """The bench's progress line on stderr, for a given number of steps."""
    return lambda total: Progress("zorder bench", total=total, delay=2.0, enabled=enabled)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS,
                        help=f"rows for the batch path (default {DEFAULT_ROWS:,}; "
                             f"bitloop gets at most {BITLOOP_ROWS:,})")
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS,
                        help=f"calls per timing for the per-row path (default {DEFAULT_CALLS:,}; "
                             f"bitloop gets at most {BITLOOP_CALLS:,})")
    parser.add_argument("--shapes", type=parse_shapes, default=list(DEFAULT_SHAPES),
                        help="COLUMNSxBYTES,... of 8-byte columns "
                             "(default: 2x16,2x8,3x24,3x8,4x32,4x8,8x64)")
    parser.add_argument("--threads", type=int, default=usable_cores(),
                        help="also time the batch path with 2, 4, ... up to this many threads "
                             "(default: the cores this process may use; 1 to skip)")
    parser.add_argument("--repeat", type=int, default=7, help="timings per number; the best counts")
    parser.add_argument("--backends", default=None,
                        help="comma-separated backends (default: every available one)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="also write a bar chart (needs matplotlib: zorder[plot])")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument("--matrix-rows", type=int, default=MATRIX_ROWS, metavar="N",
                        help=f"rows for the shape matrix and the Hilbert rows (default "
                             f"{MATRIX_ROWS:,}; 0 to skip them)")


def run(args: argparse.Namespace) -> int:
    for flag, value, least in (("--rows", args.rows, 1), ("--calls", args.calls, 1),
                               ("--repeat", args.repeat, 1), ("--threads", args.threads, 1),
                               ("--matrix-rows", args.matrix_rows, 0)):
        if value < least:
            print(f"error: {flag} must be >= {least}, got {value}", file=sys.stderr)
            return 2
    try:
        check_shapes_fit(args.shapes, args.rows)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    backends = None
    if args.backends:
        try:
            backends = backends_option(args.backends)
        except zorder.BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.plot:
        require_matplotlib("--plot")   # fail before the timing
        try:
            plot_format(args.plot, "--plot")
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        folder = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            print(f"error: cannot write --plot {args.plot!r}: "
                  f"{folder!r} is not a writable folder", file=sys.stderr)
            return 2
    report = run_bench(shapes=args.shapes, rows=args.rows, repeat=args.repeat,
                       max_threads=args.threads, calls=args.calls, backends=backends,
                       progress=progress_line(not args.quiet))
    if args.matrix_rows:
        report["matrix"] = run_matrix(args.matrix_rows, args.repeat, CLOCK,
                                      progress_line(not args.quiet))
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_report(report))
        if "matrix" in report:
            sys.stdout.write("\n" + format_matrix(report["matrix"]))
    if args.plot:
        plot_bench(report, args.plot)
        if not args.json:
            print(f"plot written to {args.plot}")
    return 0
