#ifndef ZORDER_PDEP_KERNEL_H
#define ZORDER_PDEP_KERNEL_H

#include "kernel.h"
#include "bitloop.h"

/* 1 when this build has the BMI2 kernel (x86-64 with a compiler that has _pdep_u64). */
extern const int zorder_pdep_built;

void zorder_pdep_init(void);

/* Interleaves like every RowsKernel; returns 0, having written nothing, for shapes it
 * does not cover (more than 64 columns, or no memory for scratch rows). Call only when the CPU
 * has BMI2. */
int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);

/* The uniform kernel alone: k columns of one width (other backends run it on segments of
 * a ragged call). Call only when the CPU has BMI2. */
void zorder_pdep_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t out_stride);

/* The pdep backend: its own kernel for whole calls (uniform widths, and segment by
 * segment), the bit loop for what it declines. simd falls back to it too. */
static const zorder_backend zorder_pdep_backend = {
    .name = "pdep", .rows = zorder_pdep_rows, ZORDER_DEFAULT_COSTS,
    .fallback = &zorder_bitloop_backend,
};

#endif
