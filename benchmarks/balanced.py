"""Balanced clustering (issue 16): Iceberg's bytes against the rank encoding, on a table
where one clustering column's leading bytes hardly vary.

The table (``generate``): a TIMESTAMP_NTZ ``ts`` uniform over one year, a Zipf-skewed
bigint ``user_id`` (2,000,000 ids, the popular ones at random ids), and ``lat``/``lon``
doubles clustered around 30 cities; rows in random order. It is written as Parquet files
of about ``--file-size`` in that order ("before"), then sorted by (ts, user_id) with each
encoding and curve and written again: by default as files of about ``--file-size`` cut
where the curve enters a new cell (``zorder.engines.cuts.aligned_cuts`` on the
sorted curve values, as ``cluster`` and the Iceberg rewrite cut them), or with
``--cuts equal`` as ``ceil(size / file size)`` files of equal row counts (plain
range-partitioned cuts). For each layout it reports the share of files (and
row groups) that min/max statistics let a reader skip for 25 range predicates per column,
each selecting ~1% of the values (``zorder.parquet.skipping.skipping_report``, the same
predicates for every layout), the time of the sort (Z-values plus the permutation:
``zorder.sort_indices``; the rank encoding includes computing its boundaries from the
data), and the output bit at which each column first varies.

    python benchmarks/balanced.py                   # 4,000,000 rows, 32 MB files
    python benchmarks/balanced.py --cuts equal      # equal row-count files, as before
    python benchmarks/balanced.py --rows 1000000 --json out.json --markdown
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

# Measure the checkout this script sits in (its in-place build), not an installed zorder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import zorder  # noqa: E402
from zorder.engines.cuts import aligned_cuts  # noqa: E402
from zorder.parquet.sizes import parse_size  # noqa: E402
from zorder.parquet.skipping import skipping_report  # noqa: E402
from zorder.values import rank as rank_encoding  # noqa: E402
from zorder.values.ordering import Ordering  # noqa: E402
from zorder.values.codec import as_matrix, sort_keys  # noqa: E402

CLUSTER_COLUMNS = ["ts", "user_id"]
USERS = 2_000_000


def generate(rows: int, seed: int = 0):
    """The issue's table as a pyarrow Table, rows in random order."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    start = np.datetime64("2025-01-01T00:00:00", "us")
    year_us = 365 * 86400 * 10**6
    ts = start + rng.integers(0, year_us, rows).astype("m8[us]")
    # Zipf ranks (1 = most active), clipped to the user count, mapped to random ids.
    popularity = np.minimum(rng.zipf(1.2, rows), USERS) - 1
    user_id = rng.permutation(USERS).astype(np.int64)[popularity]
    cities = rng.uniform([-50.0, -170.0], [60.0, 170.0], (30, 2))
    which = rng.integers(0, len(cities), rows)
    lat = cities[which, 0] + rng.normal(0, 0.3, rows)
    lon = cities[which, 1] + rng.normal(0, 0.3, rows)
    return pa.table({"ts": ts, "user_id": user_id, "lat": lat, "lon": lon})


def write_files(table, folder: Path, file_size: int, row_group_rows: int,
                values: Optional[np.ndarray] = None) -> int:
    """``table`` in its order as Parquet files of about ``file_size`` (``size``, the table
    written as one Parquet file, spread evenly over its rows). With ``values`` (the rows'
    ``(n, size)`` uint8 curve values, sorted) the cuts land where the curve enters a new
    cell (``aligned_cuts``, as ``cluster`` and the Iceberg rewrite cut); without, as
    ``ceil(size / file_size)`` files of equal row counts."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=row_group_rows)
    n = table.num_rows
    if values is None:
        files = max(1, -(-buf.tell() // file_size))
        per_file = -(-n // files)
        cuts = list(range(0, n, per_file)) + [n]
    else:
        cuts = aligned_cuts(n, buf.tell() / n, file_size, lambda rows: values[rows])
    folder.mkdir(parents=True)
    for count, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        pq.write_table(table.slice(a, b - a), folder / f"part-{count:05d}.parquet",
                       row_group_size=row_group_rows)
    return len(cuts) - 1


def first_varying_bits(z: np.ndarray, widths: List[int]) -> List[int]:
    """The output bit position of each column's first varying bit (equal widths)."""
    n = len(widths)
    out = []
    for c, col in enumerate(zorder.deinterleave_rows(z, widths)):
        bits = np.unpackbits(col, axis=1)
        varying = np.flatnonzero((bits != bits[:1]).any(axis=0))
        out.append(int(varying[0]) * n + c if varying.size else -1)
    return out


def layouts(table) -> Dict[str, Tuple[Callable[[], np.ndarray], Callable[[], np.ndarray]]]:
    """name -> (a function computing the permutation of that layout from the table, one
    computing the rows' curve values, for the file cuts)."""
    cols = [table.column(c) for c in CLUSTER_COLUMNS]

    def iceberg_hilbert_values():
        parts = [zorder.ordered_bytes(c.combine_chunks()) for c in cols]
        return zorder.hilbert_rows(parts, 64)

    def rank_hilbert_values():
        parts = [zorder.ordered_bytes(c.combine_chunks()) for c in cols]
        rows = rank_encoding.sample_indices(len(parts[0]))   # the defaults of sort_indices
        b = zorder.RankBoundaries.from_ordered(
            parts if rows is None else [np.take(p, rows, axis=0) for p in parts])
        return Ordering(curve="hilbert", encoding="rank", boundaries=b).values(parts)

    return {
        "iceberg/zorder": (lambda: zorder.sort_indices(table, columns=CLUSTER_COLUMNS),
                           lambda: _matrix(table, "iceberg")),
        "rank/zorder": (lambda: zorder.sort_indices(table, columns=CLUSTER_COLUMNS,
                                                    encoding="rank"),
                        lambda: _matrix(table, "rank")),
        "iceberg/hilbert": (lambda: zorder.argsort_zvalues(iceberg_hilbert_values()),
                            iceberg_hilbert_values),
        "rank/hilbert": (lambda: zorder.argsort_zvalues(rank_hilbert_values()),
                         rank_hilbert_values),
    }


