#!/usr/bin/env bash
# Instructions executed per row by the neon and table row kernels on aarch64, counted under
# emulation (there is no aarch64 machine here to time them; benchmarks/NOTES.md, section neon).
#
#   tools/neon_icount.sh SIZE SPACED WIDTH...   # e.g. tools/neon_icount.sh 64 0 8 8 8 8 8 8 8 8
#
# SPACED=1 gives every column a row stride of width + 8 (rows not back to back). A static
# aarch64 binary (aarch64-linux-gnu-gcc, setup.py's flags) runs each backend's kernel as its
# module composes it; qemu-aarch64-static -singlestep -d exec,nochain logs one line per
# executed instruction; per row = (lines at 2,000 rows - lines at 1,000 rows) / 1,000.
# Needs gcc-aarch64-linux-gnu and qemu-user-static (no root, no binfmt).
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/count.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "neon_kernel.h"
#include "table.h"
#include "driver.h"

/* as neon.pyx's table */
ZORDER_BACKEND(neon) = {
    .name = "neon", .vector = zorder_neon_uniform, .narrow = ZORDER_NARROW_GATHER,
    .narrow_min_rows = 8, .scalar = zorder_table_uniform, .uniform = neon_uniform,
    .round8 = 1, ZORDER_DEFAULT_COSTS, .fallback = &zorder_bitloop_backend,
};
ZORDER_BACKEND_ROWS(zorder_table_backend)

int main(int argc, char **argv)
{
    const int neon = !strcmp(argv[1], "neon"), spaced = atoi(argv[4]), ncols = argc - 5;
    const ptrdiff_t n = atol(argv[2]), size = atol(argv[3]);
    zorder_column cols[64];
    int c;
    zorder_table_init();
    zorder_neon_init();
    for (c = 0; c < ncols; c++) {
        const ptrdiff_t w = atol(argv[5 + c]), stride = spaced ? w + 8 : w;
        cols[c].data = calloc((size_t)(n * stride + 16), 1);   /* counts do not depend on bytes */
        cols[c].row_stride = stride;
        cols[c].width = w;
    }
    uint8_t *out = calloc((size_t)(n * size + 64), 1);
    (neon ? neon_rows : zorder_table_backend_rows)(cols, ncols, size, n, out, size);
    return out[0] == 255;
}
C
aarch64-linux-gnu-gcc -O3 -fno-strict-aliasing -static -w -I"$SRC/zorder/interleave/csrc" \
    -I"$SRC/zorder/interleave/csrc/generic" -I"$SRC/zorder/cpu" "$WORK/count.c" "$SRC/zorder/interleave/csrc/neon_kernel.c" -o "$WORK/count"
lines() {
    qemu-aarch64-static -singlestep -d exec,nochain -D "$WORK/log" "$WORK/count" "$@" >/dev/null
    grep -c '^Trace' "$WORK/log"
}
for backend in neon table; do
    a=$(lines "$backend" 1000 "$@")
    b=$(lines "$backend" 2000 "$@")
    echo "$backend $(( (b - a) / 1000 )).$(( (b - a) % 1000 / 100 )) instructions a row"
done
