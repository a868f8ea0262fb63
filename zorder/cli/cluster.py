"""``zorder cluster IN_DIR OUT_DIR --columns a,b,c``: Z-order cluster a Parquet dataset
with Dask (``zorder.engines.dask.cluster``), then report what readers can skip."""

from __future__ import annotations

import argparse
import sys

from zorder.cli import counted, first_line
from zorder.cli.args import (
    add_memory_arguments,
    add_boundaries_argument, add_columns_argument, add_curve_argument, add_encoding_arguments,
    SCHEDULER_HELP, add_iceberg_arguments, add_profile_argument, checked_by,
    encoding_arguments, iceberg_options, positive_int, profiled, scheduler_arg, size_arg,
)
from zorder.cli.plot import check_plot_output, plot_after
from zorder.engines.dask_scheduler import check_connect_timeout
from zorder.values.codec import HVALUE_COLUMN, ZVALUE_COLUMN
from zorder.values.stages import REPORT, stage

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``cluster`` command's options."""
    parser.add_argument("in_dir", metavar="IN_DIR", help="Parquet file or folder to read")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (must not exist, "
                        "be empty, or --overwrite)")
    add_columns_argument(parser, "clustering columns")
    add_iceberg_arguments(parser)
    add_curve_argument(parser)
    add_encoding_arguments(parser)
    add_boundaries_argument(parser, "its _zorder.json")
    parser.add_argument("--target-file-size", default="128MB", type=size_arg, metavar="SIZE",
                        help="target Parquet file size, e.g. 128MB, 512MiB (default 128MB)")
    parser.add_argument("--row-group-size", type=positive_int, default=None, metavar="ROWS",
                        help="rows per row group (as pyarrow's row_group_size; default: "
                             "from --row-group-bytes)")
    parser.add_argument("--row-group-bytes", default="128MB", type=size_arg, metavar="SIZE",
                        help="target row group size in bytes when --row-group-size is not "
                             "given, e.g. 16MB (default 128MB)")
    parser.add_argument("--scheduler", default="threads", type=scheduler_arg,
                        help=SCHEDULER_HELP)
    add_memory_arguments(parser, "the job", "with local:N, shared by its workers; larger data "
                         "is clustered out of core, each range sorted within its share",
                         "a hidden folder beside OUT_DIR")
    parser.add_argument("--connect-timeout", default=3.0, metavar="SECONDS",
                        type=checked_by(check_connect_timeout, "connect_timeout", float),
                        help="seconds to reach a scheduler address (default 3)")
    parser.add_argument("--compression", default="zstd", help="Parquet codec (default zstd)")
    parser.add_argument("--keep-zvalue", action="store_true",
                        help=f"keep the curve values as a binary column ({ZVALUE_COLUMN}, or "
                             f"{HVALUE_COLUMN} for --curve hilbert)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a non-empty OUT_DIR (and an existing --plot file)")
    parser.add_argument("--no-report", action="store_true", help="skip the skipping report")
    parser.add_argument("--plot", metavar="FILE.png", default=None,
                        help="draw the skipping report (needs matplotlib; an existing FILE "
                             "is replaced only with --overwrite)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_profile_argument(parser)


#: What ``--profile`` cannot see of ``zorder cluster``.
_UNSEEN = ("Dask's reading of the input, its shuffle and scheduling, pandas conversions; "
           "with --scheduler processes or local:N, all the tasks' work")


def run(args: argparse.Namespace) -> int:
    """Run ``zorder cluster`` with parsed ``args``; returns the exit status."""
    with profiled(args, "zorder cluster --profile", _UNSEEN):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from zorder.engines.dask import cluster, require_dask
    from zorder.parquet.skipping import format_report, skipping_report

    require_dask("zorder cluster")
    encoding = encoding_arguments(args)
    if args.plot:
        # before the work, not after it: never the input or OUT_DIR under any name
        check_plot_output(args.plot, "--plot", [(args.in_dir, "the input"),
                                                (args.out_dir, "OUT_DIR")], args.overwrite)
    try:
        result = _clustered(args, cluster, encoding)
    except Exception as exc:
        if type(exc).__name__ != "KilledWorker":
            raise
        # (distributed gave up on a task whose workers kept dying: most often for want of
        # memory; the output folder is as it was)
        print(f"error: Dask workers kept dying on one task ({first_line(exc)}), most often "
              f"for want of memory: give --memory-limit more, or the input smaller "
              f"partitions; the output was left as it was", file=sys.stderr)
        return 1
    print(f"wrote {counted(result.rows, 'row')} in {counted(len(result.files), 'file')} "
          f"({counted(result.ranges, 'Z-range')}) to {result.out_dir}")
    if not args.no_report or args.plot:
        with stage(REPORT):
            report = skipping_report(args.in_dir, result.out_dir, args.columns)
        print(format_report(report))
        if args.plot:
            plot_after(report, args.plot, result.out_dir)
    return 0


def _clustered(args: argparse.Namespace, cluster, encoding):
    return cluster(
        args.in_dir, args.out_dir, args.columns, options=iceberg_options(args),
        target_file_size=args.target_file_size, row_group_size=args.row_group_size,
        row_group_bytes=args.row_group_bytes, keep_zvalue=args.keep_zvalue,
        compression=args.compression, overwrite=args.overwrite, scheduler=args.scheduler,
        connect_timeout=args.connect_timeout, curve=args.curve, progress=not args.quiet,
        memory_limit=args.memory_limit, temp_dir=args.temp_dir, **encoding,
    )
