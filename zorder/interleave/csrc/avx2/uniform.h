/* AVX2 backend: zorder_avx2_uniform, the uniform kernel's entry: which of the methods
 * runs a call. */
#ifndef ZORDER_AVX2_UNIFORM_H
#define ZORDER_AVX2_UNIFORM_H

#include "rows.h"
#include "prefix.h"

/* Rows [done, nrows) of a call whose first `done` rows a block loop wrote (fewer than a
 * block's rows left), as a call of their own; returns 1. */
static int uniform_rest(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        ptrdiff_t done, uint8_t *out, ptrdiff_t out_stride,
                        zorder_uniform_fn fallback)
{
    zorder_column view[ZORDER_MAX_GROUP];
    int c;
    if (done >= nrows)
        return 1;
    for (c = 0; c < k; c++) {
        view[c] = cols[c];
        view[c].data = cols[c].data + done * cols[c].row_stride;
    }
    if (!zorder_avx2_uniform(view, k, size, nrows - done, out + done * out_stride, out_stride,
                             fallback))
        fallback(view, k, size, nrows - done, out + done * out_stride, out_stride);
    return 1;
}

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t width, need, whole, slabs;
    int c;
    if (k < 2 || k > 8 || nrows < 4)
        return 0;
    if (size <= 0)
        return 1;
    width = cols[0].width;
    need = (size + k - 1) / k;   /* bytes of each column the rows use */
    whole = need / 8;
    slabs = (need + 7) / 8;
    if (size == 8 * k * whole) {
        rows_any(k, cols, whole, nrows, out, out_stride, 8 * k);
        return 1;
    }
    if (k >= 4 && (need == 2 || need == 4 || (need == 1 && k < 8))
        && (size != k * need || out_stride != size || (!ZLUT(k) && (k == 5 || k == 7)))) {
        /* cut inside the prefixes, rows apart, or blocks that store past a row's end (with
         * 2 or 3 columns, and 8 cut to 1-byte prefixes, a whole slab stored from the
         * registers is cheaper: 2x8 -> 3 2.0 vs 2.6 ns/row, 3x8 -> 5 3.1 vs 3.8, 8x8 -> 6
         * 7.6 vs 8.3-9.7) */
        const ptrdiff_t done = prefix_staged(k, cols, (int)need, size, nrows, out, out_stride);
        if (done > 0)
            return uniform_rest(cols, k, size, nrows, done, out, out_stride, fallback);
    }
    if ((need == 1 || need == 2 || need == 4) && size == k * need && out_stride == size) {
        const ptrdiff_t done = prefix_any(k, cols, (int)need, nrows, out, 0);
        if (done > 0)
            return uniform_rest(cols, k, size, nrows, done, out, out_stride, fallback);
    }
    if (8 * slabs <= width) {
        /* rows ending inside a slab: that slab computed whole, its needed bytes stored */
        rows_any(k, cols, slabs, nrows, out, out_stride, size - 8 * k * (slabs - 1));
        return 1;
    }
    if (whole == 0)
        return 0;
    /* the whole slabs here, the bytes after them (fewer than 8 per column) on fallback */
    rows_any(k, cols, whole, nrows, out, out_stride, 8 * k);
    for (c = 0; c < k; c++) {
        view[c] = cols[c];
        view[c].data = cols[c].data + 8 * whole;
        view[c].width = width - 8 * whole;
    }
    fallback(view, k, size - 8 * k * whole, nrows, out + 8 * k * whole, out_stride);
    return 1;
}

#endif  /* ZORDER_AVX2_UNIFORM_H */
