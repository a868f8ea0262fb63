/* The generic driver: one backend's rows function written once, for every backend, from
 * its table (backend.h). Each backend's C is compiled with it into the backend's module
 * (simdjson's src/generic/ layout), so the compiler sees a constant table.
 *
 * A call goes through, in this order, what the table has:
 *   1. one column copied (copy_one_column); shapes deferred to the fallback (defer);
 *   2. the first rows by a prefix method (planar), the rest of the call going on below;
 *   3. a kernel for whole calls (rows), from min_rows rows when there is a scalar kernel;
 *   4. from min_rows rows, with a scalar kernel: uniform widths as rows of 8 bytes where
 *      they allow it (segments.h's zorder_uniform_rows_cut), ragged widths and 9-64
 *      columns segment by segment (zorder_segments_rows), each uniform piece on the
 *      uniform stage below;
 *   5. the fallback backend, from step 1, with what is left.
 * The uniform stage (k <= 8 columns of one width): the vector kernel, then narrow widths
 * regrouped to reach it (narrow), then the scalar kernel. */
#ifndef ZORDER_DRIVER_H
#define ZORDER_DRIVER_H

#include "backend.h"
#include "segments.h"
#include "bitloop.h"

/* The most columns the prefix method may take (avx2's byte planes: 32). */
#define ZORDER_PLANAR_MAX_COLS 32

static inline void zorder_driver_uniform(const zorder_backend *b, const zorder_column *cols,
                                         int k, ptrdiff_t size, ptrdiff_t nrows, uint8_t *out,
                                         ptrdiff_t out_stride)
{
    if (b->vector != NULL && k >= 2 && nrows >= b->min_vector_rows
        && b->vector(cols, k, size, nrows, out, out_stride))
        return;
    if (b->narrow != ZORDER_NARROW_NONE && k >= 2 && nrows >= b->narrow_min_rows
        && cols[0].width % 8 != 0) {
        if (b->narrow == ZORDER_NARROW_PACKED) {
            /* rows back to back, read whole: one long row, as rows of 8 bytes */
            int t, packed = size == k * cols[0].width && out_stride == size;
            for (t = 0; t < k && packed; t++)
                packed = cols[t].row_stride == cols[0].width;
            if (packed) {
                zorder_uniform_rows(cols, k, size, nrows, out, out_stride, b->uniform);
                return;
            }
        } else if (zorder_segments_rows(cols, k, size, nrows, out, out_stride, b->uniform,
                                        b->round8, b->gather_all, b)) {
            return;   /* gathered into rows back to back (segments.h calls back here) */
        }
    }
    b->scalar(cols, k, size, nrows, out, out_stride);
}

static inline void zorder_driver_rows(const zorder_backend *b, const zorder_column *cols,
                                      ptrdiff_t ncols, ptrdiff_t size, ptrdiff_t nrows,
                                      uint8_t *out, ptrdiff_t out_stride)
{
    zorder_column rest[ZORDER_PLANAR_MAX_COLS];
    for (; b != NULL; b = b->fallback) {
        if (b->copy_one_column && ncols == 1) {   /* one column interleaves to itself */
            zorder_copy_rows_exact(out, out_stride, cols[0].data, cols[0].row_stride, size,
                                   nrows);
            return;
        }
        if (b->defer != NULL && b->defer(cols, ncols, size))
            continue;
        if (b->planar != NULL && ncols <= ZORDER_PLANAR_MAX_COLS) {
            const ptrdiff_t done = b->planar(cols, (int)ncols, size, nrows, out, out_stride);
            if (done > 0) {
                cols = zorder_columns_after(rest, cols, ncols, done);
                nrows -= done;
                out += done * out_stride;
            }
        }
        if (b->rows != NULL && (nrows >= b->min_rows || b->scalar == NULL)
            && b->rows(cols, ncols, size, nrows, out, out_stride))
            return;
        if (b->scalar != NULL && nrows >= b->min_rows) {
            if (zorder_is_uniform(cols, ncols)) {
                zorder_uniform_rows_cut(cols, (int)ncols, size, nrows, out, out_stride,
                                        b->uniform, b->cut);
                return;
            }
            /* (0: more than 64 columns, or no memory for the scratch rows) */
            if (zorder_segments_rows(cols, ncols, size, nrows, out, out_stride, b->uniform,
                                     b->round8, b->gather_all, b))
                return;
        }
    }
}


/* ZORDER_BACKEND(NAME) = { ...fields... }; defines the table NAME, NAME_uniform (its
 * uniform stage, for its `.uniform`) and NAME_rows (its RowsKernel). */
#define ZORDER_BACKEND(NAME) \
    static const zorder_backend NAME; \
    static ZORDER_UNUSED void NAME##_uniform(const zorder_column *cols, int k, \
                                                   ptrdiff_t size, ptrdiff_t nrows, \
                                                   uint8_t *out, ptrdiff_t out_stride) \
    { \
        zorder_driver_uniform(&NAME, cols, k, size, nrows, out, out_stride); \
    } \
    static ZORDER_UNUSED void NAME##_rows(const zorder_column *cols, ptrdiff_t ncols, \
                                                ptrdiff_t size, ptrdiff_t nrows, \
                                                uint8_t *out, ptrdiff_t out_stride) \
    { \
        zorder_driver_rows(&NAME, cols, ncols, size, nrows, out, out_stride); \
    } \
    static const zorder_backend NAME

/* The RowsKernel of a table defined without ZORDER_BACKEND (the generic layer's own). */
#define ZORDER_BACKEND_ROWS(NAME) \
    static ZORDER_UNUSED void NAME##_rows(const zorder_column *cols, ptrdiff_t ncols, \
                                                ptrdiff_t size, ptrdiff_t nrows, \
                                                uint8_t *out, ptrdiff_t out_stride) \
    { \
        zorder_driver_rows(&NAME, cols, ncols, size, nrows, out, out_stride); \
    }

#endif
