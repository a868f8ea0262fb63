/* Ragged widths and more than 8 columns, run on a backend's uniform kernel.
 *
 * At byte index j the columns that still have a byte j are the same over runs of j (they
 * only drop out as j passes a column's width), and those k columns fill exactly k output
 * bytes per j. So a row's output is a sequence of segments: segment s covers byte indices
 * [start, end) of its k active columns and writes the contiguous slice of k * (end - start)
 * bytes after the previous segments. Each segment is a uniform interleave of k columns of
 * width end - start: the backend's own uniform kernel run on column views whose data
 * pointers are offset by `start`, writing at an offset into each output row.
 *
 * More than 8 active columns: the k-column group of byte index j is 8 bit levels of k
 * bits each (level i = bit 7 - i of every column, in column order). An 8-column interleave
 * of columns 8q..8q+7 gives, per byte index, 8 bytes: byte i = level i of those columns.
 * So blocks of 8 columns (the last one r = k mod 8 columns, whose group holds its 8 levels
 * of r bits each) run on the uniform kernel into a scratch buffer, and a merge puts
 * level i of every block side by side.
 *
 * Rows go in chunks of about 32 KiB of output so the segments of a chunk find its rows
 * still in the cache. The uniform kernel writes exactly the bytes it is given when its
 * out_stride is not its size, which is the case for every segment of a ragged row; when
 * one segment is the whole (possibly truncated) row, its rows may spill only into the next
 * row, written after them, and the last row of every kernel call is exact. */
#ifndef ZORDER_SEGMENTS_H
#define ZORDER_SEGMENTS_H

#include <stdlib.h>
#include <string.h>
#include "_kernel.h"

/* The uniform kernel of a backend: k (1..8) columns of one width, size <= k * width. */
typedef void (*zorder_uniform_fn)(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);

/* Columns one call can take here; more go to the bit loop (the caller's fallback). */
#define ZORDER_SEG_MAX_COLS 64
#define ZORDER_SEG_CHUNK_BYTES (32 << 10)

/* The active columns of the segment starting at byte index `start` (width > start), in
 * column order; returns their count. */
static inline int zorder_seg_active(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t start,
                                    int *active)
{
    int k = 0;
    ptrdiff_t c;
    for (c = 0; c < ncols; c++)
        if (cols[c].width > start)
            active[k++] = (int)c;
    return k;
}

/* The end of the segment starting at `start`: the smallest width above it (-1: none). */
static inline ptrdiff_t zorder_seg_end(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t start)
{
    ptrdiff_t end = -1, c;
    for (c = 0; c < ncols; c++)
        if (cols[c].width > start && (end < 0 || cols[c].width < end))
            end = cols[c].width;
    return end;
}

/* Merges the blocks of a segment of k > 8 columns for `nrows` rows: block q (kq columns,
 * kq = 8 except maybe the last) holds in row r of scratch[q] (stride kq * w) the kq-byte
 * groups of the w byte indices. Writes the first `limit` bytes of each row's k * w. */
static inline void zorder_seg_merge(uint8_t *const *scratch, const int *kq, int nblocks, int k,
                                    ptrdiff_t w, ptrdiff_t limit, ptrdiff_t nrows, uint8_t *out,
                                    ptrdiff_t out_stride)
{
    const int r = kq[nblocks - 1] == 8 ? 0 : kq[nblocks - 1];
    const int full = r ? nblocks - 1 : nblocks;
    ptrdiff_t row, j;
    int i, q;
    for (row = 0; row < nrows; row++) {
        uint8_t *dst = out + row * out_stride;
        for (j = 0; j * k < limit; j++) {
            uint8_t group[8 * ZORDER_SEG_MAX_COLS / 8];
            const ptrdiff_t n = limit - j * k < k ? limit - j * k : k;
            uint8_t *d = n == k ? dst + j * k : group;
            if (r == 0) {
                /* whole bytes: level i of block q is byte i of its group */
                for (q = 0; q < full; q++) {
                    const uint8_t *s = scratch[q] + row * 8 * w + 8 * j;
                    for (i = 0; i < 8; i++)
                        d[i * full + q] = s[i];
                }
            } else {
                /* the last block's levels are r bits each: a bit accumulator */
                const uint8_t *last = scratch[full] + row * r * w + r * j;
                uint64_t g = 0, acc = 0;
                int nb = 0, b;
                uint8_t *p = d;
                for (b = 0; b < r; b++)
                    g = (g << 8) | last[b];
                for (i = 0; i < 8; i++) {
                    for (q = 0; q < full; q++) {
                        acc = (acc << 8) | scratch[q][row * 8 * w + 8 * j + i];
                        *p++ = (uint8_t)(acc >> nb);
                    }
                    acc = (acc << r) | ((g >> (r * (7 - i))) & ((1u << r) - 1));
                    nb += r;
                    if (nb >= 8) {
                        nb -= 8;
                        *p++ = (uint8_t)(acc >> nb);
                    }
                }
            }
            if (d == group)
                memcpy(dst + j * k, group, (size_t)n);
        }
    }
}

