"""The rank encoding at kernel speed (issue 39, section 2): its two ratios in one run.

On the table of ``balanced.py`` (a TIMESTAMP_NTZ ``ts`` over one year and a Zipf-skewed
bigint ``user_id``), ``--rows`` rows, or with ``--table geo`` on ``end_to_end.py``'s doubles
``lat``/``lon`` clustered around 40 centres (the search's two-level table):

- ``zorder_values(..., encoding="rank", boundaries=b)`` against the Iceberg-bytes
  ``zorder_values`` (target: at most 4x), with the rank's stages: ordered bytes, the
  search (``rank_columns``, and each column's alone, naming its table), the interleave;
- ``sort(..., encoding="rank")``, boundaries learned inside the call, against the default
  ``sort`` (target: at most 1.3x), with the learning alone (sampling 262,144 rows and
  sorting them: ``rank_boundaries``).

Best of ``--repeat`` rounds, each running every step of its group (values, sorts) once,
so that a busy spell of the machine weighs on all of them alike; wall and thread CPU time
(the machine may be shared: the load average is printed). By default glibc's malloc is
told to keep freed memory (``mallopt``), so every run writes into pages touched before,
as the Iceberg-bytes ``zorder_values`` did when it measured 2.1 ms: a fresh 16 MB output
costs more in first-touch page faults than the kernels (``--fresh-memory`` leaves malloc
as it is).

    python benchmarks/rank_speed.py                  # 1,000,000 rows
    python benchmarks/rank_speed.py --rows 4000000 --repeat 9
    python benchmarks/rank_speed.py --fresh-memory
    python benchmarks/rank_speed.py --table geo
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import balanced  # noqa: E402  (puts the checkout first)
import end_to_end  # noqa: E402

import zorder  # noqa: E402
from zorder import interleave  # noqa: E402
from zorder.values.rank import RankBoundaries, rank_columns  # noqa: E402


def cpu_family_model() -> str:
    found = {}
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("cpu family", "model") and key not in found:
                    found[key] = value.strip()
    except OSError:
        pass
    return f"family {found.get('cpu family', '?')}, model {found.get('model', '?')}"


def keep_freed_memory() -> bool:
    """Whether glibc's malloc now keeps freed memory for reuse (no mmap per large array,
    no trimming), so runs after the first touch no new pages."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    if mallopt is None:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 1 << 30) and mallopt(M_TRIM_THRESHOLD, 1 << 30))


def best_of(steps: Dict[str, Callable[[], Any]], repeat: int) -> Dict[str, Tuple[float, float]]:
    """(best wall seconds, best thread CPU seconds) of each step over ``repeat`` rounds,
    each round running every step once, so that a busy spell of a shared machine weighs
    on all steps alike rather than on whichever ran during it."""
    times = {name: (float("inf"), float("inf")) for name in steps}
    for _ in range(repeat):
        for name, fn in steps.items():
            w0, c0 = time.perf_counter(), time.thread_time()
            fn()
            cpu = time.thread_time() - c0
            wall = time.perf_counter() - w0
            times[name] = (min(times[name][0], wall), min(times[name][1], cpu))
    return times


#: The tables measured: (generator, columns).
TABLES = {"events": (balanced.generate, balanced.CLUSTER_COLUMNS),
          "geo": (end_to_end.generate, ["lat", "lon"])}


def run(rows: int, repeat: int, which: str = "events") -> Dict[str, Tuple[float, float]]:
    generate, columns = TABLES[which]
    table = generate(rows).select(columns)
    b = zorder.rank_boundaries(table)
    parts = [zorder.ordered_bytes(table.column(c)) for c in columns]
    ranks = rank_columns(parts, b)
    rows_of = interleave.rows_function(None)
    size = 2 * b.rank_bits // 8
    alone: Dict[str, Callable[[], Any]] = {}
    for i, name in enumerate(columns):
        one = RankBoundaries(b.rank_bits, [b.splits[i]], None, [b.codes[i]])
        kind = type(one._keys[0][1]).__name__.strip("_")
        alone[f"    {name} ({kind})"] = lambda part=parts[i], one=one: rank_columns([part], one)
    # Two groups, each interleaved: the sorts' hundreds of MB would push the values'
    # input out of the cache between the runs of the values steps.
    return {**best_of({
        "iceberg values": lambda: zorder.zorder_values(table),
        "rank values": lambda: zorder.zorder_values(table, encoding="rank", boundaries=b),
        "  ordered bytes": lambda: [zorder.ordered_bytes(table.column(c)) for c in columns],
        "  rank search": lambda: rank_columns(parts, b),
        **alone,
        "  interleave": lambda: rows_of(ranks, size),
    }, repeat), **best_of({
        "default sort": lambda: zorder.sort(table),
        "rank sort": lambda: zorder.sort(table, encoding="rank"),
        "  learning": lambda: zorder.rank_boundaries(table),
        "  rank sort, boundaries given": lambda: zorder.sort(table, encoding="rank", boundaries=b),
    }, repeat)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per step (best)")
    parser.add_argument("--table", choices=sorted(TABLES), default="events",
                        help="events: balanced.py's (ts, user_id); geo: end_to_end.py's "
                             "clustered doubles (lat, lon)")
    parser.add_argument("--fresh-memory", action="store_true",
                        help="leave malloc as it is: large outputs are fresh pages each run")
    args = parser.parse_args(argv)
    if args.rows < 1000:
        parser.error("--rows must be at least 1000")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    kept = False if args.fresh_memory else keep_freed_memory()
    times = run(args.rows, args.repeat, args.table)
    print(f"{args.rows:,} rows of ({', '.join(TABLES[args.table][1])}); CPU {balanced.cpu_model()} "
          f"({cpu_family_model()}), backend {zorder.backend.split(' ')[0]}, load average "
          f"{os.getloadavg()[0]:.1f}; best of {args.repeat}; freed memory "
          f"{'kept' if kept else 'returned (fresh pages)'}")
    for name, (wall, cpu) in times.items():
        print(f"  {name:<32} {wall * 1e3:8.1f} ms wall {cpu * 1e3:8.1f} ms CPU")
    for label, num, den, goal in (("rank values / iceberg values", "rank values", "iceberg values", 4.0),
                                  ("rank sort / default sort", "rank sort", "default sort", 1.3)):
        wall = times[num][0] / times[den][0]
        cpu = times[num][1] / times[den][1]
        target = f"target at most {goal}x" + ("" if args.table == "events" else " on the events table")
        print(f"{label}: {wall:.2f}x wall, {cpu:.2f}x CPU ({target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
