"""How many cores this process may keep busy: the CPUs it may run on (its affinity),
capped by its cgroup's CPU quota (a container's ``docker --cpus``, a Kubernetes CPU
limit), which neither ``os.cpu_count()`` nor the affinity sees. A pool sized by the
host's count in a container of two CPUs' quota runs many threads on two CPUs' time.
"""

from __future__ import annotations

import math
import os
from typing import Callable, Iterator, List, Optional, Tuple

__all__ = ["usable_cores", "cgroup_cpu_quota"]


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity (else ``os.cpu_count()``),
    at most its cgroup's CPU quota rounded up; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # (macOS and Windows have no affinity call)
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup",
                     membership: str = "/proc/self/cgroup") -> Optional[float]:
    """The CPUs' worth of time the cgroups of this process allow (quota / period), the
    smallest along its cgroup's path from its own to the root; None where none limits
    it, or there is no cgroup file system (not Linux). cgroup v2's ``cpu.max`` and v1's
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` are read."""
    try:
        with open(membership, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    limits = [quota for folder, reader in _cgroup_folders(root, lines)
              for quota in [reader(folder)] if quota is not None]
    return min(limits) if limits else None


_QuotaReader = Callable[[str], Optional[float]]


def _cgroup_folders(root: str, lines: List[str]) -> Iterator[Tuple[str, _QuotaReader]]:
    """(folder, its quota reader) for every cgroup folder from this process's own up to
    the mount's root, for v2 and for v1's cpu controller."""
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        mounts: List[Tuple[str, _QuotaReader]]
        if controllers == "":
            mounts = [(root, _v2_quota)]
        elif "cpu" in controllers.split(","):
            mounts = [(os.path.join(root, name), _v1_quota)
                      for name in (controllers, "cpu", "cpu,cpuacct", "cpuacct,cpu")]
        else:
            continue
        for mount, reader in mounts:
            if not os.path.isdir(mount):
                continue
            relative = path.strip("/")
            while True:
                yield os.path.join(mount, relative), reader
                if not relative:
                    break
                relative = os.path.dirname(relative)
            break


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def _v2_quota(folder: str) -> Optional[float]:
    """cgroup v2: ``cpu.max`` is "QUOTA PERIOD" in microseconds, QUOTA "max" for none."""
    text = _read(os.path.join(folder, "cpu.max"))
    if not text:
        return None
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(folder: str) -> Optional[float]:
    """cgroup v1: ``cpu.cfs_quota_us`` (-1 for none) over ``cpu.cfs_period_us``."""
    quota = _read(os.path.join(folder, "cpu.cfs_quota_us"))
    period = _read(os.path.join(folder, "cpu.cfs_period_us"))
    if quota is None or period is None:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> Optional[float]:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None
