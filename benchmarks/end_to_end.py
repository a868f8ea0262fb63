"""Each command end to end against its I/O floor, with the stage breakdown (issue 39, 3).

Creates issue 39's table deterministically under ``--workdir`` (``--rows`` rows, default
4M, in 8 input files, zstd): ``ts`` (a timestamp over 2025), ``user_id`` (Zipf),
``lat``/``lon`` (clustered around 40 centres), ``city`` (200 values, skewed),
``amount`` (a double) and ``note`` (20 to 40 letters). ``zorder sort`` reads one file,
so the same rows are also written as one file (same row groups); ``cluster`` and the
Iceberg rewrite read the 8 files (the rewrite from a table on a local SQLite catalog
that registers them, made afresh for each run and not timed).

Then, in this one process, one after the other:

- the I/O floors: pyarrow reading all the input (one file; the 8 files) and writing it
  unsorted with the same writer settings (zstd, the input's row groups), each on
  pyarrow's default memory pool and on the one the ``zorder`` command chooses
  (``use_command_pool``, which the commands' runs use too); the faster is the floor;
- ``zorder sort`` (``sort_parquet``, no report), ``zorder cluster`` (Dask's threads
  scheduler, no report) and ``zorder iceberg rewrite`` (``rewrite``), each with both
  curves and both encodings, on two column pairs: (ts, user_id) and (lat, lon);
- duckdb's ``COPY (SELECT * ... ORDER BY a, b) TO ... (COMPRESSION zstd)`` on the same
  pairs, from the one file (duckdb's own threads: every core).

Each run is timed in a fresh process of its own (spawned, its imports done before the
clock starts), so that its peak RSS (VmHWM) is its own: seconds, times its floor (the
one file's for sort and duckdb, the 8 files' for cluster and the rewrite, as first
timed), peak RSS (and the RSS it started from: the interpreter and its libraries), its
CPU seconds and the stage breakdown (``zorder.values.stages``). The floors are timed
again at the end, to show how the shared machine drifted. With ``--paired``, each run's
floor is also timed just before it, every repeat, and the median ratio of those pairs is
given too: the measure that holds on a machine whose speed drifts during the run.

    PYTHONPATH=. python benchmarks/end_to_end.py --rows 2000000
    PYTHONPATH=. python benchmarks/end_to_end.py --only sort,floor,duckdb --pairs ts
    PYTHONPATH=. python benchmarks/end_to_end.py --paired --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import sys
import time
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = {"ts": ["ts", "user_id"], "geo": ["lat", "lon"]}
COMMANDS = ("floor", "sort", "cluster", "iceberg", "duckdb")
FILES = 8
COMPRESSION = "zstd"
#: Rows per row group of the input files (pyarrow's default, 1Mi rows, would leave the
#: 8 files of a 4M-row table one group each).
GROUP_ROWS = 256 * 1024


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        facts = {}
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model") and key not in facts:
                facts[key] = value.strip()
    return (f"{facts.get('model name', 'unknown CPU')} (family {facts.get('cpu family', '?')}, "
            f"model {facts.get('model', '?')}), {os.cpu_count()} CPUs")


def reset_peak() -> None:
    """Start VmHWM afresh (Linux 4.0+: writing 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def generate(rows: int, seed: int = 39):
    """Issue 39's table: the same rows for the same ``rows`` and ``seed``."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    start = np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64)
    year = 365 * 86_400 * 10**6
    ts = pa.array(start + rng.integers(0, year, rows), pa.int64()).cast(pa.timestamp("us"))
    user_id = rng.zipf(1.3, rows).astype(np.int64) % 10_000_000
    centres = rng.uniform([-60.0, -180.0], [70.0, 180.0], size=(40, 2))
    which = rng.integers(0, len(centres), rows)
    lat = centres[which, 0] + rng.normal(0, 0.5, rows)
    lon = centres[which, 1] + rng.normal(0, 0.5, rows)
    weights = 1.0 / np.arange(1, 201)
    city_ids = rng.choice(200, size=rows, p=weights / weights.sum())
    cities = pa.array([f"city-{k:03d}" for k in range(200)])
    city = cities.take(pa.array(city_ids))
    amount = rng.lognormal(3.0, 1.0, rows)
    lengths = rng.integers(20, 41, rows)
    offsets = np.zeros(rows + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    letters = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    note = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(letters))
    return pa.table({"ts": ts, "user_id": user_id, "lat": lat, "lon": lon, "city": city,
                     "amount": amount, "note": note})


def prepare(workdir: str, rows: int) -> Dict[str, Any]:
    """The input (made once per row count): 8 files, and the same rows as one file."""
    import pyarrow.parquet as pq

    folder = os.path.join(workdir, f"input-{rows}")
    files = [os.path.join(folder, f"part-{i}.parquet") for i in range(FILES)]
    single = os.path.join(workdir, f"single-{rows}.parquet")
    if not (all(map(os.path.exists, files)) and os.path.exists(single)):
        os.makedirs(folder, exist_ok=True)
        table = generate(rows)
        step = -(-rows // FILES)
        for i, path in enumerate(files):
            pq.write_table(table.slice(i * step, step), path, compression=COMPRESSION,
                           row_group_size=GROUP_ROWS)
        pq.write_table(table, single, compression=COMPRESSION, row_group_size=GROUP_ROWS)
        del table
    return {"folder": folder, "files": files, "single": single,
            "bytes": sum(map(os.path.getsize, files))}


def floor(paths: List[str], out: str) -> None:
    """pyarrow reading ``paths`` whole and writing the rows unsorted, same settings."""
    import pyarrow.parquet as pq

    table = pq.read_table(paths if len(paths) > 1 else paths[0])
    pq.write_table(table, out, compression=COMPRESSION, row_group_size=GROUP_ROWS)


def iceberg_table(workdir: str, files: List[str], name: str) -> Any:
    """A fresh table of the 8 input files (registered, not copied)."""
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog

    # A catalog and warehouse of the bench's own, made afresh: the last run's metadata
    # and rewritten files go (the input files, registered from elsewhere, stay).
    location = os.path.join(workdir, "wh", "e2e", name)
    shutil.rmtree(location, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(workdir, "catalog.db"))
    catalog = SqlCatalog("e2e", uri=f"sqlite:///{workdir}/catalog.db",
                         warehouse=f"file://{workdir}/wh")
    catalog.create_namespace("e2e")
    identifier = f"e2e.{name}"
    table = catalog.create_table(identifier, pq.read_schema(files[0]),
                                 location=f"file://{location}")
    table.add_files(files)
    return table


def _work(spec: Dict[str, Any], data: Dict[str, Any], workdir: str) -> Callable[[], Any]:
    """The call one run times (what it needs first, such as a fresh Iceberg table, is
    made here, untimed)."""
    out = os.path.join(workdir, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    kind, columns = spec["kind"], spec.get("columns")
    curve, encoding = spec.get("curve"), spec.get("encoding")
    if kind == "floor":
        paths = [data["single"]] if spec["shape"] == "one" else data["files"]
        return lambda: floor(paths, os.path.join(out, "floor.parquet"))
    if kind == "sort":
        from zorder.parquet.sort import sort_parquet

        return lambda: sort_parquet(data["single"], os.path.join(out, "sorted.parquet"),
                                    columns, curve=curve, encoding=encoding, report=False)
    if kind == "cluster":
        from zorder.engines.dask import cluster

        return lambda: cluster(data["folder"], os.path.join(out, "clustered"), columns,
                               curve=curve, encoding=encoding, scheduler="threads")
    if kind == "iceberg":
        from zorder.engines.iceberg import rewrite

        table = iceberg_table(workdir, data["files"], "events")
        return lambda: rewrite(table, columns, curve=curve, encoding=encoding,
                               rewrite_all=True)
    if kind == "duckdb":
        import duckdb

        target = os.path.join(out, "duckdb.parquet")
        order = ", ".join(columns)

        def order_by() -> None:
            connection = duckdb.connect()
            connection.execute(
                f"COPY (SELECT * FROM read_parquet('{data['single']}') ORDER BY {order}) "
                f"TO '{target}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {GROUP_ROWS})")
            connection.close()
        return order_by
    raise ValueError(kind)


def measure(spec: Dict[str, Any], data: Dict[str, Any], workdir: str) -> Dict[str, Any]:
    """One run, in a fresh process (its peak RSS its own): seconds, RSS before and at the
    peak, CPU seconds and the stage breakdown."""
    if spec["kind"] in ("sort", "cluster", "iceberg") or spec.get("pool") == "command":
        # as the `zorder` program runs them, before pyarrow is imported (the floor timed
        # on both pools)
        from zorder.parquet.memory import use_command_pool

        use_command_pool()
    import dask  # noqa: F401  (imports before the clock starts, in every run alike)
    import dask.dataframe  # noqa: F401  (cluster's: 0.4-0.5 s with pandas)
    import pyarrow.parquet  # noqa: F401

    import zorder  # noqa: F401
    try:
        from zorder.values.stages import profiling
    except ImportError:   # (a zorder before the breakdown: PYTHONPATH=/an/older/checkout)
        profiling = None

    # Arrow's first calls (its thread pools, the zstd codec) cost the same in every run:
    # paid here, before the clock, on one row group.
    first = pyarrow.parquet.ParquetFile(data["single"]).read_row_group(0)
    pyarrow.parquet.write_table(first, pyarrow.BufferOutputStream(), compression=COMPRESSION)
    del first
    run = _work(spec, data, workdir)
    # The last run's output (200+ MB) still being written back to disk would slow this
    # one: the floor just after a rewrite read up to 25% slower than the fastest.
    os.sync()
    gc.collect()
    reset_peak()
    before = peak_rss()
    load = os.getloadavg()[0]
    cpu = time.process_time()
    with profiling() if profiling is not None else contextlib.nullcontext() as profile:
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rss_before": before, "peak_rss": peak_rss(), "load": load,
            "cpu": time.process_time() - cpu,
            "stages": profile.as_dict() if profile is not None else {}}


def _spawned(spec: Dict[str, Any], data: Dict[str, Any], workdir: str) -> Dict[str, Any]:
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(measure, (spec, data, workdir))


def timed(label: str, spec: Dict[str, Any], data: Dict[str, Any], workdir: str,
          floor_seconds: Optional[float], results: List[Dict[str, Any]],
          repeat: int = 1, floor_specs: Optional[List[Dict[str, Any]]] = None) -> float:
    """Time one run ``repeat`` times; with ``floor_specs``, each time just after its I/O
    floor (the faster of them), so that the ratio of the pair sees the machine as it was
    then (a shared machine drifts by tens of percent within minutes)."""
    runs, paired = [], []
    for _ in range(repeat):
        before = [_spawned(f, data, workdir)["seconds"] for f in floor_specs or ()]
        runs.append(_spawned(spec, data, workdir))
        if before:
            paired.append(runs[-1]["seconds"] / min(before))
    # the fastest of the repeats (a shared machine only ever slows a run down), with
    # the highest peak RSS of them
    entry = min(runs, key=lambda r: r["seconds"])
    entry["all_seconds"] = [r["seconds"] for r in runs]
    entry["peak_rss"] = max(r["peak_rss"] for r in runs)
    entry["x_paired"] = sorted(paired)[(len(paired) - 1) // 2] if paired else None
    entry["all_paired"] = paired
    seconds = entry["seconds"]
    ratio = seconds / floor_seconds if floor_seconds else 1.0
    entry.update(run=label, x_floor=ratio, **spec)
    results.append(entry)
    pair = f"  paired {entry['x_paired']:.2f}x" if paired else ""
    print(f"{label:<34} {seconds:7.2f} s {ratio:5.2f}x floor{pair}  peak RSS "
          f"{entry['peak_rss'] / 2**20:6.0f} MiB (from {entry['rss_before'] / 2**20:4.0f})  "
          f"CPU {entry['cpu']:6.2f} s  load {entry['load']:.2f}", flush=True)
    if entry["stages"]:
        shown = "  ".join(f"{name} {t['wall']:.2f}" for name, t in entry["stages"].items())
        print(f"{'':<36}stages (wall s): {shown}", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--workdir", default="/tmp/zorder-e2e")
    parser.add_argument("--only", default=",".join(COMMANDS[1:]),
                        help=f"commands to run, of {','.join(COMMANDS[1:])} (the floors "
                             "always run, before and after)")
    parser.add_argument("--pairs", default="ts,geo", help="column pairs: ts (ts, user_id), "
                        "geo (lat, lon)")
    parser.add_argument("--curves", default="zorder,hilbert")
    parser.add_argument("--encodings", default="iceberg,rank")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time each run this many times, each in a fresh process, and "
                             "keep the fastest (the machine is shared)")
    parser.add_argument("--paired", action="store_true",
                        help="time each run's floor just before it, every repeat, and give "
                             "the median ratio of those pairs too (twice the time)")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the results here")
    args = parser.parse_args()
    only = set(args.only.split(","))
    pairs = [PAIRS[p] for p in args.pairs.split(",")]
    curves = args.curves.split(",")
    encodings = args.encodings.split(",")

    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    t = time.perf_counter()
    data = prepare(workdir, args.rows)
    print(f"input: {args.rows:,} rows, {FILES} files, {data['bytes'] / 2**20:.0f} MiB "
          f"({time.perf_counter() - t:.1f} s to prepare)", flush=True)
    import duckdb
    import pyarrow

    import zorder

    print(f"cpu: {cpu_model()}; load average {os.getloadavg()}; zorder {zorder.__version__}, "
          f"pyarrow {pyarrow.__version__}, duckdb {duckdb.__version__}", flush=True)
    results: List[Dict[str, Any]] = []
    floors = {"one": [], "many": []}   # type: Dict[str, List[float]]

    pools = ("default", "command")

    def floors_now() -> None:
        for shape, label in (("one", "floor (one file"), ("many", f"floor ({FILES} files")):
            for pool in pools:
                floors[shape].append(timed(f"{label}, {pool} pool)",
                                           {"kind": "floor", "shape": shape, "pool": pool},
                                           data, workdir, None, results, args.repeat))

    def floor_of(shape: str) -> Optional[List[Dict[str, Any]]]:
        return ([{"kind": "floor", "shape": shape, "pool": pool} for pool in pools]
                if args.paired else None)

    floors_now()
    one, many = min(floors["one"]), min(floors["many"])
    for columns in pairs:
        pair = ",".join(columns)
        for curve in curves:
            for encoding in encodings:
                for kind in ("sort", "cluster", "iceberg"):
                    if kind in only:
                        spec = {"kind": kind, "columns": columns, "curve": curve,
                                "encoding": encoding}
                        shape = "one" if kind == "sort" else "many"
                        timed(f"{kind} {pair} {curve} {encoding}", spec, data, workdir,
                              one if kind == "sort" else many, results, args.repeat,
                              floor_of(shape))
        if "duckdb" in only:
            timed(f"duckdb ORDER BY {pair}", {"kind": "duckdb", "columns": columns}, data,
                  workdir, one, results, args.repeat, floor_of("one"))
    floors_now()
    one, many = min(floors["one"]), min(floors["many"])
    print(f"floors: one file {', '.join(f'{s:.2f}' for s in floors['one'])} s, {FILES} files "
          f"{', '.join(f'{s:.2f}' for s in floors['many'])} s; load average {os.getloadavg()}")
    print("\nagainst the faster timing of each floor:")
    print(f"| run | seconds | x floor | x paired floor | peak RSS MiB | CPU s | "
          "slowest stages (wall s) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if r["kind"] == "floor":
            continue
        base = one if r["kind"] in ("sort", "duckdb") else many
        r["x_floor"] = r["seconds"] / base
        top = sorted(r["stages"].items(), key=lambda kv: -kv[1]["wall"])[:3]
        slowest = ", ".join("%s %.2f" % (name, total["wall"]) for name, total in top)
        paired = "" if r.get("x_paired") is None else f"{r['x_paired']:.2f}"
        print(f"| {r['run']} | {r['seconds']:.2f} | {r['x_floor']:.2f} | {paired} | "
              f"{r['peak_rss'] / 2**20:.0f} | {r['cpu']:.2f} | {slowest} |")
    shutil.rmtree(os.path.join(workdir, "out"), ignore_errors=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"cpu": cpu_model(), "rows": args.rows, "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
