"""The timings of ``zorder bench``: every backend against bitloop and against a memory copy.

For each shape (columns x 8 random bytes -> output bytes) it times
- the per-row path: ``interleave_bits(columns, size, out=buf)`` on one row of ``bytes``
  columns with a reused ``bytearray``, next to ``b"".join(columns)`` (one Python call
  that copies the same bytes: the floor for a call that builds a row);
- the batch path: ``interleave_rows(block, size, out)`` on one (N, n, 8) uint8 block and a
  reused output array, next to a numpy copy of the same input bytes (the floor for
  ordinary stores; kernels with streaming stores, which skip reading the destination,
  can go below it);
- the batch path again with 1, 2, 4, ... up to --threads threads, in wall time
  (``interleave_rows(..., threads=T)``).
Each number is the best of --repeat runs, in CPU time of the timing thread where the OS
measures it precisely (so time slices given to other processes do not count; the thread
scaling uses wall time); backends are timed in turn within each run, so a burst of load
from elsewhere hits them all alike. bitloop is a few hundred times slower than the
others, so it gets fewer rows and calls (stated in the output).

"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import time
import timeit
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

import numpy as np

import zorder

#: (columns, output bytes) of Iceberg's JMH benchmark and issue #17758's table, plus 8 columns.
DEFAULT_SHAPES: Tuple[Tuple[int, int], ...] = (
    (2, 16), (2, 8), (3, 24), (3, 8), (4, 32), (4, 8), (8, 64),
)
COLUMN_BYTES = 8
DEFAULT_ROWS = 1_000_000
DEFAULT_CALLS = 20_000
#: bitloop costs 0.4-6 us a row: at most this many rows and calls keep the run short.
BITLOOP_ROWS = 20_000
BITLOOP_CALLS = 1_000
BASELINE = "memcpy"
REFERENCE = "bitloop"




class Steps(Protocol):
    """Where the harness reports its steps: ``zorder.cli.progress.Progress``, or nothing."""

    def step(self, what: str) -> None: ...

    def close(self) -> None: ...


class _Silent:
    def step(self, what: str) -> None:
        pass

    def close(self) -> None:
        pass


def silent(total: int) -> Steps:
    """A progress that draws nothing (the default of ``run_bench`` and ``run_matrix``)."""
    return _Silent()


def shape_bytes(cols: int, size: int, rows: int) -> int:
    """Memory one shape needs: its input block, the copy baseline's copy, and the output."""
    return rows * (2 * cols * COLUMN_BYTES + size)


def memory_limit() -> int:
    """The most one shape may use: half of this machine's memory (8 GiB if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def check_shapes_fit(shapes: Sequence[Tuple[int, int]], rows: int,
                     limit: Optional[int] = None) -> None:
    """ValueError naming --shapes when a shape would need more than ``limit`` bytes."""
    limit = memory_limit() if limit is None else limit
    for cols, size in shapes:
        need = shape_bytes(cols, size, rows)
        if need > limit:
            raise ValueError(
                f"--shapes {cols}x{size} needs {need / 2**30:,.1f} GiB at --rows {rows:,}, "
                f"more than the {limit / 2**30:,.1f} GiB allowed (half this machine's "
                "memory); use fewer columns or --rows"
            )


def thread_counts(max_threads: int) -> List[int]:
    """1, 2, 4, ... up to max_threads, and max_threads itself."""
    counts, t = [], 1
    while t < max_threads:
        counts.append(t)
        t *= 2
    counts.append(max_threads)
    return counts


def cpu_description() -> Dict[str, Any]:
    """What the report says about the machine (zorder's own CPUID reading) and its load."""
    info = zorder.cpu_info()
    return {
        "brand": info.get("brand_raw") or platform.processor() or platform.machine(),
        "vendor": info.get("vendor_id_raw"),
        "family": info.get("family"),
        "model": info.get("model"),
        "arch": info.get("arch") or platform.machine(),
        "logical_cpus": os.cpu_count(),
        # Timings are only as quiet as the machine: above the CPU count, expect noise.
        "load_average": _load_average(),
    }


def _load_average() -> Optional[float]:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):   # not on Windows
        return None


def _cpu_clock() -> Callable[[], float]:
    """The timing thread's CPU time where it is precise (Linux, macOS), else wall time.

    On a shared machine the scheduler hands time slices to other processes in the middle
    of a measurement; CPU time leaves those out, so the best of a few runs is stable even
    under load. Thread scaling needs wall time and uses perf_counter.
    """
    try:
        if time.get_clock_info("thread_time").resolution <= 1e-6:
            return time.thread_time
    except (AttributeError, ValueError, OSError):
        pass
    return time.perf_counter


CLOCK = _cpu_clock()


def _best_ns(samples: Dict[str, List[float]], name: str, count: int) -> float:
    return min(samples[name]) / count * 1e9


def make_block(columns: int, rows: int, seed: int = 42) -> np.ndarray:
    """(rows, columns, 8) random uint8 bytes, C-contiguous: row-major input."""
    rng = np.random.default_rng(seed + columns)
    return rng.integers(0, 256, (rows, columns, COLUMN_BYTES), dtype=np.uint8)


