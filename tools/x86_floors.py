#!/usr/bin/env python3
"""The installed zorder on older and other x86-64 CPUs, by emulation: no illegal instruction.

    python tools/x86_floors.py            # every CPU model below (about 25 s on two CPUs)
    python tools/x86_floors.py Nehalem    # one

zorder's AVX2, AVX-512 and BMI2 code sits in functions with target attributes and runs
only after the CPU floor (CPUID and XGETBV) says it can. The tests run on the machine at
hand, which has every feature, so a guard that let such code run too early (a static
initializer, a table built with vector code, a build flag that reached a plain file)
would fail no test there. This runs the installed package under qemu-user
(``qemu-x86_64-static -cpu MODEL``, Debian's qemu-user-static, which tools/aarch64.sh
installs too) on CPU models without those features. For each it checks:

- import, and which backends are available and which ``auto`` picks: what the selector
  must give that CPU (below), so the CPU facts are read right under each model;
- every available backend and ``auto`` against ``bitloop`` on a set of shapes (uniform,
  ragged, narrow, truncated, more than 8 columns), and every Hilbert transform that runs;
- forcing, with ZORDER_BACKEND, each backend the CPU cannot run: a BackendError (exit
  status 1), never a signal.

qemu 7.2's TCG has no AVX-512, so its Ice Lake runs as AVX2 (that, too, is a floor:
AVX-512 flags filtered out of CPUID must keep simd out). A model's process that dies of a
signal (SIGILL) or gives a different byte fails the run, with one line saying which.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Tuple

QEMU = "qemu-x86_64-static"

# CPU model (qemu's name, with feature switches) -> (backends available, auto's choice
# for uniform 8-byte columns, why the case matters).
MODELS: Dict[str, Tuple[Tuple[str, ...], str, str]] = {
    "Nehalem": (("bitloop", "table", "nibble"), "table", "SSE4.2, no AVX or BMI2"),
    "Haswell-v4": (("bitloop", "table", "nibble", "pdep", "avx2"), "avx2",
                   "AVX2 and BMI2, no AVX-512"),
    "Haswell-v4,-xsave": (("bitloop", "table", "nibble", "pdep"), "pdep",
                          "AVX2 in CPUID but no XSAVE: the OS saves no YMM state"),
    "Haswell-v4,-avx2": (("bitloop", "table", "nibble", "pdep"), "pdep", "BMI2 without AVX2"),
    "EPYC-v3": (("bitloop", "table", "nibble", "pdep", "avx2"), "avx2",
                "AMD Zen 1: PDEP microcoded, never chosen"),
    "Dhyana-v2": (("bitloop", "table", "nibble", "pdep", "avx2"), "avx2",
                  "Hygon: PDEP microcoded, never chosen"),
    "EPYC-Milan": (("bitloop", "table", "nibble", "pdep", "avx2"), "avx2", "AMD Zen 3"),
    "Icelake-Server-v2": (("bitloop", "table", "nibble", "pdep", "avx2"), "avx2",
                          "AVX-512 filtered out of CPUID by the emulator"),
}

# Run inside the emulated process: prints one JSON line.
INSIDE = r"""
import json, sys
import numpy as np
import zorder
from zorder import hilbert
from zorder.hilbert import _transform

available = list(zorder.available_backends())
plan = sorted({chosen for chosen, _ in zorder.dispatch().values()})
rng = np.random.default_rng(7)
bitloop = zorder.get_backend("bitloop")
shapes = [([8, 8], 16), ([8] * 4, 32), ([8] * 8, 64), ([8, 16], 24), ([8, 32], 30),
          ([1, 2, 3, 4], 10), ([3, 5, 8], 16), ([8] * 7, 10), ([4] * 3, 12), ([2, 2], 4),
          ([8] * 12, 96), ([4] * 13, 52), ([16, 16], 12), ([8] * 5, 40)]
wrong = []
for widths, size in shapes:
    cols = [rng.integers(0, 256, (1037, w), dtype=np.uint8) for w in widths]
    want = bitloop.interleave_rows(cols, size)
    for name in available + ["auto"]:
        run = zorder.interleave_rows if name == "auto" else zorder.get_backend(name).interleave_rows
        if not np.array_equal(run(cols, size), want):
            wrong.append(f"{name} on {'+'.join(map(str, widths))}->{size}")
cols = [rng.integers(0, 256, (517, 8), dtype=np.uint8) for _ in range(3)]
want = _transform._hilbert_rows_with("bitloop", cols, 64, transform="plain")
for transform in _transform.TRANSFORMS[:_transform.TRANSFORMS.index(_transform.TRANSFORM) + 1]:
    if not np.array_equal(_transform._hilbert_rows_with("table", cols, 64, transform=transform), want):
        wrong.append(f"hilbert transform {transform}")
print(json.dumps({"available": available, "plan": plan, "hilbert": _transform.TRANSFORM,
                  "wrong": wrong}))
"""


def emulated(model: str, code: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    # (from a neutral folder: run from the source tree, `-c` would import its unbuilt
    # zorder folder instead of the installed build)
    return subprocess.run([QEMU, "-cpu", model, sys.executable, "-c", code],
                          capture_output=True, text=True, env=env, timeout=600,
                          cwd=tempfile.gettempdir())


def check(model: str) -> Tuple[str, List[str]]:
    """``model``'s line for the log, and what is wrong on it (empty: nothing)."""
    expected, choice, why = MODELS[model]
    env = {k: v for k, v in os.environ.items() if k != "ZORDER_BACKEND"}
    done = emulated(model, INSIDE, env)
    if done.returncode != 0:
        how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"  {model:20} {why}: FAILED", [f"{model} ({why}): the check ended by {how}: {last}"]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    problems = [f"{model}: {what} is wrong" for what in got["wrong"]]
    if tuple(got["available"]) != expected:
        problems.append(f"{model} ({why}): available {got['available']}, expected {list(expected)}")
    if got["plan"] != [choice]:
        problems.append(f"{model} ({why}): auto runs {got['plan']}, expected only {choice}")
    for name in ("pdep", "avx2", "simd"):
        if name in expected:
            continue
        forced = emulated(model, "import zorder", dict(env, ZORDER_BACKEND=name))
        if forced.returncode != 1 or "BackendError" not in forced.stderr:
            problems.append(f"{model}: ZORDER_BACKEND={name} ended with status "
                            f"{forced.returncode}, not a BackendError")
    return (f"  {model:20} {why}: {', '.join(got['available'])}; auto {choice}; "
            f"hilbert {got['hilbert']}; {'ok' if not problems else 'FAILED'}"), problems


def main(argv: List[str]) -> int:
    models = argv or list(MODELS)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        print(f"x86_floors: unknown model {unknown[0]!r}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    if shutil.which(QEMU) is None:
        print(f"x86_floors: {QEMU} is missing (Debian: apt-get install qemu-user-static)",
              file=sys.stderr)
        return 1
    print(f"zorder on {len(models)} emulated x86-64 CPU models ({QEMU}):", flush=True)
    # Each emulated process is one thread: a model a CPU (about 45 s to 25 s on two).
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    problems = []
    with ThreadPoolExecutor(max_workers=max(1, workers or 1)) as pool:
        for line, found in pool.map(check, models):
            print(line, flush=True)
            problems += found
    for p in problems:
        print(f"x86_floors: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
