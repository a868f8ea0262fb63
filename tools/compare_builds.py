#!/usr/bin/env python3
"""Two builds of zorder side by side on the shape matrix, in one run.

    python tools/compare_builds.py BEFORE_TREE AFTER_TREE [--rounds 3] [--rows 1000000]

Each tree is a source folder built in place (``python setup.py build_ext --inplace``). The
rounds alternate the two trees' ``benchmarks/shapes_matrix.py`` (before, after, before, ...),
each in a process of its own, so that the machine's drift falls on both alike. Every cell
keeps its fastest round. The table gives each backend's and auto's time after / before, and
the command exits 1 if any cell is slower than --limit (default 1.05) in the best rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_tree(tree: Path, rows: int, repeat: int) -> Dict[str, Any]:
    """One matrix of ``tree``'s build, by its own script: {shape: {kernel: ns a row}}."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, str(tree / "benchmarks" / "shapes_matrix.py"),
                        "--rows", str(rows), "--repeat", str(repeat), "--json", out.name],
                       cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        matrix = json.load(open(out.name, encoding="utf-8"))
    return {r["shape"]: dict(r["ns"]) for r in matrix["shapes"]}


def fastest(runs: List[Dict[str, Dict[str, float]]]) -> Dict[str, Dict[str, float]]:
    best: Dict[str, Dict[str, float]] = {}
    for run in runs:
        for shape, cells in run.items():
            into = best.setdefault(shape, {})
            for name, ns in cells.items():
                into[name] = min(into.get(name, float("inf")), ns)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=1.05)
    args = ap.parse_args()
    runs: Dict[str, List[Dict[str, Dict[str, float]]]] = {"before": [], "after": []}
    for i in range(args.rounds):
        for label, tree in (("before", args.before), ("after", args.after)):
            print(f"round {i + 1}/{args.rounds}: {label} ({tree})", file=sys.stderr)
            runs[label].append(run_tree(tree.resolve(), args.rows, args.repeat))
    before, after = fastest(runs["before"]), fastest(runs["after"])
    names = [n for n in next(iter(after.values())) if n != "memcpy"]
    print(f"CPU: {cpu_model()}; {args.rows:,} rows; fastest of {args.rounds} alternating "
          f"rounds; after / before, ns a row")
    print("| shape | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    worst = 0.0
    for shape, cells in after.items():
        if shape not in before:
            continue
        ratios = [cells[n] / before[shape][n] for n in names]
        worst = max(worst, *ratios)
        print(f"| {shape} | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")
    print(f"worst after/before: {worst:.3f} (limit {args.limit})")
    return 0 if worst <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
