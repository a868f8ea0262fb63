/* AVX2 backend: rows cut to a 1-, 2- or 4-byte prefix of each column, 8 / need rows
 * packed a lane (prefix_rows_k), or staged when cut inside the prefixes (prefix_staged). */
#ifndef ZORDER_AVX2_PREFIX_H
#define ZORDER_AVX2_PREFIX_H

#include "rows.h"
#include "far.h"

ZAVX2_INLINE uint64_t ld_prefix(const uint8_t *p, const int n)
{
    uint32_t v32;
    uint16_t v16;
    if (n == 4) {
        memcpy(&v32, p, 4);
        return v32;
    }
    if (n == 2) {
        memcpy(&v16, p, 2);
        return v16;
    }
    return *p;
}

/* Rows truncated to the first `need` (1, 2 or 4) bytes of each column, output rows back
 * to back (size = k * need = out_stride): G = 8 / need rows make one row of 8 bytes per
 * column (their prefixes side by side), whose 8k output bytes are those G rows' outputs
 * in order. So a block of 4 such rows is 4G real rows on the full-width block, with no
 * work thrown away. Returns the rows done (a multiple of 4G). */
ZAVX2_INLINE ptrdiff_t prefix_rows_k(const int k, const int need, const zorder_column *cols,
                                     ptrdiff_t nrows, uint8_t *out)
{
    const int G = 8 / need;
    const ptrdiff_t step = 4 * G, rs = 8 * k;
    __m256i X[8];
    zsqueeze sq;
    ptrdiff_t r0;
    int c, v, i, first8 = 1;
    if (k != 2 && k != 4 && k != 8 && !ZLUT(k))
        squeeze_init(&sq, k);
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    /* Each row's first 8 bytes the column's own, read 8 bytes a row (a narrower column 8
     * bytes apart, such as a[:, 4:8] of an (n, 8) array, would be read past its last
     * row) */
    for (c = 0; c < k; c++)
        first8 &= cols[c].row_stride >= 8 && cols[c].width >= 8;
    if (first8) {
        /* rows 8 bytes apart: G loads of 4 rows each, a lane's worth of rows paired up by
         * vperm2i128; further apart: two rows a 16-byte half, straight to their lanes;
         * then vpshufb takes their prefixes to their places */
        const int e = need == 1 ? 0 : need == 2 ? 1 : 2;
        for (r0 = 0; r0 + step <= nrows; r0 += step) {
            for (c = 0; c < k; c++) {
                const ptrdiff_t st = cols[c].row_stride;
                const uint8_t *p = cols[c].data + st * r0;
                __m256i x = _mm256_setzero_si256();
                if (st == 8)
                    _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                else
                    rows_prefetch(p + AHEAD_BLOCKS * step * st, step, st);
                for (v = 0; v < G / 2; v++) {
                    __m256i lo, hi;
                    if (st == 8) {
                        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * v));
                        const __m256i b = _mm256_loadu_si256(
                            (const __m256i *)(const void *)(p + 32 * (v + G / 2)));
                        lo = _mm256_permute2x128_si256(a, b, 0x20);
                        hi = _mm256_permute2x128_si256(a, b, 0x31);
                    } else {
                        const uint8_t *a = p + 4 * v * st, *b = p + 4 * (v + G / 2) * st;
                        lo = far_lanes(a, b, st);
                        hi = far_lanes(a + 2 * st, b + 2 * st, st);
                    }
                    x = _mm256_or_si256(x, _mm256_shuffle_epi8(lo, bcast16(PREFIX[e][2 * v])));
                    x = _mm256_or_si256(x, _mm256_shuffle_epi8(hi, bcast16(PREFIX[e][2 * v + 1])));
                }
                X[c] = x;
            }
            zblock(k, X, out + r0 * k * need, rs);
        }
        return r0;
    }
    for (r0 = 0; r0 + step <= nrows; r0 += step) {
        for (c = 0; c < k; c++) {
            const ptrdiff_t st = cols[c].row_stride;
            const uint8_t *p = cols[c].data + r0 * st;
            uint64_t w[4];
            _mm_prefetch((const char *)(p + 2 * step * st), _MM_HINT_T0);
            for (v = 0; v < 4; v++) {
                uint64_t x = 0;
                for (i = 0; i < G; i++)
                    x |= ld_prefix(p + (v * G + i) * st, need) << (8 * need * i);
                w[v] = x;
            }
            X[c] = _mm256_set_epi64x((long long)w[3], (long long)w[2], (long long)w[1],
                                     (long long)w[0]);
        }
        zblock(k, X, out + r0 * k * need, rs);
    }
    return r0;
}

