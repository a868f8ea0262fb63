"""``python -m zorder COMMAND``: the command line of ``zorder.cli``."""

import sys

from zorder.cli import main

if __name__ == "__main__":
    sys.exit(main())
