#ifndef ZORDER_NEON_KERNEL_H
#define ZORDER_NEON_KERNEL_H

#include "kernel.h"

/* 1 when this build has the Advanced SIMD kernel (aarch64, where every CPU has it); 0 when
 * the file compiled to a stub, and then zorder_neon_uniform always returns 0. */
extern const int zorder_neon_built;

/* Fills the byte-interleave index tables (5 and 7 columns); plain C. */
void zorder_neon_init(void);

/* The uniform kernel: k (2..8) columns of one width that is a multiple of 8 bytes, any
 * row strides, size <= k * width (truncated rows included), any out_stride. Writes exactly
 * the first `size` bytes of every output row and reads no column byte past the width.
 * Returns 0, having written nothing, for any other shape (k = 1, other widths). */
int zorder_neon_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride);

#endif
