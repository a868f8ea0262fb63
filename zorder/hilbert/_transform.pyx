# cython: boundscheck=False, wraparound=False
"""Iceberg's Hilbert index (``HilbertByteUtils.hilbertIndex``), one row or many.

The transform runs in C (_hilbert_kernel.c) on blocks of rows, vectorized across rows
(AVX-512 VBMI + GFNI state tables for 2-4 columns, AVX2 bit planes for the rest of 2-8
columns of 64 bits, else Skilling's steps on AVX-512, AVX2 or plain C, chosen once with
CPUID); each block's transposed words are then interleaved by an interleave backend's own
row kernel, the fastest one by default (the state tables and the bit planes write the
interleaved bytes themselves).
Argument checking follows Iceberg's order; layouts, ``out=`` and ``threads=`` are the
interleave front end's (zorder/_frontend.pyx), so they behave exactly as in
``interleave_bits`` and ``interleave_rows``.
"""

from cpython.buffer cimport PyBuffer_IsContiguous, PyObject_CheckBuffer
from cpython.bytes cimport PyBytes_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.memoryview cimport PyMemoryView_FromObject, PyMemoryView_GET_BUFFER
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from libc.stdint cimport uint8_t

from zorder.interleave._frontend cimport as_column_list, interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column, RowsKernel

import operator

import numpy

from zorder import interleave
from zorder.cpu import facts
from zorder.cpu.features import HILBERT_TARGETS, supported
from zorder.cpu.select import BACKEND_NAMES

__all__ = ["hilbert_index", "hilbert_rows"]

cdef extern from "hilbert_kernel.h" nogil:
    const int zorder_hilbert_avx2_built
    const int zorder_hilbert_avx512_built
    int zorder_hilbert_tables_init()
    int zorder_hilbert_decode_rows(uint8_t* data, Py_ssize_t nrows, Py_ssize_t row_stride,
                                   Py_ssize_t ncols, int bits)

# One RowsKernel per (interleave backend, transform level): the front end's kernels take
# no extra arguments, so each combination is its own C function. bits_per_column comes
# back from the size the front end passes (n * bits / 8).
cdef extern from *:
    """
    #include "hilbert_kernel.h"
    /* Slots for up to 8 interleave backends (zorder.cpu.select.BACKEND_NAMES, by index);
     * a ninth backend needs two more lines below. */
    #define ZORDER_HILBERT_BACKENDS 8
    static zorder_rows_kernel zorder_hilbert_via[ZORDER_HILBERT_BACKENDS];
    /* Counts scratch allocations that failed (more than 16 columns, out of memory):
     * a row kernel cannot raise, so the caller compares it before and after. The count
     * is the process's: a call of at most ZORDER_HILBERT_STACK_COLUMNS columns, which
     * cannot fail, ignores it (another thread's failure is not its own). */
    static volatile unsigned long zorder_hilbert_failures = 0;
    static void zorder_hilbert_failed(void)
    {
    #if defined(__GNUC__) || defined(__clang__)
        __atomic_add_fetch(&zorder_hilbert_failures, 1, __ATOMIC_RELAXED);
    #else
        zorder_hilbert_failures++;
    #endif
    }
    #define ZORDER_HILBERT_KERNEL(B, L) \\
        static void zorder_hilbert_kernel_##B##_##L( \\
            const zorder_column *cols, ptrdiff_t n, ptrdiff_t size, ptrdiff_t nrows, \\
            uint8_t *out, ptrdiff_t out_stride) \\
        { \\
            if (!zorder_hilbert_rows(cols, n, (int)(8 * (size / n)), nrows, out, out_stride, \\
                                     zorder_hilbert_via[B], L)) \\
                zorder_hilbert_failed(); \\
        }
    #define ZORDER_HILBERT_LEVELS(B) \\
        ZORDER_HILBERT_KERNEL(B, 0) ZORDER_HILBERT_KERNEL(B, 1) ZORDER_HILBERT_KERNEL(B, 2) \\
        ZORDER_HILBERT_KERNEL(B, 3)
    ZORDER_HILBERT_LEVELS(0)
    ZORDER_HILBERT_LEVELS(1)
    ZORDER_HILBERT_LEVELS(2)
    ZORDER_HILBERT_LEVELS(3)
    ZORDER_HILBERT_LEVELS(4)
    ZORDER_HILBERT_LEVELS(5)
    ZORDER_HILBERT_LEVELS(6)
    ZORDER_HILBERT_LEVELS(7)
    #define ZORDER_HILBERT_ROW(B) \\
        {zorder_hilbert_kernel_##B##_0, zorder_hilbert_kernel_##B##_1, zorder_hilbert_kernel_##B##_2, \\
         zorder_hilbert_kernel_##B##_3}
    static const zorder_rows_kernel zorder_hilbert_kernels[ZORDER_HILBERT_BACKENDS][4] = {
        ZORDER_HILBERT_ROW(0), ZORDER_HILBERT_ROW(1), ZORDER_HILBERT_ROW(2),
        ZORDER_HILBERT_ROW(3), ZORDER_HILBERT_ROW(4), ZORDER_HILBERT_ROW(5),
        ZORDER_HILBERT_ROW(6), ZORDER_HILBERT_ROW(7)};
    """
    int NBACKENDS "ZORDER_HILBERT_BACKENDS"
    RowsKernel via "zorder_hilbert_via"[8]
    const RowsKernel kernels "zorder_hilbert_kernels"[8][4]
    unsigned long failures "zorder_hilbert_failures"
    int STACK_COLUMNS "ZORDER_HILBERT_STACK_COLUMNS"

