/* Iceberg's Hilbert index (HilbertByteUtils.hilbertIndex) for many rows at once.
 *
 * Per row: each column's leading bits/8 bytes as a big-endian word, Skilling's
 * axes-to-transposed-index transform on those words, the transposed words written back
 * big-endian, then Iceberg's interleaveBits of them. The transform runs on blocks of rows
 * held column by column (one array of words per column), vectorized across rows; each
 * block is then interleaved by an interleave backend's RowsKernel while it is in cache
 * (2-4 columns on the VBMI state tables, and whole blocks of 2-8 columns of 64 bits on the
 * AVX2 bit slices, write Iceberg's interleave themselves). */
#ifndef ZORDER_HILBERT_KERNEL_H
#define ZORDER_HILBERT_KERNEL_H

#include "kernel.h"

/* The RowsKernel of interleave/kernel.pxd, as a C type. */
typedef void (*zorder_rows_kernel)(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                                   ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);

/* Which code runs the transform: plain C (any CPU); AVX2 (the state machine as logic on
 * bit planes of 256 rows for 2-8 columns of 64 bits, else 4 rows per register); 8 rows
 * per AVX-512 register; or (AVX-512 VBMI + GFNI) the state tables on 64 rows a register
 * for 2, 3 and 4 columns, AVX-512's transform for the others. */
#define ZORDER_HILBERT_PLAIN 0
#define ZORDER_HILBERT_AVX2 1
#define ZORDER_HILBERT_AVX512 2
#define ZORDER_HILBERT_VBMI 3

/* Rows per block: 256 rows of 8 columns of words are 16 KiB, half a typical L1. A
 * multiple of 64, the rows of the VBMI transform's byte planes. */
#define ZORDER_HILBERT_BLOCK 256
/* Columns up to this many use stack scratch; more take one allocation per call. */
#define ZORDER_HILBERT_STACK_COLUMNS 16

/* Whether this build has the AVX2 / AVX-512 transform (x86-64 with a compiler that has
 * the intrinsics); the plain one is always built. */
extern const int zorder_hilbert_avx2_built;
extern const int zorder_hilbert_avx512_built;

/* Builds the state tables of the VBMI transform from Skilling's steps; call once before
 * any transform of that level (the module does at import). Returns whether this build
 * runs that level: the x86 code is built and the tables have the states expected. */
int zorder_hilbert_tables_init(void);

/* Writes the n*bits/8-byte Hilbert index of rows [0, nrows) to out + r * out_stride.
 * The caller has checked: ncols >= 1, bits in {8, 16, ..., 64}, every column at least
 * bits/8 bytes wide, `level` runs on this CPU, and `interleave` is a RowsKernel.
 * Returns 0, having written nothing, only when scratch for more than
 * ZORDER_HILBERT_STACK_COLUMNS columns cannot be allocated. */
int zorder_hilbert_rows(const zorder_column *cols, ptrdiff_t ncols, int bits, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_rows_kernel interleave,
                        int level);

/* Skilling's transposed-index-to-axes in place, on rows of ncols big-endian words of
 * bits/8 bytes each (column c at byte c * bits/8 of the row): the inverse of the
 * transform above, applied after de-interleaving. Returns 0 (nothing changed) if
 * scratch for many columns cannot be allocated. */
int zorder_hilbert_decode_rows(uint8_t *data, ptrdiff_t nrows, ptrdiff_t row_stride,
                               ptrdiff_t ncols, int bits);

#endif
