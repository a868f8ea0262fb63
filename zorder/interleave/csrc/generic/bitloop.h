/* The reference interleave, Iceberg's loop one output bit at a time: every input the front
 * end accepts (any column count, ragged widths, any truncated size). It is the oracle the
 * other backends are tested against, and the last fallback of every one of them. */
#ifndef ZORDER_BITLOOP_H
#define ZORDER_BITLOOP_H

#include <string.h>
#include "backend.h"

static inline void zorder_bitloop_rows(const zorder_column *cols, ptrdiff_t ncols,
                                       ptrdiff_t size, ptrdiff_t nrows, uint8_t *out,
                                       ptrdiff_t out_stride)
{
    const ptrdiff_t total_bits = size * 8;
    ptrdiff_t r, c, byte_index, out_bit;
    int bit;
    for (r = 0; r < nrows; r++) {
        uint8_t *row_out = out + r * out_stride;
        memset(row_out, 0, (size_t)size);
        out_bit = 0;
        byte_index = 0;
        /* Source order: byte 0's bit 7 of every column, then its bit 6, ..., then byte 1.
         * A column without a byte at byte_index is skipped. The front end guarantees
         * size <= sum of widths, so the loop always ends by filling the output. */
        while (out_bit < total_bits) {
            for (bit = 7; bit >= 0 && out_bit < total_bits; bit--) {
                for (c = 0; c < ncols; c++) {
                    if (byte_index < cols[c].width) {
                        if ((cols[c].data[r * cols[c].row_stride + byte_index] >> bit) & 1)
                            row_out[out_bit >> 3] |= (uint8_t)(0x80 >> (out_bit & 7));
                        out_bit++;
                        if (out_bit == total_bits)
                            break;
                    }
                }
            }
            byte_index++;
        }
    }
}

static int zorder_bitloop_all(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                              ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    zorder_bitloop_rows(cols, ncols, size, nrows, out, out_stride);
    return 1;
}

static const zorder_backend zorder_bitloop_backend = {
    .name = "bitloop", .rows = zorder_bitloop_all, ZORDER_DEFAULT_COSTS,
};

#endif
