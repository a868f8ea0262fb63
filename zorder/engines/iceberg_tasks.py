"""The bookkeeping of an Iceberg rewrite's work: calls run as tasks on a Dask scheduler
(``on_dask``), and every file written, journaled before it is written, to a local file
and to the run's journal kept with the table's data (``WrittenPaths``, ``written_journal``,
``run_journal``), so that on a failure or an interrupt, when no task's result comes back,
the client still deletes them all (``deleted_on_failure``), and after a SIGKILL a later
run or ``zorder iceberg clean`` does (``zorder.engines.iceberg_journal``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from zorder.engines.iceberg_commit import IcebergRewriteError, delete_files
from zorder.engines.iceberg_journal import JournalWriter, RunJournal, journaled_paths


class WrittenPaths(list):
    """A task's written paths, each journaled as it is recorded (before the file is
    written): in the run's journal kept with the table's data (``table_journal``, a
    ``JournalWriter``: for ``clean``, after a SIGKILL or a lost client), and appended to
    the client's local journal file, so that after an interrupt, when no task's result
    comes back, the client still knows every file to delete. A worker that does not see
    the client's file system (another machine) keeps the list only."""

    def __init__(self, journal: Optional[str],
                 table_journal: Optional[JournalWriter] = None) -> None:
        super().__init__()
        self.journal = journal
        self.table_journal = table_journal

    def append(self, path: str) -> None:
        if self.table_journal is not None:
            self.table_journal.record(path)   # (fails the write if it cannot be journaled)
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
def read_failure(where: str) -> Iterator[None]:
    """A data file that cannot be read (missing, truncated, a storage error) as an
    ``IcebergRewriteError``: a failure to rewrite, not a bad argument (FileNotFoundError
    and pyarrow's ArrowInvalid, a ValueError, would read as usage errors)."""
    import pyarrow as pa

    try:
        yield
    except (MemoryError, NotImplementedError):
        raise
    except (OSError, pa.ArrowInvalid) as exc:
        raise IcebergRewriteError(f"{where}: a data file could not be read "
                                  f"({type(exc).__name__}: {exc}); nothing was committed"
                                  ) from exc


@contextlib.contextmanager
def run_journal(io: Any, table_location: str, known: List[str]) -> Iterator[RunJournal]:
    """The rewrite's journal kept with the table's data (``RunJournal``), its heartbeat
    running for the block, every commit of the rewrite inside it. Each commit that lands
    clears the entries of its files (``RunJournal.forget``); at the end the entries of
    files since deleted go and the rest stay for ``clean``, all of them after a commit
    whose outcome is unknown (``known``: the paths this process recorded)."""
    run = RunJournal(io, table_location)
    run.start()
    try:
        yield run
    except BaseException as exc:
        with contextlib.suppress(Exception):   # (never hide the block's own error)
            run.finish(bool(getattr(exc, "outcome_unknown", False)), known)
        raise
    with contextlib.suppress(Exception):   # a stale entry only costs a look later
        run.finish(known=known)


@contextlib.contextmanager
def deleted_on_failure(io: Any, written: List[str], journal: Optional[str],
                       call: Any = None, run: Optional[RunJournal] = None) -> Iterator[None]:
    """On any failure or interrupt of the block, delete every file written for the rewrite
    (``written``, and what the tasks journaled, locally and in ``run``'s journal, but the
    files of its commits that landed: after an interrupt the tasks' results never come
    back; the scheduler's pool is stopped by then, ``running_on`` stops it on the way
    out). Files that cannot be deleted are named in an ``IcebergRewriteError``. Nothing
    is deleted once the commit's catalog call has begun (``call.started``, a
    ``CommitCall``): the commit may have landed, and the commit itself says what to do."""
    try:
        yield
    except BaseException as exc:
        if call is not None and call.started:
            raise
        written.extend(p for p in _journaled(journal) if p not in written)
        if run is not None:
            with contextlib.suppress(Exception):   # (what cannot be read stays journaled)
                written.extend(p for p in journaled_paths(io, run.folder)
                               if p not in written and p not in run.committed)
        left = delete_files(io, written)
        if isinstance(exc, IcebergRewriteError):
            raise IcebergRewriteError(str(exc), left) from exc.__cause__
        if left and isinstance(exc, Exception):
            raise IcebergRewriteError(f"the rewrite failed and did not commit: {exc}",
                                      left) from exc
        raise
