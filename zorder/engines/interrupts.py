"""Interrupts of work running on a thread pool, whose threads cannot be killed: the pool
marks the threads it serves (``serve``), an interrupt stops the pool, and each task asks
``interrupted()`` at its next check and raises ``Interrupted``. Engine-neutral: the
stages of ``zorder cluster`` and the Iceberg rewrite's writer both check it."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Interrupted", "interrupted", "serve"]


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
