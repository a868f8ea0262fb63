"""Rows, seconds and peak memory of `zorder sort` at scale, in memory and out of core (issue 38).

The table is the README's "Memory" table: two int64 (a uniform id and a Zipf count), a
float64, a 20-letter string and a timestamp over a year, rows in random order, written
deterministically (seed 0) as snappy Parquet with row groups of 1,000,000 rows, once,
under --data. Each command runs as a child process (`python -m zorder sort ... --columns
a,b,c,s,ts --no-report`), timed, with the peak RSS of its whole process tree sampled
every 20 ms (and the kernel's ru_maxrss of the largest child beside it). Its output is
then checked, untimed, streaming: the row count, an order-independent checksum of all
rows (zorder.parquet.checksum) against the input's, and the global curve order (each
batch's curve values non-decreasing, and across batches).

    python benchmarks/scale.py --rows 20000000                       # in memory
    python benchmarks/scale.py --rows 80000000 --memory-limit 2GB    # out of core
    python benchmarks/scale.py --rows 80000000 --command cluster --scheduler local:2 \
        --memory-limit 4GB                                           # zorder cluster

For ``cluster`` the output is a folder, checked file by file in name order (the files'
order is the global order).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

COLUMNS = ["a", "b", "c", "s", "ts"]
CHUNK = 1_000_000


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """The table, CHUNK rows a row group, written to ``path`` (via a temporary name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    start = np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64)
    year_us = 365 * 86400 * 10**6
    tmp = path.with_suffix(".partial")
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.float64()),
                        ("s", pa.string()), ("ts", pa.timestamp("us"))])
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for at in range(0, rows, CHUNK):
            n = min(CHUNK, rows - at)
            letters = rng.integers(97, 123, (n, 20), dtype=np.uint8)
            offsets = np.arange(0, 20 * n + 1, 20, dtype=np.int32)
            s = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(letters))
            writer.write_table(pa.table({
                "a": rng.integers(0, 2**40, n),
                "b": np.minimum(rng.zipf(1.3, n), 10**6).astype(np.int64),
                "c": rng.normal(0, 100, n),
                "s": s,
                "ts": pa.array(start + rng.integers(0, year_us, n), pa.timestamp("us")),
            }, schema=schema), row_group_size=CHUNK)
    os.replace(tmp, path)


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run(argv: list) -> dict:
    """Run ``argv``; its seconds, peak tree RSS (sampled) and ru_maxrss."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    child = subprocess.Popen(argv)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(child.pid))
            time.sleep(0.02)
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    code = child.wait()
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return {"seconds": seconds, "peak_rss": peak[0],
            "ru_maxrss": maxrss if maxrss > before * 1024 else None}


def check(input: Path, output: Path) -> dict:
    """Rows, checksum equal to the input's, and the global Z-order of ``output`` (a file,
    or a folder whose Parquet files, in name order, hold the rows in order)."""
    import pyarrow.parquet as pq

    from zorder.parquet.checksum import row_checksum
    from zorder.values.ordering import Ordering

    def batches(path: Path):
        for file in sorted(path.glob("*.parquet")) if path.is_dir() else [path]:
            yield from pq.ParquetFile(file, pre_buffer=False).iter_batches(batch_size=CHUNK)

    def scan(path: Path, order: bool) -> tuple:
        rows, total, last, ordered = 0, 0, None, True
        for batch in batches(path):
            rows += batch.num_rows
            total = (total + row_checksum(batch)) % 2**64
            if order:
                z = Ordering().matrix(batch, COLUMNS)
                keys = np.ascontiguousarray(z).view(f"S{z.shape[1]}").ravel()
                ordered &= bool(np.all(keys[1:] >= keys[:-1]))
                if last is not None:
                    ordered &= bool(keys[0] >= last)
                last = keys[-1]
        return rows, total, ordered
    rows_in, sum_in, _ = scan(input, False)
    rows_out, sum_out, ordered = scan(output, True)
    return {"rows": rows_out, "rows_match": rows_in == rows_out,
            "checksum_match": sum_in == sum_out, "ordered": ordered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--data", default="/work/scale-data",
                        help="folder of the generated inputs and the outputs")
    parser.add_argument("--command", choices=("sort", "cluster"), default="sort")
    parser.add_argument("--memory-limit", default=None, help="passed to the command")
    parser.add_argument("--temp-dir", default=None, help="passed to the command")
    parser.add_argument("--scheduler", default=None, help="passed to zorder cluster")
    parser.add_argument("--no-check", action="store_true", help="skip the output check")
    args = parser.parse_args()
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    source = data / f"table-{args.rows}.parquet"
    if not source.exists():
        t = time.perf_counter()
        generate(source, args.rows)
        print(f"generated {source} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    if args.command == "sort":
        output = data / f"sorted-{args.rows}.parquet"
        argv = [sys.executable, "-m", "zorder", "sort", str(source), str(output),
                "--columns", ",".join(COLUMNS), "--no-report", "--overwrite",
                "--progress", "never"]
    else:
        output = data / f"clustered-{args.rows}"
        argv = [sys.executable, "-m", "zorder", "cluster", str(source), str(output),
                "--columns", ",".join(COLUMNS), "--no-report", "--overwrite", "--quiet"]
        if args.scheduler:
            argv += ["--scheduler", args.scheduler]
    if args.memory_limit:
        argv += ["--memory-limit", args.memory_limit]
    if args.temp_dir:
        argv += ["--temp-dir", args.temp_dir]
    result = run(argv)
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                   "unknown")
    print(f"cpu: {cpu}; load average {os.getloadavg()[0]:.2f} before the check")
    print(f"{args.command} {args.scheduler or ''}  rows {args.rows:,}  memory_limit {args.memory_limit or '(default)'}  "
          f"seconds {result['seconds']:.1f}  peak RSS (tree) {result['peak_rss'] / 2**30:.2f} GiB"
          + (f"  ru_maxrss {result['ru_maxrss'] / 2**30:.2f} GiB" if result["ru_maxrss"] else ""))
    if not args.no_check:
        print("check:", check(source, output))
    if output.is_dir():
        shutil.rmtree(output)
    else:
        output.unlink()


if __name__ == "__main__":
    main()
