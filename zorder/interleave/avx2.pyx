"""AVX2 backend: the interleave on 256-bit registers, for x86-64 CPUs without AVX-512.

For CPUs with AVX2 but without the simd backend's AVX-512 VBMI + GFNI: Intel Haswell to
Comet Lake and the client cores since Alder Lake, AMD Zen 1-3 (where Zen 1-2's PDEP is
microcoded, so pdep is no choice there). For 4 and 8 columns byte j of every column is
gathered with unpack instructions and each 64-bit lane's bits are permuted by a few
delta swaps (the 8x8 bit transpose and its 4-column form); 7 columns run as 8 with a zero
column whose bits are squeezed out; 2, 3, 5 and 6 columns use vpshufb lookups of each
column nibble's bits per output byte. The kernels take 2-8 columns of one
width, any row strides, truncated rows; narrow columns with rows back to back run as rows
of 8 bytes, and ragged widths and 9-64 columns run segment by segment (csrc/generic/).
The last bytes of a width that is not a multiple of 8, single rows and one-column pieces
run on the table backend's uniform kernel; more than 64 columns take the bit loop. The
AVX2 code is in csrc/avx2/ (one unit, avx2.c) behind target attributes and runs only
after the CPU floor (CPUID and XGETBV, read once) says AVX2 and the YMM state are usable.
"""

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, Column, RowsKernel, shape_columns

from zorder.cpu import usable

cdef extern from *:
    """
    #include "avx2_kernel.h"
    #include "table.h"
    #include "driver.h"
    /* the vector kernel, which leaves a width's last bytes to the table kernel */
    static int zorder_avx2_vector(const zorder_column *cols, int k, ptrdiff_t size,
                                  ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
    {
        return zorder_avx2_uniform(cols, k, size, nrows, out, out_stride, zorder_table_uniform);
    }
    /* byte planes first; the table kernel for single rows, one column and the last
     * bytes; stage costs: NOTES.md "Cost vector: avx2" */
    ZORDER_BACKEND(zorder_avx2_backend) = {
        .name = "avx2", .planar = zorder_avx2_planar, .min_rows = 4,
        .vector = zorder_avx2_vector, .scalar = zorder_table_uniform,
        .uniform = zorder_avx2_backend_uniform, .round8 = 1,
        .cost = {200, 40, 38, 53, 85, 144, 97, 122, 73}, .merge_cost = 10,
        .merge = zorder_avx2_merge, .squeeze = zorder_avx2_squeeze,
        .squeeze_planes = zorder_avx2_squeeze_planes, .squeeze_planes_cost = 30,
        .assemble = zorder_avx2_assemble, .slice = zorder_avx2_slice,
        .stream_min = &zorder_avx2_stream_min, .fallback = &zorder_table_backend,
    };
    """
    const int zorder_avx2_built
    int zorder_avx2_planar_mode
    Py_ssize_t zorder_avx2_planar_min_rows
    Py_ssize_t zorder_avx2_planar_rows(const Column* cols, int ncols, Py_ssize_t size,
                                       Py_ssize_t nrows, Py_ssize_t out_stride)
    void zorder_avx2_init()
    void zorder_table_init()
    const BackendTable zorder_avx2_backend
    RowsKernel zorder_avx2_backend_rows

_supported = bool(zorder_avx2_built and usable("avx2"))
if _supported:
    zorder_avx2_init()
    zorder_table_init()
backend = publish(globals(), "avx2", zorder_avx2_backend_rows, &zorder_avx2_backend, _supported,
                  "this build has no AVX2 kernel (not x86-64, or the compiler lacks AVX2)"
                  if not zorder_avx2_built
                  else "this CPU has no AVX2, or the OS does not save the YMM registers (XCR0)")
_stream_min = backend.stream_min
_assemble = backend.assemble


def _planar(mode=None, min_rows=None):
    """The byte-plane path's choice (0 never, 1 the shapes it is chosen for, 2 every shape
    it can take) and the fewest rows it takes; sets those given.

    For the tests, to run it on every shape it takes with small arrays; returns the old
    values.
    """
    global zorder_avx2_planar_mode, zorder_avx2_planar_min_rows
    old = (zorder_avx2_planar_mode, zorder_avx2_planar_min_rows)
    if mode is not None:
        if mode not in (0, 1, 2):
            raise ValueError(f"mode must be 0, 1 or 2, not {mode!r}")
        zorder_avx2_planar_mode = mode
    if min_rows is not None:
        zorder_avx2_planar_min_rows = min_rows
    return old


def _planar_rows(widths, size, nrows, row_strides=None, out_stride=None):
    """The rows the byte-plane path would do of a call with these column widths, rows
    `row_strides` bytes apart (default: the widths) and output rows `out_stride` bytes
    apart (default: `size`), under its current mode; 0 where it would not take the call.

    For the tests of its choice; reads no data.
    """
    cdef Column cols[64]
    cdef Py_ssize_t n = shape_columns(cols, widths, row_strides)
    return zorder_avx2_planar_rows(cols, <int>n, size, nrows,
                                   size if out_stride is None else out_stride)
