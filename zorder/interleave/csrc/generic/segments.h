/* The generic layer's segment machinery: ragged widths and more than 8 columns, run on a
 * backend's uniform kernel.
 *
 * At byte index j the columns that still have a byte j are the same over runs of j (they
 * only drop out as j passes a column's width), and those k columns fill exactly k output
 * bytes per j. So a row's output is a sequence of segments: segment s covers byte indices
 * [start, end) of its k active columns and writes the contiguous slice of k * (end - start)
 * bytes after the previous segments. Each segment is a uniform interleave of k columns of
 * width end - start: the backend's own uniform kernel run on column views whose data
 * pointers are offset by `start`, writing at an offset into each output row.
 *
 * More than 8 active columns (zorder_seg_wide): k = A * B columns are the B-column
 * interleave of A-column interleaves, so two (or more) uniform passes through scratch;
 * k = 8 * B columns are also B "planes" (8-column interleaves of columns 8g..8g+7) whose
 * bytes, taken in turn, are the k-column interleave; k with a prime factor above 7 (or
 * where it is cheaper) as K = 8 * ceil(k / 8) columns, the last K - k zero, whose zero
 * bits are then squeezed out. The plan is the cheapest under the backend's own stage
 * costs (zorder_seg_plan).
 *
 * Narrow ragged widths (2-8 columns of 1-8 bytes: 3+5+8, 1+2+3+4) make segments of a few
 * bytes each; all the segments of a chunk are interleaved into scratch first and each row
 * is then put together once (zorder_seg_narrow).
 *
 * Rows go in chunks of about 32 KiB of output (256 KiB with more than 8 columns) so the
 * segments of a chunk find its rows still in the cache. The uniform kernel writes exactly
 * the bytes it is given when its out_stride is not its size, which is the case for every
 * segment of a ragged row; when one segment is the whole (possibly truncated) row, its rows
 * may spill only into the next row, written after them, and the last row of every kernel
 * call is exact. */
#ifndef ZORDER_SEGMENTS_H
#define ZORDER_SEGMENTS_H

#include <stdlib.h>
#include <string.h>
#include "compiler.h"
#include "backend.h"

static inline void zorder_copy_short(uint8_t *dst, const uint8_t *src, ptrdiff_t n);
static inline void zorder_copy_rows_exact(uint8_t *dst, ptrdiff_t dst_stride, const uint8_t *src,
                                          ptrdiff_t src_stride, ptrdiff_t n, ptrdiff_t rows);
static inline void zorder_uniform_rows(const zorder_column *cols, int k, ptrdiff_t size,
                                       ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                                       zorder_uniform_fn uniform);

/* Columns one call can take here; more go to the bit loop (the caller's fallback). */
#define ZORDER_SEG_MAX_COLS 64

/* The columns from their row `done` on, in rest (room for ncols): what is left of a call
 * after a stage did its first rows. */
static inline const zorder_column *zorder_columns_after(zorder_column *rest,
                                                        const zorder_column *cols,
                                                        ptrdiff_t ncols, ptrdiff_t done)
{
    ptrdiff_t c;
    for (c = 0; c < ncols; c++) {
        rest[c] = cols[c];
        rest[c].data = cols[c].data + done * cols[c].row_stride;
    }
    return rest;
}
#ifndef ZORDER_SEG_CHUNK_BYTES
#define ZORDER_SEG_CHUNK_BYTES (32 << 10)
#endif
/* More than 8 columns: the first stage reads k column streams at once, and runs of a
 * few hundred bytes per column (32 KiB of 48 x 8 B rows: 680 B) starve the prefetchers;
 * larger chunks, their scratch still in L2, measured faster for that stage (NOTES.md
 * "Segments: chunks"). */
#ifndef ZORDER_SEG_WIDE_CHUNK_BYTES
#define ZORDER_SEG_WIDE_CHUNK_BYTES (256 << 10)
#endif

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

/* The level fields of a k-column interleave padded to K = 8 * nb columns (k < K, the last
 * K - k columns zero): each of `rows` rows of src (stride K * w) holds 8 * w fields of nb
 * bytes, field f = bit level f % 8 of byte index f / 8, its first k bits the real columns'
 * and the rest zero. The k-column interleave is those first k bits of every field side by
 * side (a row's k * w bytes are 8 * w fields of k bits). Writes the first `limit` bytes of
 * each row. Word at a time: a field is one big-endian 64-bit load (nb <= 8), appended to
 * a bit accumulator. src rows may be read 8 bytes past their end (scratch has room). */
static inline uint64_t zorder_seg_load_be(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if ZORDER_LITTLE_ENDIAN
    return ZORDER_BSWAP64(v);
#else
    return v;
#endif
}

static inline void zorder_seg_store_be(uint8_t *p, uint64_t v)
{
#if ZORDER_LITTLE_ENDIAN
    v = ZORDER_BSWAP64(v);
#endif
    memcpy(p, &v, 8);
}

static inline void zorder_seg_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w,
                                      ptrdiff_t limit, ptrdiff_t rows, uint8_t *out,
                                      ptrdiff_t out_stride)
{
    const uint64_t keep = k >= 64 ? ~(uint64_t)0 : ~(~(uint64_t)0 >> k);
    const ptrdiff_t in_stride = (ptrdiff_t)8 * nb * w;
    /* q fields a 64-bit load (nb <= 4: 4 or 2), packed to q * k bits before the append */
    const int q = 8 / nb >= 4 ? 4 : 8 / nb >= 2 ? 2 : 1, n = q * k, field_bits = 8 * nb;
    /* the loads this row needs: those holding its first `limit` bytes (8 * w fields,
     * a multiple of q, so rounding up stays within the row) */
    const ptrdiff_t loads = ((8 * limit + k - 1) / k + q - 1) / q;
    uint8_t tail[16];
    ptrdiff_t row, f;
    int i;
    for (row = 0; row < rows; row++) {
        const uint8_t *s = src + row * in_stride;
        uint8_t *d = out + row * out_stride, *p = d;
        /* whole 8-byte stores go straight to the row while they end within `limit` */
        uint8_t *stop = d + limit - 8;
        uint64_t acc = 0;
        int bits = 0;   /* bits held in acc, from its top */
        for (f = 0; f < loads; f++, s += q * nb) {
            const uint64_t v = zorder_seg_load_be(s);
            uint64_t x = v & keep;
            for (i = 1; i < q; i++)
                x |= ((v << (i * field_bits)) & keep) >> (i * k);
            acc |= x >> bits;
            bits += n;
            if (bits >= 64) {
                if (p <= stop) {
                    zorder_seg_store_be(p, acc);
                    p += 8;
                } else {
                    zorder_seg_store_be(tail, acc);
                    memcpy(p, tail, (size_t)(d + limit - p));
                    p = d + limit;
                }
                bits -= 64;
                acc = bits ? x << (n - bits) : 0;
            }
        }
        if (p < d + limit) {
            zorder_seg_store_be(tail, acc);
            memcpy(p, tail, (size_t)(d + limit - p < 8 ? d + limit - p : 8));
        }
    }
}

