"""How much memory a command may use (``memory_limit=``, ``--memory-limit``), and what a
Parquet file takes once decoded.

- ``memory_limit_of``: a limit given as ``2GB``, ``512MiB`` or bytes, or, for None, the
  default: ``DEFAULT_FRACTION`` of the memory available now (``available_memory``: the
  cgroup's room, v2 ``memory.max - memory.current`` or v1 ``memory.limit_in_bytes -
  memory.usage_in_bytes``, where it is smaller than the kernel's ``MemAvailable``).
- ``arrow_bytes``: a Parquet file's size in Arrow, from its footer, so a command chooses
  between its in-memory and its out-of-core path before reading any data.
- ``use_command_pool``: the Arrow memory pool the ``zorder`` command runs on (jemalloc,
  keeping freed pages briefly for reuse).

The limit bounds the data a command holds (the rows, their curve values, the sorted
copy), not the interpreter and its libraries, which take about 100 MB beside it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, Tuple, Union

from zorder.parquet.sizes import parse_size

__all__ = ["DEFAULT_FRACTION", "JEMALLOC_DECAY_MS", "arrow_bytes", "available_memory",
           "default_memory_limit", "format_bytes", "memory_limit_of", "use_command_pool"]

#: Share of the available memory a command uses by default.
DEFAULT_FRACTION = 0.5

#: How long (ms) the command's jemalloc keeps pages freed for the next allocations to
#: reuse (Arrow's own setting is 1,000: a higher peak; 0: every page faulted afresh).
JEMALLOC_DECAY_MS = 100

#: What the user sets to choose Arrow's pool (Arrow reads it), and jemalloc's options.
_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
_JEMALLOC_ENV = "JE_ARROW_MALLOC_CONF"

# Where the kernel says it (module constants, so tests can point them elsewhere).
_CGROUP = "/sys/fs/cgroup"
_PROC_CGROUP = "/proc/self/cgroup"
_MEMINFO = "/proc/meminfo"


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None   # ("max": no limit)


def _cgroup_paths() -> Tuple[Optional[str], Optional[str]]:
    """(this process's cgroup v2 path, its v1 memory controller's path), from
    /proc/self/cgroup, or None for each that is not there."""
    v2 = v1 = None
    try:
        with open(_PROC_CGROUP, encoding="utf-8") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":
                    v2 = path
                elif "memory" in controllers.split(","):
                    v1 = path
    except (OSError, ValueError):
        pass
    return v2, v1


def _cgroup_room() -> Optional[Tuple[int, str]]:
    """(bytes the cgroup still allows, where that was read), or None without a limit."""
    v2, v1 = _cgroup_paths()
    candidates = []
    if v2 is not None:
        for folder in (os.path.join(_CGROUP, v2.lstrip("/")), _CGROUP):
            candidates.append((os.path.join(folder, "memory.max"),
                               os.path.join(folder, "memory.current")))
    if v1 is not None:
        for folder in (os.path.join(_CGROUP, "memory", v1.lstrip("/")),
                       os.path.join(_CGROUP, "memory")):
            candidates.append((os.path.join(folder, "memory.limit_in_bytes"),
                               os.path.join(folder, "memory.usage_in_bytes")))
    for limit_path, used_path in candidates:
        limit = _read_int(limit_path)
        # (v1 says "no limit" with a number near 2**63)
        if limit is not None and limit < 1 << 60:
            return max(0, limit - (_read_int(used_path) or 0)), limit_path
    return None


def _mem_available() -> Optional[int]:
    try:
        with open(_MEMINFO, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def available_memory() -> Tuple[Optional[int], str]:
    """(bytes of memory available to this process now, where that was read): the
    smaller of the kernel's ``MemAvailable`` and the room left in the cgroup's limit;
    (None, why) where neither can be read."""
    found = []
    kernel = _mem_available()
    if kernel is not None:
        found.append((kernel, "MemAvailable"))
    room = _cgroup_room()
    if room is not None:
        found.append(room)
    if not found:
        return None, "unknown (no /proc/meminfo nor cgroup limit)"
    return min(found)


def default_memory_limit() -> int:
    """The limit a command uses when given none: ``DEFAULT_FRACTION`` of the available
    memory (4 GiB where that cannot be read)."""
    available = available_memory()[0]
    if available is None:
        return 4 << 30
    return max(1, int(available * DEFAULT_FRACTION))


def memory_limit_of(memory_limit: Union[int, str, None]) -> int:
    """Bytes of ``memory_limit`` (``2GB``, ``512MiB``, an int), or the default for None;
    a bad value is an error naming ``memory_limit``."""
    if memory_limit is None:
        return default_memory_limit()
    return parse_size(memory_limit, "memory_limit")


def use_command_pool() -> Optional[str]:
    """Make Arrow's jemalloc pool the default in this process and in the processes it
    starts, as the ``zorder`` command does; returns the name of the pool now in use, or
    None where pyarrow is not installed.

    A command allocates and frees its data's size several times over. Arrow's default
    (mimalloc) soon hands freed memory back, and each fresh page is faulted and zeroed
    again; jemalloc keeps freed pages for ``JEMALLOC_DECAY_MS`` (benchmarks/NOTES.md,
    "Arrow's memory pool"). Nothing changes where the user chose a pool
    (``ARROW_DEFAULT_MEMORY_POOL``) or pyarrow was built without jemalloc (on Windows,
    say); jemalloc options the user set (``JE_ARROW_MALLOC_CONF``) are kept.

    jemalloc reads its options as pyarrow is imported, so call this before that: after,
    the decay holds for the threads that allocate later, not for the first arena.
    """
    imported = "pyarrow" in sys.modules
    ours = _POOL_ENV not in os.environ and _JEMALLOC_ENV not in os.environ
    if ours:
        os.environ[_JEMALLOC_ENV] = (f"dirty_decay_ms:{JEMALLOC_DECAY_MS},"
                                     f"muzzy_decay_ms:{JEMALLOC_DECAY_MS}")
    try:
        import pyarrow as pa
    except ImportError:   # (zorder without its Arrow extra)
        if ours:
            del os.environ[_JEMALLOC_ENV]
        return None
    if _POOL_ENV in os.environ:
        return pa.default_memory_pool().backend_name
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:   # (a build without jemalloc)
        if ours:
            del os.environ[_JEMALLOC_ENV]
        return pa.default_memory_pool().backend_name
    if imported and ours:
        pa.jemalloc_set_decay_ms(JEMALLOC_DECAY_MS)   # (the arenas made from now on)
    pa.set_memory_pool(pool)
    os.environ[_POOL_ENV] = "jemalloc"
    return pool.backend_name


def format_bytes(n: float) -> str:
    """``1.5 GB``, ``200 kB``: a byte count as the messages say it (SI, as parse_size
    reads it back)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