if len(BACKEND_NAMES) > NBACKENDS:  # pragma: no cover - a new backend needs a slot above
    raise ImportError(f"zorder._hilbert knows {NBACKENDS} interleave backends, not {BACKEND_NAMES}")


#: The transform codes, by level: plain C; AVX2 (the state machine on bit planes of 256
#: rows for 2-8 columns of 64 bits, else Skilling's steps on 4 rows a register); Skilling's
#: steps on 8 rows an AVX-512 register (the bit planes where AVX2 runs them); and the state
#: tables on byte planes (2-4 columns; the others as on AVX-512).
TRANSFORMS = ("plain", "avx2", "avx512", "vbmi")
# (the tables are built here, at import, before any call can use them)
cdef int _tables_built = zorder_hilbert_tables_init()


def _fastest_level():
    """The fastest transform this build has and the CPU runs: what each needs is the CPU
    floor's feature table (``features.HILBERT_TARGETS``)."""
    cpu = facts()
    if _tables_built and supported(HILBERT_TARGETS["vbmi"], cpu):
        return 3
    if zorder_hilbert_avx512_built and supported(HILBERT_TARGETS["avx512"], cpu):
        return 2
    if zorder_hilbert_avx2_built and supported(HILBERT_TARGETS["avx2"], cpu):
        return 1
    return 0
cdef int _cpu_level = _fastest_level()
#: The transform this build and CPU run (from the CPU floor's facts, read once).
TRANSFORM = TRANSFORMS[_cpu_level]


cdef RowsKernel kernel_for(str backend, int level) except NULL:
    """The Hilbert RowsKernel interleaving with `backend` after transform `level`."""
    cdef int index = BACKEND_NAMES.index(backend)
    cdef const char* name
    if via[index] == NULL:
        capsule = interleave.row_kernel_capsule(backend)   # BackendError if it cannot run
        name = PyCapsule_GetName(capsule)
        via[index] = <RowsKernel>PyCapsule_GetPointer(capsule, name)
    return kernels[index][level]


# The public functions' kernel: zorder's chosen backend after this CPU's transform,
# resolved at the first call (the face chooses the backend after importing this module).
cdef RowsKernel _default_kernel = NULL


cdef inline RowsKernel default_kernel() except NULL:
    global _default_kernel
    if _default_kernel == NULL:
        _default_kernel = kernel_for(interleave.default_name(), _cpu_level)
    return _default_kernel


