"""The shape matrix of ``zorder bench``: every backend, and the per-call ``auto``, on every
column shape (uniform, ragged, narrow, many columns, truncated), and Iceberg's Hilbert
index beside the interleave, each against a numpy copy of the same input bytes.

Batch calls only (``interleave_rows(columns, size, out=out)`` on one (N, width) array per
column); thread CPU time, rounds alternating the copy and the kernels, best of ``repeat``
rounds (the method of benchmarks/NOTES.md).
"""

from __future__ import annotations

import argparse
import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

import zorder
from zorder.bench.timing import Steps, silent

#: (column widths, interleaved size): the rows of issue 13's table, then truncated
#: variants that end inside each segment or block. Every class of csrc/shape.h is among
#: them at any row count (ragged-truncated-first-wide through 8+8+16->12; 16+32->24 is
#: in that class only once its rows leave the cache).
MATRIX_SHAPES: Tuple[Tuple[str, int], ...] = (
    ("8+8+8+8", 32), ("8+16", 24), ("8+32", 40), ("16+16", 32), ("4+4", 8), ("4+4+4", 12),
    ("2+2", 4), ("12x8", 96), ("16x8", 64), ("8+8", 8), ("3+5+8", 16), ("8x1", 8),
    ("64x8", 512), ("8+16", 12), ("8+16", 20), ("8+32", 30), ("12x8", 50), ("4+4+4", 10),
    ("4x8", 8), ("8x8", 40), ("2x8", 12), ("6x8", 40), ("10x8", 10), ("16+32", 24),
    ("8+8+16", 12),
)
#: Columns of 8 bytes for the Hilbert rows (issue 14).
HILBERT_COLUMNS = (2, 3, 4, 8)
MATRIX_ROWS = 200_000


def parse_widths(text: str) -> List[int]:
    """``"8+16"`` -> [8, 16]; ``"12x8"`` -> twelve 8s."""
    widths: List[int] = []
    for part in text.split("+"):
        count, _, width = part.rpartition("x")
        try:
            widths += [int(width)] * (int(count) if count else 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad widths {text!r}: write e.g. 8+16 or 12x8") from None
    if not widths or min(widths) < 1 or len(widths) > 64:
        raise argparse.ArgumentTypeError(f"bad widths {text!r}: 1-64 columns of 1 byte or more")
    return widths


def _best(fn: Callable[[], Any], clock: Callable[[], float], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def _columns(widths: Sequence[int], rows: int, seed: int) -> Tuple[np.ndarray, List[np.ndarray]]:
    block = np.random.default_rng(seed).integers(0, 256, (rows, sum(widths)), dtype=np.uint8)
    columns, at = [], 0
    for w in widths:
        columns.append(np.ascontiguousarray(block[:, at:at + w]))
        at += w
    return block, columns


def time_shape(widths: Sequence[int], size: int, rows: int, kernels: Dict[str, Any],
               clock: Callable[[], float], repeat: int) -> Dict[str, float]:
    """ns per row of each kernel (an interleave_rows) and of the copy, for one shape."""
    block, columns = _columns(widths, rows, seed=len(widths) * 100 + size)
    copy = np.empty_like(block)
    out = np.empty((rows, size), dtype=np.uint8)
    calls: Dict[str, Callable[[], Any]] = {"memcpy": functools.partial(np.copyto, copy, block)}
    for name, fn in kernels.items():
        calls[name] = functools.partial(fn, columns, size, out=out)
    best = {name: float("inf") for name in calls}
    for f in calls.values():
        f()
    for _ in range(repeat):
        for name, f in calls.items():
            best[name] = min(best[name], _best(f, clock, 1))
    return {name: t / rows * 1e9 for name, t in best.items()}


def run_matrix(rows: int, repeat: int, clock: Callable[[], float],
               progress: Callable[[int], Steps] = silent,
               shapes: Sequence[Tuple[str, int]] = MATRIX_SHAPES) -> Dict[str, Any]:
    """The matrix and the Hilbert rows, as a JSON-ready dict; ``progress(steps)`` gives
    what each step is reported to."""
    names = [n for n in zorder.available_backends() if n != "bitloop"]
    kernels = {n: zorder.get_backend(n).interleave_rows for n in names}
    kernels["auto"] = zorder.interleave.auto.interleave_rows if zorder.dispatch() else \
        zorder.interleave_rows
    bar = progress(len(shapes) + len(HILBERT_COLUMNS))
    results = []
    for text, size in shapes:
        widths = parse_widths(text)
        bar.step(f"matrix {text}->{size}")
        ns = time_shape(widths, size, rows, kernels, clock, repeat)
        best = min(v for k, v in ns.items() if k not in ("memcpy", "auto"))
        results.append({
            "shape": f"{text}->{size}", "widths": widths, "size": size,
            "class": zorder.interleave.auto.shape_class_of(widths, size, rows=rows),
            "ns": ns, "x_memcpy": {k: v / ns["memcpy"] for k, v in ns.items()},
            "auto_vs_best": ns["auto"] / best,
        })
    hilbert = []
    for n in HILBERT_COLUMNS:
        bar.step(f"hilbert {n} columns")
        widths = [8] * n
        ns = time_shape(widths, 8 * n, rows, {"interleave_rows": zorder.interleave_rows,
                                              "hilbert_rows": _hilbert_rows}, clock, repeat)
        hilbert.append({"columns": n, "ns": ns,
                        "x_memcpy": {k: v / ns["memcpy"] for k, v in ns.items()}})
    bar.close()
    return {"rows": rows, "backends": names + ["auto"], "shapes": results, "hilbert": hilbert}


def _hilbert_rows(columns: Any, size: int, out: Any) -> Any:
    return zorder.hilbert_rows(columns, 64, out=out)
