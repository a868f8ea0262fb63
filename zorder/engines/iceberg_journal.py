"""The journal of an Iceberg rewrite's written files, kept with the table's data, so that no
file is orphaned without a trace: a SIGKILL, a killed Dask worker or a lost client leaves
data files that no snapshot references, and the journal names them for a later run or
``zorder iceberg clean`` (``clean``).

Layout, under the table's location, written through the table's FileIO (so it works on
object stores, which cannot append)::

    <location>/zorder-journal/<run id>/run.json          the run's heartbeat and state
    <location>/zorder-journal/<run id>/<hash>.json       one entry per data file: its path
    <location>/zorder-journal/<run id>/spill-<id>/...    spill runs of a Dask cluster whose
                                                         workers share no folder (removed
                                                         by the run; else by ``clean``)

Each entry is written whole, once, *before* its data file is opened, so a run killed at any
point has journaled every file it started; an entry cut short by the kill belongs to a
file that was never begun. One object per file also lets Dask workers on other machines
journal without sharing a file. The heartbeat (``run.json``) is rewritten every
``HEARTBEAT_SECONDS`` while the run lives, and says ``ended`` once the run has deleted
what it could. One run spans the whole rewrite, every batch of partial progress: each
commit that lands clears its files' entries (``RunJournal.forget``), so a file is always
referenced by a committed snapshot, deleted, or still journaled. ``clean`` takes a run's files only when that run is over: ended, its
process gone (same host), or silent for ``older_than`` seconds (default one hour, sixty
missed heartbeats); and a run refuses to commit once it could not renew its heartbeat for
half that time, so a cleaner never takes files a commit is about to reference. It deletes
only journaled files that no snapshot of any branch or tag references, then the entries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

#: The journal's folder under the table's location.
JOURNAL_FOLDER = "zorder-journal"
#: The heartbeat file of a run, in its folder.
HEARTBEAT = "run.json"
#: Seconds between two heartbeats of a running rewrite.
HEARTBEAT_SECONDS = 60.0
#: A run silent this long (seconds) is over, as ``clean`` judges by default.
DEFAULT_OLDER_THAN = 3600.0
#: The start of the name of a spill folder in a run's folder.
SPILL_PREFIX = "spill-"


def journal_root(table_location: str) -> str:
    """The journal's folder of a table."""
    return table_location.rstrip("/") + "/" + JOURNAL_FOLDER


def _write_json(io: Any, location: str, value: Dict[str, Any]) -> None:
    with io.new_output(location).create(overwrite=True) as out:
        out.write(json.dumps(value, sort_keys=True).encode("utf-8"))


def _read_json(io: Any, location: str) -> Optional[Dict[str, Any]]:
    """The JSON object in ``location``; None if missing or unreadable (cut short)."""
    try:
        with io.new_input(location).open() as f:
            value = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _listing(io: Any, folder: str) -> List[Tuple[str, Optional[float]]]:
    """(location, modification time in seconds or None) of every file under ``folder``
    (recursively), spelled as ``folder`` is. PyIceberg's FileIO cannot list: this asks the
    file system behind PyArrowFileIO or FsspecFileIO (TypeError for another FileIO)."""
    from urllib.parse import urlparse

    prefix = folder.rstrip("/")
    if hasattr(io, "fs_by_scheme") and hasattr(io, "parse_location"):
        from pyarrow import fs as pafs

        scheme, netloc, path = io.parse_location(prefix, io.properties)
        filesystem = io.fs_by_scheme(scheme, netloc)
        base = path.rstrip("/")
        infos = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True,
                                                           recursive=True))
        return [(prefix + info.path[len(base):],
                 None if info.mtime is None else info.mtime.timestamp())
                for info in infos if info.type == pafs.FileType.File]
    if hasattr(io, "_get_fs_from_uri"):
        filesystem = io._get_fs_from_uri(urlparse(prefix), prefix)
        base = filesystem._strip_protocol(prefix).rstrip("/")
        if not filesystem.exists(base):
            return []
        found: List[Tuple[str, Optional[float]]] = []
        for path, info in filesystem.find(base, detail=True).items():
            if info.get("type", "file") != "file":
                continue
            mtime = info.get("mtime", info.get("LastModified", info.get("last_modified")))
            if hasattr(mtime, "timestamp"):
                mtime = mtime.timestamp()
            found.append((prefix + path[len(base):],
                          float(mtime) if isinstance(mtime, (int, float)) else None))
        return found
    raise TypeError(f"the table's FileIO ({type(io).__name__}) cannot list files, so its "
                    f"rewrite journal cannot be read; zorder reads it through PyArrowFileIO "
                    f"or FsspecFileIO (py-io-impl)")


