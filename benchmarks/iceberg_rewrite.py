"""Z-order rewrite of an Iceberg table: zorder.iceberg against iceberg-zamboni.

Builds the table of issue 15 (a timestamp, a skewed bigint, two clustered doubles, a city
string and an amount; ``--rows`` rows in 8 appended files) in a SqlCatalog on SQLite
under ``--workdir``, once per tool, and rewrites it on (lat, lon) to ``--target`` files.
Each rewrite runs in its own process, so its peak memory (ru_maxrss) is its own. Reports
time, peak memory, the output file sizes against the target, and the skipping report
(files and row groups min/max statistics let a reader skip for ~1% range predicates)
before and after, read from the table's data files.

    python benchmarks/iceberg_rewrite.py --rows 4000000 --target 32MB

``iceberg-zamboni`` is an optional dependency of this benchmark only
(``pip install iceberg-zamboni``); without it only zorder runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLUMNS = ["lat", "lon"]


def catalog_for(workdir):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("bench", uri=f"sqlite:///{workdir}/catalog.db", warehouse=f"file://{workdir}/wh")


def build(workdir, rows, seed=15):
    """The issue's table, in 8 appends (one file each)."""
    import numpy as np
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    catalog = catalog_for(workdir)
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "ts", TimestamptzType(), required=False),
                    NestedField(2, "user_id", LongType(), required=False),
                    NestedField(3, "lat", DoubleType(), required=False),
                    NestedField(4, "lon", DoubleType(), required=False),
                    NestedField(5, "city", StringType(), required=False),
                    NestedField(6, "amount", DoubleType(), required=False))
    table = catalog.create_table("db.events", schema,
                                 properties={"write.target-file-size-bytes": str(1 << 40)})
    rng = np.random.default_rng(seed)
    cities = np.array([f"city-{k:03d}" for k in range(200)])
    centres = rng.uniform([-60, -170], [70, 170], size=(200, 2))
    start = 1_767_225_600 * 10**6  # 2026-01-01 in microseconds
    per_file = rows // 8
    for k in range(8):
        n = per_file if k < 7 else rows - 7 * per_file
        city = rng.zipf(1.3, n) % 200
        where = centres[city] + rng.normal(scale=0.5, size=(n, 2))
        batch = pa.table({
            "ts": pa.array(start + rng.integers(0, 90 * 86_400 * 10**6, n), pa.timestamp("us", tz="UTC")),
            "user_id": pa.array(rng.zipf(1.5, n).astype(np.int64)),
            "lat": pa.array(where[:, 0]),
            "lon": pa.array(where[:, 1]),
            "city": pa.array(cities[city]),
            "amount": pa.array(np.round(rng.lognormal(3, 1, n), 2)),
        })
        table.append(batch)
    return table


def run_zorder(table, target):
    from zorder.iceberg import rewrite

    result = rewrite(table, COLUMNS, target_file_size=target)
    return result.snapshot_id


def run_zamboni(table, target):
    from zamboni import CatalogSession, CompactionConfig, TableCompactor

    session = CatalogSession.from_catalog(table.catalog)
    config = CompactionConfig(target_file_size_bytes=target, zorder_columns=tuple(COLUMNS),
                              rewrite_all=True, min_input_files=1,
                              skip_partitions_newer_than_windows=None)
    TableCompactor(session, "db.events", config=config).execute()


def child(tool, workdir, target):
    """Run one rewrite in this process and print its measurements as JSON."""
    sys.path.insert(0, ROOT)
    table = catalog_for(workdir).load_table("db.events")
    before = table.current_snapshot().snapshot_id
    t0 = time.perf_counter()
    (run_zorder if tool == "zorder" else run_zamboni)(table, target)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    table.refresh()
    snap = table.current_snapshot()
    print(json.dumps({"seconds": seconds, "peak_bytes": peak, "before": before,
                      "after": snap.snapshot_id, "operation": snap.summary.operation.value,
                      "snapshots": len(table.snapshots())}))


def describe(workdir, measured, target):
    """File sizes and the skipping report of the rewrite just measured."""
    sys.path.insert(0, ROOT)
    from zorder.iceberg import skipping
    from zorder.parquet.skipping import format_report

    table = catalog_for(workdir).load_table("db.events")
    before = [t.file.file_path for t in table.scan(snapshot_id=measured["before"]).plan_files()]
    after_files = [t.file for t in table.scan().plan_files()]
    sizes = sorted(f.file_size_in_bytes for f in after_files)
    within = sum(abs(s - target) <= 0.25 * target for s in sizes)
    print(f"  {measured['seconds']:.2f} s, peak RSS {measured['peak_bytes'] / 2**20:.0f} MiB, "
          f"{len(table.snapshots()) - 8} new snapshot(s), last operation {measured['operation']}")
    print(f"  {len(sizes)} files: {sizes[0] / 2**20:.1f} .. {sizes[-1] / 2**20:.1f} MiB "
          f"(median {sizes[len(sizes) // 2] / 2**20:.1f}); {within} within 25% of the target")
    report = skipping(table, before, [f.file_path for f in after_files], COLUMNS)
    print("  " + format_report(report).replace("\n", "\n  "))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--target", default="32MB", help="target file size (default 32MB)")
    parser.add_argument("--workdir", default="/tmp/zorder-iceberg-bench")
    parser.add_argument("--tools", default="zorder,zamboni")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    from zorder.parquet.sizes import parse_size

    target = parse_size(args.target, "target")
    if args.child:
        child(args.child, args.workdir, target)
        return 0
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if "zamboni" in tools:
        try:
            import zamboni  # noqa: F401
        except ImportError:
            print("iceberg-zamboni is not installed (pip install iceberg-zamboni): zorder only")
            tools.remove("zamboni")
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True).stdout.strip()
    print(f"{args.rows} rows, 8 files, rewritten on {','.join(COLUMNS)} to {args.target} files; {cpu}")
    for tool in tools:
        workdir = os.path.join(args.workdir, tool)
        build(workdir, args.rows)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tool,
                              "--workdir", workdir, "--target", args.target,
                              "--rows", str(args.rows)],
                             capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            print(f"{tool}: failed\n{out.stderr[-2000:]}")
            continue
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{tool}:")
        describe(workdir, measured, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
