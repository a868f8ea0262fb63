#ifndef ZORDER_SIMD_KERNEL_H
#define ZORDER_SIMD_KERNEL_H

#include "kernel.h"
#include "segments.h"

/* 1 when this build has the AVX-512 kernel (x86-64, GCC >= 8 or clang >= 7); 0 when the
 * file compiled to a stub, and then zorder_simd_rows always returns 0. */
extern const int zorder_simd_built;

/* Outputs of at least this many bytes (rows back to back) are written with
 * non-temporal stores; a variable so the tests can reach that path with small arrays. */
extern ptrdiff_t zorder_simd_stream_min;

/* Fills the permutation and matrix tables; plain C, safe on any CPU. */
void zorder_simd_init(void);

/* Interleaves like every RowsKernel for 1-8 columns of one width that is a multiple of 8
 * bytes, any row strides, any truncated size; returns 0, having written nothing, for any
 * other shape. Call only when the CPU has AVX-512 F/BW/VBMI and GFNI with the ZMM state
 * enabled by the OS (zorder.cpu.usable("avx512_vbmi_gfni")). */
int zorder_simd_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride);

/* zorder_seg_squeeze (segments.h) on AVX-512 BW + VBMI: the same contract and bytes; a
 * no-op in a build without the kernel. Same CPU condition as zorder_simd_rows. */
void zorder_simd_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride);

/* zorder_assemble_fn (segments.h) for narrow ragged rows, on AVX-512 BW + VBMI; returns 0
 * in a build without the kernel. Same CPU condition as zorder_simd_rows. */
ptrdiff_t zorder_simd_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out);

/* zorder_slice_fn (segments.h) on AVX-512 BW + VBMI, for rows up to 64 bytes apart
 * (w <= st <= 64); returns 0 in a build without the kernel. Same CPU condition as
 * zorder_simd_rows. */
ptrdiff_t zorder_simd_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st);

#endif
