/* AVX2 backend: a block of any k (zblock), and the row loops over slabs: rows apart, rows
 * back to back, one function per k (rows_any). */
#ifndef ZORDER_AVX2_ROWS_H
#define ZORDER_AVX2_ROWS_H

#include "block.h"
#include "lut.h"

/* mode: ZST_NT, non-temporal stores (every block stores whole registers only where it
 * is asked: k = 7 never is), or ZST_WHOLE (store.h). lim: the bytes of each row's 8k to
 * store, less than 8k only with k = 2, 4, 6, 8 (the others store whole rows: the callers
 * stage them), rows apart or back to back. */
ZAVX2_INLINE void zblock_nt(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                            const int mode, const zsqueeze *sq, const ptrdiff_t lim)
{
    if (ZLUT(k))
        lutblock(k, X, dst, os, mode, lim);   /* os == 8k for odd k: the callers check */
    else if (k == 4)
        block4(X, dst, os, mode, lim);
    else
        block8(k, X, dst, os, mode, sq, lim);
}

#define zblock(k, X, dst, os) zblock_nt(k, X, dst, os, 0, &sq, 8 * (k))

/* ---- row loops -------------------------------------------------------------------- */

ZAVX2_INLINE uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define AHEAD 512

/* Outputs of at least this many bytes (rows back to back) use non-temporal stores: they
 * no longer fit the caches, and the stores skip reading the lines first. */
ptrdiff_t zorder_avx2_stream_min = ZORDER_STREAM_MIN;

/* The strided row loop of rows_k: blocks of 4 rows, slab by slab; the last slab of each
 * row stores its first `last` bytes (8k: all). Columns with rows 8 bytes apart load 4
 * rows at once. */
ZAVX2_INLINE void rows_strided(const int k, const zorder_column *cols, ptrdiff_t m,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t os,
                               const ptrdiff_t last, const zsqueeze *sqp)
{
    const ptrdiff_t rs = 8 * k;
    const int spill = !ZLUT(k) && (k == 5 || k == 7);   /* stores past a row's end: block8 */
    const int whole_rows = ZLUT(k) && k % 2;   /* writes 4 rows back to back: lutblock */
    /* blocks that store whole rows (odd k): truncated or spaced-out rows are staged */
    const int direct = !spill && !(whole_rows && (os != rs || last != rs));
    uint8_t stage[4 * 64 + 16];
    __m256i X[8];
    ptrdiff_t r0, s;
    int c, i;
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    for (r0 = 0; r0 < nrows; r0 += 4) {
        const int R = nrows - r0 < 4 ? (int)(nrows - r0) : 4;
        for (s = 0; s < m; s++) {
            const ptrdiff_t n = s == m - 1 ? last : rs;
            for (c = 0; c < k; c++) {
                const ptrdiff_t st = cols[c].row_stride;
                const uint8_t *p = cols[c].data + r0 * st + 8 * s;
                if (R == 4 && st == 8) {
                    _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                    X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
                } else if (R == 4) {
                    _mm_prefetch((const char *)(p + 8 * st), _MM_HINT_T0);
                    X[c] = _mm256_set_epi64x((long long)ld64(p + 3 * st), (long long)ld64(p + 2 * st),
                                             (long long)ld64(p + st), (long long)ld64(p));
                } else {
                    uint64_t v[4] = {0, 0, 0, 0};
                    for (i = 0; i < R; i++)
                        v[i] = ld64(p + i * st);
                    X[c] = _mm256_set_epi64x((long long)v[3], (long long)v[2], (long long)v[1],
                                             (long long)v[0]);
                }
            }
            if (R == 4 && direct) {
                zblock_nt(k, X, out + r0 * os + s * rs, os, 0, sqp, n);
            } else {
                zblock_nt(k, X, stage, rs, 0, sqp, rs);
                for (i = 0; i < R; i++)
                    zorder_copy_short(out + (r0 + i) * os + s * rs, stage + i * rs, n);
            }
        }
    }
}

/* Rows of 8 bytes back to back in every column (32-byte loads of 4 rows): output row t at
 * out + t * os, its first `lim` bytes (8k: all). Streaming stores for rows back to back
 * and whole. */