def best_time(fn: Callable[[], Any], repeat: int):
    """(best wall seconds, best thread CPU seconds, last result) over ``repeat`` runs."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.thread_time()
        result = fn()
        cpu = min(cpu, time.thread_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return wall, cpu, result


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(rows: int, file_size: int, row_group_rows: int, repeat: int, seed: int,
        cuts: str = "cells") -> Dict[str, Any]:
    t0 = time.perf_counter()
    table = generate(rows, seed)
    print(f"generated {rows:,} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    result: Dict[str, Any] = {
        "rows": rows, "file_size": file_size, "row_group_rows": row_group_rows, "cuts": cuts,
        "cpu": cpu_model(), "backend": zorder.backend, "load_average": os.getloadavg(),
        "python": platform.python_version(), "numpy": np.__version__, "layouts": {},
    }
    # Diagnostics: where each column first varies in the output, per encoding.
    head = table.slice(0, min(rows, 1_000_000))
    result["first_varying_bit"] = {
        "iceberg": first_varying_bits(_matrix(head, "iceberg"), [8, 8]),
        "rank": first_varying_bits(_matrix(head, "rank"), [2, 2]),
    }
    values = {c: table.column(c) for c in CLUSTER_COLUMNS}
    with tempfile.TemporaryDirectory(prefix="zorder-balanced-") as tmp:
        root = Path(tmp)
        result["files_before"] = write_files(table, root / "before", file_size, row_group_rows)
        for name, (fn, curve_values) in layouts(table).items():
            wall, cpu, perm = best_time(fn, repeat)
            folder = root / name.replace("/", "-")
            ordered = None
            if cuts == "cells":
                ordered = np.ascontiguousarray(np.asarray(curve_values())[perm])
                keys = sort_keys(ordered)
                if not np.all(keys[1:] >= keys[:-1]):  # the cuts must see the sort's values
                    raise RuntimeError(f"{name}: curve values disagree with the permutation")
            files = write_files(table.take(perm), folder, file_size, row_group_rows, ordered)
            report = skipping_report(root / "before", folder, CLUSTER_COLUMNS, values=values)
            result["layouts"][name] = {
                "sort_seconds": wall, "sort_cpu_seconds": cpu, "files": files,
                "columns": {c: report["columns"][c]["after"] for c in CLUSTER_COLUMNS},
            }
            if "before" not in result:
                result["before"] = {c: report["columns"][c]["before"] for c in CLUSTER_COLUMNS}
            print(f"{name}: sort {wall:.2f} s (CPU {cpu:.2f} s), {files} files", file=sys.stderr)
    return result


def _matrix(table, encoding: str) -> np.ndarray:
    z = zorder.zorder_values(table, columns=CLUSTER_COLUMNS, encoding=encoding)
    return np.asarray(as_matrix(z))


def markdown(result: Dict[str, Any]) -> str:
    """The comparison table (encoding x curve x column), generated."""
    base = result["layouts"]["iceberg/zorder"]["sort_cpu_seconds"]
    lines = [
        "| encoding | curve | column | files skipped | row groups skipped | sort, CPU s (x iceberg/zorder) |",
        "|---|---|---|---|---|---|",
    ]
    for name, lay in result["layouts"].items():
        encoding, curve = name.split("/")
        for i, column in enumerate(CLUSTER_COLUMNS):
            side = lay["columns"][column]
            cost = (f"{lay['sort_cpu_seconds']:.2f} (x{lay['sort_cpu_seconds'] / base:.2f})"
                    if i == 0 else "")
            lines.append(
                f"| {encoding} | {curve} | {column} | {side['files_skipped']:.0%} "
                f"({side['files_skipped_mean']:.1f} of {side['files']}) | "
                f"{side['row_groups_skipped']:.0%} (of {side['row_groups']}) | {cost} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--file-size", default="32MB", help="target Parquet file size")
    parser.add_argument("--row-group-rows", type=int, default=131_072)
    parser.add_argument("--repeat", type=int, default=3, help="timed sorts per layout (best)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cuts", choices=["cells", "equal"], default="cells",
                        help="file cuts: where the curve enters a new cell (default), or "
                             "equal row counts")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    if args.rows < 1000:
        parser.error("--rows must be at least 1000")
    result = run(args.rows, parse_size(args.file_size, "--file-size"), args.row_group_rows,
                 args.repeat, args.seed, args.cuts)
    print(f"{result['rows']:,} rows, {result['files_before']} files before, file cuts "
          f"{'on curve cells' if args.cuts == 'cells' else 'of equal row counts'}; CPU {result['cpu']}, "
          f"backend {result['backend']}, load average {result['load_average'][0]:.1f}")
    print(f"first varying output bit (ts, user_id): iceberg {result['first_varying_bit']['iceberg']}, "
          f"rank {result['first_varying_bit']['rank']}")
    print(markdown(result) if args.markdown else json.dumps(result["layouts"], indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
