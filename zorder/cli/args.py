"""Argument helpers shared by the commands: one spelling and one meaning for each flag."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional

from zorder.ordered import IcebergOptions
from zorder.ordered.options import ICEBERG_DEFAULT, iceberg_mode, spark_mode
from zorder.parquet.sizes import parse_size
from zorder.values.ordering import CURVES
from zorder.values.rank import check_rank_bits
from zorder.values.stages import profiling

__all__ = ["add_boundaries_argument", "add_columns_argument", "add_curve_argument",
           "add_encoding_arguments", "add_iceberg_arguments", "add_profile_argument",
           "checked_by",
           "columns_arg", "encoding_arguments", "fraction", "iceberg_options",
           "load_boundaries", "positive_int", "profiled", "scheduler_arg", "size_arg"]


def columns_arg(text: str) -> List[str]:
    """``a,b,c`` -> ["a", "b", "c"]; empty names and repeats are usage errors."""
    cols = [c.strip() for c in text.split(",")]
    if not text.strip() or any(not c for c in cols):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    if len(set(cols)) != len(cols):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return cols


def _number(text: str, convert: Callable[[str], Any], expected: str,
            within: Callable[[Any], bool], rule: str) -> Any:
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not within(value):
        raise argparse.ArgumentTypeError(f"{rule}, got {value}")
    return value


def positive_int(text: str) -> int:
    """A count, > 0."""
    return _number(text, int, "a positive integer", lambda v: v > 0, "must be > 0")


def whole_number(text: str) -> int:
    """A count, >= 0."""
    return _number(text, int, "a whole number", lambda v: v >= 0, "must be >= 0")


def fraction(text: str) -> float:
    """A share, strictly between 0 and 1."""
    return _number(text, float, "a number in (0, 1)", lambda v: 0 < v < 1, "must be in (0, 1)")


def checked_by(check: Callable[[Any], Any], keyword: str,
               convert: Callable[[str], Any] = str) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a flag with the library's own check of its keyword,
    so the rule has one home and the error names the flag: argparse prints
    "argument --rank-bits: must be a multiple of 8 ...", not "rank_bits must be ..."."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
            check(value)
        except (TypeError, ValueError) as exc:
            message = str(exc)
            if message.startswith(f"{keyword} "):
                message = message[len(keyword) + 1:]
            raise argparse.ArgumentTypeError(message) from None
        return value
    parse.__name__ = keyword   # (argparse names a type by it when the type raises another error)
    return parse


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


def size_arg(text: str) -> int:
    """A byte size such as ``128MB``, ``512MiB`` or ``4096``."""
    try:
        return parse_size(text, "size")
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("size=", "")) from None


def scheduler_arg(text: str) -> str:
    """--scheduler: threads, processes, sync, local:N or a scheduler address, checked by
    the library's own rule (``dask_scheduler.check_scheduler``) before any work."""
    from zorder.engines.dask_scheduler import check_scheduler

    try:
        check_scheduler(text)
    except (TypeError, ValueError) as exc:
        message = re.sub(r"^scheduler=", "", str(exc))
        raise argparse.ArgumentTypeError(message) from None
    return text


#: What --scheduler says, for every command that has it.
SCHEDULER_HELP = ("threads (default), processes, sync, local:N (a Dask LocalCluster of N "
                  "worker processes sharing --memory-limit: several cores on data larger "
                  "than memory), or a Dask scheduler address such as tcp://HOST:8786")


def add_memory_arguments(parser: argparse.ArgumentParser, holds: str, larger: str,
                         default_folder: str) -> None:
    """--memory-limit and --temp-dir, the same in every command that can work out of core:
    ``holds`` says what the limit bounds, ``larger`` what happens past it, and
    ``default_folder`` where the spill folder goes by default."""
    parser.add_argument("--memory-limit", type=size_arg, default=None, metavar="SIZE",
                        help=f"memory {holds} may hold, e.g. 2GB or 512MiB (default: half the "
                             f"available memory, as `zorder info` shows); {larger}")
    parser.add_argument("--temp-dir", default=None, metavar="DIR",
                        help=f"an existing folder for the out-of-core spill files (default: "
                             f"{default_folder}); removed when done")


def add_iceberg_arguments(parser: argparse.ArgumentParser, timestamp_applies: bool = True) -> None:
    """The flags of ``IcebergOptions``, the same in every command that computes Z-values.

    Where the table's schema says each timestamp's kind (``timestamp_applies=False``:
    Iceberg), --timestamp is still parsed, so that the command can say why it does not
    apply, but left out of the help."""
    group = parser.add_argument_group("Iceberg options (what Spark's rewrite would be given)")
    group.add_argument("--var-length-contribution", type=positive_int, default=8, metavar="N",
                       help="bytes per string or binary column (Iceberg's "
                            "var-length-contribution; default 8)")
    group.add_argument("--max-output-size", type=positive_int, default=None, metavar="N",
                       help="cap on the Z-value length in bytes (Iceberg's max-output-size; "
                            "default: no cap)")
    group.add_argument("--iceberg", default=ICEBERG_DEFAULT, metavar="VERSION",
                       type=checked_by(iceberg_mode, "iceberg"),
                       help=f"the Iceberg whose bytes to give: a release (default {ICEBERG_DEFAULT}, "
                            "the newest release, which moves with each release; or an earlier "
                            "one such as 1.11, with the old float formula and null booleans "
                            "refused), or main for Iceberg's main branch")
    group.add_argument("--spark", default="4", metavar="VERSION",
                       type=checked_by(spark_mode, "spark"),
                       help="DATE bytes of this Spark: '4' (default) or '3.5'")
    group.add_argument("--timestamp", default=None, choices=("ntz", "tz"),
                       help="read every timestamp column as TIMESTAMP_NTZ (microseconds) or "
                            "TIMESTAMP (whole seconds); default: from each column's type"
                       if timestamp_applies else argparse.SUPPRESS)


