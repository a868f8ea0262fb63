"""Where a ``cluster`` job runs: the Dask scheduler asked for, connected within a timeout
and checked to be one, a process pool owned here so an interrupt can stop it at once, or
a ``distributed.LocalCluster`` of N worker processes (``local:N``) started and stopped
here; and how a list of Dask collections is computed there, with a progress bar if
asked."""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import os
import re
import signal
import sys
import threading
from typing import Any, Dict, Iterator, Optional, Tuple, Union

from zorder.cpu.cores import usable_cores
from zorder.engines.interrupts import StoppablePool
from zorder.parquet.memory import memory_limit_of
from zorder.parquet.safety import raise_if_interrupted, set_handlers, temporary_folder

__all__ = ["LOCAL_CLUSTER", "SCHEDULERS", "check_connect_timeout", "check_scheduler",
           "compute", "compute_options", "local_workers", "running_on", "worker_memory"]


SCHEDULERS = ("scheduler must be None, 'threads', 'processes', 'sync', 'local:N', an address "
              "string or a distributed.Client")

#: ``local:N``: a LocalCluster of N worker processes, started for the job.
LOCAL_CLUSTER = re.compile(r"^local:(\d+)$")
#: The most worker processes ``local:N`` starts (a typo such as local:1000 would start a
#: thousand interpreters).
MAX_LOCAL_WORKERS = 256


def local_workers(scheduler: Any) -> Optional[int]:
    """N of a ``"local:N"`` scheduler, None for any other; a ValueError naming
    ``scheduler`` for ``local:`` with no count, 0 or more than ``MAX_LOCAL_WORKERS``."""
    if not isinstance(scheduler, str) or not scheduler.startswith("local"):
        return None
    found = LOCAL_CLUSTER.match(scheduler)
    if found is None or not 0 < int(found.group(1)) <= MAX_LOCAL_WORKERS:
        raise ValueError(f"scheduler={scheduler!r}: local:N takes a number of worker "
                         f"processes N from 1 to {MAX_LOCAL_WORKERS}, e.g. local:4")
    return int(found.group(1))


def check_scheduler(scheduler: Any) -> Any:
    """``scheduler`` if it names a scheduler ``running_on`` knows (not yet reaching an
    address); a TypeError or ValueError naming ``scheduler`` otherwise."""
    if scheduler is None or hasattr(scheduler, "compute"):
        return scheduler
    if not isinstance(scheduler, str):
        raise TypeError(f"{SCHEDULERS}, not {type(scheduler).__name__}")
    if scheduler in ("threads", "processes", "sync", "synchronous"):
        return scheduler
    if local_workers(scheduler) is None:
        _check_address(scheduler)
    return scheduler


#: What a distributed worker process takes beside its tasks' data (the interpreter,
#: pandas, pyarrow, distributed: about 310 MB resident, idle): ``local:N`` adds it to
#: each worker's share of the limit, which counts the data, as ``zorder.parquet.memory``'s
#: does.
WORKER_OVERHEAD = 512 << 20
#: Of a worker's memory limit less ``WORKER_OVERHEAD``, the share its tasks' data may
#: plan for: distributed pauses a worker at 80% of its limit and restarts it at 95%.
WORKER_DATA_SHARE = 0.7


def worker_memory(client: Any) -> Optional[Tuple[int, int]]:
    """(bytes of data one task may hold, tasks running at once) on the workers of a
    distributed ``client``: the smallest worker's limit less ``WORKER_OVERHEAD``, times
    ``WORKER_DATA_SHARE``, shared by its threads; None where no worker states a limit."""
    workers = client.scheduler_info().get("workers", {}) or {}
    shares = [max(0, int(w["memory_limit"]) - WORKER_OVERHEAD) * WORKER_DATA_SHARE
              / max(1, int(w.get("nthreads", 1)))
              for w in workers.values() if w.get("memory_limit")]
    if not shares:
        return None
    return max(1, int(min(shares))), sum(int(w.get("nthreads", 1)) for w in workers.values())


#: The scheduler and pool of the job running in this context (this thread), handed to
#: each dask.compute: Dask's config is the whole process's, and jobs in other threads set
#: in it replaced each other's pools (a job's tasks ran on another's, stopped one).
_job_options: contextvars.ContextVar = contextvars.ContextVar("zorder_dask_job", default=None)


def compute_options() -> dict:
    """The keywords for ``dask.compute`` of the job ``running_on`` runs in this context
    (empty: Dask's default, a distributed client if there is one)."""
    return dict(_job_options.get() or {})


@contextlib.contextmanager
def _job(**options: Any) -> Iterator[None]:
    token = _job_options.set(options)
    try:
        yield
    finally:
        _job_options.reset(token)