/* How a k-column interleave (k > 8) runs, for zorder_seg_wide: k = A * B in two uniform
 * stages (A columns per stage-1 block, k / A blocks; the second stage recursing when
 * B > 8), or (A = 1) k = 8 * B as planes, or (A = 0) padded with zero columns to
 * K = 8 * ceil(k / 8), which always has a plan, then squeezed (zorder_seg_squeeze).
 * Every stage passes over all the bytes, so a plan's cost per byte is the sum of its
 * stages' costs per byte: cost[a] for an a-column pass (a = 2..8, in cache, the backend's
 * own figures) plus cost[1] for any pass (what the in-cache figures miss), and for the pad
 * path K / k times the cost of K plus cost[0], the squeeze's. The cheapest plan is taken.
 *
 * Planes (A = 1): output byte 8j + i of an 8-column interleave of columns 8g..8g+7 holds
 * bit 7 - i of byte j of those 8 columns, and in the k-column interleave (k = 8B) those 8
 * bits are byte (8j + i) * B + g. So B uniform 8-column passes and one pass that takes
 * their bytes in turn (zorder_merge_fn, merge_cost): a byte shuffle where the two-stage
 * plan's second stage is a bit interleave (NOTES.md "Segments: planes"). */

/* The costs of a backend that gives none (ZORDER_DEFAULT_COSTS, backend.h). */
static const zorder_backend zorder_seg_defaults = { ZORDER_DEFAULT_COSTS };

/* The cost of the planes' merge for nb planes: compilers vectorize 2, 4 and 8 planes, and
 * 3 for AVX2 (a backend's own merge); 5, 6 and 7 (and 3 in plain x86-64 code) stay scalar
 * loops, counted as 16 times it (NOTES.md "Segments: merge"). */
static inline int zorder_seg_merge_cost(const zorder_backend *costs, int nb)
{
    if ((nb & (nb - 1)) == 0 || (nb == 3 && costs->merge != NULL))
        return costs->merge_cost;
    return 16 * costs->merge_cost;
}

/* zorder_merge_fn in plain C: one loop per nb so that the compiler can vectorize it (it
 * does for 2, 4 and 8 on x86-64; a backend's merge is this compiled for its target). */
#define ZORDER_SEG_MERGE_CASE(NB) \
    case NB: \
        for (i = 0; i < n; i++) \
            for (g = 0; g < NB; g++) \
                out[i * NB + g] = planes[g * n + i]; \
        break;
static inline void zorder_seg_merge(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out)
{
    ptrdiff_t i;
    int g;
    switch (nb) {
    ZORDER_SEG_MERGE_CASE(2)
    ZORDER_SEG_MERGE_CASE(3)
    ZORDER_SEG_MERGE_CASE(4)
    ZORDER_SEG_MERGE_CASE(5)
    ZORDER_SEG_MERGE_CASE(6)
    ZORDER_SEG_MERGE_CASE(7)
    ZORDER_SEG_MERGE_CASE(8)
    default:
        for (i = 0; i < n; i++)
            for (g = 0; g < nb; g++)
                out[i * nb + g] = planes[g * n + i];
    }
}

/* Whether the backend squeezes k columns padded to nb planes straight from them (asked
 * with rows 0). */
static inline int zorder_seg_squeezes_planes(const zorder_backend *costs, int k, int nb)
{
    return costs->squeeze_planes != NULL && costs->squeeze_planes(NULL, k, nb, 0, 0, 0, NULL, 0);
}

/* The cheapest plan's cost for k columns (k <= 8: one pass), its A in *split (1: planes,
 * 0: padded); a quotient B > 8 is priced without padding (`pad` 0: at run time its stage
 * plans itself, padding included, so it costs at most that). Returns -1 when nothing
 * fits. */
static inline int zorder_seg_plan(int k, const zorder_backend *costs, int pad, int *split)
{
    int a, sub, best = 0, best_cost = -1;
    if (k <= 8) {
        *split = k;
        return costs->cost[k] + costs->cost[1];
    }
    for (a = 8; a >= 2; a--) {
        int c;
        if (k % a || (c = zorder_seg_plan(k / a, costs, 0, &sub)) < 0)
            continue;
        c += costs->cost[a] + costs->cost[1];
        if (best_cost < 0 || c < best_cost) {
            best_cost = c;
            best = a;
        }
    }
    if (pad && k % 8 && k <= ZORDER_SEG_MAX_COLS) {
        const int kk = (k + 7) / 8 * 8;
        int c = zorder_seg_plan(kk, costs, 0, &sub);
        if (c >= 0 && sub == 1 && zorder_seg_squeezes_planes(costs, k, kk / 8))
            /* the planes' passes, then a squeeze from them */
            c = ((costs->cost[8] + costs->cost[1]) * kk + k - 1) / k + costs->cost[1]
                + costs->squeeze_planes_cost;
        else if (c >= 0)
            c = (c * kk + k - 1) / k + costs->cost[0];
        if (c >= 0) {
            if (best_cost < 0 || c < best_cost) {
                best_cost = c;
                best = 0;
            }
        }
    }
    if (k % 8 == 0 && k <= ZORDER_SEG_MAX_COLS) {   /* (padded: K = 8 * nb, above) */
        const int c = costs->cost[8] + zorder_seg_merge_cost(costs, k / 8) + 2 * costs->cost[1];
        if (best_cost < 0 || c < best_cost) {
            best_cost = c;
            best = 1;
        }
    }
    *split = best;
    return best_cost;
}

/* A of the cheapest plan for k > 8 columns (1: planes, 0: padded). */
static inline int zorder_seg_split(int k, const zorder_backend *costs)
{
    int a = 0;
    zorder_seg_plan(k, costs, 1, &a);
    return a;
}

/* Scratch bytes per row that zorder_seg_wide needs for k columns of groups w wide. A
 * last stage reading scratch gets room for its rows when truncated or spaced out. */
