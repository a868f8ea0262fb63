"""Compile zorder's C as MSVC would see it, with GCC standing in for MSVC (none runs here).

    python tools/msvc_check.py          # every unit; exit 1 naming the first that fails

MSVC has no ``__attribute__``, no ``__builtin_*``, no GNU inline assembly, no variable-length
arrays and no GNU C extensions; it compiles any intrinsic in any function. Each unit
(every hand-written x86-64 C file, and the C written inside the Cython modules) is
compiled with ``_MSC_VER`` defined, so that zorder/cpu/compiler.h takes its MSVC branch,
with MSVC's own spellings (``__forceinline``, ``__declspec``, ``_byteswap_uint64``,
``__cpuidex``, ``<intrin.h>``) stood in for, and with every GNU spelling poisoned after the
system headers: a use of one outside compiler.h's GCC branch is an error, as it would be
for MSVC. ``-std=c11 -pedantic-errors`` refuses GNU C, and ``-Werror=vla`` VLAs.

What this cannot show: that MSVC's own headers declare every intrinsic used (GCC's are
stood in for them), and how fast MSVC's code runs. docs/development.md says so.
"""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "zorder"
INCLUDES = ["zorder/interleave/csrc", "zorder/interleave/csrc/generic", "zorder/hilbert/csrc", "zorder/cpu"]
C_FILES = ["zorder/interleave/csrc/avx2/avx2.c", "zorder/interleave/csrc/avx512/avx512.c",
           "zorder/interleave/csrc/pdep_kernel.c", "zorder/hilbert/csrc/hilbert_kernel.c"]
#: The system headers, then MSVC's spellings, then GNU's poisoned.
PRELUDE = r"""
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>
#define __forceinline inline __attribute__((always_inline))
#define __declspec(what)
static inline uint64_t _byteswap_uint64(uint64_t v) { return __builtin_bswap64(v); }
static inline void __cpuidex(int r[4], int leaf, int sub) { (void)leaf; (void)sub; r[0] = r[1] = r[2] = r[3] = 0; }
#pragma GCC poison __attribute__ __builtin_bswap64 __builtin_prefetch __builtin_expect
#pragma GCC poison __builtin_ctzll __builtin_clzll __builtin_popcountll __builtin_assume_aligned
#pragma GCC poison __asm__ asm __typeof__ typeof __int128
"""
FLAGS = ["-std=c11", "-pedantic-errors", "-Werror=vla", "-Werror=implicit-function-declaration",
         "-Wno-unused-function", "-D_MSC_VER=1930", "-D_M_X64=100",
         "-mavx2", "-mbmi2", "-mavx512f", "-mavx512bw", "-mavx512vbmi", "-mgfni", "-mxsave"]
HEADER = re.compile(r'cdef extern from "([^"]+\.h)"')
VERBATIM = re.compile(r'cdef extern from \*:\s*\n\s*"""(.*?)"""', re.DOTALL)


def units():
    """(name, C text) of each unit to compile."""
    for rel in C_FILES:
        yield rel, f'#include "{ROOT / rel}"\n'
    headers = set()
    # (the .pxd files too: a header they name is C the modules that cimport them compile)
    for module in sorted([*PKG.rglob("*.pyx"), *PKG.rglob("*.pxd")]):
        text = module.read_text(encoding="utf-8")
        # headers a module names in `cdef extern from "x.h"`, found beside it or on the path
        for name in HEADER.findall(text):
            beside = module.parent / name
            headers.add(str(beside.relative_to(ROOT)) if beside.exists() else name)
        for k, block in enumerate(VERBATIM.findall(text)):
            # the block is a Python string literal: its escapes are Cython's to decode
            yield f"{module.relative_to(ROOT)} (C block {k + 1})", ast.literal_eval(f'"""{block}"""')
    for name in sorted(headers - {"Python.h"}):
        yield name, f'#include "{ROOT / name if (ROOT / name).exists() else name}"\n'


def main() -> int:
    cc = shutil.which("gcc")
    if cc is None:
        print("msvc_check: needs gcc (it stands in for MSVC)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        stub = pathlib.Path(tmp)
        (stub / "intrin.h").write_text("#include <immintrin.h>\n")
        (stub / "prelude.h").write_text(PRELUDE)
        count = 0
        for name, text in units():
            source = stub / "unit.c"
            source.write_text(text)
            command = [cc, "-fsyntax-only", *FLAGS, "-I", str(stub), *(f"-I{ROOT / i}" for i in INCLUDES),
                       "-include", str(stub / "prelude.h"), str(source)]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode:
                print(result.stderr[-3000:], file=sys.stderr)
                print(f"msvc_check: {name} does not compile as MSVC C (above)", file=sys.stderr)
                return 1
            count += 1
    print(f"msvc_check: {count} units compile as MSVC would see them (GCC standing in)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