@contextlib.contextmanager
def running_on(scheduler, connect_timeout: float, *,
               memory_limit: Union[int, str, None] = None,
               local_directory: Optional[str] = None) -> Iterator[Any]:
    """Runs the block on the scheduler asked for; yields a distributed Client or None.

    ``local:N`` starts a ``distributed.LocalCluster`` of N single-threaded worker
    processes, each limited to ``memory_limit / N`` (default:
    ``zorder.parquet.memory``'s, read now) plus ``WORKER_OVERHEAD``, with their scratch
    space in ``local_directory`` (default Dask's), and stops it however the block ends.
    ``processes`` gets a process pool owned here, so that an interrupt can end its workers
    at once (Dask's own pool waits for running tasks on shutdown, which can hang);
    ``threads`` a thread pool owned here, whose running tasks an interrupt asks to end.
    Local schedulers reach ``compute`` through ``compute_options()``, never through Dask's
    process-wide config, so jobs in several threads each keep their own.
    """
    if scheduler is None:
        try:
            from distributed import default_client

            yield default_client()
        except (ImportError, ValueError):
            yield None
        return
    if scheduler == "threads":
        # (an interrupt stops it: queued tasks dropped, running ones end at their next
        # check between row groups, as threads cannot be killed)
        threads = StoppablePool(usable_cores())
        with _owned_pool("threads", threads, threads.stop):
            yield None
        return
    if isinstance(scheduler, str) and scheduler in ("sync", "synchronous"):
        with _job(scheduler="sync"):
            yield None
        return
    if scheduler == "processes":
        pool = _process_pool()
        with _owned_pool("processes", pool, lambda: _stop_pool(pool)):
            yield None
        return
    workers = local_workers(scheduler)
    if workers is not None:
        with _local_cluster(workers, memory_limit_of(memory_limit), local_directory) as client:
            yield client
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


