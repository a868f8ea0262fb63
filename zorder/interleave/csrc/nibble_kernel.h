/* The nibble backend: NIBBLE[k][h] is nibble h with its bits spread k apart, the smaller
 * table (9 x 16 words instead of 9 x 256) named in Iceberg issue #17758; each byte takes
 * two lookups, high nibble shifted above the low one. Same coverage as the table backend.
 *
 * Its hooks for the uniform fast path (spread_rows.h):
 *
 * SHIFTED[k][t * G + p][0][h] holds the high nibble h, [1][l] the low nibble l, each
 * already where byte (h << 4 | l) of column t at group position p goes:
 * (spread_k(byte) << (64 - 8k)) >> (t + 8kp), G = 8 / k. Two lookups a byte, 8 KiB. */
#ifndef ZORDER_NIBBLE_KERNEL_H
#define ZORDER_NIBBLE_KERNEL_H

#include <stdint.h>
#include "spread_rows.h"
#include "bitloop.h"
#include "segments.h"

/* NIBBLE, filled once by zorder_nibble_init (nibble.nibble_table() shows it). */
static uint64_t zorder_nibble_spread[9][16];
static uint64_t zorder_nibble_shifted[9][8][2][16];

ZORDER_ALWAYS_INLINE uint64_t zorder_nibble_lookup(const int k, const int t, const int p,
                                                   uint8_t b)
{
    const uint64_t (*tab)[16] = (const uint64_t (*)[16])zorder_nibble_shifted[k][t * (8 / k) + p];
    return tab[0][b >> 4] | tab[1][b & 15];
}

ZORDER_ALWAYS_INLINE uint64_t zorder_nibble_word(const uint8_t *const *src, const int k,
                                                 ptrdiff_t j0)
{
    const int G = 8 / k;
    uint64_t w = 0;
    int t, p;
    for (p = 0; p < G; p++)
        for (t = 0; t < k; t++)
            w |= zorder_nibble_lookup(k, t, p, src[t][j0 + p]);
    return w;
}

/* Two words at once, each column's 2G bytes read with one load (as the table does). */
ZORDER_ALWAYS_INLINE void zorder_nibble_word2(const uint8_t *const *src, const int k,
                                              ptrdiff_t j0, uint64_t *w0, uint64_t *w1)
{
    const int G = 8 / k;
    uint64_t a = 0, b = 0;
    int t, p;
    if (2 * G > 8) {
        *w0 = zorder_nibble_word(src, k, j0);
        *w1 = zorder_nibble_word(src, k, j0 + G);
        return;
    }
    for (t = 0; t < k; t++) {
        const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 2 * G);
        for (p = 0; p < G; p++) {
            a |= zorder_nibble_lookup(k, t, p, (uint8_t)(v >> (8 * p)));
            b |= zorder_nibble_lookup(k, t, p, (uint8_t)(v >> (8 * (G + p))));
        }
    }
    *w0 = a;
    *w1 = b;
}

#define ZORDER_WORD2(k, src, j0, w0, w1) zorder_nibble_word2(src, k, j0, &(w0), &(w1))
#define ZORDER_WORD(k, src, j0) zorder_nibble_word(src, k, j0)
#define ZORDER_LOOKUP(k, t, p, b) zorder_nibble_lookup(k, t, p, b)
#include "spread_rows.h"

/* Fills NIBBLE (bit i of nibble h, i = 0 its MSB, at position 4k-1-i*k) and SHIFTED from
 * it. */
static void zorder_nibble_init(void)
{
    int k, t, p, h;
    zorder_fill_spread(&zorder_nibble_spread[0][0], 16, 4);
    ZORDER_FOR_EACH_SLOT(k, t, p)
        for (h = 0; h < 16; h++) {
            const int shift = t + 8 * k * p;
            zorder_nibble_shifted[k][t * (8 / k) + p][0][h] =
                (zorder_nibble_spread[k][h] << (64 - 4 * k)) >> shift;
            zorder_nibble_shifted[k][t * (8 / k) + p][1][h] =
                (zorder_nibble_spread[k][h] << (64 - 8 * k)) >> shift;
        }
}

static const zorder_backend zorder_nibble_backend = {
    .name = "nibble", .scalar = zorder_spread_uniform, .uniform = zorder_spread_uniform,
    ZORDER_DEFAULT_COSTS, .fallback = &zorder_bitloop_backend,
};

#endif