#define PREFIX_K(K) \
    ZAVX2 static ptrdiff_t prefix_rows_##K(const zorder_column *cols, int need, \
                                           ptrdiff_t nrows, uint8_t *out) \
    { \
        return need == 4 ? prefix_rows_k(K, 4, cols, nrows, out) \
               : need == 2 ? prefix_rows_k(K, 2, cols, nrows, out) \
               : prefix_rows_k(K, 1, cols, nrows, out); \
    }
PREFIX_K(2)
PREFIX_K(3)
PREFIX_K(4)
PREFIX_K(5)
PREFIX_K(6)
PREFIX_K(7)
PREFIX_K(8)

/* staged: out is scratch with room past its rows, so the blocks that store past a row's
 * end (block8 with k = 7; k = 5 has the nibble-lookup block, ZLUT) may run too. */
static ptrdiff_t prefix_any(int k, const zorder_column *cols, int need, ptrdiff_t nrows,
                            uint8_t *out, int staged)
{
    switch (k) {
    case 2: return prefix_rows_2(cols, need, nrows, out);
    case 3: return prefix_rows_3(cols, need, nrows, out);
    case 4: return prefix_rows_4(cols, need, nrows, out);
    case 5: return ZLUT(5) || staged ? prefix_rows_5(cols, need, nrows, out) : 0;
    case 6: return prefix_rows_6(cols, need, nrows, out);
    case 7: return ZLUT(7) || staged ? prefix_rows_7(cols, need, nrows, out) : 0;
    default: return prefix_rows_8(cols, need, nrows, out);
    }
}

#define PREFIX_STAGE_ROWS 1024   /* a multiple of every block's rows (4 * 8 / need) */

/* Rows that need only a 1-, 2- or 4-byte prefix of each column but keep fewer bytes than
 * those prefixes make (5x8 -> 8, 7x8 -> 10), or whose blocks store past a row's end (7
 * columns): the prefix rows into scratch, a chunk at a time, and each row's first `size`
 * bytes copied out. Before, such rows computed whole 8-byte slabs of every column: 7x8 ->
 * 10 cost more than the table backend. Returns the rows done (a multiple of the block's
 * rows), 0 when scratch memory is short. */
static ptrdiff_t prefix_staged(int k, const zorder_column *cols, int need, ptrdiff_t size,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    const ptrdiff_t rs = (ptrdiff_t)k * need, step = 4 * (8 / need);
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t r0 = 0, rows, done;
    int c;
    uint8_t *tmp = (uint8_t *)malloc((size_t)(PREFIX_STAGE_ROWS * rs) + 256);
    if (tmp == NULL)
        return 0;
    while (nrows - r0 >= step) {
        rows = nrows - r0 < PREFIX_STAGE_ROWS ? (nrows - r0) / step * step : PREFIX_STAGE_ROWS;
        for (c = 0; c < k; c++) {
            view[c] = cols[c];
            view[c].data = cols[c].data + r0 * cols[c].row_stride;
        }
        done = prefix_any(k, view, need, rows, tmp, 1);
        if (done <= 0)
            break;
        if (out_stride == size && size <= 16) {
            /* rows back to back: 16 bytes written from each row's start (zorder_seg_copy_rows'
             * room), the spill landing in later rows of the chunk, which write it again;
             * the last rows, whose spill would pass the chunk, exactly. (7x8 -> 10's copy
             * out of scratch was a sixth of its time in 8 + 2-byte moves.) */
            const ptrdiff_t spill_rows = (16 + size - 1) / size;
            const ptrdiff_t whole = done >= spill_rows ? done - spill_rows + 1 : 0;
            zorder_seg_copy_rows(out + r0 * size, size, tmp, rs, size, whole, 16);
            zorder_copy_rows_exact(out + (r0 + whole) * size, size, tmp + whole * rs, rs, size,
                                   done - whole);
        } else {
            zorder_copy_rows_exact(out + r0 * out_stride, out_stride, tmp, rs, size, done);
        }
        r0 += done;
    }
    free(tmp);
    return r0;
}

#endif  /* ZORDER_AVX2_PREFIX_H */
