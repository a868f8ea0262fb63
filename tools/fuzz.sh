#!/usr/bin/env bash
# Fuzz every zorder backend against bitloop (tests/fuzz/fuzz_interleave.py):
# first a seeded corpus, then atheris (coverage-guided) for SECONDS (default 600).
#
#   tools/fuzz.sh                 # 600 s
#   tools/fuzz.sh 3600 -jobs=2    # an hour; extra arguments go to libFuzzer
#
# Uses the zorder that python3 imports (the in-place build from the repository root:
# python3 setup.py build_ext --inplace). For the same under AddressSanitizer:
# tools/asan.sh --fuzz-seconds SECONDS. Needs atheris: pip install 'zorder[fuzz]'.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-600}"
shift || true
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
python3 tests/fuzz/fuzz_interleave.py --corpus "${ZORDER_FUZZ_CORPUS:-5000}"
python3 tests/fuzz/fuzz_interleave.py --seconds "$SECONDS_TO_RUN" -- "$@"
