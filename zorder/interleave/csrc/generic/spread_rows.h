/* The uniform fast path shared by the table, nibble and pdep backends.
 *
 * "Uniform" means k <= 8 columns of one width W. Output group j (k bytes) is the
 * interleave of byte j of every column. G groups (G * k <= 8) are packed into one 64-bit
 * word, most significant byte first, and the word is stored as 8 big-endian bytes at
 * byte m * G * k of the row. When G * k = 8 words tile the row; otherwise (k = 3, 5, 6, 7)
 * each store overlaps the next one, which rewrites those bytes with their real values.
 *
 * The including file defines, before including this header (k is a compile-time
 * constant in every call, so loops over columns unroll and tables have fixed offsets):
 *   ZORDER_G(k): groups per word (default 8 / k);
 *   ZORDER_WORD2(k, src, j0, w0, w1): sets w0 and w1 to the words of groups
 *     j0 .. j0 + G - 1 and j0 + G .. j0 + 2G - 1 (two at once, to share column loads);
 *   ZORDER_WORD(k, src, j0): the word of groups j0 .. j0 + G - 1;
 *   ZORDER_GROUP(k, src, j): group j alone, in the top 8k bits, or instead
 *     ZORDER_LOOKUP(k, t, p, b): the table word of byte b of column t at group position p;
 *   optionally ZORDER_TARGET: a function attribute for the kernel (target("bmi2") for pdep);
 *   optionally ZORDER_STREAM_OK(k): 0 where streaming stores lose (default 1).
 * `src[t]` points at byte 0 of column t in the current row.
 *
 * Bytes past `size` in a row are never written, except that while out_stride == size
 * (rows back to back) a row's last store may run into the next row (never further),
 * which is written after it; the last row of a call is always exact, so threads running
 * neighbouring row ranges never touch each other's bytes. Columns are never read past
 * their width (loads of 2, 4 or 8 bytes only cover groups the row needs). */
#ifndef ZORDER_SPREAD_ROWS_H
#define ZORDER_SPREAD_ROWS_H

#include <string.h>
#include "kernel.h"

/* Every slot of a backend's pre-shifted tables: k columns (1-8), column t, group position
 * p of a word; the slot is t * (8 / k) + p and its shift t + 8 * k * p. (Used by the table
 * fills at import.) */
/* spread[k][v] (rows of `values` words, k = 0..8) for k = 1..8 and every `bits`-bit value
 * v: v's bits spread k apart, its MSB at position bits * k - 1 (filled at import). */
static inline void zorder_fill_spread(uint64_t *spread, int values, int bits)
{
    int k, v;
    for (k = 1; k <= 8; k++)
        for (v = 0; v < values; v++)
            spread[k * values + v] = zorder_spread_bits((uint64_t)v, bits, k);
}

#define ZORDER_FOR_EACH_SLOT(k, t, p) \
    for (k = 1; k <= 8; k++) \
        for (t = 0; t < k; t++) \
            for (p = 0; p < 8 / k; p++)

#include "compiler.h"

#define ZORDER_PREFETCH_BYTES 2048
#ifndef ZORDER_STREAM_BYTES
#define ZORDER_STREAM_BYTES (4 << 20)
#endif


/* The 8 bytes of w at dst, most significant first. */
ZORDER_ALWAYS_INLINE void zorder_store_be64(uint8_t *dst, uint64_t w)
{
#if ZORDER_LITTLE_ENDIAN
    w = ZORDER_BSWAP64(w);
#endif
    memcpy(dst, &w, 8);
}

/* zorder_store_be64 with a non-temporal store where there is one (x86-64: MOVNTI, in
 * SSE2, so every x86-64 has it): the line is not read for ownership first. Callers
 * end with zorder_store_fence(). Elsewhere an ordinary store. */
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
ZORDER_ALWAYS_INLINE void zorder_store_be64_nt(uint8_t *dst, uint64_t w)
{
    _mm_stream_si64((long long *)(void *)dst, (long long)ZORDER_BSWAP64(w));
}
#define zorder_store_fence() _mm_sfence()
#define ZORDER_HAVE_NT 1
#else
#define zorder_store_be64_nt zorder_store_be64
#define zorder_store_fence() ((void)0)
#define ZORDER_HAVE_NT 0
#endif

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

