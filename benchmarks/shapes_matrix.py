"""The shape matrix of issue 13: every backend on every column shape, against a copy.

For each shape (column widths -> interleaved size) it times
`backend.interleave_rows(columns, size, out=out)` on separate (N, width) uint8 arrays and
`numpy.copyto` of the same N x sum(widths) input bytes, and prints ns per row and the
ratio to the copy. Thread CPU time, rounds alternating copy and kernels, best of
`--repeat` rounds of `--calls` back-to-back calls (the method of benchmarks/NOTES.md).

    python benchmarks/shapes_matrix.py                 # 1M rows, every shape, every backend
    python benchmarks/shapes_matrix.py --rows 200000 --shapes 8+16:24,4+4:8 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

# Measure the checkout this script sits in (its in-place build), not an installed zorder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import zorder  # noqa: E402

# (widths, size): every row of issue 13's table, truncated variants, the uniform 8-byte
# shapes that must not regress, and a few more narrow and many-column ones.
SHAPES = [
    ("8+8+8+8", 32), ("8+16", 24), ("8+32", 40), ("16+16", 32), ("4+4", 8), ("4+4+4", 12),
    ("2+2", 4), ("12x8", 96), ("16x8", 64), ("8+8", 8), ("3+5+8", 16), ("8x1", 8),
    ("64x8", 512), ("2x8", 16), ("3x8", 24), ("8x8", 64),
    # truncated inside each segment / block
    ("8+16", 12), ("8+16", 20), ("8+32", 30), ("3+5+8", 10), ("12x8", 50), ("4+4+4", 10),
    ("16x8", 128), ("9x8", 72), ("24x4", 96), ("2+2+2", 6), ("1+1", 2), ("3+3+3", 9),
]


def parse_widths(text: str) -> list[int]:
    """'8+16' -> [8, 16]; '12x8' -> twelve 8s."""
    widths: list[int] = []
    for part in text.split("+"):
        if "x" in part:
            count, width = part.split("x")
            widths += [int(width)] * int(count)
        else:
            widths.append(int(part))
    return widths


def best_time(fn, calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def measure(widths, size, rows, backends, calls, repeat, seed=0):
    rng = np.random.default_rng(seed)
    block = rng.integers(0, 256, size=(rows, sum(widths)), dtype=np.uint8)
    columns, at = [], 0
    for w in widths:
        columns.append(np.ascontiguousarray(block[:, at:at + w]))
        at += w
    dst = np.empty_like(block)
    out = np.empty((rows, size), dtype=np.uint8)
    times = {"copy": float("inf")}
    for _ in range(repeat):
        times["copy"] = min(times["copy"], best_time(lambda: np.copyto(dst, block), calls))
        for name, mod in backends.items():
            t = best_time(lambda: mod.interleave_rows(columns, size, out=out), calls)
            times[name] = min(times.get(name, float("inf")), t)
    return {name: t / rows * 1e9 for name, t in times.items()}


def markdown(path: str) -> str:
    """A saved --json report as the Markdown table of benchmarks/NOTES.md."""
    with open(path) as f:
        report = json.load(f)
    names = [n for n in report["results"][0]["ns_per_row"] if n != "copy"]
    lines = ["| shape | copy | " + " | ".join(names) + " | fastest |",
             "|---" * (len(names) + 3) + "|"]
    for row in report["results"]:
        t = row["ns_per_row"]
        best = min(names, key=lambda n: t[n])
        cells = " | ".join(f"{t[n]:.2f} (x{t[n] / t['copy']:.1f})" for n in names)
        lines.append(f"| {row['shape']} -> {row['size']} | {t['copy']:.2f} | {cells} | {best} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", default="table,nibble,pdep,simd")
    ap.add_argument("--shapes", default=None, help="comma list of WIDTHS:SIZE, e.g. 8+16:24,12x8:96")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    ap.add_argument("--markdown", default=None, metavar="JSON",
                    help="print a saved --json report as a Markdown table and exit")
    args = ap.parse_args()
    if args.markdown:
        print(markdown(args.markdown))
        return
    shapes = SHAPES if args.shapes is None else [
        (s.split(":")[0], int(s.split(":")[1])) for s in args.shapes.split(",")]
    backends = {}
    for name in args.backends.split(","):
        mod = zorder.get_backend(name)
        if getattr(mod, "SUPPORTED", True):
            backends[name] = mod
    names = list(backends)
    print(f"zorder from {Path(zorder.__file__).parent}; {args.rows:,} rows; ns/row (x copy)")
    print(f"{'shape':>16} {'copy':>6} " + " ".join(f"{n:>14}" for n in names) + "  best")
    report = []
    for text, size in shapes:
        widths = parse_widths(text)
        t = measure(widths, size, args.rows, backends, args.calls, args.repeat)
        best = min(names, key=lambda n: t[n])
        cells = " ".join(f"{t[n]:7.2f} ({t[n] / t['copy']:4.1f}x)" for n in names)
        print(f"{text + '->' + str(size):>16} {t['copy']:6.2f} {cells}  {best}", flush=True)
        report.append({"shape": text, "size": size, "ns_per_row": t})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "results": report}, f, indent=1)


if __name__ == "__main__":
    main()
