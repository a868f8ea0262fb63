/* AVX2 backend: the uniform kernel on 256-bit registers, for x86-64 CPUs with AVX2 but
 * without the simd backend's AVX-512 VBMI + GFNI (Intel Haswell to Comet Lake, Alder Lake
 * and later client cores, AMD Zen 1-3).
 *
 * Every function using AVX2 carries a target attribute instead of the file being
 * compiled with -mavx2, so nothing else (the module's import included) can execute it;
 * avx2.pyx calls in only after CPUID and XGETBV say AVX2 runs (zorder.cpu.usable).
 *
 * As in the simd backend (avx512/), output bytes [8k*s, 8k*(s+1)) of a row depend only on bytes
 * [8s, 8s+8) of each of the k columns (a "slab"), so the kernel works on blocks of 4 rows
 * of one slab: register X[c] holds the 8 bytes of column c of the 4 rows, one per qword.
 * Columns of width 8m with rows back to back (and output rows back to back) are taken
 * as m times as many rows of width 8, so the loads are plain 32-byte loads.
 *
 * 1. Gather (vpunpck{l,h}{bw,wd,dq}): byte j of each column side by side, so a 64-bit
 *    lane holds K column bytes of each of 8/K consecutive byte indices j (K = 4, 8).
 * 2. Bit permutation of each 64-bit lane as a few delta swaps (shift, xor, and, shift,
 *    xor, xor): with a bit's position written as 6 index bits (byte, bit), the interleave is
 *    a permutation of those index bits, e.g. the 8-column case swaps (column, level) into
 *    (level, column): the 8x8 bit transpose. Each swap exchanges two index bits (or
 *    exchanges and complements both); the sequences below were found by a search over
 *    such swaps and are checked by every test vector.
 * 3. k = 7 runs as K = 8 with a zero column; the zero bit of every level is then
 *    squeezed out in three shift-and-or steps (fields of 8 bits, then 16, then 32), and
 *    vpshufb packs the 7 live bytes of each group.
 * 4. vperm2i128 puts each row's bytes together before the stores.
 * k = 2, 3, 5 and 6 use nibble lookups instead (lutblock: output byte b of a group is an
 * OR of vpshufb lookups of the column nibbles that land in it, then vpshufb/vpor put the
 * k results in group order), which measured faster for them (see ZLUT).
 * A width that is not a multiple of 8 runs its whole slabs here and its last bytes on the
 * caller's fallback kernel (or, for rows back to back, as rows of 8: segments.h). Rows
 * truncated inside a slab compute that slab and store only its needed bytes (`lim`);
 * prefixes of 1, 2 or 4 bytes pack 8 / need rows into each lane (prefix_rows_k).
 *
 * This is the one translation unit of the backend: each method is a header of this folder
 * (common.h says how the unit is built), included in the order they build on each other. */
#include "common.h"

#if ZORDER_AVX2_BUILD

const int zorder_avx2_built = 1;

#include "tables.h"
#include "transpose.h"
#include "store.h"
#include "block.h"
#include "lut.h"
#include "rows.h"
#include "far.h"
#include "prefix.h"
#include "slice.h"
#include "assemble.h"
#include "squeeze.h"
#include "uniform.h"
#include "planar.h"

#else  /* not x86-64, or a compiler without AVX2 target attributes */

const int zorder_avx2_built = 0;
ptrdiff_t zorder_avx2_stream_min = 0;
int zorder_avx2_planar_mode = 0;
ptrdiff_t zorder_avx2_planar_min_rows = 0;

void zorder_avx2_init(void) {}

ptrdiff_t zorder_avx2_planar(const zorder_column *cols, int ncols, ptrdiff_t size, ptrdiff_t nrows,
                             uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

ptrdiff_t zorder_avx2_planar_rows(const zorder_column *cols, int ncols, ptrdiff_t size,
                                  ptrdiff_t nrows, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out_stride;
    return 0;
}

ptrdiff_t zorder_avx2_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st)
{
    (void)dst; (void)src; (void)rows; (void)w; (void)st;
    return 0;
}

ptrdiff_t zorder_avx2_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out)
{
    (void)pieces; (void)npieces; (void)size; (void)rows; (void)out;
    return 0;
}

int zorder_avx2_squeeze_planes(const uint8_t *planes, int k, int nb, ptrdiff_t w,
                               ptrdiff_t limit, ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)planes; (void)k; (void)nb; (void)w; (void)limit; (void)rows; (void)out; (void)out_stride;
    return 0;
}

void zorder_avx2_merge(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out)
{
    zorder_seg_merge(planes, nb, n, out);
}

void zorder_avx2_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    zorder_seg_squeeze(src, k, nb, w, limit, rows, out, out_stride);
}

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    (void)cols; (void)k; (void)size; (void)nrows; (void)out; (void)out_stride; (void)fallback;
    return 0;
}

#endif
