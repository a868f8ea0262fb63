"""``python -m zorder COMMAND``: each command lives in its own module, imported only when
used, so ``info`` never pays for pyarrow, dask or matplotlib."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

# command -> (module with add_arguments(parser) and run(args) -> int, one-line help)
COMMANDS = {
    "info": ("zorder._info", "show the chosen backend, why, the available ones and the CPU facts"),
    "bench": ("zorder._bench", "time every backend against a memory copy"),
    "sort": ("zorder._parquet", "rewrite a Parquet file in Z-order (needs pyarrow)"),
    "cluster": ("zorder.dask", "Z-order cluster a Parquet dataset with Dask (needs dask)"),
}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Installed as a console script the program is `zorder`; otherwise `python -m zorder`.
    prog = "zorder" if os.path.basename(sys.argv[0]) == "zorder" else "python -m zorder"
    top = argparse.ArgumentParser(
        prog=prog,
        description="Iceberg-compatible Z-order tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(f"  {c:<9}{h}" for c, (_, h) in COMMANDS.items()),
    )
    top.add_argument("command", choices=sorted(COMMANDS), metavar="COMMAND")
    if not argv:
        top.print_help()
        return 2
    if argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        top.parse_args(argv[:1])  # prints help, or the "invalid choice" error, and exits
        return 2
    name, rest = argv[0], argv[1:]
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=help_text)
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        return int(module.run(args) or 0)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