cdef int checked_bits(object bits_per_column) except -1:
    """bits_per_column as Iceberg checks it: a positive multiple of 8, then at most 64."""
    if PyLong_CheckExact(bits_per_column) and (bits_per_column == 64 or bits_per_column == 8):
        return bits_per_column   # the common values, without the general path's calls
    if isinstance(bits_per_column, bool):
        raise TypeError("bits_per_column must be an int, not bool")
    try:
        bits = operator.index(bits_per_column)
    except TypeError:
        raise TypeError(
            f"bits_per_column must be an int, not {type(bits_per_column).__name__}"
        ) from None
    if bits <= 0 or bits % 8:
        raise ValueError(f"bits_per_column must be a positive multiple of 8, got {bits}")
    if bits > 64:
        raise ValueError(f"bits_per_column must be at most 64, got {bits}")
    return bits


cdef short_column(Py_ssize_t i, Py_ssize_t width, int bits, str what):
    return ValueError(
        f"columns[{i}] has {width} bytes{what}, fewer than the {bits // 8} that "
        f"bits_per_column={bits} reads"
    )


cdef int check_row_widths(list items, int bits) except -1:
    """Iceberg's last check, column by column: each holds at least bits/8 bytes, as its
    buffer says. A column the front end will read is replaced in ``items`` (our own list)
    by the view measured, so the kernel reads that buffer and no other."""
    cdef Py_ssize_t i, width
    cdef Py_buffer* buf
    for i in range(len(items)):
        item = items[i]
        if PyBytes_CheckExact(item):
            width = len(item)   # (immutable: the front end reads it as it is)
        elif isinstance(item, str):
            raise TypeError(
                f"columns[{i}] is str, not bytes: encode it first "
                "(zorder.string_to_ordered_bytes gives Iceberg's bytes)"
            )
        elif not PyObject_CheckBuffer(item):
            # Where Iceberg reads a null column's length and throws.
            raise TypeError(f"columns[{i}] must be a bytes-like object, not {type(item).__name__}")
        else:
            view = PyMemoryView_FromObject(item)
            buf = PyMemoryView_GET_BUFFER(view)
            if buf.ndim != 1 or buf.itemsize != 1:
                continue   # the front end says what is wrong with it
            width = buf.len
            if read_as_is(buf) and PyBuffer_IsContiguous(buf, b"C"):
                items[i] = view
        if width < bits // 8:
            raise short_column(i, width, bits, "")
    return 0


cdef inline bint read_as_is(const Py_buffer* buf) noexcept:
    """Whether the front end reads this buffer as it is (uint8 or char items, the front
    end's byte formats; no indirection), so its view can stand in for its exporter."""
    cdef const char* fmt = buf.format
    if buf.suboffsets != NULL:
        return False
    if fmt == NULL:
        return True
    if fmt[0] in b"@=<>!":
        fmt += 1
    return (fmt[0] == b"B" or fmt[0] == b"c") and fmt[1] == 0


cdef object byte_view(object item):
    """A memoryview of a buffer of one-byte items, or None where the front end will
    refuse the object. Widths are read from it, never from ``.shape``, which an ndarray
    subclass can make claim more bytes than its buffer holds."""
    if not PyObject_CheckBuffer(item) or isinstance(item, (str, bytes, bytearray)):
        return None
    try:
        view = PyMemoryView_FromObject(item)
    except (TypeError, ValueError, BufferError):
        return None
    return view if PyMemoryView_GET_BUFFER(view).itemsize == 1 else None