/* n (1, 2, 4 or 8, a constant) bytes at p as an integer whose byte i is p[i]. */
ZORDER_ALWAYS_INLINE uint64_t zorder_load_le(const uint8_t *p, const int n)
{
#if ZORDER_LITTLE_ENDIAN
    uint64_t v8;
    uint32_t v4;
    uint16_t v2;
    if (n == 8)
        return memcpy(&v8, p, 8), v8;
    if (n == 4)
        return memcpy(&v4, p, 4), v4;
    if (n == 2)
        return memcpy(&v2, p, 2), v2;
    return *p;
#else
    uint64_t v = 0;
    int i;
    for (i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
#endif
}

#define ZORDER_LOAD_LE(p, n) zorder_load_le(p, n)

#endif /* ZORDER_SPREAD_ROWS_H */


/* The kernel itself, once the includer has defined its hooks (it includes this file a
 * first time for the helpers above, a second time after its hook definitions). */
#if defined(ZORDER_WORD) && !defined(ZORDER_SPREAD_ROWS_BODY)
#define ZORDER_SPREAD_ROWS_BODY

/* An includer may turn streaming stores off for some k (where they measured slower). */
#ifndef ZORDER_STREAM_OK
#define ZORDER_STREAM_OK(k) 1
#endif
#ifndef ZORDER_TARGET
#define ZORDER_TARGET
#endif
#ifndef ZORDER_G
#define ZORDER_G(k) (8 / (k))
#endif

/* A table kernel's ZORDER_GROUP, from its ZORDER_LOOKUP(k, t, p, byte): the word that
 * byte of column t puts at group position p. */
#ifndef ZORDER_GROUP
ZORDER_ALWAYS_INLINE uint64_t zorder_lookup_group(const uint8_t *const *src, const int k,
                                                  ptrdiff_t j)
{
    uint64_t w = 0;
    int t;
    for (t = 0; t < k; t++)
        w |= ZORDER_LOOKUP(k, t, 0, src[t][j]);
    return w;
}
#define ZORDER_GROUP(k, src, j) zorder_lookup_group(src, k, j)
#endif

/* One row: `nwords` full words (streaming stores if nt), then the fewer than 8 bytes
 * left, exactly. */
ZORDER_TARGET ZORDER_ALWAYS_INLINE
void zorder_spread_row_nt(const uint8_t *const *src, const int k, ptrdiff_t nwords,
                          ptrdiff_t size, uint8_t *dst, const int nt)
{
    const int G = ZORDER_G(k);
    ptrdiff_t m = 0, pos, rest, q;
    for (; m + 2 <= nwords; m += 2) {
        uint64_t w0, w1;
        ZORDER_WORD2(k, src, m * G, w0, w1);
        if (nt) {
            zorder_store_be64_nt(dst + m * G * k, w0);
            zorder_store_be64_nt(dst + (m + 1) * G * k, w1);
        } else {
            zorder_store_be64(dst + m * G * k, w0);
            zorder_store_be64(dst + (m + 1) * G * k, w1);
        }
    }
    if (m < nwords) {
        if (nt)
            zorder_store_be64_nt(dst + m * G * k, ZORDER_WORD(k, src, m * G));
        else
            zorder_store_be64(dst + m * G * k, ZORDER_WORD(k, src, m * G));
        m++;
    }
    pos = nwords * G * k;
    rest = size - pos;
    if (rest > 0) {
        /* At most 7 bytes: the groups that start before `size`, shifted at run time. */
        uint64_t w = 0;
        const ptrdiff_t j0 = nwords * G;
        for (q = 0; q * k < rest; q++)
            w |= ZORDER_GROUP(k, src, j0 + q) >> (8 * k * q);
        zorder_store_be_prefix(dst + pos, w, rest);
    }
}

#define zorder_spread_row(src, k, nwords, size, dst) \
    zorder_spread_row_nt(src, k, nwords, size, dst, 0)

/* The hardware prefetcher alone leaves these kernels waiting on memory: 1M rows of
 * 4 x 8 bytes, table 17 -> 11.4 ns a row, pdep 11.7 -> 8.4 with a software prefetch of
 * the row about 2 KiB ahead. Sets ahead[t] (bytes, in whole rows) and, unless wanted is
 * NULL, wanted[t]; returns the rows. */
static inline ptrdiff_t zorder_prefetch_plan(const uint8_t *const *src, const ptrdiff_t *stride,
                                            int k, ptrdiff_t *ahead, int *wanted)
{
    ptrdiff_t widest = 1, rows;
    int t;
    for (t = 0; t < k; t++) {
        const ptrdiff_t step = stride[t] < 0 ? -stride[t] : stride[t];
        if (step > widest)
            widest = step;
    }
    rows = widest < ZORDER_PREFETCH_BYTES ? ZORDER_PREFETCH_BYTES / widest : 1;
    for (t = 0; t < k; t++) {
        int u;
        ahead[t] = stride[t] * rows;
        /* Columns of one block (same stride, within 32 bytes of an earlier column) share
         * that column's prefetch: the table kernel is load-port bound (4 x 8 B: 8.9 ->
         * 8.0 ns a row). Only for k <= 4 (wanted == NULL above): at 8 columns the flags
         * cost registers in the row loop (table 16.5 -> 18.9 ns). */
        if (!wanted)
            continue;
        wanted[t] = 1;
        for (u = 0; u < t; u++)
            if (wanted[u] && stride[u] == stride[t]
                && (uintptr_t)src[t] - (uintptr_t)src[u] < 32)   /* unsigned: >= too */
                wanted[t] = 0;
    }
    return rows;
}

/* `nrows` rows of `nwords` (a constant) whole words each; advances src; returns nrows. */
ZORDER_TARGET ZORDER_ALWAYS_INLINE
ptrdiff_t zorder_spread_rows_fixed(const uint8_t **src, const ptrdiff_t *stride, const int k,
                                   const ptrdiff_t nwords, ptrdiff_t nrows, uint8_t *out,
                                   ptrdiff_t out_stride, const int nt)
{
    const int G = ZORDER_G(k);
    const uint8_t *row[ZORDER_MAX_GROUP];
    ptrdiff_t ahead[ZORDER_MAX_GROUP];
    int wanted[ZORDER_MAX_GROUP];
    const ptrdiff_t rows_ahead =
        zorder_prefetch_plan(src, stride, k, ahead, k <= 4 ? wanted : NULL);
    ptrdiff_t left;
    int t;
    for (t = 0; t < k; t++)
        row[t] = src[t];
    /* (rows left, counted down: the prefetch test is one compare, which freed a register
     * the 4-column loop had spilled; NOTES.md "Generic driver: speed") */
    for (left = nrows; left > 0; left--) {
        if (left > rows_ahead)
            for (t = 0; t < k; t++)
                if (k > 4 || wanted[t])
                    ZORDER_PREFETCH(row[t] + ahead[t]);
        zorder_spread_row_nt(row, k, nwords, nwords * G * k, out, nt);
        for (t = 0; t < k; t++)
            row[t] += stride[t];
        out += out_stride;
    }
    for (t = 0; t < k; t++)
        src[t] = row[t];
    return nrows;
}

ZORDER_TARGET ZORDER_ALWAYS_INLINE
void zorder_spread_uniform_k(const zorder_column *cols, const int k, ptrdiff_t size,
                             ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    const int G = ZORDER_G(k);
    const uint8_t *src[ZORDER_MAX_GROUP];
    ptrdiff_t stride[ZORDER_MAX_GROUP];
    ptrdiff_t ahead[ZORDER_MAX_GROUP];
    ptrdiff_t r, ngroups, words_spill, words_exact, rows_ahead;
    int wanted[ZORDER_MAX_GROUP];
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
    if (nrows == 1) {
        /* interleave_bits: no row loop, prefetch or streaming to set up. */
        zorder_spread_row(src, k, words_exact, size, out);
        return;
    }
    rows_ahead = zorder_prefetch_plan(src, stride, k, ahead, k <= 4 ? wanted : NULL);
    /* A spilling store may only run into the next row, which rewrites all of its bytes
     * afterwards: it must end within 2 * size of its row's start. With a short row
     * (size < 8) the 8 bytes would otherwise cross several rows, past the buffer's end. */
    if (out_stride != size || (words_spill > 0 && (words_spill - 1) * G * k + 8 > 2 * size))
        words_spill = words_exact;
    r = 0;
    if (words_spill * G * k == size) {
        /* Rows of whole words (every shape of 8-byte columns at full width, and 8 output
         * bytes from 2, 4 or 8 columns): a loop with the word count fixed, so the row is
         * straight-line code and the loop keeps its pointers in registers. */
        /* Streaming stores pay for outputs past the L2 and need rows back to back (NOTES.md
         * "table, nibble, pdep"). */
        const int nt = ZORDER_HAVE_NT && ZORDER_STREAM_OK(k) && out_stride == size
                       && (nrows - 1) * size >= ZORDER_STREAM_BYTES;
        /* (nt a constant in each expansion, so each word count gets its own loop) */
#define ZORDER_FIXED(n, nt) \
    zorder_spread_rows_fixed(src, stride, k, n, nrows - 1, out, out_stride, nt)
#define ZORDER_FIXED_WORDS(nt) \
    switch (words_spill) { \
    case 1: r = ZORDER_FIXED(1, nt); break; \
    case 2: r = ZORDER_FIXED(2, nt); break; \
    case 4: r = ZORDER_FIXED(4, nt); break; \
    case 8: r = ZORDER_FIXED(8, nt); break; \
    default: break; \
    }
        if (nt) {
            ZORDER_FIXED_WORDS(1)
            zorder_store_fence();
        } else {
            ZORDER_FIXED_WORDS(0)
        }
#undef ZORDER_FIXED_WORDS
#undef ZORDER_FIXED
        out += r * out_stride;
    }
    for (; r + 1 < nrows; r++) {
        if (r + rows_ahead < nrows)
            for (t = 0; t < k; t++)
                if (k > 4 || wanted[t])
                    ZORDER_PREFETCH(src[t] + ahead[t]);
        zorder_spread_row(src, k, words_spill, size, out);
        for (t = 0; t < k; t++)
            src[t] += stride[t];
        out += out_stride;
    }
    zorder_spread_row(src, k, words_exact, size, out);
}

/* The uniform kernel for k (1..8) columns of equal width, `size` <= k * width. */
ZORDER_TARGET
static void zorder_spread_uniform(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    /* A constant k per case lets the compiler unroll the column loops and give every
     * table lookup a fixed offset. */
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