static inline ptrdiff_t zorder_seg_scratch(int k, ptrdiff_t w, const zorder_backend *costs)
{
    int a;
    if (k <= 8)
        return k * w;
    a = zorder_seg_split(k, costs);
    if (a == 1)
        return 2 * k * w;   /* planes, their merge when not straight to the output */
    if (a == 0) {
        const int kk = (k + 7) / 8 * 8;
        return w + kk * w + zorder_seg_scratch(kk, w, costs);   /* zeros, K-interleave */
    }
    return k * w + zorder_seg_scratch(k / a, a * w, costs);
}

/* k <= 8 columns in scratch, rows back to back (row_stride == width, a multiple of 8):
 * as rows of 8 bytes, the kernels' best shape at any width (wide rows otherwise take
 * gathers); truncated or spaced-out output
 * rows go through scratch and are copied. */
static inline void zorder_seg_last(const zorder_column *view, int k, ptrdiff_t w, ptrdiff_t limit,
                                   ptrdiff_t rows, uint8_t *dst, ptrdiff_t out_stride,
                                   zorder_uniform_fn uniform, uint8_t *scratch)
{
    zorder_column part[ZORDER_MAX_GROUP];
    ptrdiff_t r;
    int t;
    for (t = 0; t < k; t++) {
        part[t].data = view[t].data;
        part[t].row_stride = 8;
        part[t].width = 8;
    }
    if (limit == k * w && out_stride == limit) {
        uniform(part, k, 8 * k, rows * (w / 8), dst, 8 * k);
        return;
    }
    uniform(part, k, 8 * k, rows * (w / 8), scratch, 8 * k);
    for (r = 0; r < rows; r++)
        memcpy(dst + r * out_stride, scratch + r * k * w, (size_t)limit);
}

/* The k / 8 planes of k = 8B columns (views of width w): plane g, the 8-column interleave
 * of columns 8g..8g+7, at planes + g * rows * 8 * w, rows back to back. `staged`: the
 * views are scratch rows back to back. Not staged, w may be less than the views' width:
 * the planes of the columns' first w bytes. */
static inline void zorder_seg_planes(const zorder_column *view, int k, ptrdiff_t w,
                                     ptrdiff_t rows, uint8_t *planes, zorder_uniform_fn uniform,
                                     int staged)
{
    const ptrdiff_t n = rows * 8 * w;
    int g;
    for (g = 0; g < k / 8; g++) {
        if (staged && w % 8 == 0)
            zorder_seg_last(view + 8 * g, 8, w, 8 * w, rows, planes + g * n, 8 * w, uniform,
                            NULL);
        else
            zorder_uniform_rows(view + 8 * g, 8, 8 * w, rows, planes + g * n, 8 * w, uniform);
    }
}

/* k > 8 columns (views of width w), `limit` bytes of each output row.
 *
 * With k = A * B and column t = B * u + v (u < A, v < B), output bit 8kj + ki + t (bit i of
 * byte j of column t) is bit m * B + v of the stream with m = 8Aj + Ai + u: that is the
 * B-column interleave of B "columns" Y_v, where Y_v is the A-column interleave of columns
 * v, B + v, ..., (A-1)B + v. So two uniform passes (stage 2 recursing when B > 8), each at
 * the kernel's speed, with Y in scratch. k = 8B columns can also run as B planes (see
 * zorder_seg_plan). Otherwise (k with a prime factor above 7, or when cheaper)
 * K = 8 * ceil(k / 8) columns, the last K - k of them zeros, and the zero bits squeezed
 * out. */
static inline void zorder_seg_wide(const zorder_column *view, int k, ptrdiff_t w, ptrdiff_t limit,
                                   ptrdiff_t rows, uint8_t *dst, ptrdiff_t out_stride,
                                   zorder_uniform_fn uniform, const zorder_backend *costs,
                                   uint8_t *scratch, int staged)
{
    zorder_column part[ZORDER_SEG_MAX_COLS];
    int a, u, v;
    if (k <= 8) {
        if (staged && w % 8 == 0)
            zorder_seg_last(view, k, w, limit, rows, dst, out_stride, uniform, scratch);
        else if (staged)   /* (scratch of narrow rows: as rows of 8 bytes; 10x1 -> 10 ran
                            * its 2 x 5-byte last stage on avx2's table fallback) */
            zorder_uniform_rows(view, k, limit, rows, dst, out_stride, uniform);
        else
            uniform(view, k, limit, rows, dst, out_stride);
        return;
    }
    a = zorder_seg_split(k, costs);
    if (a == 1) {
        /* planes: k / 8 uniform passes of 8 columns, then their bytes in turn. Output
         * byte (8j + i) B + g holds bits of byte j, so rows cut to `limit` bytes need
         * only the first ceil(limit / k) bytes of each column: planes of those prefixes
         * where the views are the columns themselves (16x8 -> 64 computed all 8 bytes
         * of each and kept 4; a kernel cut to a 1-, 2- or 4-byte prefix reads only it) */
        const zorder_merge_fn merge = costs->merge ? costs->merge : zorder_seg_merge;
        const ptrdiff_t need = (limit + k - 1) / k, wp = !staged && need < w ? need : w;
        uint8_t *merged = scratch + rows * k * wp;
        zorder_seg_planes(view, k, wp, rows, scratch, uniform, staged);
        if (limit == k * wp && out_stride == limit) {
            merge(scratch, k / 8, rows * 8 * wp, dst);
        } else {
            merge(scratch, k / 8, rows * 8 * wp, merged);
            zorder_copy_rows_exact(dst, out_stride, merged, k * wp, limit, rows);
        }
        return;
    }
    if (a) {
        const int b = k / a;
        for (v = 0; v < b; v++) {
            uint8_t *y = scratch + (ptrdiff_t)v * rows * a * w;
            for (u = 0; u < a; u++)
                part[u] = view[b * u + v];
            if (staged && w % 8 == 0)
                zorder_seg_last(part, a, w, a * w, rows, y, a * w, uniform, NULL);
            else   /* (narrow columns with rows back to back: as rows of 8 bytes) */
                zorder_uniform_rows(part, a, a * w, rows, y, a * w, uniform);
        }
        for (v = 0; v < b; v++) {
            part[v].data = scratch + (ptrdiff_t)v * rows * a * w;
            part[v].row_stride = a * w;
            part[v].width = a * w;
        }
        zorder_seg_wide(part, b, a * w, limit, rows, dst, out_stride, uniform, costs,
                        scratch + rows * k * w, 1);
        return;
    }
    {
        const int kk = (k + 7) / 8 * 8, nb = kk / 8;
        uint8_t *zeros = scratch, *wide = scratch + rows * w;
        memset(zeros, 0, (size_t)(rows * w));
        for (u = 0; u < kk; u++) {
            if (u < k) {
                part[u] = view[u];
            } else {
                part[u].data = zeros;
                part[u].row_stride = w;
                part[u].width = w;
            }
        }
        if (zorder_seg_split(kk, costs) == 1 && zorder_seg_squeezes_planes(costs, k, nb)) {
            /* the planes (in the scratch zorder_seg_wide would use for kk), squeezed from
             * them without their merge */
            uint8_t *planes = wide + rows * kk * w;
            zorder_seg_planes(part, kk, w, rows, planes, uniform, 0);
            costs->squeeze_planes(planes, k, nb, w, limit, rows, dst, out_stride);
            return;
        }
        zorder_seg_wide(part, kk, w, kk * w, rows, wide, kk * w, uniform, costs,
                        wide + rows * kk * w, 0);
        /* (the squeeze's 8-byte loads past the last row land in the scratch after it) */
        (costs->squeeze ? costs->squeeze : zorder_seg_squeeze)(wide, k, nb, w, limit, rows, dst,
                                                                out_stride);
    }
}