def add_columns_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """--columns a,b,c: the columns the curve is computed on, in order."""
    parser.add_argument("--columns", required=True, type=columns_arg, metavar="a,b,c",
                        help=f"{what}, in order (Iceberg's zorder(a, b, c))")


def add_curve_argument(parser: argparse.ArgumentParser, both: bool = False) -> None:
    """--curve: Iceberg's Z-order or Spark 4.1's Hilbert order (``both``: also "both")."""
    parser.add_argument("--curve", choices=(*CURVES, "both") if both else tuple(CURVES),
                        default="zorder",
                        help="zorder (Iceberg's Z-order, default) or hilbert (Spark 4.1's "
                             "Hilbert order)" + (", or both: the output in Z-order, and the "
                                                 "report also shows the Hilbert order's "
                                                 "skipping" if both else ""))


def add_encoding_arguments(parser: argparse.ArgumentParser) -> None:
    """--encoding and --rank-bits: Iceberg's bytes, or balanced column ranks."""
    parser.add_argument("--encoding", choices=("iceberg", "rank"), default="iceberg",
                        help="iceberg (Iceberg's bytes, the default) or rank (balanced column "
                             "ranks: every column gets its share of the curve; not Iceberg's "
                             "order, and Spark's rewrite will not reproduce it)")
    parser.add_argument("--rank-bits", type=checked_by(check_rank_bits, "rank_bits", _int),
                        default=None, metavar="N",
                        help="bits per column rank with --encoding rank (a multiple of 8; "
                             "default 16, or those of the --boundaries given)")


def add_boundaries_argument(parser: argparse.ArgumentParser, recorded: str) -> None:
    """--boundaries FILE: the rank boundaries of an earlier run, so increments rank alike."""
    parser.add_argument("--boundaries", default=None, metavar="FILE",
                        help=f"with --encoding rank: the rank boundaries of an earlier run "
                             f"({recorded}, or a RankBoundaries JSON), so increments rank "
                             f"alike, with their rank bits (default: learned from this "
                             f"data's sample)")


def load_boundaries(path: Optional[str]) -> Any:
    """RankBoundaries from a file: a cluster manifest (``_zorder.json``), a rewrite report
    (``--report-json``), or their own JSON; None for no path."""
    if path is None:
        return None
    from zorder.values.rank import RankBoundaries

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:   # (ValueError: not JSON, or not text at all)
        raise ValueError(f"--boundaries: cannot read {path!r} as JSON ({exc})") from None
    except RecursionError:   # (json's decoder recurses once per level of nesting)
        raise ValueError(f"--boundaries: cannot read {path!r} as JSON (nested too "
                         f"deeply)") from None
    recorded = None
    if isinstance(data, dict):
        recorded = data.get("zorder", {}).get("rank_boundaries") \
            if isinstance(data.get("zorder"), dict) else data.get("rank_boundaries")
    if isinstance(data, dict) and "format" not in data and recorded is None:
        raise ValueError(f"--boundaries: {path!r} records no rank boundaries (was that run "
                         f"--encoding rank?)")
    return RankBoundaries.from_dict(recorded if recorded is not None else data)


def encoding_arguments(args: argparse.Namespace) -> Dict[str, Any]:
    """The keywords that --encoding, --rank-bits and (where a command has it) --boundaries
    say, the boundaries file read, checked before any work: the rank flags only with
    --encoding rank, so a flag is never silently ignored."""
    if args.encoding != "rank":
        for flag, value in (("--rank-bits", args.rank_bits),
                            ("--boundaries", getattr(args, "boundaries", None))):
            if value is not None:
                raise ValueError(f"{flag} is for --encoding rank (--encoding iceberg, the "
                                 f"default, uses Iceberg's bytes as they are)")
    keywords: Dict[str, Any] = {"encoding": args.encoding, "rank_bits": args.rank_bits}
    if hasattr(args, "boundaries"):
        keywords["boundaries"] = load_boundaries(args.boundaries)
    return keywords


def compare_arg(text: str) -> tuple:
    """``encoding,curve`` -> ("encoding", "curve")."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names or any(n not in ("encoding", "curve") for n in names):
        raise argparse.ArgumentTypeError(f"expected encoding and/or curve, got {text!r}")
    return names


def iceberg_options(args: argparse.Namespace) -> IcebergOptions:
    """The ``IcebergOptions`` the flags of ``add_iceberg_arguments`` say (validated)."""
    return IcebergOptions(var_length_contribution=args.var_length_contribution,
                          max_output_size=args.max_output_size, iceberg=args.iceberg,
                          spark=args.spark, timestamp=args.timestamp)


def add_profile_argument(parser: argparse.ArgumentParser) -> None:
    """--profile: where the time went, the same in every command that rewrites data."""
    parser.add_argument("--profile", action="store_true",
                        help="after the result, print to stderr where the time went: read, "
                             "ordered bytes, curve, sort, reorder, write, commit (wall and "
                             "CPU seconds; stages on several threads may overlap)")


@contextlib.contextmanager
def profiled(args: argparse.Namespace, title: str, unseen: str = "") -> Iterator[None]:
    """Profile the block when ``args.profile``, and print the breakdown to stderr after
    it (not after a failure: the one line of the error stays the last). ``unseen``: what
    the command spends time on outside the stages, said under the table."""
    if not getattr(args, "profile", False):
        yield
        return
    with profiling() as profile:
        yield
    sys.stdout.flush()
    text = profile.format(title)
    if unseen:
        text += f"\n  ((elsewhere): {unseen})"
    print(text, file=sys.stderr)
