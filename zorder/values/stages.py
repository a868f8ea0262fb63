"""Where a rewrite's time goes: one home for timing its stages (``--profile``).

A command's work is read, ordered bytes, ranks (the rank encoding only), curve, sort,
reorder, write, checksum (the Iceberg rewrite's check of its rows) and commit, and the
skipping report after it. Each floor that does one
of them wraps it in ``stage(name)``; nothing is recorded, and ``stage`` costs one global
lookup, unless a caller is inside ``profiling()``:

>>> with profiling() as profile:
...     with stage(SORT):
...         pass
>>> profile.totals()[SORT].calls
1

Stages run on several threads at once (a reader thread, Arrow's and Dask's pools), so
their wall times may add up to more than the command's; the CPU time is the recording
thread's own (``time.thread_time``) and that of the helper threads zorder's own kernels
start inside a call (``add_helper_cpu``: the large sort's), not that of the threads Arrow
starts inside a call.
Work in other processes (Dask's ``processes`` or a distributed cluster) is not seen.
A stage inside another on the same thread (the report's own sorts, say) counts in the
outer one only, so that no second goes to two stages.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

__all__ = ["CHECKSUM", "COMMIT", "CURVE", "ORDERED_BYTES", "RANKS", "READ", "REORDER", "REPORT", "SORT",
           "STAGES", "WRITE", "Profile", "StageTotal", "add_helper_cpu", "profiling", "stage"]

READ = "read"
ORDERED_BYTES = "ordered bytes"
RANKS = "ranks"
CURVE = "curve"
SORT = "sort"
REORDER = "reorder"
WRITE = "write"
CHECKSUM = "checksum"
COMMIT = "commit"
REPORT = "report"
#: Every stage, in the order a rewrite goes through them (the breakdown's order).
STAGES = (READ, ORDERED_BYTES, RANKS, CURVE, SORT, REORDER, WRITE, CHECKSUM, COMMIT, REPORT)


@dataclass
class StageTotal:
    """One stage's seconds of wall and of its threads' CPU, over ``calls`` calls."""

    wall: float = 0.0
    cpu: float = 0.0
    calls: int = 0


class Profile:
    """The stage totals of one profiled run, added to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: Dict[str, StageTotal] = {}
        self._threads: set = set()
        self._wall0 = time.perf_counter()
        self._cpu0 = time.process_time()
        self.wall: Optional[float] = None
        self.cpu: Optional[float] = None

    def add(self, name: str, wall: float, cpu: float) -> None:
        """Record one call of stage ``name``."""
        with self._lock:
            total = self._totals.setdefault(name, StageTotal())
            total.wall += wall
            total.cpu += cpu
            total.calls += 1
            self._threads.add(threading.get_ident())

    def stop(self) -> None:
        """End the run: its wall and process CPU seconds (every thread's) are fixed."""
        if self.wall is None:
            self.wall = time.perf_counter() - self._wall0
            self.cpu = time.process_time() - self._cpu0

    def totals(self) -> Dict[str, StageTotal]:
        """Each recorded stage's totals, in ``STAGES`` order (others after)."""
        with self._lock:
            found = dict(self._totals)
        order = [s for s in STAGES if s in found] + sorted(s for s in found if s not in STAGES)
        return {s: found[s] for s in order}

    @property
    def threads(self) -> int:
        """How many threads recorded a stage."""
        with self._lock:
            return len(self._threads)

    def format(self, title: str = "profile") -> str:
        """The breakdown as lines of text (for stderr)."""
        self.stop()
        wall, cpu = float(self.wall or 0.0), float(self.cpu or 0.0)
        totals = self.totals()
        lines = [f"{title}: {wall:.3f} s wall, {cpu:.3f} s CPU (every thread of this "
                 f"process), stages recorded on {self.threads} thread(s)"]
        if self.threads > 1:
            lines.append("  (stages ran on several threads at once: their wall times may "
                         "add up to more than the total)")
        lines.append(f"  {'stage':<14}{'wall s':>9}{'share':>8}{'CPU s':>9}{'calls':>7}")
        for name, t in totals.items():
            share = t.wall / wall if wall > 0 else 0.0
            lines.append(f"  {name:<14}{t.wall:>9.3f}{share:>8.0%}{t.cpu:>9.3f}{t.calls:>7}")
        rest = wall - sum(t.wall for t in totals.values())
        if rest > 0:
            share = rest / wall if wall > 0 else 0.0
            lines.append(f"  {'(elsewhere)':<14}{rest:>9.3f}{share:>8.0%}")
        return "\n".join(lines)

    def as_dict(self) -> Dict[str, Dict[str, float]]:
        """``{stage: {"wall", "cpu", "calls"}}`` (for benchmarks' JSON)."""
        return {name: {"wall": t.wall, "cpu": t.cpu, "calls": t.calls}
                for name, t in self.totals().items()}


#: The run being profiled, or None (the usual case: ``stage`` then records nothing).
_active: Optional[Profile] = None
_nesting: List[Profile] = []
#: Per thread, the stage running on it (an inner one records nothing).
_running = threading.local()


class _Timed:
    __slots__ = ("profile", "name", "wall", "cpu", "helpers", "outer")

    def __init__(self, profile: Profile, name: str) -> None:
        self.profile, self.name = profile, name
        self.wall = self.cpu = self.helpers = 0.0
        self.outer = False

    def __enter__(self) -> None:
        self.outer = getattr(_running, "timed", None) is None
        if self.outer:
            _running.timed = self
            self.wall = time.perf_counter()
            self.cpu = time.thread_time()

    def __exit__(self, *exc: object) -> None:
        if self.outer:
            _running.timed = None
            self.profile.add(self.name, time.perf_counter() - self.wall,
                             time.thread_time() - self.cpu + self.helpers)


def add_helper_cpu(seconds: float) -> None:
    """Count ``seconds`` of CPU, spent by helper threads on this thread's behalf, in the
    stage running on this thread (nothing while no run is profiled)."""
    timed = getattr(_running, "timed", None)
    if timed is not None:
        timed.helpers += seconds


_UNTIMED = contextlib.nullcontext()


def stage(name: str) -> "contextlib.AbstractContextManager[None]":
    """A context that records its time as stage ``name`` while a run is profiled (and
    does nothing otherwise)."""
    profile = _active
    if profile is None:
        return _UNTIMED
    return _Timed(profile, name)


@contextlib.contextmanager
def profiling() -> Iterator[Profile]:
    """Record every ``stage`` (on any thread of this process) into a new ``Profile``
    until the block ends; its ``wall`` and ``cpu`` are then the block's."""
    global _active
    profile = Profile()
    _nesting.append(profile)
    _active = profile
    try:
        yield profile
    finally:
        profile.stop()
        _nesting.pop()
        _active = _nesting[-1] if _nesting else None