def spill_folder(run_folder: str) -> str:
    """A new spill folder's location in a run's journal folder."""
    return f"{run_folder}/{SPILL_PREFIX}{uuid.uuid4().hex[:12]}"


def _is_spill(run_folder: str, location: str) -> bool:
    return location.startswith(f"{run_folder}/{SPILL_PREFIX}")


def remove_spill(io: Any, folder: str) -> None:
    """Delete every file under a spill folder (``spill_folder``). A file that cannot be
    deleted stays for ``clean``, which takes the run's spill folders with the run."""
    try:
        files = _listing(io, folder)
    except TypeError:   # (a FileIO that cannot list: clean cannot either; nothing known)
        return
    for location, _ in files:
        _delete(io, location)
    _remove_empty_folder(io, folder)


def entry_name(path: str) -> str:
    """The journal entry's file name of a data file path (one per path)."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()[:32] + ".json"


class JournalWriter:
    """Records data file paths in one run's journal folder, each before its file is
    written. Picklable: Dask tasks journal their files through the table's FileIO."""

    def __init__(self, io: Any, folder: str, run_id: str) -> None:
        self.io = io
        self.folder = folder
        self.run_id = run_id

    def record(self, path: str) -> None:
        """Journal ``path`` (before anything is written there)."""
        _write_json(self.io, f"{self.folder}/{entry_name(path)}",
                    {"run": self.run_id, "path": path, "time": time.time()})


