"""Declares zorder's extensions and their per-extension compiler flags.

Everything else about the package lives in pyproject.toml. Only the generic baseline
flags are used for every extension: code for BMI2 or AVX-512 sits in its own C file
with per-function ``target`` attributes, so a build on any x86-64 runs on any x86-64,
and on other architectures those kernels are simply not built. The Advanced SIMD (NEON)
kernel is built only for aarch64, where every CPU has it.
"""

import multiprocessing
import os
import platform
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

IS_MSVC = sys.platform == "win32"
# A cross-build names its target in _PYTHON_HOST_PLATFORM (e.g. linux-aarch64, as
# tools/aarch64.sh does); the build machine's own architecture is the default.
_HOST_PLATFORM = os.environ.get("_PYTHON_HOST_PLATFORM", "")
MACHINE = (_HOST_PLATFORM.rsplit("-", 1)[-1] if _HOST_PLATFORM else platform.machine()).lower()
IS_X86_64 = MACHINE in ("x86_64", "amd64", "x64")
IS_AARCH64 = MACHINE in ("aarch64", "arm64")

# Cython and the C compiler run one job a CPU unless ZORDER_BUILD_JOBS says (1: one at a
# time). pip's build runs build_ext without -j, which compiled the 15 extensions one after
# another.
_JOBS_SETTING = os.environ.get("ZORDER_BUILD_JOBS", "").strip()
if _JOBS_SETTING and not _JOBS_SETTING.isdigit():
    sys.exit(f"setup.py: ZORDER_BUILD_JOBS must be a number of jobs, not {_JOBS_SETTING!r}")
_USABLE_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
# MSVC's compiler object is set up lazily, which parallel threads can race on: serial there.
BUILD_JOBS = int(_JOBS_SETTING or "0") or (1 if IS_MSVC else _USABLE_CPUS) or 1
# Cython's parallel cythonize uses worker processes. Where they are spawned rather than
# forked (macOS, Windows, Linux from Python 3.14), each re-runs this unguarded script, so
# cythonize runs its files one after another there.
CYTHON_JOBS = BUILD_JOBS if BUILD_JOBS > 1 and multiprocessing.get_start_method() == "fork" else None


class ParallelBuildExt(build_ext):
    """build_ext whose default for -j (parallel) is BUILD_JOBS, and which runs Cython.

    Cython runs here, not when setup.py is read, so that making an sdist (which ships the
    .pyx files, never their generated C) does not translate every module first.
    """

    def finalize_options(self) -> None:
        from Cython.Build import cythonize

        self.distribution.ext_modules[:] = cythonize(
            self.distribution.ext_modules,
            compiler_directives={"language_level": 3, "embedsignature": True},
            nthreads=CYTHON_JOBS,
        )
        super().finalize_options()
        if not self.parallel:
            self.parallel = BUILD_JOBS


# ZORDER_SANITIZE=address builds every extension with AddressSanitizer (tools/asan.sh).
SANITIZE = os.environ.get("ZORDER_SANITIZE", "")

if IS_MSVC:
    BASE_CFLAGS = ["/O2"]
    BASE_LDFLAGS = []
else:
    # No debug information in the shipped modules (Python's own CFLAGS say -g): it was
    # most of the wheel's size, and it never changes the generated code.
    BASE_CFLAGS = ["-O3", "-fno-strict-aliasing", "-g0"]
    BASE_LDFLAGS = [] if sys.platform == "darwin" else ["-Wl,--strip-debug"]
    if SANITIZE:
        BASE_CFLAGS += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-g", "-O1"]
        BASE_LDFLAGS = [f"-fsanitize={SANITIZE}"]


# Every extension is rebuilt when any shared header or included file changes: the
# kernels include each other's C code, and a stale .so would test old kernels.
SHARED_DEPENDS = sorted(str(p) for pattern in ("**/*.h", "**/*.pxi", "**/*.pxd", "**/*.c")
                        for p in Path("zorder").glob(pattern)
                        if not (p.suffix == ".c" and p.with_suffix(".pyx").exists()))
