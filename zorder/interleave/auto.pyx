# cython: boundscheck=False, wraparound=False
"""``auto``: the per-call dispatcher. Each call's shape (column count, widths, truncation)
falls in one class of csrc/shape.h (``zorder.cpu.select.SHAPE_CLASSES``), and runs the row
kernel of the backend measured fastest for that class on this CPU (``dispatch_plan``;
``configure`` installs it). The class is computed once per call, never per row; the
kernels themselves take few-row calls to their scalar paths.
"""

from libc.stdint cimport uint8_t

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport Column, RowsKernel, bytes_used, rows_reachable, shape_columns

from zorder.cpu.select import SHAPE_CLASSES

cdef extern from "bitloop.h" nogil:
    void bitloop_rows "zorder_bitloop_rows"(const Column* cols, Py_ssize_t ncols,
                                            Py_ssize_t size, Py_ssize_t nrows, uint8_t* out,
                                            Py_ssize_t out_stride)

cdef extern from "shape.h" nogil:
    ctypedef enum zorder_shape:
        ZS_UNIFORM_8N_FULL
        ZS_UNIFORM_8N_TRUNCATED_1_3
        ZS_UNIFORM_8N_TRUNCATED_4_8
        ZS_UNIFORM_NARROW
        ZS_RAGGED_FULL
        ZS_RAGGED_TRUNCATED_FIRST
        ZS_RAGGED_TRUNCATED_FIRST_WIDE
        ZS_RAGGED_TRUNCATED_LATER
        ZS_RAGGED_NARROW
        ZS_MANY_COLUMNS
        ZS_UNIFORM_8N_PREFIX
        ZS_UNIFORM_6X8_TRUNCATED
        ZS_MANY_COLUMNS_8N_PREFIX
        ZS_MANY_COLUMNS_SHORT
    enum: ZS_COUNT
    Py_ssize_t ZORDER_SHAPE_CACHE_BYTES
    const char* const zorder_shape_names[]

#: The shape classes of csrc/shape.h, in its order.
SHAPE_NAMES = tuple(zorder_shape_names[<int>_i].decode("ascii") for _i in range(ZS_COUNT))
if SHAPE_NAMES != SHAPE_CLASSES:  # pragma: no cover - csrc/shape.h and DISPATCH disagree
    raise ImportError(f"csrc/shape.h's classes {SHAPE_NAMES} are not zorder.cpu.select's "
                      f"{SHAPE_CLASSES}")

cdef RowsKernel _kernels[ZS_COUNT]
for _i in range(ZS_COUNT):
    _kernels[_i] = bitloop_rows   # until configure() installs the plan

#: The bytes a call reads and writes from which the classifier takes it as running out of
#: the cache (csrc/shape.h).
CACHE_BYTES = ZORDER_SHAPE_CACHE_BYTES

#: class -> backend name, as installed.
PLAN = {}


cdef bint short_rows_of_many(const Column* cols, Py_ssize_t n, Py_ssize_t size) noexcept nogil:
    """Whether rows of `size` bytes from these 9-32 columns are what avx2's byte planes take
    (csrc/kernel.h's zorder_rows_reachable, their condition on the columns) and use fewer
    bytes of some column's rows than the rows' stride: a byte of the column unused, the
    bits dealt in Iceberg's order, or bytes between its rows (which the other paths read)."""
    cdef int need[32]
    cdef Py_ssize_t c
    bytes_used(cols, n, size, need)
    if not rows_reachable(cols, n, need):
        return 0
    for c in range(n):
        if need[c] < cols[c].row_stride:
            return 1
    return 0


