"""Where a ``cluster`` job runs: the Dask scheduler asked for, connected within a timeout
and checked to be one, or a process pool owned here so an interrupt can stop it at once;
and how a list of Dask collections is computed there, with a progress bar if asked."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any, Iterator

__all__ = ["SCHEDULERS", "compute", "running_on"]


SCHEDULERS = ("scheduler must be None, 'threads', 'processes', 'sync', an address string "
               "or a distributed.Client")


@contextlib.contextmanager
def running_on(scheduler, connect_timeout: float) -> Iterator[Any]:
    """Runs the block on the scheduler asked for; yields a distributed Client or None.

    ``processes`` gets a process pool owned here, so that an interrupt can end its workers
    at once (Dask's own pool waits for running tasks on shutdown, which can hang).
    """
    if scheduler is None:
        try:
            from distributed import default_client

            yield default_client()
        except (ImportError, ValueError):
            yield None
        return
    if isinstance(scheduler, str) and scheduler in ("threads", "sync", "synchronous"):
        import dask

        with dask.config.set(scheduler=scheduler):
            yield None
        return
    if scheduler == "processes":
        import dask

        pool = _process_pool()
        try:
            with dask.config.set(scheduler="processes", pool=pool):
                yield None
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        return
    if isinstance(scheduler, str):
        client = _connect(scheduler, connect_timeout)
        try:
            yield client
        finally:
            client.close()
        return
    if type(scheduler).__name__ == "Client" and hasattr(scheduler, "compute"):
        yield scheduler
        return
    raise TypeError(f"{SCHEDULERS}, not {type(scheduler).__name__}")


def _process_pool():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=os.cpu_count() or 1,
                               mp_context=multiprocessing.get_context("spawn"))


def _stop_pool(pool) -> None:
    """End a process pool now: cancel what waits, terminate what runs."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=2)


def _connect(address: str, timeout: float):
    """A distributed Client for ``address``, or a ValueError naming the address and what
    was (not) found there, within about ``timeout`` seconds."""
    if not re.match(r"^[a-z0-9+]+://|^[\w.\-\[\]:]+:\d+$", address):
        raise ValueError(
            f"scheduler={address!r} is neither threads, processes, sync nor a scheduler "
            "address such as tcp://127.0.0.1:8786"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"connect_timeout must be a positive number of seconds, got {timeout!r}")
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError("a scheduler address needs distributed: "
                          "pip install 'zorder[dask]'") from exc
    hostport = re.sub(r"^[a-z0-9+]+://", "", address)
    host, _, port = hostport.rpartition(":")
    if host and port.isdigit():
        import socket

        try:
            probe = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        except OSError as exc:
            raise ValueError(f"cannot reach the Dask scheduler at {address}: "
                             f"{exc.strerror or exc}") from None
        # A Dask scheduler speaks first (its handshake); an HTTP or other server waits for
        # a request, and distributed would then wait out its whole timeout, or read an
        # HTTP reply as a frame length and try to allocate exabytes.
        with probe:
            try:
                first = probe.recv(8)
            except OSError:
                first = b""
        if not first:
            raise ValueError(f"{address} accepts connections but is not a Dask scheduler "
                             f"(it sent no handshake within {timeout:g} s)")
        if first.startswith(b"HTTP") or first[:1] == b"<":
            raise ValueError(f"{address} is an HTTP server, not a Dask scheduler "
                             "(the scheduler's own port is usually 8786)")
    try:
        return Client(address, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - any failure here means: not a scheduler
        raise ValueError(f"{address} answered, but not as a Dask scheduler "
                         f"({type(exc).__name__}: {exc})") from None


def compute(objs, client, progress: bool, label: str):
    """Compute a list of Dask collections, with a progress bar if asked."""
    import dask

    if progress:
        print(f"zorder cluster: {label}", file=sys.stderr, flush=True)
    if client is not None:
        futures = client.compute(list(objs))
        if progress:
            from distributed import progress as show

            show(futures)
            print(file=sys.stderr, flush=True)
        return client.gather(futures)
    if progress:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return list(dask.compute(*objs))
    return list(dask.compute(*objs))
