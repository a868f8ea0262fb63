"""AVX2 backend: the interleave on 256-bit registers, for x86-64 CPUs without AVX-512.

For CPUs with AVX2 but without the simd backend's AVX-512 VBMI + GFNI: Intel Haswell to
Comet Lake and the client cores since Alder Lake, AMD Zen 1-3 (where Zen 1-2's PDEP is
microcoded, so pdep is no choice there). For 4 and 8 columns byte j of every column is
gathered with unpack instructions and each 64-bit lane's bits are permuted by a few
delta swaps (the 8x8 bit transpose and its 4-column form); 7 columns run as 8 with a zero
column whose bits are squeezed out; 2, 3, 5 and 6 columns use vpshufb lookups of each
column nibble's bits per output byte. The kernels take 2-8 columns of one
width, any row strides, truncated rows; narrow columns with rows back to back run as rows
of 8 bytes, and ragged widths and 9-64 columns run segment by segment (csrc/segments.h).
The last bytes of a width that is not a multiple of 8, single rows and one-column pieces
run on the table backend's uniform kernel; more than 64 columns take the bit loop. The
AVX2 code is in csrc/avx2_kernel.c behind target attributes and runs only after the CPU
floor (CPUID and XGETBV, read once) says AVX2 and the YMM state are usable.
"""

from libc.stdint cimport uint8_t

from zorder.interleave.table cimport group_rows, table_uniform
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column, shape_columns
from zorder.interleave.segments cimport (AssembleFn, MergeFn, SegBackend, SegPiece, SliceFn,
                                         SqueezeFn, SqueezePlanesFn, UniformKernel, call_assemble,
                                         is_uniform, segments_rows, uniform_rows)

from zorder.cpu import usable
from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "avx2_kernel.h" nogil:
    const int zorder_avx2_built
    Py_ssize_t zorder_avx2_stream_min
    int zorder_avx2_planar_mode
    Py_ssize_t zorder_avx2_planar_min_rows
    Py_ssize_t zorder_avx2_planar(const Column* cols, int ncols, Py_ssize_t size, Py_ssize_t nrows,
                                  uint8_t* out, Py_ssize_t out_stride)
    Py_ssize_t zorder_avx2_planar_rows(const Column* cols, int ncols, Py_ssize_t size,
                                       Py_ssize_t nrows, Py_ssize_t out_stride)
    void zorder_avx2_init()
    int zorder_avx2_uniform(const Column* cols, int k, Py_ssize_t size, Py_ssize_t nrows,
                            uint8_t* out, Py_ssize_t out_stride, UniformKernel fallback)
    Py_ssize_t zorder_avx2_slice(uint8_t* dst, const uint8_t* src, Py_ssize_t rows,
                                 Py_ssize_t w, Py_ssize_t st)
    Py_ssize_t zorder_avx2_assemble(const SegPiece* pieces, int npieces, Py_ssize_t size,
                                    Py_ssize_t rows, uint8_t* out)
    int zorder_avx2_squeeze_planes(const uint8_t* planes, int k, int nb, Py_ssize_t w,
                                   Py_ssize_t limit, Py_ssize_t rows, uint8_t* out,
                                   Py_ssize_t out_stride)
    void zorder_avx2_merge(const uint8_t* planes, int nb, Py_ssize_t n, uint8_t* out)
    void zorder_avx2_squeeze(const uint8_t* src, int k, int nb, Py_ssize_t w, Py_ssize_t limit,
                             Py_ssize_t rows, uint8_t* out, Py_ssize_t out_stride)

name = "avx2"