@contextlib.contextmanager
def _local_cluster(workers: int, limit: int, local_directory: Optional[str]) -> Iterator[Any]:
    """A Client of a LocalCluster of ``workers`` processes sharing ``limit`` bytes,
    closed (its workers ended) on any exit: an error, Ctrl-C or SIGTERM (which
    ``interrupts_as_exceptions`` turns into an exception in the caller)."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ImportError("scheduler='local:N' needs distributed: "
                          "pip install 'zorder[dask]'") from exc
    import logging

    per_worker = max(1, limit // workers) + WORKER_OVERHEAD
    options: dict = {"n_workers": workers, "threads_per_worker": 1, "processes": True,
                     "memory_limit": per_worker, "dashboard_address": ":0",
                     "silence_logs": logging.ERROR}
    scratch = contextlib.ExitStack()
    if local_directory is not None:
        # the workers' scratch space in a folder of its own there, removed however the
        # block ends (Dask leaves its dask-scratch-space behind)
        options["local_directory"] = scratch.enter_context(temporary_folder(
            os.path.join(local_directory, "local-cluster"), "dask", inside=local_directory))
    with scratch:
        yield from _running_cluster(options)


def _running_cluster(options: dict) -> Iterator[Any]:
    """The body of ``_local_cluster``: start, yield a Client, always close. The nannies
    and their workers inherit SIGINT blocked (see _process_pool): a Ctrl-C is the
    parent's to handle, which closes the cluster; workers that took it too printed their
    own tracebacks while shutting down."""
    import dask
    from distributed import Client, LocalCluster

    cluster = None
    try:
        # No pause: a paused worker runs nothing, and the job, whose tasks size their
        # data to the limit, then waited forever; a runaway worker is still restarted.
        with dask.config.set({"distributed.worker.memory.pause": False}), _sigint_held():
            cluster = LocalCluster(**options)
            client = Client(cluster)
        try:
            yield client
        finally:
            with _sigint_held():
                client.close()
    finally:
        if cluster is not None:
            with _sigint_held():
                cluster.close()


@contextlib.contextmanager
def _owned_pool(scheduler: str, pool: Any, stop: Any) -> Iterator[None]:
    """Dask's ``scheduler`` on ``pool``, owned here: an interrupt or error ``stop()``s it
    at once; a block that ends normally waits for it to finish."""
    try:
        with _job(scheduler=scheduler, pool=pool):
            yield
    except BaseException:
        stop()
        raise
    pool.shutdown(wait=True)


def _process_pool():
    """A spawn-context process pool whose workers never see the terminal's Ctrl-C.

    Ctrl-C reaches the whole foreground process group. The parent handles it (it stops the
    pool and restores the output); a worker that also took it died mid-import, or sent its
    task's KeyboardInterrupt back, with a traceback on the user's terminal. An initializer
    is too late (it runs after the imports), so SIGINT is *blocked* in the thread that starts
    the workers: a blocked mask survives fork and exec, so a worker holds any Ctrl-C pending
    from its first instruction, and its initializer then ignores it for good (the pattern of
    the stdlib's resource tracker, bpo-33613). Workers start inside ``submit`` (spawn starts
    them on demand), which also defers the parent's own KeyboardInterrupt to its end, so a
    started worker is always in ``_processes`` where :func:`_stop_pool` finds it.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    class Pool(ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            # (deferred twice: the resource tracker's start, like the pool's construction,
            # must not be interrupted halfway, and it unblocks SIGINT in this thread, so it
            # cannot run where SIGINT is blocked for the workers)
            with _signals_deferred():
                if hasattr(signal, "pthread_sigmask"):
                    # start the resource tracker, if it is not running yet
                    from multiprocessing import resource_tracker

                    resource_tracker.ensure_running()
                with _sigint_held():
                    return super().submit(fn, *args, **kwargs)

    # The pool's queues are built here, and their semaphores register finalizers: a Ctrl-C
    # or SIGTERM inside one left it half built, and its callback printed a traceback.
    with _signals_deferred():
        return Pool(max_workers=usable_cores(),
                    mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """In the main thread, a Ctrl-C or SIGTERM within the block is held, then delivered
    again at its end to the handler it would have reached, so that nothing the block
    builds is left half built. Elsewhere (only the main thread may set handlers, and only
    there are they run), and for a signal whose handler is not Python's, the block runs
    as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list = []
    previous: Dict[int, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = handler
                signal.signal(signum, lambda signum, frame: held.append(signum))
        yield
    finally:
        raised = set_handlers(previous)
        if raised is not None:
            raise raised
        if held:
            signal.raise_signal(held[0])


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Within the block SIGINT is blocked in this thread, so processes started here inherit
    it blocked, and a Ctrl-C or SIGTERM is deferred as by :func:`_signals_deferred`."""
    with _signals_deferred():
        if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
            yield
            return
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            # Unblocking delivers a held Ctrl-C to the deferring handler.
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _worker_start() -> None:
    """Initializer of a pool worker: ignore SIGINT (held blocked since the worker's start,
    see :func:`_process_pool`), and exit with the parent, which is the one to stop workers:
    one that outlived a killed parent would wait on its task queue forever."""
    if hasattr(signal, "pthread_sigmask"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # drops a Ctrl-C held pending
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent) -> None:
    parent.join()  # returns when the parent has ended
    os._exit(1)


def _stop_pool(pool) -> None:
    """End a process pool now: cancel what waits, end what runs, and leave nothing that the
    interpreter's exit would wait on. A second Ctrl-C is raised once this is done."""
    with _sigint_held():
        processes = list((getattr(pool, "_processes", None) or {}).values())
        results = getattr(pool, "_result_queue", None)  # shutdown() drops these two
        manager = getattr(pool, "_executor_manager_thread", None)
        # Workers ignore Ctrl-C: ending them is this function's job, before the output
        # folder they write into is removed.
        for process in processes:
            with contextlib.suppress(Exception):
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            with contextlib.suppress(Exception):
                process.join(timeout=2)
                if process.is_alive():
                    process.kill()
                    process.join(timeout=2)
        # A worker ended while sending a result leaves half a message in the result pipe:
        # the pool's manager thread then waits for the rest forever, and concurrent.futures
        # joins that thread at exit (a `cluster` outliving its Ctrl-C for good). With the
        # workers gone this process holds the pipe's last write end; closing it gives the
        # manager an end of file, and it winds the pool up as broken.
        if results is not None:
            with contextlib.suppress(Exception):
                results._writer.close()
        # Let the manager finish here: at exit concurrent.futures wakes it without a lock,
        # and a wake-up racing its closing of that pipe printed an EBADF traceback.
        if manager is not None:
            manager.join(timeout=5)


#: The longest wait for a scheduler address that makes sense (a day); 1e300 s was finite but
#: overflowed the socket's timeout.
MAX_CONNECT_TIMEOUT = 86_400


def check_connect_timeout(timeout: Any) -> float:
    """``connect_timeout`` checked: seconds > 0, at most ``MAX_CONNECT_TIMEOUT``. (An
    infinite or huge one made the socket probe fail with an OverflowError; nan passed a
    ``> 0`` test written the other way round.)"""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"connect_timeout must be a number of seconds, not {type(timeout).__name__}")
    seconds = float(timeout)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"connect_timeout must be a positive, finite number of seconds, "
                         f"got {timeout!r}")
    if seconds > MAX_CONNECT_TIMEOUT:   # (the socket's own limit is near 1e10 s)
        raise ValueError(f"connect_timeout must be at most {MAX_CONNECT_TIMEOUT:,} seconds "
                         f"(a day), got {timeout!r}")
    return seconds


def _check_address(address: str) -> None:
    if not re.match(r"^[a-z0-9+]+://|^[\w.\-\[\]:]+:\d+$", address):
        raise ValueError(
            f"scheduler={address!r} is neither threads, processes, sync, local:N nor a "
            "scheduler address such as tcp://127.0.0.1:8786"
        )


def _connect(address: str, timeout: float):
    """A distributed Client for ``address``, or a ValueError naming the address and what
    was (not) found there, within about ``timeout`` seconds."""
    _check_address(address)
    check_connect_timeout(timeout)
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


def announce(progress: bool, label: str) -> None:
    """Say on stderr what the job does next, if asked for progress."""
    if progress:
        print(f"zorder cluster: {label}", file=sys.stderr, flush=True)


def compute(objs, client, progress: bool, label: str):
    """Compute a list of Dask collections, with a progress bar if asked."""
    import dask

    raise_if_interrupted()   # a Ctrl-C whose exception Python dropped: no further stage
    announce(progress, label)
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
            return list(dask.compute(*objs, **compute_options()))
    return list(dask.compute(*objs, **compute_options()))
