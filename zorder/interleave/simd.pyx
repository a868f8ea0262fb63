"""AVX-512 backend: byte permutations (VBMI) and 8x8 bit-matrix transposes (GFNI).

About the time of a memory copy of the same bytes on CPUs with AVX-512 F/BW/VBMI and
GFNI (Intel Ice Lake and later, AMD Zen 4 and later). The kernels cover 1-8 columns of
one width that is a multiple of 8 bytes (what Iceberg's Spark path produces), any row
strides, row tails and truncated sizes. Narrow columns with rows back to back run as rows
of 8 bytes; ragged widths and 9-64 columns run segment by segment (csrc/segments.h), each
segment on these kernels where its width allows and on the BMI2 kernel otherwise (every
CPU with these AVX-512 subsets has a fast PDEP), narrow ragged widths (3+5+8, 1+2+3+4)
with their column slices and rows put together by vpermb (zorder_simd_slice,
zorder_simd_assemble); more than 64 columns take the bit loop. The AVX-512 code is in
csrc/simd_kernel.c behind target attributes and runs only after the CPU floor (CPUID and
XGETBV, read once) says it can.
"""

from libc.stdint cimport uint8_t

from zorder.interleave.bitloop cimport bitloop_rows
from zorder.interleave.pdep cimport pdep_rows, pdep_supported, pdep_uniform
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column
from zorder.interleave.segments cimport (AssembleFn, SegBackend, SegPiece, SliceFn,
                                         SqueezeFn, UniformKernel, call_assemble,
                                         copy_rows_exact, is_uniform, segments_rows,
                                         uniform_rows, uniform_rows_cut)

from zorder.cpu import facts, simd_verdict, usable
from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "simd_kernel.h" nogil:
    const int zorder_simd_built
    Py_ssize_t zorder_simd_stream_min
    void zorder_simd_init()
    int zorder_simd_rows(const Column* cols, Py_ssize_t ncols, Py_ssize_t size,
                         Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride)
    void zorder_simd_squeeze(const uint8_t* src, int k, int nb, Py_ssize_t w, Py_ssize_t limit,
                             Py_ssize_t rows, uint8_t* out, Py_ssize_t out_stride)
    Py_ssize_t zorder_simd_assemble(const SegPiece* pieces, int npieces, Py_ssize_t size,
                                    Py_ssize_t rows, uint8_t* out)
    Py_ssize_t zorder_simd_slice(uint8_t* dst, const uint8_t* src, Py_ssize_t rows,
                                 Py_ssize_t w, Py_ssize_t st)


name = "simd"

# More than 8 columns (csrc/segments.h): what one pass of an a-column stage costs this
# kernel, ps per output byte with the data in cache (AMD EPYC, Zen 4, 2,048 rows of 8 B a
# column, best of 200): a = 2: 22, 3: 25, 4: 20, 5: 40, 6: 49, 7: 62, 8: 32; and the
# squeeze of a zero-padded interleave (cost[0]) 41-66 (k = 11, 13, 29, 37, 61). Its 2- and
# 4-column passes are cheap enough that 8-column planes and their merge lost everywhere
# (16 columns 98 ps an output byte against 72 as 4 x 4, 11 padded 215 against 181), so
# their merge is priced out (merge_cost 30).
cdef SegBackend _seg
_seg.cost = [50, 0, 22, 25, 20, 40, 49, 62, 32]
_seg.merge_cost = 30
_seg.merge = NULL   # (the plain-C one, were planes ever cheaper)
_seg.squeeze = <SqueezeFn>zorder_simd_squeeze
_seg.squeeze_planes = NULL
_seg.squeeze_planes_cost = 0
_seg.assemble = <AssembleFn>zorder_simd_assemble
_seg.slice = <SliceFn>zorder_simd_slice

cdef bint _supported = zorder_simd_built and usable("avx512_vbmi_gfni")
cdef bint _pdep_fallback = pdep_supported()
if _supported:
    zorder_simd_init()


def _reason():
    if not zorder_simd_built:
        return "this build has no AVX-512 kernel (not x86-64, or the compiler lacks GFNI/VBMI)"
    return simd_verdict(facts())[1]


#: Whether this CPU can run the kernel (from the CPU facts read once at import).
SUPPORTED = bool(_supported)
UNSUPPORTED_REASON = "" if SUPPORTED else _reason()


# Below this many rows a call goes to the scalar kernel: one vector block (gathers and
# shuffles for 8 rows) costs more than a few scalar rows; measured on single-row
# interleave_bits calls, 8 x 8 B took 225 ns with the vector kernel and 150 with pdep.
cdef Py_ssize_t MIN_VECTOR_ROWS = 4