class RunJournal:
    """The journal of one rewrite, from the client: its writer, its heartbeat thread and
    its end (``finish``)."""

    def __init__(self, io: Any, table_location: str) -> None:
        self.run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:12]
        self.folder = f"{journal_root(table_location)}/{self.run_id}"
        self.writer = JournalWriter(io, self.folder, self.run_id)
        self.io = io
        self.started = time.time()
        self.renewed = 0.0   # when the heartbeat was last written (this process's clock)
        self.committed: Set[str] = set()   # paths a landed commit of the run references
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _beat(self, state: str = "running") -> None:
        _write_json(self.io, f"{self.folder}/{HEARTBEAT}",
                    {"run": self.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                     "started": self.started, "renewed": time.time(), "state": state})
        self.renewed = time.time()

    def start(self) -> None:
        """Write the first heartbeat (failing the run if it cannot), then renew it."""
        self._beat()

        def renew() -> None:
            while not self._stop.wait(HEARTBEAT_SECONDS):
                try:
                    self._beat()
                except Exception:  # noqa: BLE001 - retried; check_lease() judges
                    pass

        self._thread = threading.Thread(target=renew, name="zorder-journal-heartbeat",
                                        daemon=True)
        self._thread.start()

    def check_lease(self) -> None:
        """Refuse to go on to the commit once the heartbeat could not be renewed for half
        of ``DEFAULT_OLDER_THAN``: a cleaner may have judged the run over by then."""
        silent = time.time() - self.renewed
        if silent > DEFAULT_OLDER_THAN / 2:
            from zorder.engines.iceberg_commit import IcebergRewriteError

            raise IcebergRewriteError(
                f"the rewrite's journal heartbeat ({self.folder}/{HEARTBEAT}) was not "
                f"renewed for {silent:.0f} s, so a `zorder iceberg clean` may have taken its "
                f"files; nothing was committed")

    def _stop_beating(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def forget(self, paths: Sequence[str]) -> None:
        """Delete the entries of ``paths``, files that a commit of the run which landed
        references (each batch of partial progress, as it lands). They stay known as
        committed, so no cleanup of this run deletes them, even where an entry could not
        be deleted (``clean`` then finds the file referenced and deletes only the entry)."""
        self.committed.update(paths)
        for path in paths:
            _delete(self.io, f"{self.folder}/{entry_name(path)}")

    def finish(self, outcome_unknown: bool = False, known: Sequence[str] = ()) -> None:
        """The run's end. The entries of files its landed commits reference (``forget``)
        go, and so do those of files that no longer exist; the others stay for ``clean``,
        and the heartbeat says ``ended``. After a commit whose outcome is unknown every
        other entry stays and the heartbeat says ``unknown``: then only age lets ``clean``
        take them. ``known``: the paths this process knows it journaled (for a FileIO
        that cannot list)."""
        self._stop_beating()
        try:
            entries = [loc for loc, _ in _listing(self.io, self.folder)]
        except TypeError:
            entries = [f"{self.folder}/{entry_name(p)}" for p in known]
        heartbeat = f"{self.folder}/{HEARTBEAT}"
        kept = 0
        for location in entries:
            if location == heartbeat:
                continue
            if _is_spill(self.folder, location):   # (not removed by its group: for clean)
                kept += 1
                continue
            entry = _read_json(self.io, location)
            path = entry.get("path") if entry else None
            if path not in self.committed and (
                    outcome_unknown
                    or isinstance(path, str) and self.io.new_input(path).exists()):
                kept += 1
                continue
            _delete(self.io, location)
        if kept:
            self._beat("unknown" if outcome_unknown else "ended")
        elif _delete(self.io, heartbeat):
            _remove_empty_folder(self.io, self.folder)


def _remove_empty_folder(io: Any, folder: str) -> None:
    """Remove a run's (or spill) folder once it holds no file, with its empty folders,
    where folders exist (a local or HDFS file system behind PyArrowFileIO; object stores
    have none)."""
    if not (hasattr(io, "fs_by_scheme") and hasattr(io, "parse_location")):
        return
    try:
        from pyarrow import fs as pafs

        scheme, netloc, path = io.parse_location(folder, io.properties)
        filesystem = io.fs_by_scheme(scheme, netloc)
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True,
                                                           recursive=True))
        if not any(info.type == pafs.FileType.File for info in infos):
            filesystem.delete_dir(path)
    except Exception:  # noqa: BLE001 - an empty folder left costs nothing
        pass


def _delete(io: Any, location: str) -> bool:
    """Delete one file; whether it is gone."""
    try:
        io.delete(location)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - any storage error: the file stays
        return False
    return True


def _process_gone(heartbeat: Dict[str, Any]) -> bool:
    """Whether the heartbeat's process is known to be gone: it ran on this host and no
    process has its id now."""
    pid = heartbeat.get("pid")
    if heartbeat.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:   # (exists, another user's)
        return False
    return False


@dataclasses.dataclass
class CleanResult:
    """What ``clean`` deleted (or, with ``dry_run``, would delete).

    Attributes:
        deleted: journaled data files that no snapshot references, deleted.
        referenced: journaled files that a snapshot references (kept; their entries go).
        left: files that could not be deleted (their entries stay).
        entries: journal entries deleted (would be, with ``dry_run``).
        spill_files: spill runs of a lost client's Dask group, deleted.
        runs: the runs whose journal was cleaned.
        live_runs: runs still in progress (or not silent for ``older_than``), left alone.
        dry_run: nothing was deleted.
    """

    deleted: List[str] = dataclasses.field(default_factory=list)
    referenced: List[str] = dataclasses.field(default_factory=list)
    left: List[str] = dataclasses.field(default_factory=list)
    entries: int = 0
    spill_files: List[str] = dataclasses.field(default_factory=list)
    runs: List[str] = dataclasses.field(default_factory=list)
    live_runs: List[str] = dataclasses.field(default_factory=list)
    dry_run: bool = False


def _runs(io: Any, root: str) -> Dict[str, List[Tuple[str, Optional[float]]]]:
    """The journal's files by run id."""
    runs: Dict[str, List[Tuple[str, Optional[float]]]] = {}
    for location, mtime in _listing(io, root):
        run, _, rest = location[len(root) + 1:].partition("/")
        if run and rest:
            runs.setdefault(run, []).append((location, mtime))
    return runs


