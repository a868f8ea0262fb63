"""``zorder sort IN.parquet OUT.parquet --columns a,b,c``: rewrite one Parquet file in
Iceberg's Z-order (``zorder.parquet.sort``), and report what readers can skip."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from zorder.cli.args import (
    add_memory_arguments,
    add_columns_argument, add_curve_argument, add_encoding_arguments, add_iceberg_arguments,
    add_profile_argument, compare_arg, encoding_arguments, fraction, iceberg_options,
    positive_int, profiled,
)
from zorder.cli import counted
from zorder.cli.progress import Progress
from zorder.parquet.files import require_pyarrow
from zorder.values.ordering import CURVES, ZORDER

__all__ = ["LARGE_FILE_ROWS", "add_arguments", "run"]

#: Files with at least this many rows get a progress bar when stderr is a terminal.
LARGE_FILE_ROWS = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sort`` command's options."""
    parser.add_argument("input", metavar="IN.parquet", help="the Parquet file to read")
    parser.add_argument("output", metavar="OUT.parquet", help="where to write it in Z-order")
    add_columns_argument(parser, "the columns to Z-order by")
    add_iceberg_arguments(parser)
    add_curve_argument(parser, both=True)
    add_encoding_arguments(parser)
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="draw the skipping report, every layout side by side (needs "
                             "matplotlib; an existing FILE is replaced only with --overwrite)")
    parser.add_argument("--compare", type=compare_arg, default=(), metavar="encoding,curve",
                        help="the report also shows every other encoding and/or curve on "
                             "the same rows (written to memory only), side by side")
    parser.add_argument("--row-group-size", type=positive_int, default=None, metavar="ROWS",
                        help="rows per output row group (default: the input's largest)")
    parser.add_argument("--compression", default=None, metavar="CODEC",
                        help="output compression, e.g. zstd, snappy, none "
                             "(default: the input's)")
    add_memory_arguments(parser, "the rewrite", "a larger file is sorted out of core, spilling "
                         "to --temp-dir, with the same output", "a hidden folder beside OUT.parquet")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUT.parquet (and the --plot file) if it exists")
    parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                        help="progress bar on stderr: auto (default) shows it for files of "
                             f"{LARGE_FILE_ROWS:,}+ rows when stderr is a terminal")
    parser.add_argument("--no-report", action="store_true",
                        help="skip the row-group skipping report")
    parser.add_argument("--predicates", type=positive_int, default=25, metavar="N",
                        help="range predicates per column in the report (default 25)")
    parser.add_argument("--fraction", type=fraction, default=0.01, metavar="F",
                        help="share of the values each report predicate selects (default 0.01)")
    add_profile_argument(parser)


def _wants_progress(args: argparse.Namespace) -> bool:
    if args.progress != "auto":
        return args.progress == "always"
    if not sys.stderr.isatty():
        return False
    try:
        import pyarrow.parquet as pq

        return pq.ParquetFile(args.input).metadata.num_rows >= LARGE_FILE_ROWS
    except Exception:  # sort_parquet reports a bad input properly
        return False


def run(args: argparse.Namespace) -> int:
    """Run ``zorder sort`` with parsed ``args``; returns the exit status."""
    with profiled(args, "zorder sort --profile"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    require_pyarrow("zorder sort")
    from zorder.parquet.skipping import format_report
    from zorder.parquet.sort import sort_parquet

    options = iceberg_options(args)
    if args.plot:
        from zorder.cli.plot import check_plot_output

        if args.no_report:
            raise ValueError("--plot draws the report: leave out --no-report")
        # before the work, not after it: never the input or the output under any name
        check_plot_output(args.plot, "--plot", [(args.input, "the input"),
                                                (args.output, "the output")], args.overwrite)
    encoding = encoding_arguments(args)
    bar: Optional[Progress] = Progress("zorder sort") if _wants_progress(args) else None
    try:
        result = sort_parquet(
            args.input, args.output, args.columns, options=options,
            row_group_size=args.row_group_size, compression=args.compression,
            overwrite=args.overwrite, progress=bar.update if bar else None,
            report=not args.no_report, predicates=args.predicates, fraction=args.fraction,
            curve=args.curve, compare=args.compare, memory_limit=args.memory_limit,
            temp_dir=args.temp_dir, **encoding,
        )
    finally:
        if bar is not None:
            bar.close()
    curve = CURVES.get(args.curve, ZORDER).label   # (both: the output is in Z-order)
    print(f"wrote {counted(result['rows'], 'row')} in "
          f"{counted(result['row_groups_out'], 'row group')} to {args.output}, {curve}-ordered "
          f"by {', '.join(args.columns)} ({result['zvalue_bytes']}-byte {curve}-values; input "
          f"had {counted(result['row_groups_in'], 'row group')})")
    if result["report"] is not None:
        print(format_report(result["report"]))
        if args.plot:
            from zorder.cli.plot import plot_after

            plot_after(result["report"], args.plot, args.output)
    return 0