# Hand-written C and the headers the Cython modules include.
INCLUDE_DIRS = ["zorder/interleave/csrc", "zorder/interleave/csrc/generic", "zorder/hilbert/csrc",
                "zorder/cpu"]


def extension(name, sources, **kwargs):
    """zorder.<name> from sources under zorder/ (dotted name = folder path)."""
    kwargs.setdefault("include_dirs", INCLUDE_DIRS)
    kwargs.setdefault("depends", SHARED_DEPENDS)
    return Extension(
        f"zorder.{name}",
        sources=[f"zorder/{s}" for s in sources],
        extra_compile_args=BASE_CFLAGS + kwargs.pop("extra_compile_args", []),
        extra_link_args=BASE_LDFLAGS,
        **kwargs,
    )


# Each hand-written C file is compiled into one extension (pdep_kernel.c into two: simd
# falls back to it). The list is built in
# about the order of their compile times, longest first, so that the parallel build does
# not end on one long compile with the other CPUs idle (tools/asan.sh's build did: 25 s of
# one CPU at the end). gcc -O3 here, CPU-seconds: avx2 9.5, nibble 6.8, pdep 6.2, table
# 5.6, values.decode 5.0, hilbert 4.8, values._radix 4.2, simd 3.8, ordered._strings 3.6,
# parquet 3.4, ordered._numbers 3.1, the rest 2 or less.
extensions = []
if IS_X86_64:
    # The C files hold the only AVX2, BMI2 and AVX-512 code, behind target attributes; the
    # modules themselves (and their imports) are baseline x86-64. avx2 falls back to the
    # table kernel of the generic layer (csrc/generic/), compiled into it.
    extensions.append(extension("interleave.avx2", ["interleave/avx2.pyx", "interleave/csrc/avx2/avx2.c"]))
    extensions.append(extension("interleave.pdep", ["interleave/pdep.pyx", "interleave/csrc/pdep_kernel.c"]))
if IS_AARCH64:
    # Advanced SIMD is part of every aarch64 CPU, so the baseline flags already allow it;
    # on any other architecture the backend is not built (as pdep and simd are not on aarch64).
    extensions.append(extension("interleave.neon", ["interleave/neon.pyx", "interleave/csrc/neon_kernel.c"]))
extensions += [
    extension("interleave.nibble", ["interleave/nibble.pyx"]),
    extension("interleave.table", ["interleave/table.pyx"]),
    extension("values.decode", ["values/decode.pyx"]),
    # Iceberg's Hilbert index; AVX2/AVX-512 code behind target attributes, plain C elsewhere.
    extension("hilbert._transform", ["hilbert/_transform.pyx", "hilbert/csrc/hilbert_kernel.c"]),
    extension("values._radix", ["values/_radix.pyx"]),
    extension("values._rank", ["values/_rank.pyx"]),
]
if IS_X86_64:
    # A compiler without the AVX-512 intrinsics compiles csrc/avx512/ to a stub and the
    # backend reports itself unavailable. simd falls back to the pdep kernel, compiled
    # into it too, so that no backend module imports another.
    extensions.append(extension("interleave.simd", ["interleave/simd.pyx", "interleave/csrc/avx512/avx512.c",
                                                    "interleave/csrc/pdep_kernel.c"]))
extensions += [
    extension("ordered._strings", ["ordered/_strings.pyx"]),
    extension("parquet._checksum", ["parquet/_checksum.pyx"]),
    extension("parquet._gather", ["parquet/_gather.pyx"]),
    extension("ordered._numbers", ["ordered/_numbers.pyx"]),
    extension("interleave._frontend", ["interleave/_frontend.pyx"]),
    extension("cpu._facts", ["cpu/_facts.pyx"]),
    extension("interleave.auto", ["interleave/auto.pyx"]),
    extension("interleave.bitloop", ["interleave/bitloop.pyx"]),
]

setup(
    ext_modules=extensions,
    cmdclass={"build_ext": ParallelBuildExt},
)
