#ifndef ZORDER_AVX2_KERNEL_H
#define ZORDER_AVX2_KERNEL_H

#include "segments.h"

/* 1 when this build has the AVX2 kernel (x86-64, GCC >= 5 or clang); 0 when the file
 * compiled to a stub, and then zorder_avx2_uniform always returns 0. */
extern const int zorder_avx2_built;

/* Outputs of at least this many bytes (rows back to back) are written with non-temporal
 * stores; a variable so the tests can reach that path with small arrays. */
extern ptrdiff_t zorder_avx2_stream_min;

/* zorder_avx2_planar's choice: 0 never, 1 the shapes it is chosen for, 2 every shape it
 * can take (for the tests); and the fewest rows it takes (the tests lower it). */
extern int zorder_avx2_planar_mode;
extern ptrdiff_t zorder_avx2_planar_min_rows;

/* Fills the mask and shuffle tables; plain C, safe on any CPU. */
void zorder_avx2_init(void);

/* The uniform kernel (zorder_uniform_fn's contract: k = 1..8 columns of one width, size
 * <= k * width, any strides) on AVX2. The whole 8-byte pieces of the columns run on the
 * vector code; a width that is not a multiple of 8 leaves its last bytes to `fallback`
 * (another backend's uniform kernel). Returns 0, having written nothing, for k = 1 or
 * fewer than 4 rows (the caller's scalar kernel is cheaper there). Call only when the
 * CPU has AVX2 and the OS saves the YMM registers (zorder.cpu.usable("avx2")). */
int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback);

/* Rows of at most 16 bytes (back to back, out_stride == size) from 1-32 columns whose
 * rows are ascending, no narrower than the column, and 1-8 bytes apart or used in at most
 * their first 8 bytes (kernel.h's zorder_rows_reachable), by byte planes and nibble
 * lookups, 32 rows a block. Returns the rows done, a multiple of 32, leaving the last
 * ones (and every row of a shape it does not take: 0) to the caller. Same CPU
 * requirement. */
ptrdiff_t zorder_avx2_planar(const zorder_column *cols, int ncols, ptrdiff_t size, ptrdiff_t nrows,
                             uint8_t *out, ptrdiff_t out_stride);

/* The rows zorder_avx2_planar would do of such a call (0: it would not take it), without
 * reading the columns; plain C, for the tests of its choice. */
ptrdiff_t zorder_avx2_planar_rows(const zorder_column *cols, int ncols, ptrdiff_t size,
                                  ptrdiff_t nrows, ptrdiff_t out_stride);

/* zorder_slice_fn (segments.h) on AVX2: the first w bytes of rows st bytes apart, to rows
 * back to back, for 1 <= w < st <= 8, in blocks of 16 rows (returns the rows done; 0 for
 * other w, st). Same CPU requirement. */
ptrdiff_t zorder_avx2_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st);

/* zorder_assemble_fn (segments.h) on AVX2: narrow ragged rows of at most 16 bytes put
 * together from their pieces, two blocks of 16 / size rows a step (returns the rows done;
 * 0 for wider rows or pieces spread over more than 16 bytes a block). Same CPU
 * requirement. */
ptrdiff_t zorder_avx2_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out);

/* zorder_squeeze_planes_fn (segments.h) on AVX2: 9-14 columns padded to two planes, as
 * zorder_avx2_squeeze does them after a merge; 0 for others. Same CPU requirement. */
int zorder_avx2_squeeze_planes(const uint8_t *planes, int k, int nb, ptrdiff_t w,
                               ptrdiff_t limit, ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride);

/* zorder_merge_fn (segments.h) on AVX2: the planes' bytes in turn. Same CPU requirement. */
void zorder_avx2_merge(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out);

/* zorder_squeeze_fn (segments.h) on AVX2: the first k bits of each of a padded interleave's
 * fields, side by side: 16 padded columns to 9-14 by arithmetic on two groups a register,
 * the others 16 output bytes a step by table gathers (the scalar squeeze where those tables
 * do not fit). Same CPU requirement. */
void zorder_avx2_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride);

#endif
