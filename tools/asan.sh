#!/usr/bin/env bash
# Build zorder's extensions with AddressSanitizer in a throwaway copy of the tree, then run
# the tests and the fuzz corpus under it. The normal in-place build is never touched.
#
#   tools/asan.sh                 # the tests that reach compiled code + a 2000-case fuzz corpus
#   tools/asan.sh --quick         # what CI runs: fewer tests, a 600-case corpus (about 3 min)
#   tools/asan.sh --full          # the whole suite but the integrations + a 20000-case corpus
#   tools/asan.sh --fuzz-seconds 300     # also run the atheris fuzzer for 300 s under ASan
#   tools/asan.sh -- -k threads   # extra arguments after -- go to pytest
#
# Environment: ZORDER_ASAN_DIR=/some/dir builds the instrumented copy there (afresh on every
# run) and keeps it, to rerun one test by hand with the environment printed at the end; by
# default a temporary directory is used and removed at the end.
#
# How: setup.py honours ZORDER_SANITIZE=address (-fsanitize=address -O1 -g). The python
# binary itself is not instrumented, so gcc's libasan is LD_PRELOADed; PYTHONMALLOC=malloc
# routes Python's own allocations through ASan too, so a freed bytes object read by a
# kernel is caught (pymalloc would hide it). Python leaks on purpose at exit, so leak
# detection is off; tests/test_leaks.py checks for leaks instead. allocator_may_return_null
# lets a huge allocation fail with NULL (MemoryError) as it does without ASan.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE=default
FUZZ_SECONDS=0
PYTEST_EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) MODE=quick ;;
        --full) MODE=full ;;
        --fuzz-seconds) FUZZ_SECONDS="$2"; shift ;;
        --) shift; PYTEST_EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "asan.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
PYTHON="${PYTHON:-python3}"

LIBASAN="$(gcc -print-file-name=libasan.so)"
if [ ! -e "$LIBASAN" ]; then
    echo "asan.sh: gcc's libasan.so not found (on Debian: apt-get install libasan8)" >&2
    exit 2
fi
LIBASAN="$(readlink -f "$LIBASAN")"

if [ -n "${ZORDER_ASAN_DIR:-}" ]; then
    WORK="$ZORDER_ASAN_DIR"
    mkdir -p "$WORK"
else
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/zorder-asan.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
fi

echo "asan.sh: copying the tree to $WORK"
# The working tree as it is (uncommitted files included), without builds or git data.
tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude='*.so' --exclude='__pycache__' \
    --exclude=./.pytest_cache --exclude=./.hypothesis --exclude=./.benchmarks -cf - . \
    | tar -C "$WORK" -xf -
# Cython's C output is regenerated, so nothing stale is compiled.
find "$WORK/zorder" -name '*.pyx' | while read -r pyx; do rm -f "${pyx%.pyx}.c"; done

echo "asan.sh: building with ZORDER_SANITIZE=address (log: $WORK/asan-build.log)"
if ! (cd "$WORK" && ZORDER_SANITIZE=address "$PYTHON" setup.py build_ext --inplace -j2 \
        >"$WORK/asan-build.log" 2>&1); then
    tail -40 "$WORK/asan-build.log" >&2
    echo "asan.sh: the ASan build failed" >&2
    exit 1
fi
sos=$(find "$WORK/zorder" -name '*.so')
if [ -z "$sos" ]; then
    echo "asan.sh: the ASan build produced no extension modules" >&2
    exit 1
fi
for so in $sos; do
    if ! grep -q __asan_init "$so"; then
        echo "asan.sh: $so is not instrumented with ASan" >&2
        exit 1
    fi
done

export LD_PRELOAD="$LIBASAN${LD_PRELOAD:+:$LD_PRELOAD}"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export PYTHONMALLOC=malloc
export PYTHONPATH="$WORK${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$WORK"

# Make sure the instrumented copy is the one imported.
"$PYTHON" - "$WORK" <<'EOF'
import os, sys, zorder
where = os.path.realpath(os.path.dirname(zorder.__file__))
if not where.startswith(os.path.realpath(sys.argv[1])):
    sys.exit(f"asan.sh: imported zorder from {where}, not the ASan copy")
