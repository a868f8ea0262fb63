/* AVX-512 backend: zorder_simd_rows, the entry: which method runs a call. */
#ifndef ZORDER_AVX512_ROWS_H
#define ZORDER_AVX512_ROWS_H

#include "transpose8.h"
#include "transpose4.h"
#include "spread.h"

/* The first `size` bytes of each of R rows, as 64-byte pieces (a memcpy call per row
 * cost more than the interleave). */
ZSIMD static void copy_prefixes(const uint8_t *src, ptrdiff_t src_stride, ptrdiff_t R,
                                ptrdiff_t size, uint8_t *dst, ptrdiff_t dst_stride)
{
    const __mmask64 last = (__mmask64)span_mask(0, size - 64 * ((size - 1) / 64));
    ptrdiff_t r, o;
    for (r = 0; r < R; r++) {
        const uint8_t *s = src + r * src_stride;
        uint8_t *d = dst + r * dst_stride;
        for (o = 0; o + 64 < size; o += 64)
            _mm512_storeu_si512((void *)(d + o), _mm512_loadu_si512((const void *)(s + o)));
        _mm512_mask_storeu_epi8((void *)(d + o), last, _mm512_maskz_loadu_epi8(last, (const void *)(s + o)));
    }
}

/* Truncated output of 2, 3, 5, 6 or 7 columns 16 to 64 bytes wide, or 2, 3, 6 or 7 columns
 * 8 bytes wide: the full rows of a chunk (the fast rows-of-width-8 path) into a small buffer,
 * then each row's first `size` bytes copied out. Cheaper than per-slab gathers and per-row
 * masked stores (Intel Xeon: 2x16B cut by a byte 7.7 -> 2.6 ns/row, 2x32B 17.6 -> 12.4;
 * AMD EPYC, Zen 4, in a C loop: 2x8B->8 2.5 -> 1.6, 3x8B->8 3.0 -> 2.6). Cutting wider
 * columns to the 8-byte pieces a short output needs lost (strided loads: 2x16B->8 3.1 ->
 * 5.1). Returns 0 if the buffer cannot be had. */
#define WIDE_CHUNK_ROWS 512

static int truncated_wide_rows(const zorder_column *cols, int n, ptrdiff_t size,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    const ptrdiff_t full = n * cols[0].width;
    uint8_t *tmp = (uint8_t *)malloc((size_t)(WIDE_CHUNK_ROWS * full));
    zorder_column part[8];
    ptrdiff_t r0;
    int c;
    if (tmp == NULL)
        return 0;
    for (r0 = 0; r0 < nrows; r0 += WIDE_CHUNK_ROWS) {
        const ptrdiff_t R = nrows - r0 < WIDE_CHUNK_ROWS ? nrows - r0 : WIDE_CHUNK_ROWS;
        for (c = 0; c < n; c++) {
            part[c] = cols[c];
            part[c].data = cols[c].data + r0 * cols[c].row_stride;
        }
        zorder_simd_rows(part, n, full, R, tmp, full);
        copy_prefixes(tmp, full, R, size, out + r0 * out_stride, out_stride);
    }
    free(tmp);
    return 1;
}

int zorder_simd_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    zsource src[8];
    ptrdiff_t width, r, m;
    int c, n, virt, packed;
    if (ncols < 1 || ncols > 8)
        return 0;
    n = (int)ncols;
    width = cols[0].width;
    if (width < 8 || width % 8)
        return 0;
    for (c = 1; c < n; c++)
        if (cols[c].width != width)
            return 0;
    if (size <= 0 || nrows <= 0)
        return 1;
    if (n == 1) {
        /* one column interleaves to itself */
        for (r = 0; r < nrows; r++)
            memcpy(out + r * out_stride, cols[0].data + r * cols[0].row_stride, (size_t)size);
        return 1;
    }
    /* Read in full into rows back to back, columns of width 8m are m times as many
     * rows of width 8: output row r's piece k (bytes 8nk..) depends only on bytes 8k..
     * of each column, and sits where virtual row r*m + k's output would. The block
     * patterns repeat every m blocks; up to m = 8 (64-byte columns) they are kept. */
    m = width / 8;
    /* (4 and 8 columns keep their slab loops, which stored truncated rows as fast or
     * faster in an A/B run: 8x16B 22.9 vs 26.1 ns/row, 4x24B 17.9 vs 25.2 from a block;
     * so do 5 columns of 8 bytes: 5x8B->20 4.9 vs 5.4 on an AMD EPYC, Zen 4. 6 and 7
     * columns of 8 bytes do not: their slabs' spread costs n*n affines per 8 rows for
     * every slab, the whole rows' 8-row blocks less, in one process alternating builds,
     * 1M rows, ns/row: 6x8B->12 10.4 vs 6.9, 6x8B->40 11.7 vs 7.7, 7x8B->10 13.1 vs 7.7,
     * 7x8B->48 10.6 vs 8.9.) */
    if ((m > 1 || n <= 3 || n == 6 || n == 7) && m <= 8 && size < n * width && nrows >= 8)
        return truncated_wide_rows(cols, n, size, nrows, out, out_stride);
    virt = m > 1 && m <= 8 && size == n * width && (nrows == 1 || out_stride == size);
    for (c = 0; c < n; c++) {
        const long long s = (long long)cols[c].row_stride;
        long long q, piece;
        int t, i;
        src[c].data = cols[c].data;
        src[c].m = virt ? (int)m : 1;
        src[c].step = 8 * (ptrdiff_t)s;
        src[c].contiguous = 1;
        /* virtual row v = 8t + i of a group of m blocks is row v / m, piece v % m
         * (counted, not divided: this runs on every call) */
        q = piece = 0;
        for (t = 0; t < src[c].m; t++)
            for (i = 0; i < 8; i++) {
                long long o = virt ? q * s + 8 * piece : i * s;
                src[c].offset[t][i] = o;
                if (o != 8 * (8 * t + i))
                    src[c].contiguous = 0;
                if (++piece == m) {
                    piece = 0;
                    q++;
                }
            }
    }
    if (virt) {
        nrows *= m;
        size = out_stride = 8 * n;
    }
    packed = !virt && is_packed(cols, n);
    switch (n) {
    case 8:
        if (packed)
            rows_packed_8(cols, size, nrows, out, out_stride);
        else
            rows_cols_8(src, size, nrows, out, out_stride);
        break;
    case 4:
        if (packed)
            rows_packed_4(cols, size, nrows, out, out_stride);
        else
            rows_cols_4(src, size, nrows, out, out_stride);
        break;
    case 2: rows_spread_2(src, size, nrows, out, out_stride, packed); break;
    case 3: rows_spread_3(src, size, nrows, out, out_stride, packed); break;
    case 5: rows_spread_5(src, size, nrows, out, out_stride, packed); break;
    case 6: rows_spread_6(src, size, nrows, out, out_stride, packed); break;
    default: rows_spread_7(src, size, nrows, out, out_stride, packed); break;
    }
    return 1;
}

#endif  /* ZORDER_AVX512_ROWS_H */
