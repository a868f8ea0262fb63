/* The portable table kernel: SPREAD[k][b] is byte b with its bits spread k apart (the
 * method of Iceberg issue #17758 / PR #17774: a group of k output bytes is the OR of
 * SPREAD[k][column_t[j]] >> t over the k columns), and the table backend. In the generic
 * layer because avx2 and neon leave to it what their vector kernels decline.
 *
 * Its hooks for the uniform fast path (spread_rows.h):
 *
 * SHIFTED[k][t * G + p][b] = (SPREAD[k][b] << (64 - 8k)) >> (t + 8kp), G = 8 / k: one
 * table per column and group position, so a lookup needs no shift. 9 x 8 x 256 words
 * (144 KiB), of which one k's 16 KiB is in use at a time. Each column's G bytes of a
 * word are read with one load and split with shifts, which keeps the load ports (the
 * limit: one table load per byte) for the lookups. */
#ifndef ZORDER_TABLE_H
#define ZORDER_TABLE_H

#include <stdint.h>
#include "spread_rows.h"
#include "bitloop.h"
#include "segments.h"

/* SPREAD, filled once by zorder_table_init (table.spread_table() shows it). */
static uint64_t zorder_table_spread[9][256];
static uint64_t zorder_table_shifted[9][8][256];

#define ZORDER_TAB(k, t, p, b) zorder_table_shifted[k][(t) * (8 / (k)) + (p)][b]

/* Byte i of the n-byte little-endian value v. */
#define ZORDER_BYTE(v, i) ((uint8_t)((v) >> (8 * (i))))

ZORDER_ALWAYS_INLINE void zorder_table_word2(const uint8_t *const *src, const int k,
                                             ptrdiff_t j0, uint64_t *w0, uint64_t *w1)
{
    const int G = 8 / k;
    uint64_t a = 0, b = 0;
    int t, p;
    for (t = 0; t < k; t++) {
        if (2 * G <= 8) {
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 2 * G);
            for (p = 0; p < G; p++) {
                a |= ZORDER_TAB(k, t, p, ZORDER_BYTE(v, p));
                b |= ZORDER_TAB(k, t, p, ZORDER_BYTE(v, G + p));
            }
        } else {
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 8);
            const uint64_t u = ZORDER_LOAD_LE(src[t] + j0 + 8, 8);
            for (p = 0; p < G; p++) {
                a |= ZORDER_TAB(k, t, p, ZORDER_BYTE(v, p));
                b |= ZORDER_TAB(k, t, p, ZORDER_BYTE(u, p));
            }
        }
    }
    *w0 = a;
    *w1 = b;
}

ZORDER_ALWAYS_INLINE uint64_t zorder_table_word(const uint8_t *const *src, const int k,
                                                ptrdiff_t j0)
{
    const int G = 8 / k;
    uint64_t w = 0;
    int t, p;
    for (t = 0; t < k; t++) {
        const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, G);
        for (p = 0; p < G; p++)
            w |= ZORDER_TAB(k, t, p, ZORDER_BYTE(v, p));
    }
    return w;
}

/* 8 columns measured slower with streaming stores (NOTES.md "Cost vector: table") */
#define ZORDER_STREAM_OK(k) ((k) < 8)
#define ZORDER_WORD2(k, src, j0, w0, w1) zorder_table_word2(src, k, j0, &(w0), &(w1))
#define ZORDER_WORD(k, src, j0) zorder_table_word(src, k, j0)
#define ZORDER_LOOKUP(k, t, p, b) ZORDER_TAB(k, t, p, b)
#include "spread_rows.h"

#define zorder_table_uniform zorder_spread_uniform

/* Fills SPREAD (bit i of b, i = 0 its MSB, at position 8k-1-i*k) and SHIFTED from it. */
static void zorder_table_init(void)
{
    int k, t, p, b;
    zorder_fill_spread(&zorder_table_spread[0][0], 256, 8);
    ZORDER_FOR_EACH_SLOT(k, t, p)
        for (b = 0; b < 256; b++)
            zorder_table_shifted[k][t * (8 / k) + p][b] =
                (zorder_table_spread[k][b] << (64 - 8 * k)) >> (t + 8 * k * p);
}

/* Up to 8 columns of one width on the kernel; ragged widths and 9-64 columns segment by
 * segment (segments.h); more columns the bit loop. */
static const zorder_backend zorder_table_backend = {
    .name = "table", .scalar = zorder_table_uniform, .uniform = zorder_table_uniform,
    ZORDER_DEFAULT_COSTS, .fallback = &zorder_bitloop_backend,
};

#endif
