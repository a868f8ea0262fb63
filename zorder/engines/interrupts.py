"""Interrupts of work running on a thread pool, whose threads cannot be killed: the pool
marks the threads it serves (``serve``), an interrupt stops the pool, and each task asks
``interrupted()`` at its next check and raises ``Interrupted``. Engine-neutral: the
stages of ``zorder cluster`` and the Iceberg rewrite's writer both check it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["Interrupted", "StoppablePool", "interrupted", "serve"]


class Interrupted(Exception):
    """Raised inside a task of a thread pool that an interrupt stopped."""


#: The pool a thread serves, in that thread's own storage: it ends with the thread
#: (a dict by thread ident outlived threads that a stop did not wait for, and a later
#: thread given the same ident was told it had been interrupted).
_served = threading.local()


def serve(pool: Any) -> None:
    """Marks the calling thread as serving ``pool`` (a pool's thread initializer), whose
    ``stopped`` event says that an interrupt stopped it."""
    _served.pool = pool


def interrupted() -> bool:
    """Whether the task running in this thread should end: its thread pool was stopped
    by an interrupt (always False outside such a pool: process and distributed workers
    are stopped otherwise)."""
    pool = getattr(_served, "pool", None)
    return pool is not None and pool.stopped.is_set()


class StoppablePool(ThreadPoolExecutor):
    """A thread pool whose tasks an interrupt can end: Dask's ``threads`` scheduler, the
    writers of ``zorder cluster`` in this process. Threads cannot be killed, and the
    interpreter's exit waits for the tasks they run (a whole range sorted and written,
    seconds), so an interrupt ``stop``s the pool: queued tasks are dropped, and running
    ones see ``interrupted()`` at their next check (between row groups) and end. As a
    context manager, a block left by an exception stops it; one that ends normally waits
    for its tasks."""

    def __init__(self, workers: int, prefix: str = "zorder") -> None:
        super().__init__(max_workers=workers, thread_name_prefix=prefix,
                         initializer=self._register)
        self.stopped = threading.Event()

    def _register(self) -> None:
        serve(self)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop now; wait up to ``timeout`` s for the running tasks to end, so that what
        they write is not racing the caller's cleanup."""
        self.stopped.set()
        self.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout
        for thread in list(getattr(self, "_threads", ())):
            thread.join(max(0.0, deadline - time.monotonic()))

    def __exit__(self, kind: Any, value: Any, trace: Any) -> bool:
        if kind is not None:
            self.stop()
            return False
        return bool(super().__exit__(kind, value, trace))
