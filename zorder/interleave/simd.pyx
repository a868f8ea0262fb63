"""AVX-512 backend: byte permutations (VBMI) and 8x8 bit-matrix transposes (GFNI).

About the time of a memory copy of the same bytes on CPUs with AVX-512 F/BW/VBMI and
GFNI (Intel Ice Lake and later, AMD Zen 4 and later). The kernels cover 1-8 columns of
one width that is a multiple of 8 bytes (what Iceberg's Spark path produces), any row
strides, row tails and truncated sizes. Narrow columns with rows back to back run as rows
of 8 bytes; ragged widths and 9-64 columns run segment by segment (csrc/generic/), each
segment on these kernels where its width allows and on the BMI2 kernel otherwise (every
CPU with these AVX-512 subsets has a fast PDEP), narrow ragged widths (3+5+8, 1+2+3+4)
with their column slices and rows put together by vpermb (zorder_simd_slice,
zorder_simd_assemble); more than 64 columns take the bit loop. The AVX-512 code is in
csrc/avx512/ (one unit, avx512.c) behind target attributes and runs only after the CPU
floor (CPUID and XGETBV, read once) says it can.
"""

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

from zorder.cpu import facts, simd_verdict, usable

cdef extern from *:
    """
    #include "simd_kernel.h"
    #include "pdep_kernel.h"
    #include "driver.h"
    static int zorder_simd_vector(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
    {
        return zorder_simd_rows(cols, k, size, nrows, out, out_stride);
    }
    /* 1-3 columns of one width of 16 bytes or more, cut to at most a third of their bytes:
     * the vector kernel computes whole rows, pdep only the words kept (NOTES.md
     * "Cost vector: simd", as the costs and the fewest rows below) */
    static int zorder_simd_short_of_wide(const zorder_column *cols, ptrdiff_t ncols,
                                         ptrdiff_t size)
    {
        const ptrdiff_t width = cols[0].width;
        return ncols <= 3 && width >= 16 && width % 8 == 0 && 3 * size <= ncols * width
               && zorder_is_uniform(cols, ncols);
    }
    /* pdep (compiled into this module too: every CPU with these AVX-512 subsets has a fast
     * PDEP) takes calls of fewer than 4 rows, one column's segments and what the vector
     * kernel declines; segments of 2-8 columns go through scratch rows (gather_all) */
    ZORDER_BACKEND(zorder_simd_backend) = {
        .name = "simd", .copy_one_column = 1, .defer = zorder_simd_short_of_wide,
        .rows = zorder_simd_rows, .min_rows = 4,
        .vector = zorder_simd_vector, .min_vector_rows = 4,
        .narrow = ZORDER_NARROW_PACKED, .narrow_min_rows = 4, .scalar = zorder_pdep_uniform,
        .uniform = zorder_simd_backend_uniform, .cut = zorder_simd_slice,
        .round8 = 1, .gather_all = 1, .cost = {50, 0, 22, 25, 20, 40, 49, 62, 32},
        .merge_cost = 30, .squeeze = zorder_simd_squeeze, .assemble = zorder_simd_assemble,
        .slice = zorder_simd_slice, .stream_min = &zorder_simd_stream_min,
        .fallback = &zorder_pdep_backend,
    };
    /* a CPU with these subsets but no BMI2 (a hand-made VM model): the bit loop instead */
    ZORDER_BACKEND(zorder_simd_without_pdep) = {
        .name = "simd", .copy_one_column = 1, .rows = zorder_simd_rows,
        ZORDER_DEFAULT_COSTS, .assemble = zorder_simd_assemble,
        .stream_min = &zorder_simd_stream_min, .fallback = &zorder_bitloop_backend,
    };
    """
    const int zorder_simd_built, zorder_pdep_built
    void zorder_simd_init()
    void zorder_pdep_init()
    const BackendTable zorder_simd_backend, zorder_simd_without_pdep
    RowsKernel zorder_simd_backend_rows, zorder_simd_without_pdep_rows

_supported = bool(zorder_simd_built and usable("avx512_vbmi_gfni"))
_with_pdep = bool(zorder_pdep_built and usable("bmi2"))
if _supported:
    zorder_simd_init()
    if _with_pdep:
        zorder_pdep_init()
backend = publish(
    globals(), "simd",
    zorder_simd_backend_rows if _with_pdep else zorder_simd_without_pdep_rows,
    &zorder_simd_backend if _with_pdep else &zorder_simd_without_pdep, _supported,
    "this build has no AVX-512 kernel (not x86-64, or the compiler lacks GFNI/VBMI)"
    if not zorder_simd_built else simd_verdict(facts())[1])
_vector_rows = backend.vector_rows
_stream_min = backend.stream_min
_assemble = backend.assemble