# Bytes per value in Arrow of the fixed-width physical types (BOOLEAN: a bit, rounded up).
_FIXED = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 8, "FLOAT": 4, "DOUBLE": 8}


def arrow_bytes(metadata: Any, row_groups: Optional[range] = None) -> int:
    """About how many bytes the row groups (default all) of a Parquet file's
    ``metadata`` take once read into Arrow.

    Fixed-width columns are their width times the rows; a string or binary column is its
    uncompressed pages plus 4 bytes of offset a value, which is its Arrow size when the
    pages are plain, and less when they hold a dictionary, so a dictionary-encoded one
    counts each row at the length of the longer of its min/max statistics, where known
    (a FIXED_LEN_BYTE_ARRAY at its length)."""
    groups = range(metadata.num_row_groups) if row_groups is None else row_groups
    total = 0
    for g in groups:
        group = metadata.row_group(g)
        rows = group.num_rows
        for c in range(group.num_columns):
            chunk = group.column(c)
            kind = chunk.physical_type
            if kind in _FIXED:
                total += rows * _FIXED[kind]
                continue
            if kind == "FIXED_LEN_BYTE_ARRAY":
                length = metadata.schema.column(c).length
                total += rows * max(1, length or 16)
                continue
            size = chunk.total_uncompressed_size + 4 * rows
            if any("DICTIONARY" in str(e) for e in chunk.encodings):
                stats = chunk.statistics if chunk.is_stats_set else None
                longest = 0
                if stats is not None and stats.has_min_max:
                    longest = max(len(_as_bytes(stats.min)), len(_as_bytes(stats.max)))
                # (a dictionary's values may repeat: each row costs about its length)
                size = max(size, rows * (4 + longest))
            total += size
    return total


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogatepass")