/* Interleaves any shape of at most ZORDER_SEG_MAX_COLS columns with `uniform`; returns 0,
 * having written nothing, when the shape has more columns or scratch memory is short. */
static inline int zorder_segments_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                                       ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                                       zorder_uniform_fn uniform)
{
    int active[ZORDER_SEG_MAX_COLS];
    zorder_column view[ZORDER_SEG_MAX_COLS];
    uint8_t *scratch[ZORDER_SEG_MAX_COLS / 8];
    int kq[ZORDER_SEG_MAX_COLS / 8];
    uint8_t *buffer = NULL;
    ptrdiff_t chunk, r0, start, end, pos, widest_wide = 0;
    if (ncols > ZORDER_SEG_MAX_COLS)
        return 0;
    if (nrows <= 0 || size <= 0)
        return 1;
    /* Scratch for the widest segment of more than 8 columns, sized per chunk below. */
    for (start = 0, pos = 0; pos < size && (end = zorder_seg_end(cols, ncols, start)) > 0;
         start = end) {
        const int k = zorder_seg_active(cols, ncols, start, active);
        if (k > 8) {
            ptrdiff_t groups = (size - pos + k - 1) / k;
            if (groups > end - start)
                groups = end - start;
            if (k * groups > widest_wide)
                widest_wide = k * groups;
        }
        pos += k * (end - start);
    }
    chunk = ZORDER_SEG_CHUNK_BYTES / (size > 0 ? size : 1);
    if (chunk < 16)
        chunk = 16;
    if (widest_wide) {
        /* block outputs are as wide as the segment's (the blocks partition its columns) */
        buffer = (uint8_t *)malloc((size_t)(chunk * widest_wide) + 64);
        if (buffer == NULL)
            return 0;
    }
    for (r0 = 0; r0 < nrows; r0 += chunk) {
        const ptrdiff_t rows = nrows - r0 < chunk ? nrows - r0 : chunk;
        uint8_t *dst = out + r0 * out_stride;
        for (start = 0, pos = 0; pos < size && (end = zorder_seg_end(cols, ncols, start)) > 0;
             start = end) {
            const int k = zorder_seg_active(cols, ncols, start, active);
            ptrdiff_t w = end - start, limit = size - pos, t;
            if (limit > k * w)
                limit = k * w;
            if ((limit + k - 1) / k < w)
                w = (limit + k - 1) / k;   /* truncated: only the groups it needs */
            for (t = 0; t < k; t++) {
                const zorder_column *c = &cols[active[t]];
                view[t].data = c->data + r0 * c->row_stride + start;
                view[t].row_stride = c->row_stride;
                view[t].width = w;
            }
            if (k <= 8) {
                uniform(view, k, limit, rows, dst + pos, out_stride);
            } else {
                int q, nblocks = (k + 7) / 8;
                uint8_t *p = buffer;
                for (q = 0; q < nblocks; q++) {
                    kq[q] = k - 8 * q < 8 ? k - 8 * q : 8;
                    scratch[q] = p;
                    uniform(view + 8 * q, kq[q], kq[q] * w, rows, p, kq[q] * w);
                    p += rows * kq[q] * w;
                }
                zorder_seg_merge(scratch, kq, nblocks, k, w, limit, rows, dst + pos, out_stride);
            }
            pos += k * (end - start);
        }
    }
    free(buffer);
    return 1;
}

#endif