cdef void simd_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                       uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    # One segment of a ragged or many-column call (csrc/segments.h): the vector kernel where
    # it covers the segment's width, else pdep's uniform kernel (a copy for k = 1 too).
    cdef int t
    cdef bint packed
    if k == 1 or nrows < MIN_VECTOR_ROWS:
        pdep_uniform(columns, k, size, nrows, out, out_stride)
    elif not zorder_simd_rows(columns, k, size, nrows, out, out_stride):
        # narrow columns with rows back to back (a stage of a many-column call): rows of
        # 8 bytes, which the vector kernel takes (zorder_uniform_rows)
        packed = columns[0].width % 8 != 0 and size == k * columns[0].width \
            and out_stride == size
        for t in range(k):
            packed = packed and columns[t].row_stride == columns[0].width
        if packed:
            uniform_rows(columns, k, size, nrows, out, out_stride, simd_uniform)
        else:
            pdep_uniform(columns, k, size, nrows, out, out_stride)


cdef inline bint short_of_wide(const Column* columns, Py_ssize_t ncolumns,
                               Py_ssize_t size) noexcept nogil:
    # 1-3 columns of one width of 16 bytes or more, cut to at most a third of their bytes:
    # the vector kernel computes whole rows, pdep only the words kept. AMD EPYC (Zen 4),
    # 1,000,000 rows, ns/row pdep vs simd: 16+16->8 2.1 vs 2.6, 24+24->16 3.2 vs 4.6,
    # 32+32->16 3.4 vs 5.6; past a third simd wins or ties (16+16->12 4.7 vs 2.9,
    # 32+32->24 5.9 vs 6.3), and always with 8-byte columns (8+8+8->8 4.5 vs 2.2).
    cdef Py_ssize_t width = columns[0].width
    return (ncolumns <= 3 and width >= 16 and width % 8 == 0 and 3 * size <= ncolumns * width
            and is_uniform(columns, ncolumns))


cdef void simd_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    if ncolumns == 1:   # one column interleaves to itself: its prefix, copied
        copy_rows_exact(out, out_stride, columns[0].data, columns[0].row_stride, size, nrows)
        return
    if _pdep_fallback and short_of_wide(columns, ncolumns, size):
        pdep_rows(columns, ncolumns, size, nrows, out, out_stride)
        return
    if (nrows >= MIN_VECTOR_ROWS or not _pdep_fallback) and zorder_simd_rows(
            columns, ncolumns, size, nrows, out, out_stride):
        return
    if _pdep_fallback and nrows >= MIN_VECTOR_ROWS:
        if is_uniform(columns, ncolumns):
            # narrow or odd widths: as rows of 8 bytes when the columns allow it, rows cut
            # short out of scratch by vpermb blocks
            uniform_rows_cut(columns, <int>ncolumns, size, nrows, out, out_stride, simd_uniform,
                             <SliceFn>zorder_simd_slice)
            return
        # Ragged widths and more than 8 columns: segment by segment on the kernels above
        # (narrow ragged widths too: zero-padded to a uniform call and the absent bits
        # removed by PEXT lost to segments_rows' narrow path, 1+8 -> 9 4.7 vs 2.0 ns/row,
        # 4+8 -> 12 5.0 vs 2.6, 1+2+3+4 -> 10 and 3+5+8 -> 16 a tie).
        if segments_rows(columns, ncolumns, size, nrows, out, out_stride, simd_uniform, 1, 1, &_seg):
            return
    if _pdep_fallback:
        pdep_rows(columns, ncolumns, size, nrows, out, out_stride)   # (falls back itself)
    else:
        bitloop_rows(columns, ncolumns, size, nrows, out, out_stride)


cdef inline int check_supported() except -1:
    if not _supported:
        raise RuntimeError(f"the simd backend cannot run here: {UNSUPPORTED_REASON}")
    return 0


def interleave_bits(columns, interleaved_size=None, out=None):
    check_supported()
    return interleave_bits_with(simd_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    check_supported()
    return interleave_rows_with(simd_rows, columns, interleaved_size, out, threads)


# For the tests: the same call with no fallback, to show a shape really takes the vector
# kernel. Raises LookupError for a shape the kernel does not cover.
cdef bint _declined = False


cdef void vector_only_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                           Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    global _declined
    if not zorder_simd_rows(columns, ncolumns, size, nrows, out, out_stride):
        _declined = True


def _vector_rows(columns, interleaved_size=None, out=None):
    global _declined
    check_supported()
    _declined = False
    result = interleave_rows_with(vector_only_rows, columns, interleaved_size, out, 1)
    if _declined:
        raise LookupError("the AVX-512 kernel does not cover this shape")
    return result


def _stream_min(value=None):
    """The output size (bytes) from which non-temporal stores are used; sets it if given.

    For the tests, to reach the streaming path with small arrays; returns the old value.
    """
    global zorder_simd_stream_min
    old = zorder_simd_stream_min
    if value is not None:
        zorder_simd_stream_min = value
    return old


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC


def _assemble(pieces, Py_ssize_t size, Py_ssize_t rows, uint8_t[::1] out):
    """Test hook (tests/test_assemble_bounds.py): the simd kernel's assembly of narrow
    ragged rows (the hook its segments use, csrc/segments.h's zorder_assemble_fn) on the
    given buffers; returns the rows it assembled. Refused, never run, where this CPU
    cannot run the kernel."""
    return call_assemble(&_seg, _supported, UNSUPPORTED_REASON, pieces, size, rows, out)
