/* A backend as a table: its stage functions, its costs and its fallback. The generic
 * driver (driver.h) runs every backend's calls from this table, and the segment machinery
 * (segments.h) its ragged and many-column calls; a backend module only fills one. */
#ifndef ZORDER_BACKEND_H
#define ZORDER_BACKEND_H

#include "kernel.h"

/* The uniform kernel of a backend: k (1..8) columns of one width, size <= k * width. */
typedef void (*zorder_uniform_fn)(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);
/* The same, or 0 having written nothing where it declines the shape. */
typedef int (*zorder_try_uniform_fn)(const zorder_column *cols, int k, ptrdiff_t size,
                                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);
/* A RowsKernel (kernel.pxd's contract) that may decline: 0, having written nothing. */
typedef int (*zorder_try_rows_fn)(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);
/* The first rows of a call, whatever it leaves: returns how many it wrote. */
typedef ptrdiff_t (*zorder_prefix_rows_fn)(const zorder_column *cols, int ncols,
                                           ptrdiff_t size, ptrdiff_t nrows, uint8_t *out,
                                           ptrdiff_t out_stride);
/* Whether the backend leaves a call of this shape to its fallback at once. */
typedef int (*zorder_defer_fn)(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size);

/* The first k bits of each field of a padded interleave, side by side (segments.h's
 * zorder_seg_squeeze has the contract). */
typedef void (*zorder_squeeze_fn)(const uint8_t *src, int k, int nb, ptrdiff_t w,
                                  ptrdiff_t limit, ptrdiff_t rows, uint8_t *out,
                                  ptrdiff_t out_stride);
/* One segment's bytes of every output row of a call to zorder_assemble_fn: row i's n bytes
 * at src + i * stride go to byte `at` of output row i. */
typedef struct {
    const uint8_t *src;
    ptrdiff_t stride, n, at;
} zorder_seg_piece;
/* Puts the first rows of `rows` output rows (size bytes each, back to back) together from
 * their pieces, in order, writing no byte outside them and reading no piece byte past row
 * rows - 1's n; returns how many it did (the rest, a few blocks of the backend's at most,
 * are left to the caller), 0 for a shape it does not take. */
typedef ptrdiff_t (*zorder_assemble_fn)(const zorder_seg_piece *pieces, int npieces,
                                        ptrdiff_t size, ptrdiff_t rows, uint8_t *out);
/* The first w bytes of each of `rows` rows st bytes apart to rows back to back (any w and
 * st: the column's own row stride); returns the rows done from the first (the rest are
 * left to the caller), 0 for a (w, st) it does not take. */
typedef ptrdiff_t (*zorder_slice_fn)(uint8_t *dst, const uint8_t *src, ptrdiff_t rows,
                                     ptrdiff_t w, ptrdiff_t st);
/* The bytes of nb planes of n bytes each (plane g at planes + g * n) taken in turn: out
 * byte i * nb + g is plane g's byte i (nb * n bytes). */
typedef void (*zorder_merge_fn)(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out);
/* zorder_squeeze_fn's output from the nb planes of a padded interleave (rows * 8 * w bytes
 * each, back to back) without their merge; returns 0, having written nothing, for a k and
 * nb it does not take. With rows 0 it writes nothing either way: the planner asks so. */
typedef int (*zorder_squeeze_planes_fn)(const uint8_t *planes, int k, int nb, ptrdiff_t w,
                                        ptrdiff_t limit, ptrdiff_t rows, uint8_t *out,
                                        ptrdiff_t out_stride);

/* How narrow uniform columns (a width not a multiple of 8) that the vector kernel declines
 * reach it anyway: not at all, as rows of 8 bytes where their rows are back to back
 * (segments.h's zorder_uniform_rows), or gathered into rows back to back first
 * (zorder_segments_rows). */
enum { ZORDER_NARROW_NONE, ZORDER_NARROW_PACKED, ZORDER_NARROW_GATHER };

typedef struct zorder_backend zorder_backend;
struct zorder_backend {
    const char *name;

    /* Whole calls, in the order driver.h tries them. */
    int copy_one_column;             /* one column: its prefix copied */
    zorder_defer_fn defer;           /* shapes sent to the fallback at once; NULL: none */
    zorder_prefix_rows_fn planar;    /* the first rows of calls of up to 32 columns */
    zorder_try_rows_fn rows;         /* a kernel for whole calls; NULL: none */
    ptrdiff_t min_rows;              /* fewer rows go to the fallback (rows: only if there
                                      * is a scalar kernel) */

    /* k <= 8 columns of one width: a whole call, or a stage of a segmented one. */
    zorder_try_uniform_fn vector;    /* NULL: none */
    ptrdiff_t min_vector_rows;       /* fewer rows, and one column, skip it */
    int narrow;                      /* ZORDER_NARROW_* */
    ptrdiff_t narrow_min_rows;
    zorder_uniform_fn scalar;        /* takes what the vector kernel declines; NULL: the
                                      * backend has no uniform and segment stages */
    zorder_uniform_fn uniform;       /* the whole uniform stage: ZORDER_BACKEND's, or scalar */
    zorder_slice_fn cut;             /* truncated rows out of scratch; NULL: copies */

    /* Ragged widths and more than 8 columns (segments.h). */
    int round8;                      /* a truncated segment computes whole 8-byte pieces */
    int gather_all;                  /* every segment of 2-8 columns through scratch rows */
    int cost[9];                     /* segments.h's zorder_seg_plan: cost[a] an a-column
                                      * pass, cost[1] any pass, cost[0] the squeeze */
    int merge_cost;                  /* the planes' merge pass (cost[1] is added) */
    zorder_merge_fn merge;           /* zorder_seg_merge's contract; NULL: that one */
    zorder_squeeze_fn squeeze;       /* zorder_seg_squeeze's contract; NULL: that one */
    zorder_squeeze_planes_fn squeeze_planes;   /* NULL: merge, then squeeze */
    int squeeze_planes_cost;         /* its cost, for the merge's and the squeeze's */
    zorder_assemble_fn assemble;     /* narrow ragged rows (zorder_seg_narrow); NULL: moves */
    zorder_slice_fn slice;           /* their column slices; NULL: zorder_seg_slice */

    ptrdiff_t *stream_min;           /* output bytes from which stores stream (tests set it) */
    const zorder_backend *fallback;  /* what it leaves; NULL only for the bit loop */
};

/* The stage costs of a backend that measured none: 2, 4 and 8 columns the cheapest passes
 * (transposes, whole-word PDEPs), 5-7 the dearest; its merge (zorder_seg_merge, plain C),
 * where the compiler vectorizes it, a quarter of the cheapest pass; the scalar squeeze five
 * passes, so padding runs only where no split exists (11, 13, 22 columns). NOTES.md
 * "Cost vector: default". */
#define ZORDER_DEFAULT_COSTS .cost = {100, 0, 20, 30, 20, 50, 60, 70, 20}, .merge_cost = 5

#endif