cdef zorder_shape shape_class(const Column* cols, Py_ssize_t n, Py_ssize_t size,
                             Py_ssize_t nrows, Py_ssize_t out_stride) noexcept nogil:
    """The call's class (csrc/shape.h), for `nrows` rows."""
    cdef Py_ssize_t c, w0 = cols[0].width, wmin = cols[0].width, total = 0, need, pieces
    cdef bint uniform = 1
    cdef bint narrow = 0
    # many-columns-short: only what avx2's byte planes take (output rows back to back, and
    # see short_rows_of_many); the rest runs faster on simd's paths
    if 8 < n <= 32 and size <= 16 and out_stride == size and short_rows_of_many(cols, n, size):
        return ZS_MANY_COLUMNS_SHORT
    if n > 8:
        if n == 16 or n == 24 or n == 32 or n == 64:
            for c in range(1, n):
                if cols[c].width != w0:
                    return ZS_MANY_COLUMNS
            need = (size + n - 1) // n   # (below any width that is a multiple of 8)
            if w0 % 8 == 0 and (need == 2 or need == 4):
                return ZS_MANY_COLUMNS_8N_PREFIX
        return ZS_MANY_COLUMNS
    for c in range(n):
        total += cols[c].width
        if cols[c].width != w0:
            uniform = 0
        if cols[c].width < wmin:
            wmin = cols[c].width
        if cols[c].width % 8:
            narrow = 1
    if uniform:
        if w0 % 8:
            return ZS_UNIFORM_NARROW
        if size == total:
            return ZS_UNIFORM_8N_FULL
        if n <= 3:
            return ZS_UNIFORM_8N_TRUNCATED_1_3
        need = (size + n - 1) // n   # bytes of each column the rows use
        if 4 <= n <= 6 and size == n * need and (need == 1 or need == 2 or need == 4):
            return ZS_UNIFORM_8N_PREFIX
        if 5 <= n <= 7 and (need == 2 or need == 4):
            return ZS_UNIFORM_8N_PREFIX
        if n == 6 and w0 == 8:
            return ZS_UNIFORM_6X8_TRUNCATED
        return ZS_UNIFORM_8N_TRUNCATED_4_8
    if narrow:
        return ZS_RAGGED_NARROW
    if size == total:
        return ZS_RAGGED_FULL
    if size > n * wmin:
        return ZS_RAGGED_TRUNCATED_LATER
    # the whole 8-byte pieces of each column the rows need (all of them 8n wide here)
    pieces = n * 8 * ((size + 8 * n - 1) // (8 * n))
    if size < pieces and pieces > 16:
        need = size // n
        # a whole 1-, 2- or 4-byte prefix of every column is avx2's at any size; the rest
        # only once the call's bytes leave the cache
        if size == n * need and (need == 1 or need == 2 or need == 4):
            return ZS_RAGGED_TRUNCATED_FIRST_WIDE
        if nrows * (total + size) >= ZORDER_SHAPE_CACHE_BYTES:
            return ZS_RAGGED_TRUNCATED_FIRST_WIDE
    return ZS_RAGGED_TRUNCATED_FIRST


cdef void auto_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    _kernels[<int>shape_class(columns, ncolumns, size, nrows, out_stride)](
        columns, ncolumns, size, nrows, out, out_stride)


def configure(plan, capsules):
    """Install ``plan`` ({class: backend name}) with ``capsules`` ({backend name: the
    capsule of its RowsKernel}, from ``zorder.interleave.row_kernel_capsule``)."""
    cdef int i
    for i, shape in enumerate(SHAPE_CLASSES):
        capsule = capsules[plan[shape]]
        _kernels[i] = <RowsKernel>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    PLAN.clear()
    PLAN.update(plan)


def shape_class_of(widths, size, row_strides=None, out_stride=None, rows=None):
    """The class a call with these column widths and interleaved size falls in (tests):
    columns whose rows are `row_strides` bytes apart (default: their widths, back to back)
    into output rows `out_stride` bytes apart (default: `size`), `rows` rows (default: more
    than the cache holds)."""
    cdef Column cols[64]
    cdef Py_ssize_t n = shape_columns(cols, widths, row_strides)
    cdef Py_ssize_t nrows = ZORDER_SHAPE_CACHE_BYTES if rows is None else rows
    return SHAPE_CLASSES[shape_class(cols, n, size, nrows,
                                     size if out_stride is None else out_stride)]


publish(globals(), "auto", auto_rows, NULL)
