/* The uniform fast path shared by the table and nibble backends.
 *
 * "Uniform" means k <= 8 columns of one width W. Output group j (k bytes) is the OR over
 * columns t of spread(col_t[j]) >> t. Here G = 8 / k groups are packed into one 64-bit
 * word, most significant byte first, and the word is stored as 8 big-endian bytes at
 * byte m * G * k of the row. For k = 1, 2, 4, 8 words tile the row; for k = 3 (6 of 8
 * bytes used) and k = 5, 6, 7 (k of 8) each store overlaps the next one, which rewrites
 * those bytes with their real values.
 *
 * The including file defines, before including this header,
 *   ZORDER_LOOKUP(k, t, p, b): the 64-bit word holding byte b of column t at group
 *   position p of a word, i.e. (spread_k(b) << (64 - 8k)) >> (t + 8kp),
 * with k, t, p compile-time constants wherever the kernel below is fast, so each lookup
 * is one load from a fixed table (no shifts at run time).
 *
 * Bytes past `size` in a row are never written, except that while out_stride == size
 * (rows back to back) a row's last store may run into the next row, which is written
 * after it; the last row of a call is always exact, so threads running neighbouring
 * row ranges never touch each other's bytes. Columns are read byte by byte, never past
 * their width. */
#ifndef ZORDER_SPREAD_ROWS_H
#define ZORDER_SPREAD_ROWS_H

#include <string.h>
#include "_kernel.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <stdlib.h>
#define ZORDER_ALWAYS_INLINE static __forceinline
#define ZORDER_BSWAP64(x) _byteswap_uint64(x)
#define ZORDER_LITTLE_ENDIAN 1
#else
#define ZORDER_ALWAYS_INLINE static inline __attribute__((always_inline))
#define ZORDER_BSWAP64(x) __builtin_bswap64(x)
#define ZORDER_LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#endif

/* The 8 bytes of w at dst, most significant first. */
ZORDER_ALWAYS_INLINE void zorder_store_be64(uint8_t *dst, uint64_t w)
{
#if ZORDER_LITTLE_ENDIAN
    w = ZORDER_BSWAP64(w);
#endif
    memcpy(dst, &w, 8);
}

/* The first n (< 8) bytes of zorder_store_be64(dst, w). */
ZORDER_ALWAYS_INLINE void zorder_store_be_prefix(uint8_t *dst, uint64_t w, ptrdiff_t n)
{
#if ZORDER_LITTLE_ENDIAN
    uint64_t be = ZORDER_BSWAP64(w);
    if (n & 4) {
        uint32_t v = (uint32_t)be;
        memcpy(dst, &v, 4);
        dst += 4;
        be >>= 32;
    }
    if (n & 2) {
        uint16_t v = (uint16_t)be;
        memcpy(dst, &v, 2);
        dst += 2;
        be >>= 16;
    }
    if (n & 1)
        *dst = (uint8_t)be;
#else
    ptrdiff_t b;
    for (b = 0; b < n; b++)
        dst[b] = (uint8_t)(w >> (56 - 8 * b));
#endif
}

#endif /* ZORDER_SPREAD_ROWS_H */

#ifndef ZORDER_SPREAD_ROWS_BODY
#define ZORDER_SPREAD_ROWS_BODY

/* One row: `nwords` full words, then the fewer than 8 bytes left, exactly. */
ZORDER_ALWAYS_INLINE void zorder_spread_row(const uint8_t *const *src, const int k, const int G,
                                            ptrdiff_t nwords, ptrdiff_t size, uint8_t *dst)
{
    ptrdiff_t m, pos, rest, q;
    int t, p;
    for (m = 0; m < nwords; m++) {
        uint64_t w = 0;
        const ptrdiff_t j0 = m * G;
        for (p = 0; p < G; p++)
            for (t = 0; t < k; t++)
                w |= ZORDER_LOOKUP(k, t, p, src[t][j0 + p]);
        zorder_store_be64(dst + m * G * k, w);
    }
    pos = nwords * G * k;
    rest = size - pos;
    if (rest > 0) {
        /* At most 7 bytes: the groups that start before `size`, shifted at run time. */
        uint64_t w = 0;
        const ptrdiff_t j0 = nwords * G;
        for (q = 0; q * k < rest; q++)
            for (t = 0; t < k; t++)
                w |= ZORDER_LOOKUP(k, t, 0, src[t][j0 + q]) >> (8 * k * q);
        zorder_store_be_prefix(dst + pos, w, rest);
    }
}

ZORDER_ALWAYS_INLINE void zorder_spread_uniform_k(const zorder_column *cols, const int k,
                                                  ptrdiff_t size, ptrdiff_t nrows,
                                                  uint8_t *out, ptrdiff_t out_stride)
{
    const int G = 8 / k;
    const uint8_t *src[ZORDER_MAX_GROUP];
    ptrdiff_t stride[ZORDER_MAX_GROUP];
    ptrdiff_t r, ngroups, words_spill, words_exact;
    int t;
    if (nrows <= 0 || size <= 0)
        return;
    for (t = 0; t < k; t++) {
        src[t] = cols[t].data;
        stride[t] = cols[t].row_stride;
    }
    ngroups = (size + k - 1) / k;
    /* Words whose G groups are all needed; with rows back to back all of them can be
     * stored whole. Otherwise only those whose 8 bytes end within the row. */
    words_spill = ngroups / G;
    words_exact = size >= 8 ? (size - 8) / (G * k) + 1 : 0;
    if (words_exact > words_spill)
        words_exact = words_spill;
    if (out_stride != size)
        words_spill = words_exact;
    for (r = 0; r + 1 < nrows; r++) {
        zorder_spread_row(src, k, G, words_spill, size, out);
        for (t = 0; t < k; t++)
            src[t] += stride[t];
        out += out_stride;
    }
    zorder_spread_row(src, k, G, words_exact, size, out);
}

/* The uniform kernel for k (1..8) columns of equal width, `size` <= k * width. */
static void zorder_spread_uniform(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    /* A constant k per case lets the compiler unroll the group loops and turn every
     * ZORDER_LOOKUP into one load at a fixed table offset. */
    switch (k) {
    case 1: zorder_spread_uniform_k(cols, 1, size, nrows, out, out_stride); break;
    case 2: zorder_spread_uniform_k(cols, 2, size, nrows, out, out_stride); break;
    case 3: zorder_spread_uniform_k(cols, 3, size, nrows, out, out_stride); break;
    case 4: zorder_spread_uniform_k(cols, 4, size, nrows, out, out_stride); break;
    case 5: zorder_spread_uniform_k(cols, 5, size, nrows, out, out_stride); break;
    case 6: zorder_spread_uniform_k(cols, 6, size, nrows, out, out_stride); break;
    case 7: zorder_spread_uniform_k(cols, 7, size, nrows, out, out_stride); break;
    case 8: zorder_spread_uniform_k(cols, 8, size, nrows, out, out_stride); break;
    default: break;
    }
}

#endif /* ZORDER_SPREAD_ROWS_BODY */
