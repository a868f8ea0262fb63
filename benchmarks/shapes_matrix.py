"""The whole shape matrix of issue 13, longer than `zorder bench` runs it: every backend
and `auto` on every column shape (the bench command's and more truncated variants),
against a numpy copy of the same input bytes, as a Markdown table for benchmarks/NOTES.md.

    python benchmarks/shapes_matrix.py                       # 1M rows
    python benchmarks/shapes_matrix.py --rows 200000 --json out.json

The timing is zorder.bench.matrix's (the bench command's own), run from the source
tree's build when there is one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import zorder  # noqa: E402
from zorder.bench import CLOCK, MATRIX_SHAPES, run_matrix  # noqa: E402
from zorder.cli.progress import Progress  # noqa: E402

#: The bench command's shapes, then more truncated and narrow variants.
SHAPES = MATRIX_SHAPES + (
    ("2x8", 16), ("3x8", 24), ("8x8", 64), ("16x8", 128), ("9x8", 72), ("24x4", 96),
    ("2+2+2", 6), ("1+1", 2), ("3+3+3", 9), ("3+5+8", 10), ("1+2+3+4", 10),
    # truncated shapes that had their own slow paths (benchmarks/NOTES.md, 2026-12-03)
    ("7x8", 10), ("5x8", 10), ("1x16", 12),
    # many columns that are padded and squeezed (a prime factor above 7), and narrow ones
    ("11x8", 88), ("13x4", 52), ("16x2", 32), ("10x1", 10),
    # ragged rows ending in their first segment, short and wide pieces (NOTES.md "Dispatch:
    # ragged-truncated-first")
    ("8+16", 9), ("16+8", 12), ("8+24", 10), ("8+8+16", 24), ("16+32", 32),
    ("8+8+16", 12), ("8+8+16", 20), ("24+8+16", 20),
)


def markdown(matrix: dict) -> str:
    names = matrix["backends"]
    lines = ["| shape | class | copy | " + " | ".join(names) + " | auto/best |",
             "|---" * (len(names) + 4) + "|"]
    for r in matrix["shapes"]:
        ns = r["ns"]
        cells = " | ".join(f"{ns[n]:.2f} (x{ns[n] / ns['memcpy']:.1f})" for n in names)
        lines.append(f"| {r['shape']} | {r['class']} | {ns['memcpy']:.2f} | {cells} | "
                     f"{r['auto_vs_best']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the numbers here")
    args = ap.parse_args()
    print(f"zorder from {Path(zorder.__file__).parent}; {zorder.backend}; "
          f"{zorder.cpu_info().get('brand_raw')}", file=sys.stderr)
    matrix = run_matrix(args.rows, args.repeat, CLOCK, shapes=SHAPES,
                        progress=lambda total: Progress("shapes_matrix", total=total, delay=2.0))
    print(markdown(matrix))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(matrix, f, indent=1)


if __name__ == "__main__":
    main()