/* `n` bytes of each of `rows` rows from src to dst. `room` (>= n) bytes from each dst row
 * start may be written (bytes past n are written again later: a later segment of the
 * row); src rows may be read 8 bytes past n. Whole 8-byte moves when they fit. */
static inline void zorder_seg_copy_rows(uint8_t *dst, ptrdiff_t dst_stride, const uint8_t *src,
                                        ptrdiff_t src_stride, ptrdiff_t n, ptrdiff_t rows,
                                        ptrdiff_t room)
{
    ptrdiff_t r;
    if (n <= 8 && room >= 8) {
        for (r = 0; r < rows; r++)
            memcpy(dst + r * dst_stride, src + r * src_stride, 8);
    } else if (n <= 16 && room >= 16) {
        for (r = 0; r < rows; r++) {   /* (loads first: zorder_copy_short) */
            uint64_t lo, hi;
            memcpy(&lo, src + r * src_stride, 8);
            memcpy(&hi, src + r * src_stride + 8, 8);
            memcpy(dst + r * dst_stride, &lo, 8);
            memcpy(dst + r * dst_stride + 8, &hi, 8);
        }
    } else {
        zorder_copy_rows_exact(dst, dst_stride, src, src_stride, n, rows);
    }
}

/* One segment of k (2..8) columns whose view width w is not a multiple of 8 (narrow or
 * odd: 3+5+8 has segments of 3, 2 and 3 bytes): the kernel's per-row cost would be
 * paid for a few bytes. Its column slices (those not already in rows back to back of
 * whole 8-byte pieces) are gathered into scratch with rows back to back, so the segment is one long row (zorder_uniform_rows: rows of 8 bytes, the
 * kernels' best shape), and each row's `limit` bytes are copied out of scratch. */
static inline void zorder_seg_gathered(const zorder_column *view, int k, ptrdiff_t w,
                                       ptrdiff_t limit, ptrdiff_t rows, uint8_t *dst,
                                       ptrdiff_t out_stride, ptrdiff_t room,
                                       zorder_uniform_fn uniform, uint8_t *scratch)
{
    zorder_column packed[ZORDER_MAX_GROUP];
    uint8_t *tmp = scratch + (ptrdiff_t)k * rows * w;
    ptrdiff_t r;
    int t;
    for (t = 0; t < k; t++) {
        uint8_t *g = scratch + (ptrdiff_t)t * rows * w;
        const uint8_t *s = view[t].data;
        const ptrdiff_t stride = view[t].row_stride;
        if (stride == w && w % 8 == 0) {
            packed[t] = view[t];   /* rows already back to back, in whole 8-byte pieces */
            continue;
        }
        /* An 8-byte load from row r ends inside row r + m (rows ascending in memory): it
         * stays within the column's buffer while that row is in the call. Its bytes past w
         * land in scratch that the next rows (or the next column, or tmp) overwrite. */
        ptrdiff_t m = w >= 8 ? 0 : stride > 0 ? (8 - w + stride - 1) / stride : rows;
        ptrdiff_t fast = w <= 8 && m < rows ? rows - m : 0;
        for (r = 0; r < fast; r++, s += stride)
            memcpy(g + r * w, s, 8);
        for (; r < rows; r++, s += stride)
            zorder_copy_short(g + r * w, s, w);
        packed[t].data = g;
        packed[t].row_stride = w;
        packed[t].width = w;
    }
    zorder_uniform_rows(packed, k, k * w, rows, tmp, k * w, uniform);
    zorder_seg_copy_rows(dst, out_stride, tmp, k * w, limit, rows, room);
}

/* The width a segment of k columns, bytes [start, end), runs at when `left` output bytes
 * are still wanted: its own, or, truncated, the groups it needs, rounded up to whole
 * 8-byte pieces with round8 where the columns have them. The scratch is sized with the
 * same widths the segments then run at (sized on the segment's own width, a segment cut
 * to a width that is not a multiple of 8 went to the gathered path with too little:
 * 12+2+0+12+4 -> 27, 2 columns cut from 8 bytes to 7, wrote 12 bytes a row past it). */
static inline ptrdiff_t zorder_seg_run_width(int k, ptrdiff_t start, ptrdiff_t end,
                                             ptrdiff_t left, int round8)
{
    ptrdiff_t w = end - start;
    const ptrdiff_t limit = left < k * w ? left : k * w;
    if ((limit + k - 1) / k < w) {
        w = (limit + k - 1) / k;
        if (round8 && (w + 7) / 8 * 8 <= end - start)
            w = (w + 7) / 8 * 8;
    }
    return w;
}

/* The first w bytes of each of `rows` rows st bytes apart, to rows back to back, for
 * 1 <= w <= st <= 8 (returns 0 otherwise). One loop per (w, st), so the compiler knows
 * both and vectorizes the byte gather (one 8-byte move a row, each overlapping the last,
 * ran slower: NOTES.md "Segments: slices"). */
#define ZORDER_SLICE_CASE(W, ST) \
    case ((ST) - 1) * 8 + (W) - 1: \
        for (r = 0; r < rows; r++) \
            for (b = 0; b < (W); b++) \
                dst[r * (W) + b] = src[r * (ST) + b]; \
        return 1;
#define ZORDER_SLICE_ST(ST) \
    ZORDER_SLICE_CASE(1, ST) ZORDER_SLICE_CASE(2, ST) ZORDER_SLICE_CASE(3, ST) \
    ZORDER_SLICE_CASE(4, ST) ZORDER_SLICE_CASE(5, ST) ZORDER_SLICE_CASE(6, ST) \
    ZORDER_SLICE_CASE(7, ST) ZORDER_SLICE_CASE(8, ST)