# More than 8 columns (csrc/segments.h): what one pass of an a-column stage costs this
# kernel, ps per output byte with the data in cache (AMD EPYC, Zen 4, 2,048 rows of 8 B a
# column, best of 200): a = 2: 38, 3: 53, 4: 85, 5: 144, 6: 97, 7: 122, 8: 73; and the
# squeeze of a zero-padded interleave (cost[0], zorder_avx2_squeeze) 135-220 (k = 11, 13,
# 29, 37, 61, the call's time less that of the padded interleave; the scalar one it
# replaced 145-480), which picks the same plans as the 300 before for every k. cost[1], 40,
# is added per pass: without it 32 columns ran as 2 x 8 x 2 in 79-100 ns/row at 1,000,000
# rows, with it as 8 x 4 in 58-69 (two alternating runs each, load average 4-5). The merge
# of 8-column planes (merge_cost) is set from whole calls, since its pass is short: 16
# columns took 126 ps an output byte as planes against 150 as 8 x 2, so planes cost
# 73 + 10 + 2 x 40 to 8 x 2's 73 + 38 + 2 x 40. 9-14 columns padded to 16 are squeezed
# straight from the two planes (squeeze_planes, its cost 30 in place of the merge's and
# cost[0]): 2,048 rows in cache, ps an output byte, padded against the best split: 10
# columns 175 vs 197 (2 x 5), 14 129 vs 184 (7 x 2), 10x4 243 vs 306, 14x4 182 vs 249;
# 12 152 vs 148 (3 x 4, a tie), 9 256 vs 159 (3 x 3). The model picks 10, 11, 13 and 14.
cdef SegBackend _seg
_seg.cost = [200, 40, 38, 53, 85, 144, 97, 122, 73]
_seg.merge_cost = 10
_seg.merge = <MergeFn>zorder_avx2_merge
_seg.squeeze = <SqueezeFn>zorder_avx2_squeeze
_seg.squeeze_planes = <SqueezePlanesFn>zorder_avx2_squeeze_planes
_seg.squeeze_planes_cost = 30
_seg.assemble = <AssembleFn>zorder_avx2_assemble
_seg.slice = <SliceFn>zorder_avx2_slice

cdef bint _supported = zorder_avx2_built and usable("avx2")
if _supported:
    zorder_avx2_init()

#: Whether this CPU can run the kernel (from the CPU facts read once at import).
SUPPORTED = bool(_supported)
UNSUPPORTED_REASON = (
    "" if SUPPORTED
    else "this build has no AVX2 kernel (not x86-64, or the compiler lacks AVX2)"
    if not zorder_avx2_built
    else "this CPU has no AVX2, or the OS does not save the YMM registers (XCR0)"
)


cdef void avx2_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                       uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    # k columns of one width (a whole call or one segment): the vector kernel, or the table
    # kernel where it declines (one column, fewer than 4 rows).
    if not zorder_avx2_uniform(columns, k, size, nrows, out, out_stride, table_uniform):
        table_uniform(columns, k, size, nrows, out, out_stride)


cdef void avx2_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    cdef Column rest[32]
    cdef Py_ssize_t done, c
    if ncolumns <= 32:
        # rows cut to a few bytes: byte planes and lookups, the last rows below
        done = zorder_avx2_planar(columns, <int>ncolumns, size, nrows, out, out_stride)
        if done > 0:
            for c in range(ncolumns):
                rest[c] = columns[c]
                rest[c].data = columns[c].data + done * columns[c].row_stride
            columns = rest
            nrows -= done
            out += done * out_stride
    if nrows >= 4:
        if is_uniform(columns, ncolumns):
            # narrow widths with rows back to back run as rows of 8 bytes
            uniform_rows(columns, <int>ncolumns, size, nrows, out, out_stride, avx2_uniform)
            return
        # ragged widths, more than 8 columns: segment by segment on the kernel above
        if segments_rows(columns, ncolumns, size, nrows, out, out_stride, avx2_uniform, 1, 0, &_seg):
            return
    group_rows(columns, ncolumns, size, nrows, out, out_stride)   # (falls back itself)


cdef inline int check_supported() except -1:
    if not _supported:
        raise RuntimeError(f"the avx2 backend cannot run here: {UNSUPPORTED_REASON}")
    return 0


def interleave_bits(columns, interleaved_size=None, out=None):
    check_supported()
    return interleave_bits_with(avx2_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    check_supported()
    return interleave_rows_with(avx2_rows, columns, interleaved_size, out, threads)


def _stream_min(value=None):
    """The output size (bytes) from which non-temporal stores are used; sets it if given.

    For the tests, to reach the streaming path with small arrays; returns the old value.
    """
    global zorder_avx2_stream_min
    old = zorder_avx2_stream_min
    if value is not None:
        zorder_avx2_stream_min = value
    return old


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


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC


def _assemble(pieces, Py_ssize_t size, Py_ssize_t rows, uint8_t[::1] out):
    """Test hook (tests/test_assemble_bounds.py): the avx2 kernel's assembly of narrow
    ragged rows (the hook its segments use, csrc/segments.h's zorder_assemble_fn) on the
    given buffers; returns the rows it assembled. Refused, never run, where this CPU
    cannot run the kernel."""
    return call_assemble(&_seg, _supported, UNSUPPORTED_REASON, pieces, size, rows, out)