cdef object checked_rows_columns(object columns, int bits):
    """(columns for the front end, n): Iceberg's column checks on a batch layout, on the
    buffers the front end then reads (the views measured stand in for their exporters)."""
    cdef Py_ssize_t i
    cdef Py_buffer* buf
    if (not isinstance(columns, (list, tuple, str, bytes, bytearray))
            and PyObject_CheckBuffer(columns)):
        view = byte_view(columns)
        if view is None or PyMemoryView_GET_BUFFER(view).ndim != 3:
            return columns, None   # the front end names the problem
        buf = PyMemoryView_GET_BUFFER(view)
        if buf.shape[1] == 0:
            raise ValueError("columns is empty: at least one column is needed")
        if buf.shape[2] < bits // 8:
            raise short_column(0, buf.shape[2], bits, " per row")
        return (view if read_as_is(buf) else columns), buf.shape[1]
    items = as_column_list(columns)
    for i in range(len(items)):
        view = byte_view(items[i])
        if view is None or PyMemoryView_GET_BUFFER(view).ndim != 2:
            break   # the front end refuses this column, before any later one
        buf = PyMemoryView_GET_BUFFER(view)
        if buf.shape[1] < bits // 8:
            raise short_column(i, buf.shape[1], bits, " per row")
        if read_as_is(buf):
            items[i] = view
    return items, len(items)


cdef int check_failures(unsigned long before, object ncols) except -1:
    """MemoryError if a kernel of this call found no scratch: only calls of more columns
    than fit the stack can, so a smaller call never takes another thread's failure."""
    if ncols is not None and ncols > STACK_COLUMNS and failures != before:
        raise MemoryError("no memory for the Hilbert kernel's scratch rows")
    return 0


cdef check_out_width(object out, Py_ssize_t size, int ndim):
    """Refuse an ``out`` too narrow for the Hilbert values in this module's words (the
    interleave front end, which checks every other property of ``out``, would name its
    own ``interleaved_size``, an argument the Hilbert functions do not have)."""
    if out is None:
        return
    try:
        view = memoryview(out)
    except TypeError:
        return   # (not a buffer: the front end says what out must be)
    if view.itemsize != 1:
        return   # (nor are items wider than a byte)
    if ndim == 1 and view.nbytes < size:
        raise ValueError(f"out has {view.nbytes} bytes, fewer than the {size} of the "
                         f"Hilbert index (columns x bits_per_column / 8)")
    if ndim == 2 and view.ndim == 2 and view.shape[1] < size:
        raise ValueError(f"out rows have {view.shape[1]} bytes, fewer than the {size} of a "
                         f"Hilbert value (columns x bits_per_column / 8)")