#if !ZORDER_LITTLE_ENDIAN
#define ZORDER_SLICE_LE(v) ZORDER_BSWAP64(v)
#else
#define ZORDER_SLICE_LE(v) (v)
#endif
#define ZORDER_SLICE_PACK(W, ST) \
    case ((ST) - 1) * 8 + (W) - 1: \
        for (r = 0; r + 8 / (W) <= rows; r += 8 / (W)) { \
            uint64_t v = 0; \
            for (b = 0; b < 8; b++) \
                v |= (uint64_t)src[(r + b / (W)) * (ST) + b % (W)] << (8 * b); \
            v = ZORDER_SLICE_LE(v); \
            memcpy(dst + r * (W), &v, 8); \
        } \
        for (; r < rows; r++) \
            for (b = 0; b < (W); b++) \
                dst[r * (W) + b] = src[r * (ST) + b]; \
        return 1;

static inline int zorder_seg_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows,
                                   ptrdiff_t w, ptrdiff_t st)
{
    ptrdiff_t r, b;
    if (w < 1 || st > 8 || w > st)
        return 0;
    if ((st & (st - 1)) != 0) {
        /* strides not a power of two: the compiler's vector form built each vector on the
         * stack and reloaded it (a store forward stall, slower than this). 8 / w rows'
         * slices put together in a register, one store (w = 1, 2, 4); other widths as
         * one 8-byte move a row, each overlapping the last */
        switch ((st - 1) * 8 + w - 1) {
        ZORDER_SLICE_PACK(1, 3) ZORDER_SLICE_PACK(2, 3) ZORDER_SLICE_PACK(1, 5)
        ZORDER_SLICE_PACK(2, 5) ZORDER_SLICE_PACK(4, 5) ZORDER_SLICE_PACK(1, 6)
        ZORDER_SLICE_PACK(2, 6) ZORDER_SLICE_PACK(4, 6) ZORDER_SLICE_PACK(1, 7)
        ZORDER_SLICE_PACK(2, 7) ZORDER_SLICE_PACK(4, 7)
        default: return 0;
        }
    }
    switch ((st - 1) * 8 + w - 1) {   /* (strides 1, 2, 4 and 8 here) */
    ZORDER_SLICE_ST(1) ZORDER_SLICE_ST(2) ZORDER_SLICE_ST(4) ZORDER_SLICE_ST(8)
    default: return 0;
    }
}

/* ---- narrow ragged widths: the segments of a chunk put in place together --------------
 *
 * Columns of at most 8 bytes and different widths (3+5+8, 1+2+3+4) make segments of a few
 * bytes, one per distinct width. Run one by one, each segment's bytes are copied out of
 * scratch exactly, a few 1-4 byte moves a row, since the bytes after them are another
 * segment's: most of the time of 1+2+3+4 -> 10. Here every segment of a chunk is first
 * interleaved into scratch of its own (its column slices gathered there with rows back to
 * back, unless a slice is a whole column with rows back to back already: rows of 8 bytes
 * to the kernel either way), then each output row is assembled once, left to right, with
 * 8-byte moves, or 16-byte ones where a segment has more than 8 bytes: each move's spill
 * past its bytes is overwritten by the next move, of a later segment or of the next row.
 * (One move per segment of up to 16 bytes keeps the moves' pointers in registers: 3+5+8
 * -> 16 in 8-byte moves took four, and the loop reloaded them from the stack every row;
 * rows of segments of at most 8 bytes keep 8-byte moves, which split cache lines half as
 * often: NOTES.md "Segments: narrow rows".) */
#define ZORDER_SEG_MOVE 16   /* the widest move */
typedef struct {
    const uint8_t *src;   /* the move's bytes in row 0 */
    ptrdiff_t stride;     /* from one row's bytes to the next's */
    ptrdiff_t at;         /* their offset in the output row */
} zorder_seg_move;

/* Each of `rows` output rows from its n moves, in order. Called with n a constant where
 * it can be, so the moves' pointers stay in registers (read from the array each row, they
 * cost as much as the moves). */
ZORDER_ALWAYS_INLINE void zorder_seg_assemble(const int n, const int bytes, const zorder_seg_move *moves,
                                       ptrdiff_t first, ptrdiff_t rows, uint8_t *dst,
                                       ptrdiff_t out_stride)
{
    /* (a small array, so that the compiler keeps it in registers; the rows' pointers
     * computed from r rather than advanced, which went through memory every row) */
    const uint8_t *src[8];
    ptrdiff_t stride[8], at[8], r;
    int m;
    if (n > 8) {
        for (r = 0; r < rows; r++, dst += out_stride)
            for (m = 0; m < n; m++)
                memcpy(dst + moves[m].at, moves[m].src + (first + r) * moves[m].stride,
                       (size_t)bytes);
        return;
    }
    for (m = 0; m < n; m++) {
        src[m] = moves[m].src + first * moves[m].stride;
        stride[m] = moves[m].stride;
        at[m] = moves[m].at;
    }
    for (r = 0; r < rows; r++, dst += out_stride)
        for (m = 0; m < n; m++)
            memcpy(dst + at[m], src[m] + r * stride[m], (size_t)bytes);
}

/* Interleaves rows [0, done) and returns done, or returns 0 having written nothing: not
 * a shape it takes (2-8 columns of 1-8 bytes, not all one width; output rows back to
 * back; rows ascending in memory), too few rows, or scratch memory short. The last rows,
 * where a move's read would leave a column's rows of the call or a row's spill the
 * output, are left to the caller: done <= nrows - ceil((move - 1) / size), move the
 * moves' bytes (8 or 16). */
