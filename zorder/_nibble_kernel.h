/* The nibble backend's lookups for the uniform fast path (_spread_rows.h).
 *
 * SHIFTED[k][t * G + p][0][h] holds the high nibble h, [1][l] the low nibble l, each
 * already where byte (h << 4 | l) of column t at group position p goes:
 * (spread_k(byte) << (64 - 8k)) >> (t + 8kp), G = 8 / k. Two lookups a byte, 8 KiB. */
#ifndef ZORDER_NIBBLE_KERNEL_H
#define ZORDER_NIBBLE_KERNEL_H

#include <stdint.h>

static uint64_t zorder_nibble_shifted[9][8][2][16];

#define ZORDER_LOOKUP(k, t, p, b) \
    (zorder_nibble_shifted[k][(t) * (8 / (k)) + (p)][0][(b) >> 4] | \
     zorder_nibble_shifted[k][(t) * (8 / (k)) + (p)][1][(b) & 15])
#include "_spread_rows.h"

/* Fills SHIFTED from NIBBLE[k][h] (nibble h's bits spread k apart, in the low 4k bits). */
static void zorder_nibble_fill_shifted(const uint64_t nibble[9][16])
{
    int k, t, p, h;
    for (k = 1; k <= 8; k++)
        for (t = 0; t < k; t++)
            for (p = 0; p < 8 / k; p++)
                for (h = 0; h < 16; h++) {
                    const int shift = t + 8 * k * p;
                    zorder_nibble_shifted[k][t * (8 / k) + p][0][h] =
                        (nibble[k][h] << (64 - 4 * k)) >> shift;
                    zorder_nibble_shifted[k][t * (8 / k) + p][1][h] =
                        (nibble[k][h] << (64 - 8 * k)) >> shift;
                }
}

#endif