print(f"asan.sh: zorder {zorder.__version__} from {where}; backends {zorder.available_backends()}")
EOF

case "$MODE" in
    quick)
        # Everything that reaches compiled code, except the slow differential suites.
        TESTS=(tests/test_vectors.py tests/test_errors.py tests/test_buffers.py
               tests/test_threads.py tests/test_fuzz_harness.py tests/test_simd.py
               tests/test_deinterleave.py tests/test_ordered.py tests/test_shapes.py
               tests/test_dispatch.py tests/test_hilbert.py tests/test_rank.py
               tests/test_gather.py)
        CORPUS=600 ;;
    full)
        # test_leaks measures RSS, which ASan's quarantine of freed memory makes grow; the
        # integration tests mostly exercise other projects' native code (matplotlib's
        # font code aborts at import under a preloaded ASan, pyarrow, dask workers).
        TESTS=(tests --ignore=tests/test_leaks.py --ignore=tests/test_bench_cli.py
               --ignore=tests/test_dask.py --ignore=tests/test_parquet_cli.py
               --ignore=tests/test_spark.py --ignore=tests/test_iceberg.py
               --ignore=tests/test_hardening.py --ignore=tests/test_cli_safety.py)
        CORPUS=20000 ;;
    *)
        TESTS=(tests/test_vectors.py tests/test_fuzz.py tests/test_rows.py tests/test_errors.py
               tests/test_buffers.py tests/test_threads.py tests/test_fuzz_harness.py
               tests/test_simd.py tests/test_deinterleave.py tests/test_ordered.py
               tests/test_values.py tests/test_shapes.py tests/test_dispatch.py
               tests/test_hilbert.py tests/test_rank.py tests/test_gather.py)
        CORPUS=2000 ;;
esac
EXISTING=()
for t in "${TESTS[@]}"; do [ -e "$t" ] || [ "${t#-}" != "$t" ] && EXISTING+=("$t"); done

# atheris is one process: it runs beside the tests (and the seeded corpus after them), so
# that on two CPUs it never runs alone with the other CPU idle, as it did after them.
fuzz_pid=
if [ "$FUZZ_SECONDS" != 0 ]; then
    echo "asan.sh: atheris for $FUZZ_SECONDS s, beside the tests (log: $WORK/atheris.log)"
    "$PYTHON" tests/fuzz/fuzz_interleave.py --seconds "$FUZZ_SECONDS" >"$WORK/atheris.log" 2>&1 &
    fuzz_pid=$!
fi
stop_fuzz() { if [ -n "$fuzz_pid" ]; then kill "$fuzz_pid" 2>/dev/null || true; fi; }

echo "asan.sh: pytest ${EXISTING[*]} ${PYTEST_EXTRA[*]:-}"
# -p no:cacheprovider: nothing is written back to the copy.
if ! "$PYTHON" -m pytest -q -p no:cacheprovider "${EXISTING[@]}" "${PYTEST_EXTRA[@]}"; then
    stop_fuzz
    echo "asan.sh: the tests failed under ASan (above)" >&2
    exit 1
fi

echo "asan.sh: fuzz corpus, $CORPUS seeded cases on every backend"
if ! "$PYTHON" tests/fuzz/fuzz_interleave.py --corpus "$CORPUS"; then
    stop_fuzz
    echo "asan.sh: the fuzz corpus failed (above)" >&2
    exit 1
fi
if [ -n "$fuzz_pid" ]; then
    if ! wait "$fuzz_pid"; then
        cat "$WORK/atheris.log" >&2
        echo "asan.sh: atheris failed under ASan (its log is above)" >&2
        exit 1
    fi
    tail -n 3 "$WORK/atheris.log"
fi
echo "asan.sh: clean"
if [ -n "${ZORDER_ASAN_DIR:-}" ]; then
    echo "asan.sh: to rerun by hand: cd $WORK && LD_PRELOAD=$LIBASAN PYTHONMALLOC=malloc" \
        "ASAN_OPTIONS=$ASAN_OPTIONS PYTHONPATH=$WORK $PYTHON -m pytest ..."
fi
