"""A Dask worker killed mid-job, for the tests of lost workers: the test's hook makes the
first worker to reach its point write its PID to ``PAUSE/pid`` and wait there, and
``sigkill_when_paused`` (on a thread of the test) SIGKILLs that process.

Hooks sent to workers (``client.run``) live here, not in a test file: pytest imports test
files as ``tests.NAME`` (``--import-mode=importlib``), a name the workers cannot import,
while this module is found by its own name on the path the test files add."""

import os
import signal
import time


def sigkill_when_paused(pause, killed, timeout=120.0):
    """Wait (at most ``timeout`` seconds) for ``pause / "pid"``, SIGKILL that process and
    append its PID to ``killed``; never this process."""
    deadline = time.time() + timeout
    while time.time() < deadline and not (pause / "pid").exists():
        time.sleep(0.05)
    if (pause / "pid").exists():
        pid = int((pause / "pid").read_text())
        assert pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)


def pause_after_a_file(folder):
    """Run on each worker: the first range task (of any worker) to finish a file writes
    its PID to ``folder/pid`` and waits there, for the test to SIGKILL it. A worker that
    replaces the killed one never pauses (it is not patched)."""
    from zorder.engines import dask_stages

    close = dask_stages._RangeWriter._close

    def paused(self):
        close(self)
        try:
            fd = os.open(os.path.join(folder, "paused"), os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return
        os.close(fd)
        with open(os.path.join(folder, "pid.tmp"), "w") as f:
            f.write(str(os.getpid()))
        os.rename(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
        time.sleep(60)

    dask_stages._RangeWriter._close = paused