static inline ptrdiff_t zorder_seg_narrow(const zorder_column *cols, ptrdiff_t ncols,
                                          ptrdiff_t size, ptrdiff_t nrows, uint8_t *out,
                                          ptrdiff_t out_stride, zorder_uniform_fn uniform,
                                          const zorder_backend *backend)
{
    const zorder_assemble_fn assemble = backend != NULL ? backend->assemble : NULL;
    const zorder_slice_fn slice = backend != NULL ? backend->slice : NULL;
    int active[ZORDER_MAX_GROUP], seg_k[ZORDER_MAX_GROUP];
    int seg_cols[ZORDER_MAX_GROUP][ZORDER_MAX_GROUP];
    ptrdiff_t seg_w[ZORDER_MAX_GROUP], seg_start[ZORDER_MAX_GROUP], seg_pos[ZORDER_MAX_GROUP];
    ptrdiff_t seg_limit[ZORDER_MAX_GROUP];
    zorder_seg_move moves[ZORDER_MAX_GROUP * ZORDER_MAX_GROUP];
    zorder_seg_piece pieces[ZORDER_MAX_GROUP];
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t start, end, pos, tail, done, chunk, per_row = 0, r0, r, c, move = 8;
    uint8_t *scratch;
    int nseg = 0, nmove, s, t, m, one_width = 1;
    if (ncols < 2 || ncols > ZORDER_MAX_GROUP || size <= 0 || out_stride != size)
        return 0;
    for (c = 0; c < ncols; c++) {
        if (cols[c].width < 1 || cols[c].width > 8 || cols[c].row_stride < 1)
            return 0;
        one_width &= cols[c].width == cols[0].width;
    }
    if (one_width)
        return 0;
    for (start = 0, pos = 0; pos < size && (end = zorder_seg_end(cols, ncols, start)) > 0;
         start = end) {
        const int k = zorder_seg_active(cols, ncols, start, active);
        const ptrdiff_t limit = size - pos < k * (end - start) ? size - pos : k * (end - start);
        seg_k[nseg] = k;
        seg_w[nseg] = zorder_seg_run_width(k, start, end, size - pos, 0);
        seg_start[nseg] = start;
        seg_pos[nseg] = pos;
        seg_limit[nseg] = limit;
        for (t = 0; t < k; t++)
            seg_cols[nseg][t] = active[t];
        if (limit > 8)
            move = ZORDER_SEG_MOVE;   /* a segment of more than 8 bytes */
        if (k > 1)
            per_row += 2 * k * seg_w[nseg];   /* gathered slices, interleaved rows */
        nseg++;
        pos += k * (end - start);
    }
    tail = (move - 1 + size - 1) / size;   /* a row's spill stays inside later rows */
    for (s = 0; s < nseg; s++)
        for (t = 0; t < seg_k[s]; t++) {
            /* a read at byte `start` of a row ends inside a later row: a move's (one
             * column) or a slice's (at most 8 bytes) */
            const zorder_column *col = &cols[seg_cols[s][t]];
            const ptrdiff_t over = seg_start[s] + (seg_k[s] == 1 ? move : 8) - col->width;
            if (over > 0 && (over + col->row_stride - 1) / col->row_stride > tail)
                tail = (over + col->row_stride - 1) / col->row_stride;
        }
    done = nrows - tail;
    if (done < 64)
        return 0;
    chunk = ZORDER_SEG_CHUNK_BYTES / size;
    if (chunk < 64)
        chunk = 64;
    /* 8 bytes of room after each gathered column, a move's after each segment's rows */
    scratch = (uint8_t *)malloc((size_t)(chunk * per_row)
                                + ZORDER_SEG_MOVE * 9 * ZORDER_MAX_GROUP + 64);
    if (scratch == NULL)
        return 0;
    for (r0 = 0; r0 < done; r0 += chunk) {
        const ptrdiff_t rows = done - r0 < chunk ? done - r0 : chunk;
        uint8_t *base = scratch, *dst = out + r0 * out_stride;
        nmove = 0;
        for (s = 0; s < nseg; s++) {
            const int k = seg_k[s];
            const ptrdiff_t w = seg_w[s];
            const uint8_t *rows_at;
            ptrdiff_t rows_stride;
            if (k == 1) {
                /* one column left: its bytes straight from the column */
                const zorder_column *col = &cols[seg_cols[s][0]];
                rows_at = col->data + r0 * col->row_stride + seg_start[s];
                rows_stride = col->row_stride;
            } else {
                for (t = 0; t < k; t++) {
                    const zorder_column *col = &cols[seg_cols[s][t]];
                    const ptrdiff_t st = col->row_stride;
                    const uint8_t *src = col->data + r0 * st + seg_start[s];
                    view[t].row_stride = w;
                    view[t].width = w;
                    if (seg_start[s] == 0 && w == col->width && st == w) {
                        view[t].data = src;   /* the whole column, rows back to back */
                        continue;
                    }
                    /* (each 8-byte store's spill is overwritten by the next row's) */
                    r = slice != NULL ? slice(base, src, rows, w, st) : 0;
                    if (!zorder_seg_slice(base + r * w, src + r * st, rows - r, w, st))
                        for (; r < rows; r++)
                            memcpy(base + r * w, src + r * st, 8);
                    view[t].data = base;
                    base += rows * w + 8;
                }
                zorder_uniform_rows(view, k, k * w, rows, base, k * w, uniform);
                rows_at = base;
                rows_stride = k * w;
                base += rows * k * w + ZORDER_SEG_MOVE;
            }
            pieces[s].src = rows_at;
            pieces[s].stride = rows_stride;
            pieces[s].n = seg_limit[s];
            pieces[s].at = seg_pos[s];
            for (m = 0; move * m < seg_limit[s]; m++) {
                moves[nmove].src = rows_at + move * m;
                moves[nmove].stride = rows_stride;
                moves[nmove].at = seg_pos[s] + move * m;
                nmove++;
            }
        }
        /* the backend's own assembly where it has one; the rows it leaves (the last of
         * the chunk) with the moves, whose spill lands in later rows */
        r = assemble != NULL ? assemble(pieces, nseg, size, rows, dst) : 0;
#define ZORDER_SEG_ASSEMBLE_CASE(N, B) \
    case (B) * 16 + (N): \
        zorder_seg_assemble(N, B, moves, r, rows - r, dst + r * size, out_stride); \
        break;
        switch (move * 16 + nmove) {
        ZORDER_SEG_ASSEMBLE_CASE(1, 8) ZORDER_SEG_ASSEMBLE_CASE(2, 8)
        ZORDER_SEG_ASSEMBLE_CASE(3, 8) ZORDER_SEG_ASSEMBLE_CASE(4, 8)
        ZORDER_SEG_ASSEMBLE_CASE(5, 8) ZORDER_SEG_ASSEMBLE_CASE(6, 8)
        ZORDER_SEG_ASSEMBLE_CASE(1, 16) ZORDER_SEG_ASSEMBLE_CASE(2, 16)
        ZORDER_SEG_ASSEMBLE_CASE(3, 16) ZORDER_SEG_ASSEMBLE_CASE(4, 16)
        ZORDER_SEG_ASSEMBLE_CASE(5, 16) ZORDER_SEG_ASSEMBLE_CASE(6, 16)
        default:
            if (move == 8)
                zorder_seg_assemble(nmove, 8, moves, r, rows - r, dst + r * size, out_stride);
            else
                zorder_seg_assemble(nmove, 16, moves, r, rows - r, dst + r * size, out_stride);
            break;
        }
#undef ZORDER_SEG_ASSEMBLE_CASE
    }
    free(scratch);
    return done;
}

