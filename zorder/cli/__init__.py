"""The command line: ``zorder COMMAND`` (or ``python -m zorder COMMAND``).

One module per command (``info``, ``bench``, ``sort``, ``cluster``, ``iceberg``), each with
``add_arguments(parser)`` and ``run(args) -> int``, imported only when used, so ``info``
never pays for pyarrow, dask or matplotlib. Shared pieces: ``args`` (flags), ``progress``
(the progress line), ``plot`` (figures), and here ``counted`` (counts in the commands'
lines). The top floor: it may import every other one.

Every command ends with one line saying what was wrong and a non-zero exit status:
2 for a usage error (argparse's convention: a bad flag, a bad value, a missing input, an
output that may not be written), 1 for a failure while working (an I/O error), 130 when
interrupted (Ctrl-C), 143 when terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from concurrent.futures import BrokenExecutor
from typing import List, Optional

import zorder
from zorder.parquet.memory import use_command_pool
from zorder.parquet.safety import (
    Terminated, interrupts_as_exceptions, published_outputs, raise_if_interrupted,
)

# command -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS = {
    "info": ("zorder.cli.info", "show the version, what runs and why, and the CPU facts"),
    "bench": ("zorder.cli.bench", "time every backend against a memory copy"),
    "sort": ("zorder.cli.sort", "rewrite a Parquet file in Z-order (needs pyarrow)"),
    "cluster": ("zorder.cli.cluster", "Z-order cluster a Parquet dataset with Dask (needs dask)"),
    "iceberg": ("zorder.cli.iceberg", "Z-order rewrite an Iceberg table (needs pyiceberg)"),
}

#: The commands that run on Arrow (``info`` shows the pool they run on).
ON_ARROW = frozenset({"info", "sort", "cluster", "iceberg"})

#: Exit statuses.
USAGE, FAILURE, INTERRUPTED, TERMINATED = 2, 1, 130, 143


def counted(n: int, noun: str) -> str:
    """``1 row group``, ``12,000 rows``: a count as the commands print it."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


#: What a command that ran out of memory adds to its one line (README: "Memory").
MEMORY_HINT = ("zorder holds the rows it sorts in memory, about 4 times their size in Arrow "
               "at the peak (README: \"Memory\")")


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message ("" for none): one line of an error."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


#: "overwrite=True (--overwrite on the command line)", "min_input_files=0
#: (--min-input-files)": a library message's keyword with the flag beside it.
_KEYWORD_AND_FLAG = re.compile(r"\b[a-z_]+=(\S+?) \((--[a-z][a-z-]*)(?: on the command line)?\)")


def shell_message(text: str) -> str:
    """A library message as a shell user reads it: flags, not keywords (``pass
    overwrite=True (--overwrite on the command line)`` -> ``pass --overwrite``)."""
    return _KEYWORD_AND_FLAG.sub(
        lambda m: m.group(2) if m.group(1) == "True" else f"{m.group(2)} {m.group(1)}", text)


def _what(exc: BaseException) -> str:
    return first_line(exc) or type(exc).__name__


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command; returns its exit status. Run as the program (``argv`` None), on
    the command's Arrow memory pool (``zorder.parquet.memory.use_command_pool``)."""
    own_process = argv is None   # (a caller of main(argv) keeps its own pool)
    argv = list(sys.argv[1:] if argv is None else argv)
    # Installed as a console script the program is `zorder`; otherwise `python -m zorder`.
    prog = "zorder" if os.path.basename(sys.argv[0]) == "zorder" else "python -m zorder"
    top = argparse.ArgumentParser(
        prog=prog,
        description="Iceberg-compatible Z-order tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {c:<9}{h}" for c, (_, h) in COMMANDS.items()),
    )
    top.add_argument("--version", action="version", version=f"zorder {zorder.__version__}")
    top.add_argument("command", choices=sorted(COMMANDS), metavar="COMMAND")
    if not argv:
        top.print_help()
        return USAGE
    if argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        # prints help, the version or the "invalid choice" error, and exits
        top.parse_args(argv[:1])
        return USAGE
    name, rest = argv[0], argv[1:]
    module_name, help_text = COMMANDS[name]
    if own_process and name in ON_ARROW:
        use_command_pool()   # (before the command imports pyarrow: see its docstring)
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=help_text)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        # (SIGTERM as an exception, and a record of the outputs put in place, for the
        # messages below)
        with interrupts_as_exceptions():
            status = int(module.run(args) or 0)
            if status == 0:
                raise_if_interrupted()   # one whose exception Python dropped: no success
            return status
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILURE
    except (KeyboardInterrupt, Terminated) as exc:
        # CPython marks an interrupt as unhandled when it passes through exec() of a string
        # (a dataclass being built as dask imports distributed, say) and then ends
        # `python -m zorder` by SIGINT, not with this status, though it was handled here.
        # Every exec() of a string starts by clearing that mark (3.10 to 3.13).
        exec("")
        stopped = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        published = published_outputs()
        if published:
            print(f"error: {stopped} after the output was written ({published[0]}); only "
                  "what followed it was cut short", file=sys.stderr)
        else:
            print(f"error: {stopped}; the output was left as it was", file=sys.stderr)
        return TERMINATED if isinstance(exc, Terminated) else INTERRUPTED
    except MemoryError as exc:
        # (numpy's and Arrow's failed allocations are MemoryErrors too; the commands' own
        # cleanup has run, and the output is as it was)
        print(f"error: out of memory ({_what(exc)}); {MEMORY_HINT}", file=sys.stderr)
        return FAILURE
    except BrokenExecutor as exc:
        # (a worker process of --scheduler processes died: most often the kernel's OOM killer)
        print(f"error: a worker process ended abruptly ({_what(exc)}), most often for "
              f"want of memory; {MEMORY_HINT}", file=sys.stderr)
        return FAILURE
    except (ImportError, TypeError, ValueError, FileNotFoundError, FileExistsError,
            IsADirectoryError, NotADirectoryError, NotImplementedError) as exc:
        # (NotImplementedError: what pyarrow says of data it cannot handle)
        print(f"error: {shell_message(str(exc))}", file=sys.stderr)
        return USAGE
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return FAILURE
    except RuntimeError as exc:
        # (after NotImplementedError's clause above, a RuntimeError too)
        if "can't start new thread" not in str(exc):
            raise
        print(f"error: could not start a thread ({_what(exc)}): out of memory, or of "
              f"the threads this user may run; {MEMORY_HINT}", file=sys.stderr)
        return FAILURE
