"""Ctrl-C `zorder cluster` at random moments and count the runs that went wrong.

Each run starts `python -m zorder cluster` on four files of 100,000 rows in its own session,
as a shell starts a foreground command, waits until its temporary folder appears, sleeps a
random 0 to ``--window`` seconds and sends SIGINT to the whole group, as Ctrl-C does. A run
went wrong if it did not exit 130 within 15 s (its threads' stacks are then printed),
printed a traceback or a leaked semaphore, or left the output changed or a temporary folder
behind. Races that the tests pin down one at a time (tests/test_hardening.py) are first
found here: ``--runs 100`` takes about 4 minutes on two cores.

    python tools/ctrl_c_stress.py --runs 100 --scheduler processes
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def foreground() -> None:
    """A child's start: SIGINT at its default and unblocked, as a shell starts a command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def make_data(folder: str) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder)
    rng = np.random.default_rng(0)
    for i in range(4):
        pq.write_table(pa.table({"a": rng.integers(0, 10**9, 100_000),
                                 "b": rng.normal(size=100_000)}),
                       os.path.join(folder, f"part-{i}.parquet"))


#: ``python -m zorder``, with every thread's stack printed on SIGUSR1 (what a run that
#: outlives its Ctrl-C was doing: such runs are too rare to catch again under a debugger)
AS_MODULE = ("import faulthandler, runpy, signal, sys; "
             "faulthandler.register(signal.SIGUSR1, all_threads=True); "
             "sys.argv[0] = 'zorder'; runpy.run_module('zorder', run_name='__main__', "
             "alter_sys=True)")


def one_run(data: str, work: str, scheduler: str, window: float) -> str:
    """What went wrong in one run ("" for nothing)."""
    out = os.path.join(work, "out")
    os.makedirs(out)
    with open(os.path.join(out, "old.txt"), "w") as fh:
        fh.write("old")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ZORDER_BACKEND", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", AS_MODULE, "cluster", data, out, "--columns", "a,b",
         "--scheduler", scheduler, "--overwrite", "--quiet", "--no-report"],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=foreground)
    while not glob.glob(os.path.join(work, ".out.zorder-tmp-*")) and proc.poll() is None:
        time.sleep(0.001)
    delay = random.uniform(0, window)
    time.sleep(delay)
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)   # (AS_MODULE: every thread's stack, on stderr)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)
        stacks = proc.communicate()[1][-6000:]
        return f"still running 15 s after SIGINT sent at +{delay:.3f} s; its threads:\n{stacks}"
    wrong = []
    if proc.returncode != 130:
        wrong.append(f"exit code {proc.returncode}")
    if "Traceback" in err or "leaked" in err:
        wrong.append("a traceback or a leaked semaphore")
    if os.listdir(out) != ["old.txt"]:
        wrong.append("the output changed")
    if [n for n in os.listdir(work) if "zorder-" in n]:
        wrong.append("a temporary folder left")
    return f"{', '.join(wrong)} (SIGINT at +{delay:.3f} s):\n{err[-1500:]}" if wrong else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--scheduler", default="processes",
                        help="the --scheduler of zorder cluster (default processes)")
    parser.add_argument("--window", type=float, default=0.08,
                        help="the most seconds to wait after the temporary folder appears")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="zorder-ctrl-c-")
    try:
        data = os.path.join(root, "data")
        make_data(data)
        wrong = 0
        for run in range(args.runs):
            work = os.path.join(root, f"run-{run}")
            os.makedirs(work)
            what = one_run(data, work, args.scheduler, args.window)
            if what:
                wrong += 1
                print(f"run {run}: {what}", flush=True)
            shutil.rmtree(work, ignore_errors=True)
        print(f"{wrong} of {args.runs} runs went wrong", flush=True)
        return 1 if wrong else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