/* Interleaves any shape of at most ZORDER_SEG_MAX_COLS columns with `uniform`; returns 0
 * when the shape has more columns or scratch memory is short, having written nothing, or
 * (memory short after zorder_seg_narrow's rows) rows the caller's fallback writes again.
 * Narrow ragged shapes go to zorder_seg_narrow first (all but their last few rows).
 * round8: a truncated segment computes whole 8-byte pieces of its columns (simd, avx2).
 * Segments of 2-8 columns whose width is not a multiple of 8 (and with gather_all every
 * segment of 2-8 columns: simd's kernel gathers strided rows and stores a row's slice with
 * masked stores; avx2 is faster in place) go through scratch rows back to back
 * (zorder_seg_gathered); segments of one column are copies. `backend`: its stage costs
 * and hooks (NULL: zorder_seg_defaults). */
static inline int zorder_segments_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                                       ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                                       zorder_uniform_fn uniform, int round8, int gather_all,
                                       const zorder_backend *backend)
{
    const zorder_backend *const costs = backend != NULL ? backend : &zorder_seg_defaults;
    int active[ZORDER_SEG_MAX_COLS];
    zorder_column view[ZORDER_SEG_MAX_COLS], rest[ZORDER_MAX_GROUP];
    uint8_t *buffer = NULL, *gather = NULL;
    ptrdiff_t chunk, r0, start, end, pos, widest_wide = 0, widest_gathered = 0;
    if (ncols > ZORDER_SEG_MAX_COLS)
        return 0;
    if (nrows <= 0 || size <= 0)
        return 1;
    {
        /* narrow ragged widths: the rows it takes, then the last few here */
        const ptrdiff_t done = zorder_seg_narrow(cols, ncols, size, nrows, out, out_stride, uniform,
                                                 backend);
        if (done > 0) {
            cols = zorder_columns_after(rest, cols, ncols, done);
            nrows -= done;
            out += done * out_stride;
        }
    }
    end = zorder_seg_end(cols, ncols, 0);
    if (end > 0 && costs->stream_min != NULL && nrows * size >= *costs->stream_min) {
        /* The row ends inside its first segment, and the output is too big to stay in the
         * cache: the uniform stage on that segment's columns in place, one call. Through
         * scratch (gathered, interleaved, copied out) is faster only while every pass hits
         * the cache (NOTES.md "Dispatch: ragged-truncated-first"). (Columns of no bytes
         * are not in the segment; one column left is the copy below.) */
        const int k = zorder_seg_active(cols, ncols, 0, active);
        if (k >= 2 && k <= 8 && k * end >= size) {
            const ptrdiff_t w = zorder_seg_run_width(k, 0, end, size, round8);
            int t;
            if (w % 8 == 0) {   /* (the vector kernels' widths; narrow ones would come back) */
                for (t = 0; t < k; t++) {
                    view[t] = cols[active[t]];
                    view[t].width = w;
                }
                uniform(view, k, size, nrows, out, out_stride);
                return 1;
            }
        }
    }
    /* Scratch for the widest segment of more than 8 columns, sized per chunk below. */
    for (start = 0, pos = 0; pos < size && (end = zorder_seg_end(cols, ncols, start)) > 0;
         start = end) {
        const int k = zorder_seg_active(cols, ncols, start, active);
        const ptrdiff_t w = zorder_seg_run_width(k, start, end, size - pos, round8);
        if (k > 8) {
            if (zorder_seg_scratch(k, w, costs) > widest_wide)
                widest_wide = zorder_seg_scratch(k, w, costs);
        } else if (k > 1 && (w % 8 != 0 || gather_all) && 2 * k * w > widest_gathered) {
            widest_gathered = 2 * k * w;   /* gathered columns, then output */
        }
        pos += k * (end - start);
    }
    chunk = (widest_wide ? ZORDER_SEG_WIDE_CHUNK_BYTES : ZORDER_SEG_CHUNK_BYTES) / size;
    if (chunk < 16)
        chunk = 16;
    if (widest_wide) {
        buffer = (uint8_t *)malloc((size_t)(chunk * widest_wide) + 64);
        if (buffer == NULL)
            return 0;
    }
    if (widest_gathered) {
        gather = (uint8_t *)malloc((size_t)(chunk * widest_gathered) + 64);
        if (gather == NULL) {
            free(buffer);
            return 0;
        }
    }
    for (r0 = 0; r0 < nrows; r0 += chunk) {
        const ptrdiff_t rows = nrows - r0 < chunk ? nrows - r0 : chunk;
        uint8_t *dst = out + r0 * out_stride;
        for (start = 0, pos = 0; pos < size && (end = zorder_seg_end(cols, ncols, start)) > 0;
             start = end) {
            const int k = zorder_seg_active(cols, ncols, start, active);
            /* truncated: only the groups it needs, rounded up to whole 8-byte pieces when
             * the columns have them (the vector kernel takes only those) */
            const ptrdiff_t w = zorder_seg_run_width(k, start, end, size - pos, round8);
            ptrdiff_t limit = size - pos, t;
            if (limit > k * (end - start))
                limit = k * (end - start);
            for (t = 0; t < k; t++) {
                const zorder_column *c = &cols[active[t]];
                view[t].data = c->data + r0 * c->row_stride + start;
                view[t].row_stride = c->row_stride;
                view[t].width = w;
            }
            if (k == 1) {
                /* one column left: a copy (the kernel's row loop costs more); it is the
                 * row's last segment, so exact */
                zorder_seg_copy_rows(dst + pos, out_stride, view[0].data, view[0].row_stride,
                                     limit, rows, limit);
            } else if (gather != NULL && k <= 8 && (w % 8 != 0 || gather_all)) {
                zorder_seg_gathered(view, k, w, limit, rows, dst + pos, out_stride,
                                    size - pos, uniform, gather);
            } else {
                zorder_seg_wide(view, k, w, limit, rows, dst + pos, out_stride, uniform, costs,
                                buffer, 0);
            }
            pos += k * (end - start);
        }
    }
    free(gather);
    free(buffer);
    return 1;
}

/* n bytes from src to dst with a few overlapping word moves (a memcpy call per short
 * row costs more than the row's interleave). A row's words are all loaded before any is
 * stored: a load after a store that it might alias waits on the CPU's guess of whether
 * it does, a guess kept per instruction address, which made the same loop fast or slow
 * by where the linker put it. */