ZAVX2_INLINE void rows_packed(const int k, const zorder_column *cols, ptrdiff_t n,
                              uint8_t *out, ptrdiff_t os, const ptrdiff_t lim,
                              const zsqueeze *sqp)
{
    const ptrdiff_t rs = 8 * k, nb = n / 4, R = n - 4 * nb;
    const int spill = !ZLUT(k) && (k == 5 || k == 7);   /* stores past a row's end: block8 */
    const int whole_rows = ZLUT(k) && k % 2;   /* writes 4 rows back to back: lutblock */
    /* blocks that store whole rows (odd k): truncated or spaced-out rows are staged */
    const int direct = !(whole_rows || spill) || (os == rs && lim == rs);
    /* rows back to back and cut inside the slab (2x8 -> 12, 8x8 -> 40): each row's
     * whole slab is stored, rows in order, running over the next rows' starts, which
     * they write again; only the rows whose slab would pass the output's end store
     * exactly. Stores cut to the row (8 + 4 bytes, 32 + 8) made those shapes 1.5-2.6x
     * slower than the whole rows in cache. */
    const int over = !(whole_rows || spill) && os == lim && lim < rs;
    uint8_t stage[4 * 64 + 16];
    __m256i X[8];
    ptrdiff_t b = 0, i;
    int c;
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    if (k != 7 && os == rs && lim == rs && ((uintptr_t)out & 15) == 0
        && n * rs >= zorder_avx2_stream_min) {
        for (; b < nb; b++) {
            for (c = 0; c < k; c++) {
                const uint8_t *p = cols[c].data + 32 * b;
                _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
            }
            zblock_nt(k, X, out + 4 * rs * b, rs, 1, sqp, rs);
        }
        _mm_sfence();
    }
    for (; b < nb; b++) {
        for (c = 0; c < k; c++) {
            const uint8_t *p = cols[c].data + 32 * b;
            _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
            X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
        }
        if (over && (4 * b + 3) * os + rs <= n * os) {
            zblock_nt(k, X, out + 4 * os * b, os, ZST_WHOLE, sqp, lim);
        } else if (direct && !(spill && b == nb - 1)) {
            zblock_nt(k, X, out + 4 * os * b, os, 0, sqp, lim);
        } else {
            zblock_nt(k, X, stage, rs, 0, sqp, rs);
            for (i = 0; i < 4; i++)
                zorder_copy_short(out + (4 * b + i) * os, stage + i * rs, lim);
        }
    }
    if (R) {
        uint8_t buf[8][32];
        for (c = 0; c < k; c++) {
            memset(buf[c], 0, 32);
            memcpy(buf[c], cols[c].data + 32 * nb, (size_t)(8 * R));
            X[c] = _mm256_loadu_si256((const __m256i *)(const void *)buf[c]);
        }
        zblock_nt(k, X, stage, rs, 0, sqp, rs);
        for (i = 0; i < R; i++)
            zorder_copy_short(out + (4 * nb + i) * os, stage + i * rs, lim);
    }
}

/* Rows [0, nrows) of slabs [0, m) of k columns (bytes [0, 8m) of each column row, any
 * strides), writing the first 8k(m - 1) + last bytes of each output row (last <= 8k). */
ZAVX2_INLINE void rows_k(const int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t os, ptrdiff_t last)
{
    const ptrdiff_t rs = 8 * k;                 /* output bytes of one slab */
    zsqueeze sq;
    int c, packed = 1;
    if (k != 2 && k != 4 && k != 8 && !ZLUT(k))
        squeeze_init(&sq, k);
    for (c = 0; c < k; c++)
        packed &= cols[c].row_stride == 8 * m;
    /* (each loop twice, so whole rows keep their constant stores) */
    if (packed && os == rs * m && last == rs) {
        /* rows of 8m bytes back to back, in and out: m times as many rows of 8 */
        rows_packed(k, cols, nrows * m, out, rs, rs, &sq);
    } else if (packed && m == 1) {
        if (os == rs && last == rs)
            rows_packed(k, cols, nrows, out, rs, rs, &sq);
        else
            rows_packed(k, cols, nrows, out, os, last, &sq);
    } else if (last == rs) {
        rows_strided(k, cols, m, nrows, out, os, rs, &sq);
    } else {
        rows_strided(k, cols, m, nrows, out, os, last, &sq);
    }
}

/* One function per k, so each gets its own registers and unrolled blocks. */
#define ROWS_K(K) \
    ZAVX2 static void rows_##K(const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows, \
                               uint8_t *out, ptrdiff_t os, ptrdiff_t last) \
    { rows_k(K, cols, m, nrows, out, os, last); }
ROWS_K(2)
ROWS_K(3)
ROWS_K(4)
ROWS_K(5)
ROWS_K(6)
ROWS_K(7)
ROWS_K(8)

static void rows_any(int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                     uint8_t *out, ptrdiff_t os, ptrdiff_t last)
{
    switch (k) {
    case 2: rows_2(cols, m, nrows, out, os, last); break;
    case 3: rows_3(cols, m, nrows, out, os, last); break;
    case 4: rows_4(cols, m, nrows, out, os, last); break;
    case 5: rows_5(cols, m, nrows, out, os, last); break;
    case 6: rows_6(cols, m, nrows, out, os, last); break;
    case 7: rows_7(cols, m, nrows, out, os, last); break;
    default: rows_8(cols, m, nrows, out, os, last); break;
    }
}

#endif  /* ZORDER_AVX2_ROWS_H */
