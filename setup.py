"""Declares zorder's extensions and their per-extension compiler flags.

Everything else about the package lives in pyproject.toml. Only the generic baseline
flags are used for every extension: code for BMI2 or AVX-512 sits in its own C file
with per-function ``target`` attributes, so a build on any x86-64 runs on any x86-64,
and on other architectures those kernels are simply not built.
"""

import os
import platform
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

IS_MSVC = sys.platform == "win32"
MACHINE = platform.machine().lower()
IS_X86_64 = MACHINE in ("x86_64", "amd64", "x64")

# ZORDER_SANITIZE=address builds every extension with AddressSanitizer (tools/asan.sh).
SANITIZE = os.environ.get("ZORDER_SANITIZE", "")

if IS_MSVC:
    BASE_CFLAGS = ["/O2"]
    BASE_LDFLAGS = []
else:
    BASE_CFLAGS = ["-O3", "-fno-strict-aliasing"]
    BASE_LDFLAGS = []
    if SANITIZE:
        BASE_CFLAGS += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-g", "-O1"]
        BASE_LDFLAGS += [f"-fsanitize={SANITIZE}"]


# Every extension is rebuilt when any shared header or included file changes: the
# kernels include each other's C code, and a stale .so would test old kernels.
SHARED_DEPENDS = sorted(str(p) for pattern in ("*.h", "*.pxi", "*.pxd", "*_kernel.c")
                        for p in Path("zorder").glob(pattern))


def extension(name, sources, **kwargs):
    kwargs.setdefault("include_dirs", ["zorder"])
    kwargs.setdefault("depends", SHARED_DEPENDS)
    return Extension(
        f"zorder.{name}",
        sources=[f"zorder/{s}" for s in sources],
        extra_compile_args=BASE_CFLAGS + kwargs.pop("extra_compile_args", []),
        extra_link_args=BASE_LDFLAGS,
        **kwargs,
    )


extensions = [
    extension("_cpu", ["_cpu.pyx"]),
    extension("_frontend", ["_frontend.pyx"]),
    extension("_bitloop", ["_bitloop.pyx"]),
    extension("_table", ["_table.pyx"]),
    extension("_nibble", ["_nibble.pyx"]),
    extension("_deinterleave", ["_deinterleave.pyx"]),
    extension("_zsort", ["_zsort.pyx"]),
    extension("_ordered_kernels", ["_ordered_kernels.pyx"]),
    # Iceberg's Hilbert index; AVX2/AVX-512 code behind target attributes, plain C elsewhere.
    extension("_hilbert", ["_hilbert.pyx", "_hilbert_kernel.c"]),
]
if IS_X86_64:
    # The C files hold the only BMI2 code, behind target("bmi2") attributes; the
    # module itself (and its import) is baseline x86-64.
    extensions.append(extension("_pdep", ["_pdep.pyx", "_pdep_kernel.c"]))
    # AVX-512 code behind target attributes likewise; a compiler without those
    # intrinsics compiles _simd_kernel.c to a stub and the backend reports itself
    # unavailable. _simd.pyx includes _pdep_kernel.c for its scalar fallback.
    extensions.append(extension("_simd", ["_simd.pyx", "_simd_kernel.c"]))

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": 3, "embedsignature": True},
        nthreads=int(os.environ.get("ZORDER_BUILD_JOBS", "0")) or None,
    ),
)