static inline void zorder_copy_short(uint8_t *dst, const uint8_t *src, ptrdiff_t n)
{
    ptrdiff_t o;
    uint8_t head[16], tail[16];
/* n bytes, n in [w, 2w]: the first and the last w, both loaded before either is stored */
#define ZORDER_COPY_EDGES(w) do { \
        memcpy(head, src, (w)); \
        memcpy(tail, src + n - (w), (w)); \
        memcpy(dst, head, (w)); \
        memcpy(dst + n - (w), tail, (w)); \
    } while (0)
    if (n >= 16) {
        memcpy(tail, src + n - 16, 16);
        for (o = 0; o + 16 < n; o += 16)
            memcpy(dst + o, src + o, 16);
        memcpy(dst + n - 16, tail, 16);
    } else if (n >= 8) {
        ZORDER_COPY_EDGES(8);
    } else if (n >= 4) {
        ZORDER_COPY_EDGES(4);
    } else if (n >= 2) {
        ZORDER_COPY_EDGES(2);
    } else if (n == 1) {
        *dst = *src;
    }
#undef ZORDER_COPY_EDGES
}

#define ZORDER_COPY_ROWS_CASE(N) \
    case N: \
        for (r = 0; r < rows; r++) \
            zorder_copy_short(dst + r * dst_stride, src + r * src_stride, N); \
        return;

/* The first n bytes of each of `rows` rows from src to dst, exactly: one memcpy when both
 * sides' rows are back to back, else a few word moves a row. */
static inline void zorder_copy_rows_exact(uint8_t *dst, ptrdiff_t dst_stride, const uint8_t *src,
                                          ptrdiff_t src_stride, ptrdiff_t n, ptrdiff_t rows)
{
    ptrdiff_t r;
    if (rows <= 0 || n <= 0)
        return;
    if (dst_stride == n && src_stride == n) {
        memcpy(dst, src, (size_t)(n * rows));
        return;
    }
    /* (a loop per common n, its moves known: the general loop's branches and count cost
     * as much as the moves) */
    switch (n) {
    ZORDER_COPY_ROWS_CASE(1) ZORDER_COPY_ROWS_CASE(2) ZORDER_COPY_ROWS_CASE(3)
    ZORDER_COPY_ROWS_CASE(4) ZORDER_COPY_ROWS_CASE(5) ZORDER_COPY_ROWS_CASE(6)
    ZORDER_COPY_ROWS_CASE(7) ZORDER_COPY_ROWS_CASE(8) ZORDER_COPY_ROWS_CASE(9)
    ZORDER_COPY_ROWS_CASE(10) ZORDER_COPY_ROWS_CASE(11) ZORDER_COPY_ROWS_CASE(12)
    ZORDER_COPY_ROWS_CASE(13) ZORDER_COPY_ROWS_CASE(14) ZORDER_COPY_ROWS_CASE(15)
    ZORDER_COPY_ROWS_CASE(16) ZORDER_COPY_ROWS_CASE(20) ZORDER_COPY_ROWS_CASE(24)
    ZORDER_COPY_ROWS_CASE(32) ZORDER_COPY_ROWS_CASE(40) ZORDER_COPY_ROWS_CASE(48)
    default:
        for (r = 0; r < rows; r++)
            zorder_copy_short(dst + r * dst_stride, src + r * src_stride, n);
    }
}

/* Uniform columns read in full into rows back to back: when every column's rows are back
 * to back too (row_stride == width), the call is one long row (output row r's group j is
 * group r * width + j of the concatenated columns), so it runs as rows of 8 bytes per
 * column, the kernels' best shape, whatever the width (narrow 1-7 byte columns: 2-D and
 * 3-D Morton codes), and the bytes left over as one short row; truncated or spaced-out
 * output rows go through scratch. Otherwise the kernel as is. `cut` (NULL: none) takes
 * the first rows' bytes out of scratch where output rows are back to back (simd's vpermb
 * blocks, faster than two 8-byte moves a row); the rest are copied. */
static inline void zorder_uniform_rows_cut(const zorder_column *cols, int k, ptrdiff_t size,
                                           ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                                           zorder_uniform_fn uniform, zorder_slice_fn cut)
{
    const ptrdiff_t width = cols[0].width;
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t total, whole;
    int t, packed = nrows > 1 && width % 8 != 0;
    if (k == 1) {
        /* one column interleaves to itself: its prefix, copied (through the kernels it cost
         * several times a copy) */
        zorder_copy_rows_exact(out, out_stride, cols[0].data, cols[0].row_stride, size, nrows);
        return;
    }
    for (t = 0; t < k && packed; t++)
        packed = cols[t].row_stride == width;
    if (packed && (size < k * width || out_stride != size)) {
        /* truncated or spaced-out rows: whole rows of a chunk into scratch, then each
         * row's first `size` bytes */
        const ptrdiff_t full = k * width, chunk = ZORDER_SEG_CHUNK_BYTES / full + 1;
        uint8_t *tmp = (uint8_t *)malloc((size_t)(chunk * full));
        ptrdiff_t r0, done;
        if (tmp != NULL) {
            for (r0 = 0; r0 < nrows; r0 += chunk) {
                const ptrdiff_t rows = nrows - r0 < chunk ? nrows - r0 : chunk;
                for (t = 0; t < k; t++) {
                    view[t] = cols[t];
                    view[t].data = cols[t].data + r0 * width;
                }
                zorder_uniform_rows(view, k, full, rows, tmp, full, uniform);
                done = cut != NULL && out_stride == size
                           ? cut(out + r0 * size, tmp, rows, size, full) : 0;
                zorder_copy_rows_exact(out + (r0 + done) * out_stride, out_stride,
                                       tmp + done * full, full, size, rows - done);
            }
            free(tmp);
            return;
        }
    }
    if (!packed || size != k * width || out_stride != size) {
        uniform(cols, k, size, nrows, out, out_stride);
        return;
    }
    total = nrows * width;
    whole = total / 8;
    for (t = 0; t < k; t++) {
        view[t].data = cols[t].data;
        view[t].row_stride = 8;
        view[t].width = 8;
    }
    if (whole > 0)
        uniform(view, k, 8 * k, whole, out, 8 * k);
    if (total > 8 * whole) {
        for (t = 0; t < k; t++) {
            view[t].data = cols[t].data + 8 * whole;
            view[t].width = total - 8 * whole;
        }
        uniform(view, k, k * (total - 8 * whole), 1, out + 8 * k * whole, 0);
    }
}

static inline void zorder_uniform_rows(const zorder_column *cols, int k, ptrdiff_t size,
                                       ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                                       zorder_uniform_fn uniform)
{
    zorder_uniform_rows_cut(cols, k, size, nrows, out, out_stride, uniform, NULL);
}

#endif