def time_batch(backends: Sequence[str], block: np.ndarray, size: int, repeat: int,
               threads: int = 1, reference_rows: int = BITLOOP_ROWS,
               baseline: bool = True, wall: bool = False) -> Dict[str, float]:
    """Batch ns/row per backend (and the memcpy baseline) for one shape.

    CPU time of this thread unless ``wall`` (always wall time with threads > 1)."""
    rows = block.shape[0]
    out = np.empty((rows, size), dtype=np.uint8)
    flat = block.reshape(rows, -1)
    copy = np.empty_like(flat)
    counts: Dict[str, int] = {}
    calls: Dict[str, Callable[[], Any]] = {}
    for name in backends:
        fn = zorder.get_backend(name).interleave_rows
        n = min(rows, reference_rows) if name == REFERENCE else rows
        b, o = block[:n], out[:n]
        calls[name] = functools.partial(fn, b, size, o, threads=threads)
        counts[name] = n
    if baseline:
        calls[BASELINE] = lambda: np.copyto(copy, flat)
        counts[BASELINE] = rows
    for f in calls.values():   # warm up: page in the output, load the tables
        f()
    # CPU time counts only the calling thread: with threads, wall time is the measure.
    clock = CLOCK if threads == 1 and not wall else time.perf_counter
    samples: Dict[str, List[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, f in calls.items():
            t0 = clock()
            f()
            samples[name].append(clock() - t0)
    return {name: _best_ns(samples, name, counts[name]) for name in calls}


def time_per_row(backends: Sequence[str], block: np.ndarray, size: int, repeat: int,
                 calls: int = DEFAULT_CALLS,
                 reference_calls: int = BITLOOP_CALLS) -> Dict[str, float]:
    """ns per interleave_bits call (one row, reused out) per backend, and per b"".join."""
    cols = [block[0, c].tobytes() for c in range(block.shape[1])]
    buf = bytearray(size)
    timers: Dict[str, Tuple[timeit.Timer, int]] = {}
    for name in backends:
        fn = zorder.get_backend(name).interleave_bits
        n = min(calls, reference_calls) if name == REFERENCE else calls
        timers[name] = (timeit.Timer("f(cols, size, buf)", timer=CLOCK,
                                     globals={"f": fn, "cols": cols, "size": size, "buf": buf}), n)
    timers[BASELINE] = (timeit.Timer("join(cols)", timer=CLOCK,
                                     globals={"join": b"".join, "cols": cols}), calls)
    for timer, n in timers.values():
        timer.timeit(max(1, n // 10))
    samples: Dict[str, List[float]] = {name: [] for name in timers}
    for _ in range(repeat):
        for name, (timer, n) in timers.items():
            samples[name].append(timer.timeit(n))
    return {name: _best_ns(samples, name, timers[name][1]) for name in timers}


def _speedups(ns: Dict[str, float]) -> Dict[str, Optional[float]]:
    """bitloop time / backend time, for every backend but bitloop (not the baseline)."""
    if REFERENCE not in ns:
        return {}
    return {name: ns[REFERENCE] / v if v > 0 else None
            for name, v in ns.items() if name not in (REFERENCE, BASELINE)}


def _x_baseline(ns: Dict[str, float]) -> Dict[str, Optional[float]]:
    """Backend time / baseline time (1.0 = as fast as the copy), for every backend."""
    base = ns.get(BASELINE)
    if not base:
        return {}
    return {name: v / base for name, v in ns.items() if name != BASELINE}


def run_bench(shapes: Sequence[Tuple[int, int]] = DEFAULT_SHAPES, rows: int = DEFAULT_ROWS,
              repeat: int = 7, max_threads: int = 1, calls: int = DEFAULT_CALLS,
              backends: Optional[Sequence[str]] = None,
              progress: Callable[[int], Steps] = silent) -> Dict[str, Any]:
    """Times every backend on every shape; returns the report as a JSON-ready dict.
    ``progress(steps)`` gives what each step is reported to.

    Raises ValueError before timing anything when a shape would not fit in memory."""
    check_shapes_fit(shapes, rows)
    backends = list(backends or zorder.available_backends())
    threads = thread_counts(max_threads) if max_threads > 1 else [1]
    fast = [b for b in backends if b != REFERENCE]
    steps = len(shapes) * (2 + (len(threads) if len(threads) > 1 and fast else 0))
    bar = progress(steps)
    results = []
    for cols, size in shapes:
        label = f"{cols}x{COLUMN_BYTES}B->{size}B"
        block = make_block(cols, rows)
        bar.step(f"{label} per-row")
        per_row = time_per_row(backends, block, size, repeat, calls=calls)
        bar.step(f"{label} batch")
        batch = time_batch(backends, block, size, repeat)
        scaling: Dict[str, Dict[str, float]] = {}
        for t in (threads if len(threads) > 1 and fast else []):
            bar.step(f"{label} batch, {t} thread{'s' if t > 1 else ''}, wall time")
            timed = time_batch(fast, block, size, repeat, threads=t, baseline=False, wall=True)
            for name, ns in timed.items():
                scaling.setdefault(name, {})[str(t)] = ns
        del block
        results.append({
            "shape": label,
            "columns": cols,
            "column_bytes": COLUMN_BYTES,
            "output_bytes": size,
            "per_row": {
                "ns": per_row,
                "speedup_vs_bitloop": _speedups(per_row),
                "x_memcpy": _x_baseline(per_row),
            },
            "batch": {
                "ns": batch,
                "speedup_vs_bitloop": _speedups(batch),
                "x_memcpy": _x_baseline(batch),
            },
            "threads": scaling,
        })
    bar.close()
    return {
        "zorder_version": zorder.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_description(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "backends": backends,
        "auto": zorder.backend,
        "auto_reason": zorder.backend_reason,
        "rows": rows,
        "bitloop_rows": min(rows, BITLOOP_ROWS),
        "calls": calls,
        "bitloop_calls": min(calls, BITLOOP_CALLS),
        "repeat": repeat,
        "clock": "thread CPU time" if CLOCK is not time.perf_counter else "wall time",
        "threads": threads,
        "baseline": {
            "per_row": 'b"".join(columns): one Python call copying the same bytes',
            "batch": "numpy.copyto of the same input bytes into a reused array",
        },
        "results": results,
    }
