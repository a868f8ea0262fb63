"""The bookkeeping of an Iceberg rewrite's work: calls run as tasks on a Dask scheduler
(``on_dask``), and every file written, journaled by the tasks to a local file
(``WrittenPaths``, ``written_journal``), so that on a failure or an interrupt, when no
task's result comes back, the client still deletes them all (``deleted_on_failure``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from zorder.engines.iceberg_commit import IcebergRewriteError, delete_files


class WrittenPaths(list):
    """A task's written paths, each also appended to the client's journal file as it is
    recorded (before the file is written), so that after an interrupt, when no task's
    result comes back, the client still knows every file to delete. A worker that does
    not see the client's file system (another machine) keeps the list only."""

    def __init__(self, journal: Optional[str]) -> None:
        super().__init__()
        self.journal = journal

    def append(self, path: str) -> None:
        super().append(path)
        if self.journal is None:
            return
        try:   # (never created here: on another machine the name means nothing)
            fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
        except OSError:
            self.journal = None
            return
        try:
            os.write(fd, (path + "\n").encode("utf-8"))   # one append: whole lines
        finally:
            os.close(fd)


def _journaled(journal: Optional[str]) -> List[str]:
    """The paths the tasks journaled, in order, without repeats."""
    if journal is None:
        return []
    try:
        with open(journal, encoding="utf-8") as f:
            return list(dict.fromkeys(line.rstrip("\n") for line in f if line.strip()))
    except OSError:
        return []


def on_dask(scheduler: Any, function: Callable[..., Any],
            calls: Sequence[Tuple[Any, ...]]) -> List[Any]:
    """``function(*call)`` for every call as a task on ``scheduler`` (a distributed
    Client, an address, or 'threads'/'processes'/'sync'); the results in order."""
    import dask

    from zorder.engines.dask import require_dask
    from zorder.engines.dask_scheduler import compute_options, running_on

    require_dask("rewrite(scheduler=...)")
    tasks = [dask.delayed(function, pure=False)(*call) for call in calls]
    with running_on(scheduler, 10.0) as client:
        return list(client.compute(tasks, sync=True) if client is not None
                    else dask.compute(*tasks, **compute_options()))


@contextlib.contextmanager
def written_journal(wanted: bool) -> Iterator[Optional[str]]:
    """A local file the Dask tasks journal their written paths into (``WrittenPaths``),
    removed after; None when not ``wanted``."""
    if not wanted:
        yield None
        return
    handle, path = tempfile.mkstemp(prefix="zorder-iceberg-written-", suffix=".txt")
    os.close(handle)
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):   # (never hide the block's own error)
            os.unlink(path)


@contextlib.contextmanager
def deleted_on_failure(io: Any, written: List[str], journal: Optional[str],
                       call: Any = None) -> Iterator[None]:
    """On any failure or interrupt of the block, delete every file written for the rewrite
    (``written``, and what the tasks journaled: after an interrupt their results never
    come back; the scheduler's pool is stopped by then, ``running_on`` stops it on the
    way out). Files that cannot be deleted are named in an ``IcebergRewriteError``.
    Nothing is deleted once the commit's catalog call has begun (``call.started``, a
    ``CommitCall``): the commit may have landed, and the commit itself says what to do."""
    try:
        yield
    except BaseException as exc:
        if call is not None and call.started:
            raise
        written.extend(p for p in _journaled(journal) if p not in written)
        left = delete_files(io, written)
        if isinstance(exc, IcebergRewriteError):
            raise IcebergRewriteError(str(exc), left) from exc.__cause__
        if left and isinstance(exc, Exception):
            raise IcebergRewriteError(f"the rewrite failed and did not commit: {exc}",
                                      left) from exc
        raise
