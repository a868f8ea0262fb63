/* The table backend's lookups for the uniform fast path (_spread_rows.h).
 *
 * SHIFTED[k][t * G + p][b] = (SPREAD[k][b] << (64 - 8k)) >> (t + 8kp), G = 8 / k: one
 * table per column and group position, so a lookup needs no shift. 9 x 8 x 256 words
 * (144 KiB), of which one k's 16 KiB is in use at a time. */
#ifndef ZORDER_TABLE_KERNEL_H
#define ZORDER_TABLE_KERNEL_H

#include <stdint.h>

static uint64_t zorder_table_shifted[9][8][256];

#define ZORDER_LOOKUP(k, t, p, b) zorder_table_shifted[k][(t) * (8 / (k)) + (p)][b]
#include "_spread_rows.h"

/* Fills SHIFTED from SPREAD[k][b] (byte b's bits spread k apart, in the low 8k bits). */
static void zorder_table_fill_shifted(const uint64_t spread[9][256])
{
    int k, t, p, b;
    for (k = 1; k <= 8; k++)
        for (t = 0; t < k; t++)
            for (p = 0; p < 8 / k; p++)
                for (b = 0; b < 256; b++)
                    zorder_table_shifted[k][t * (8 / k) + p][b] =
                        (spread[k][b] << (64 - 8 * k)) >> (t + 8 * k * p);
}

#endif