def _run_is_over(io: Any, root: str, run: str, files: Sequence[Tuple[str, Optional[float]]],
                 older_than: float, now: float) -> bool:
    heartbeat = _read_json(io, f"{root}/{run}/{HEARTBEAT}")
    times = [m for _, m in files if m is not None]
    if heartbeat is not None:
        if heartbeat.get("state") == "ended":
            return True
        if heartbeat.get("state") == "running" and _process_gone(heartbeat):
            return True
        renewed = heartbeat.get("renewed")
        if isinstance(renewed, (int, float)):
            times.append(float(renewed))
    # (no time known: as old as can be, so never cleaned only by an unreadable clock)
    return bool(times) and now - max(times) >= older_than


def clean(table: Any, dry_run: bool = False,
          older_than: Optional[float] = None) -> CleanResult:
    """Delete the files that earlier rewrites of ``table`` journaled and no snapshot (of
    any branch or tag) references: left by a SIGKILL, a killed Dask worker or a lost
    client. Never a file zorder did not journal, nor one of a run still in progress.

    Args:
        table: a ``pyiceberg.table.Table``; refreshed first.
        dry_run: list what would be deleted, delete nothing.
        older_than: seconds a run must have been silent (no heartbeat, no entry) to be
            judged over, when its heartbeat does not already say it is (ended, or its
            process gone on this host); default ``DEFAULT_OLDER_THAN`` (one hour).

    Returns:
        a ``CleanResult``.
    """
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run must be a bool, not {type(dry_run).__name__}")
    if older_than is None:
        older_than = DEFAULT_OLDER_THAN
    if isinstance(older_than, bool) or not isinstance(older_than, (int, float)) \
            or not older_than >= 0:
        raise ValueError(f"older_than must be a number of seconds >= 0, not {older_than!r}")
    table.refresh()
    io = table.io
    root = journal_root(table.location())
    result = CleanResult(dry_run=dry_run)
    now = time.time()
    over: Dict[str, List[Tuple[str, Optional[str]]]] = {}
    spilled: Dict[str, List[str]] = {}   # a run's spill files (never data: just deleted)
    for run, files in sorted(_runs(io, root).items()):
        if not _run_is_over(io, root, run, files, float(older_than), now):
            result.live_runs.append(run)
            continue
        heartbeat = f"{root}/{run}/{HEARTBEAT}"
        entries = []
        for location, _ in files:
            if location == heartbeat:
                continue
            if _is_spill(f"{root}/{run}", location):
                spilled.setdefault(run, []).append(location)
                continue
            entry = _read_json(io, location)
            path = entry.get("path") if entry else None
            entries.append((location, path if isinstance(path, str) else None))
        over[run] = entries
    if not over:
        return result
    referenced: Set[str] = set()
    if any(path for entries in over.values() for _, path in entries):
        from zorder.engines.iceberg_report import referenced_files

        referenced = referenced_files(table)
    for run, entries in over.items():
        result.runs.append(run)
        kept = 0
        for location in spilled.get(run, []):
            if dry_run or _delete(io, location):
                result.spill_files.append(location)
            else:
                result.left.append(location)
                kept += 1
        for location, path in entries:
            if path is not None and path in referenced:
                result.referenced.append(path)
            elif path is not None and io.new_input(path).exists():
                if dry_run:
                    result.deleted.append(path)
                elif _delete(io, path):
                    result.deleted.append(path)
                else:
                    result.left.append(path)
                    kept += 1
                    continue   # its entry stays: the file is still there
            if dry_run or _delete(io, location):
                result.entries += 1
            else:
                kept += 1
        if not dry_run and not kept and _delete(io, f"{root}/{run}/{HEARTBEAT}"):
            _remove_empty_folder(io, f"{root}/{run}")
    return result


def journaled_paths(io: Any, folder: str) -> Iterator[str]:
    """The data file paths journaled in one run's folder (a FileIO that cannot list:
    none)."""
    try:
        files = _listing(io, folder)
    except TypeError:
        return
    for location, _ in files:
        if location.endswith("/" + HEARTBEAT):
            continue
        entry = _read_json(io, location)
        path = entry.get("path") if entry else None
        if isinstance(path, str):
            yield path
