/* AVX-512 (F, BW, VBMI) + GFNI backend: Z-order at the speed of a memory copy.
 *
 * Every function using these instructions carries a target attribute instead of the
 * file being compiled with -mavx512*, so nothing else (the module's import included)
 * can ever execute them; simd.pyx calls in only after CPUID and XGETBV say they run.
 *
 * A row's output is independent per 8-byte "slab" of the columns: output bytes
 * [8n*k, 8n*(k+1)) use only bytes [8k, 8k+8) of each of the n columns. So every shape
 * handled here is a loop over blocks of rows and slabs, and three methods cover n:
 *
 * - n = 8, "transpose": one vpermb puts byte j of every column into 64-bit lane j;
 *   vgf2p8affineqb with the data as the matrix transposes each 8x8 bit block, which is
 *   exactly the 8-column interleave.
 * - n = 4, "paired transpose": a lane holds byte j and j+1 of the 4 columns; the
 *   transpose gives, per bit level, group j's 4 bits in the high nibble and group j+1's
 *   in the low one. A second transpose of the lane with its halves swapped (a 32-bit
 *   rotate) gives the nibble-swapped bytes, and one bit-select merges the two into the
 *   finished 8 output bytes: no work is thrown away and no final permutation is needed.
 * - other n (2, 3, 5, 6, 7), "spread": with 8 rows of a column in one register, output
 *   byte b of each group is the XOR over columns c of a fixed linear map of column c's
 *   byte (vgf2p8affineqb with a constant matrix: pick the column's bits that land in
 *   byte b and move them there). That is n*n affines per 8 rows, then a byte
 *   interleave (vpermt2b) of the n results into row order.
 * - n = 1 is the identity: a copy.
 *
 * Columns of width 8m read in full are taken as m times as many rows of width 8, so
 * the slab loop only runs for truncated output. Row tails use masked loads, gathers and
 * stores (which never touch masked-off bytes), and truncated output is a masked store
 * of the last slab. Large outputs with rows back to back are written as whole 64-byte
 * lines with non-temporal stores (zstream below): that, not the arithmetic, is what
 * brings 4 and 8 columns under the time of a copy, which reads its destination first.
 * Measurements: benchmarks/NOTES.md, section simd.
 *
 * This is the one translation unit of the backend: each method is a header of this folder
 * (common.h says how the unit is built), included in the order they build on each other. */
#include "common.h"

#if ZORDER_SIMD_BUILD

const int zorder_simd_built = 1;

#include "tables.h"
#include "load.h"
#include "stream.h"
#include "transpose8.h"
#include "transpose4.h"
#include "spread.h"
#include "rows.h"
#include "assemble.h"
#include "slice.h"
#include "squeeze.h"

#else  /* no AVX-512 intrinsics in this compiler, or not x86-64 */

const int zorder_simd_built = 0;
ptrdiff_t zorder_simd_stream_min = 0;

void zorder_simd_init(void) {}

ptrdiff_t zorder_simd_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out)
{
    (void)pieces; (void)npieces; (void)size; (void)rows; (void)out;
    return 0;
}

ptrdiff_t zorder_simd_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st)
{
    (void)dst; (void)src; (void)rows; (void)w; (void)st;
    return 0;
}

int zorder_simd_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

void zorder_simd_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)src; (void)k; (void)nb; (void)w; (void)limit; (void)rows; (void)out; (void)out_stride;
}

#endif
