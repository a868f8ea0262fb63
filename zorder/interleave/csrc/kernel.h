/* The C side of the kernel contract (see kernel.pxd), shared by the Cython backends and
 * by the C files that need per-function target attributes (pdep, avx2, simd). */
#ifndef ZORDER_KERNEL_H
#define ZORDER_KERNEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *data;   /* byte 0 of row 0 */
    ptrdiff_t row_stride;  /* bytes from one row to the next */
    ptrdiff_t width;       /* bytes of this column in every row */
} zorder_column;

/* Output bytes of one kernel call from which the vector kernels write with non-temporal
 * stores: from there the output leaves the cache (NOTES.md, "simd"). */
#define ZORDER_STREAM_MIN ((ptrdiff_t)4 << 20)

/* The most columns of one uniform group (one 64-bit word of k bytes a group). */
#define ZORDER_MAX_GROUP 8

/* 1 when 1 <= ncols <= 8 columns all have one width: the shape of the fast path. */
static inline int zorder_is_uniform(const zorder_column *cols, ptrdiff_t ncols)
{
    ptrdiff_t c;
    if (ncols < 1 || ncols > ZORDER_MAX_GROUP)
        return 0;
    for (c = 1; c < ncols; c++)
        if (cols[c].width != cols[0].width)
            return 0;
    return 1;
}

/* need[c] for c < ncols: the bytes of column c that rows cut to `size` bytes use. Iceberg
 * deals the bits level by level, one to each column that still has bits at that level,
 * in column order (the bitloop backend's order). */
static inline void zorder_bytes_used(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                                     int *need)
{
    ptrdiff_t c, level, pos = 0, widest = 0;
    for (c = 0; c < ncols; c++) {
        need[c] = 0;
        if (cols[c].width > widest)
            widest = cols[c].width;
    }
    for (level = 0; level < 8 * widest && pos < 8 * size; level++)
        for (c = 0; c < ncols && pos < 8 * size; c++)
            if (level < 8 * cols[c].width) {
                need[c] = (int)(level / 8 + 1);
                pos++;
            }
}

/* The bytes of a row that a block of rows 1-8 bytes apart reads whole, or of rows further
 * apart reads from each (the first 8: avx2's byte planes and prefix rows). */
static inline ptrdiff_t zorder_row_reach(ptrdiff_t row_stride)
{
    return row_stride > 8 ? 8 : row_stride;
}

/* Whether blocks of rows can read what rows of the call use of every column (need[c]:
 * zorder_bytes_used): rows ascending, no narrower than the column, and where they are more
 * than 8 bytes apart, used in at most their first 8 bytes. The byte planes' condition on
 * the columns (avx2's zorder_avx2_planar), and so auto's many-columns-short's. */
static inline int zorder_rows_reachable(const zorder_column *cols, ptrdiff_t ncols,
                                        const int *need)
{
    ptrdiff_t c;
    for (c = 0; c < ncols; c++) {
        if (cols[c].row_stride < 1 || cols[c].width < 0 || cols[c].width > cols[c].row_stride)
            return 0;
        if (need[c] > zorder_row_reach(cols[c].row_stride))   /* (need <= width <= stride) */
            return 0;
    }
    return 1;
}

/* The k-column spreading every table and mask is generated from: the nbits-wide value v
 * with its bit i (i = 0 its most significant) at position nbits*k - 1 - i*k, i.e. each bit
 * followed by the k - 1 bits of the other columns. spread(b, 8, k) is SPREAD[k][b]. */
static inline uint64_t zorder_spread_bits(uint64_t v, int nbits, int k)
{
    uint64_t w = 0;
    int i;
    for (i = 0; i < nbits; i++)
        if ((v >> (nbits - 1 - i)) & 1)
            w |= (uint64_t)1 << (nbits * k - 1 - i * k);
    return w;
}

#endif