cdef object index_with(RowsKernel kernel, object columns, object bits_per_column, object out):
    cdef int bits = checked_bits(bits_per_column)
    cdef list items = as_column_list(columns)
    cdef unsigned long before = failures
    check_row_widths(items, bits)
    check_out_width(out, len(items) * (bits // 8), 1)
    result = interleave_bits_with(kernel, items, len(items) * (bits // 8), out)
    check_failures(before, len(items))
    return result


cdef object rows_with(RowsKernel kernel, object columns, object bits_per_column, object out,
                      object threads):
    cdef int bits = checked_bits(bits_per_column)
    cdef unsigned long before = failures
    columns, n = checked_rows_columns(columns, bits)
    # n is None only for a layout the front end refuses before reading the size.
    size = None if n is None else n * (bits // 8)
    if size is not None:
        check_out_width(out, size, 2)
    result = interleave_rows_with(kernel, columns, size, out, threads)
    check_failures(before, n)
    return result


def hilbert_index(columns, bits_per_column=64, out=None):
    """Iceberg's Hilbert index of one row: ``HilbertByteUtils.hilbertIndex``.

    Each column's leading ``bits_per_column / 8`` bytes are read as a big-endian word
    (longer columns are fine), Skilling's axes-to-transposed-index transform runs on the
    words, and the transposed words are interleaved as ``interleave_bits`` does. With one
    column the result is that column's leading bytes.

    Args:
        columns: a non-empty sequence of bytes-like columns (bytes, bytearray, memoryview,
            1-D uint8 arrays), each at least ``bits_per_column / 8`` bytes long; Iceberg's
            ordered bytes (``zorder.ordered_bytes``), usually 8 bytes each.
        bits_per_column: bits taken from each column: a positive multiple of 8, at most
            64 (Spark's ``hilbert(...)`` sort uses 64).
        out: optional writable buffer of at least ``n * bits_per_column / 8`` bytes, like
            Iceberg's reused ByteBuffer: those first bytes are overwritten, the rest left
            as they were, and ``out`` itself is returned.

    Errors come in Iceberg's order: ``bits_per_column`` (ValueError, TypeError for a
    non-int), no columns (ValueError), then the first column that is not bytes-like
    (TypeError) or too short (ValueError).

    Returns:
        ``bytes`` of length ``n * bits_per_column / 8``, or ``out``.

    Example:
        >>> hilbert_index([b"\\x00", b"\\x01"], 8).hex()
        '0003'
    """
    return index_with(default_kernel(), columns, bits_per_column, out)


def hilbert_rows(columns, bits_per_column=64, out=None, *, threads=1):
    """Iceberg's Hilbert index of many rows; row i equals hilbert_index of row i.

    Args:
        columns: every layout ``interleave_rows`` accepts: a non-empty sequence of 2-D
            uint8 arrays (N, L_c), one per column, any row stride, or one 3-D uint8 array
            (N, n, L). Every L_c must be at least ``bits_per_column / 8``; only the
            leading bytes of each column are read.
        bits_per_column: a positive multiple of 8, at most 64.
        out: optional writable 2-D uint8 array (N, W) with W >= n * bits_per_column / 8
            and contiguous rows; only the first bytes of each row are written.
        threads: split the rows across this many threads (the kernels run without the
            GIL), as in ``interleave_rows``.

    Returns:
        a C-contiguous (N, n * bits_per_column / 8) uint8 array, or ``out``. Rows compare
        (as unsigned bytes) in the order of the Hilbert curve through the columns.

    Example:
        >>> import numpy as np
        >>> hilbert_rows(np.array([[[0], [1]], [[1], [1]]], np.uint8), 8)
        array([[0, 3],
               [0, 2]], dtype=uint8)
    """
    return rows_with(default_kernel(), columns, bits_per_column, out, threads)


def check_bits_per_column(bits_per_column):
    """``bits_per_column`` checked as Iceberg checks it (ValueError/TypeError naming it)."""
    return checked_bits(bits_per_column)


def untranspose_rows(block, n_columns, bits_per_column):
    """Skilling's transposed-index-to-axes, in place, on a C-contiguous (N, n * bits/8)
    uint8 block of de-interleaved Hilbert indices (the decoder's second half; the first
    is ``zorder.values.decode.deinterleave_rows``)."""
    cdef int bits = checked_bits(bits_per_column)
    cdef Py_ssize_t n = n_columns
    cdef uint8_t[:, ::1] view = block
    cdef Py_ssize_t nrows = view.shape[0]
    cdef int ok = 1
    if view.shape[1] != n * (bits // 8):
        raise ValueError(f"block rows have {view.shape[1]} bytes, not {n * (bits // 8)}")
    if nrows:
        with nogil:
            ok = zorder_hilbert_decode_rows(&view[0, 0], nrows, view.strides[0], n, bits)
    if not ok:
        raise MemoryError("no memory for the Hilbert decoder's scratch words")


def _hilbert_index_with(backend, columns, bits_per_column=64, out=None, *, transform=None):
    """hilbert_index through a named interleave backend and transform (for tests)."""
    return index_with(kernel_for(backend, _level(transform)), columns, bits_per_column, out)


def _hilbert_rows_with(backend, columns, bits_per_column=64, out=None, *, threads=1,
                       transform=None):
    """hilbert_rows through a named interleave backend and transform (for tests)."""
    return rows_with(kernel_for(backend, _level(transform)), columns, bits_per_column, out,
                     threads)


cdef int _level(object transform) except -1:
    if transform is None:
        return _cpu_level
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(TRANSFORMS)}, not {transform!r}")
    level = TRANSFORMS.index(transform)
    if level > _cpu_level:
        raise ValueError(f"the {transform} transform cannot run here (this CPU runs {TRANSFORM})")
    return level
