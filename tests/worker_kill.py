"""A Dask worker killed mid-job, for the tests of lost workers: the test's hook makes the
first worker to reach its point write its PID to ``PAUSE/pid`` and wait there, and
``sigkill_when_paused`` (on a thread of the test) SIGKILLs that process."""

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
