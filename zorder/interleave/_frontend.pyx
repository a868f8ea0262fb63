# cython: boundscheck=False, wraparound=False
"""Argument checking and buffer handling for every backend.

Each backend module fills one C table (csrc/generic/backend.h) and publishes it here as a
``Backend``, so the rules for what is accepted, and the errors for what is not, exist
once. Everything that can run Python code (``__index__``, copies) happens before raw
pointers are taken, and every input is held through the buffer protocol (which also stops
a bytearray from being resized) for as long as a kernel reads it.
"""

from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS,
    PyBUF_FORMAT,
    PyBUF_RECORDS,
    PyBUF_RECORDS_RO,
    PyBUF_WRITABLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_CheckExact
from cpython.number cimport PyNumber_Index
from cpython.ref cimport PyObject, Py_XDECREF, Py_XINCREF
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE, PySequence_Fast_ITEMS
from cpython.tuple cimport PyTuple_CheckExact
from cpython.long cimport PyLong_AsLongAndOverflow, PyLong_CheckExact
from libc.stdint cimport uint8_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

from zorder.interleave.kernel cimport AssembleFn, BackendTable, Column, RowsKernel, SegPiece

import importlib
from collections.abc import Mapping

import numpy

from cpython.pycapsule cimport PyCapsule_New

cdef extern from *:
    """
    /* Py_buffer.obj is NULL until a view is taken and after it is released. */
    #define zorder_view_held(v) ((v)->obj != NULL)
    #define zorder_view_clear(v) ((v)->obj = NULL)
    """
    bint view_held "zorder_view_held"(Py_buffer* view) noexcept nogil
    void view_clear "zorder_view_clear"(Py_buffer* view) noexcept nogil

# Below this many rows per thread, starting threads costs more than it saves.
cdef Py_ssize_t MIN_ROWS_PER_THREAD = 16384
cdef enum:
    STACK_COLUMNS = 16


cdef inline bint is_byte_format(const char* fmt) noexcept:
    # NULL means unsigned bytes (PEP 3118); accept uint8 and char, with any byte-order prefix.
    if fmt == NULL:
        return True
    if fmt[0] in b"@=<>!":
        fmt += 1
    return (fmt[0] == b"B" or fmt[0] == b"c") and fmt[1] == 0


cdef str describe_format(object obj, const char* fmt):
    dtype = getattr(obj, "dtype", None)
    if dtype is not None:
        return f"dtype {dtype}"
    if fmt == NULL:
        return "items of more than one byte"
    return f"item format {fmt.decode('ascii', 'replace')!r}"


cdef str buffer_problem(object obj):
    """Why a buffer was refused as out, for the message ('' if it is no buffer at all)."""
    if not PyObject_CheckBuffer(obj):
        return ""
    try:
        view = memoryview(obj)
    except Exception:
        return ""
    if view.readonly:
        return " (read-only)"
    if not view.c_contiguous:
        return " (not C-contiguous)"
    return ""


cdef int require_bytes(Py_buffer* view, object obj, str name, int ndim, str dims,
                       bint release) except -1:
    """The one check of an exported buffer: uint8 bytes (TypeError otherwise) with `ndim`
    dimensions (ValueError naming `dims`; ndim 0 checks only the bytes). With `release`,
    the view is released before raising (for a caller that does not track it yet)."""
    cdef object kind = None
    cdef str message
    if not is_byte_format(view.format) or view.itemsize != 1:
        kind = TypeError
        message = f"{name} must hold uint8 bytes, not {describe_format(obj, view.format)}"
    elif ndim and view.ndim != ndim:
        kind = ValueError
        message = f"{name} must be {dims}, got {view.ndim}-D"
    if kind is None:
        return 0
    if release:
        PyBuffer_Release(view)
    raise kind(message)


cdef object checked_index(object value, str name, str kinds):
    """value's __index__, refusing bool (TypeError: `name` must be `kinds`)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be {kinds}, not bool")
    try:
        return PyNumber_Index(value)
    except TypeError:
        raise TypeError(f"{name} must be {kinds}, not {type(value).__name__}") from None


cdef int take_out(object out, Py_buffer* view, int flags, str wanted, int ndim,
                  str dims) except -1:
    """Exports `out` into `view` with `flags`, then checks it as require_bytes does. A
    refused export is a TypeError: out must be `wanted` (any buffer that is refused with
    the 2 dimensions of interleave_rows is read-only; a 1-D one may be scattered too)."""
    try:
        PyObject_GetBuffer(out, view, flags)
    except (BufferError, ValueError, TypeError):
        view_clear(view)
        problem = (buffer_problem(out) if ndim == 0
                   else " (read-only)" if PyObject_CheckBuffer(out) else "")
        raise TypeError(f"out must be {wanted}, not {type(out).__name__}{problem}") from None
    return require_bytes(view, out, "out", ndim, dims, False)


cdef Py_ssize_t checked_size(object interleaved_size) except -2:
    """-1 for None (the default), else the size as a non-negative index."""
    cdef int overflow = 0
    cdef long fast
    if interleaved_size is None:
        return -1
    if PyLong_CheckExact(interleaved_size):
        # The per-row path's common case, checked in C; anything else (negative, huge)
        # takes the general path below for its error.
        fast = PyLong_AsLongAndOverflow(interleaved_size, &overflow)
        if not overflow and 0 <= fast <= (<Py_ssize_t>1 << 60):
            return <Py_ssize_t>fast
    size = checked_index(interleaved_size, "interleaved_size", "an int or None")
    if size < 0:
        raise ValueError(f"interleaved_size must be >= 0, got {size}")
    if size > (<Py_ssize_t>1 << 60):
        raise ValueError(f"interleaved_size={size} is larger than any input can be")
    return size


cdef Py_ssize_t resolve_size(Py_ssize_t requested, const Column* cols, Py_ssize_t n) except -1:
    cdef Py_ssize_t total = 0, i
    for i in range(n):
        total += cols[i].width
    if requested < 0:
        requested = total
    if requested > total:
        raise ValueError(
            f"interleaved_size={requested} is larger than the {total} bytes of input "
            "(Iceberg's interleaveBits would spin and then throw)"
        )
    if requested > 0 and cols[0].width == 0:
        raise ValueError(
            "columns[0] is empty: Iceberg's interleaveBits reads its first byte and fails "
            "(only interleaved_size=0 is allowed then)"
        )
    return requested


cdef list as_column_list(object columns):
    cdef list seq
    if isinstance(columns, (list, tuple)):
        # Always a list of our own: taking a view of one column can run Python code
        # (a __class__ property, __buffer__ on 3.12+) that empties the caller's list, and
        # the bytes columns read by pointer must stay alive until the kernel is done.
        seq = list(columns)
    elif isinstance(columns, (str, bytes, bytearray, memoryview)):
        raise TypeError(
            f"columns must be a sequence of columns, not one {type(columns).__name__} "
            "(wrap a single column in a list)"
        )
    elif isinstance(columns, (set, frozenset, Mapping)):
        # A set's order changes from run to run (string hashing), and a mapping would give
        # its keys: either would make the Z-value depend on chance.
        raise TypeError(
            f"columns must be an ordered sequence of columns, not {type(columns).__name__}"
        )
    else:
        try:
            seq = list(columns)
        except TypeError:
            raise TypeError(
                f"columns must be a sequence of columns, not {type(columns).__name__}"
            ) from None
    if len(seq) == 0:
        raise ValueError("columns is empty: at least one column is needed")
    return seq


cdef inline bint regions_overlap(const uint8_t* a_lo, const uint8_t* a_hi,
                                 const uint8_t* b_lo, const uint8_t* b_hi) noexcept:
    return a_lo < b_hi and b_lo < a_hi


cdef inline void column_extent(const Column* col, Py_ssize_t nrows,
                               const uint8_t** lo, const uint8_t** hi) noexcept:
    cdef Py_ssize_t last = (nrows - 1) * col.row_stride
    lo[0] = col.data + (last if last < 0 else 0)
    hi[0] = col.data + (last if last > 0 else 0) + col.width


cdef bint columns_overlap(const Column* a, const Column* b, Py_ssize_t nrows) noexcept:
    """Whether the bytes of nrows rows of a and b share an address.

    Beyond the bounding boxes, two regions with the same row stride (spare columns of one
    array, say) are compared exactly: row i of a is [i*s, i*s + wa) and row j of b is
    [d + j*s, d + j*s + wb); they meet where some m = j - i in (-nrows, nrows) puts
    d + m*s in (-wb, wa).
    """
    cdef const uint8_t* a_lo
    cdef const uint8_t* a_hi
    cdef const uint8_t* b_lo
    cdef const uint8_t* b_hi
    cdef Py_ssize_t s = a.row_stride, d, m
    if a.width == 0 or b.width == 0 or nrows == 0:
        return False
    column_extent(a, nrows, &a_lo, &a_hi)
    column_extent(b, nrows, &b_lo, &b_hi)
    if not regions_overlap(a_lo, a_hi, b_lo, b_hi):
        return False
    if nrows == 1 or b.row_stride != s or s == 0:
        return True
    d = b.data - a.data
    if s < 0:
        # The same rows listed from the other end: both start (n-1)*s lower, d is unchanged.
        s = -s
    # The largest m with d + m*s < wa, within the rows there are.
    m = (a.width - d - 1) // s
    if m > nrows - 1:
        m = nrows - 1
    return m > -nrows and d + m * s > -b.width


cdef object interleave_bits_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out):
    cdef Py_ssize_t requested = checked_size(interleaved_size)
    cdef list items = None
    cdef PyObject* held[STACK_COLUMNS]
    cdef PyObject** refs = held
    cdef Py_ssize_t nheld = 0
    cdef Py_ssize_t n, i, size, out_len
    cdef Column stack_cols[STACK_COLUMNS]
    cdef Py_buffer stack_views[STACK_COLUMNS]
    cdef Column* cols = stack_cols
    cdef Py_buffer* views = stack_views
    cdef Py_buffer out_view
    cdef uint8_t* dest
    cdef const uint8_t* lo
    cdef const uint8_t* hi
    cdef object item, result
    if ((PyList_CheckExact(columns) or PyTuple_CheckExact(columns))
            and 0 < PySequence_Fast_GET_SIZE(columns) <= STACK_COLUMNS):
        # The per-row common case: below, a reference of our own to each column (what a
        # copy of the list would hold) without the cost of building and freeing a list.
        n = PySequence_Fast_GET_SIZE(columns)
    else:
        items = as_column_list(columns)
        n = len(items)
        refs = PySequence_Fast_ITEMS(items)   # our own list: nobody else can change it
    view_clear(&out_view)
    if n > STACK_COLUMNS:
        cols = <Column*>malloc(n * sizeof(Column))
        views = <Py_buffer*>malloc(n * sizeof(Py_buffer))
        if cols == NULL or views == NULL:
            free(cols)
            free(views)
            raise MemoryError()
    for i in range(n):
        view_clear(&views[i])
    try:
        if items is None:
            for i in range(n):
                held[i] = PySequence_Fast_GET_ITEM(columns, i)
                Py_XINCREF(held[i])
                nheld = i + 1
        for i in range(n):
            item = <object>refs[i]
            cols[i].row_stride = 0
            if PyBytes_CheckExact(item):
                # Immutable: its pointer stays valid while we hold a reference to it.
                cols[i].data = <const uint8_t*>PyBytes_AS_STRING(item)
                cols[i].width = PyBytes_GET_SIZE(item)
                continue
            if isinstance(item, str):
                raise TypeError(
                    f"columns[{i}] is str, not bytes: encode it first "
                    "(zorder.string_to_ordered_bytes gives Iceberg's bytes)"
                )
            if not PyObject_CheckBuffer(item):
                raise TypeError(
                    f"columns[{i}] must be a bytes-like object, not {type(item).__name__}"
                )
            try:
                PyObject_GetBuffer(item, &views[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
            except (BufferError, ValueError):
                view_clear(&views[i])
                raise ValueError(f"columns[{i}] must be a C-contiguous buffer") from None
            require_bytes(&views[i], item, f"columns[{i}]", 1, "1-D", False)
            cols[i].data = <const uint8_t*>views[i].buf
            cols[i].width = views[i].len
        size = resolve_size(requested, cols, n)

        if out is None:
            result = PyBytes_FromStringAndSize(NULL, size)
            dest = <uint8_t*>PyBytes_AS_STRING(result)
        else:
            if PyByteArray_CheckExact(out):
                # The reused-buffer case, without a buffer export: no Python code runs
                # from here to the kernel, so the bytearray cannot be resized meanwhile.
                out_len = PyByteArray_GET_SIZE(out)
                dest = <uint8_t*>PyByteArray_AS_STRING(out)
            else:
                take_out(out, &out_view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT,
                         "a writable, C-contiguous buffer", 0, "")
                out_len = out_view.len
                dest = <uint8_t*>out_view.buf
            if out_len < size:
                raise ValueError(
                    f"out has {out_len} bytes, fewer than interleaved_size={size}"
                )
            for i in range(n):
                column_extent(&cols[i], 1, &lo, &hi)
                if size and regions_overlap(dest, dest + size, lo, hi):
                    raise ValueError(f"out overlaps columns[{i}]; use a separate buffer")
            result = out
        if size:
            kernel(cols, n, size, 1, dest, 0)
        return result
    finally:
        for i in range(nheld):
            Py_XDECREF(held[i])
        for i in range(n):
            if view_held(&views[i]):
                PyBuffer_Release(&views[i])
        if view_held(&out_view):
            PyBuffer_Release(&out_view)
        if cols != stack_cols:
            free(cols)
            free(views)


cdef class _RowsJob:
    """One interleave_rows call's checked pointers, so threads can run row ranges."""
    cdef RowsKernel kernel
    cdef Column* cols
    cdef Py_ssize_t ncols, size, out_stride, nrows
    cdef uint8_t* dest

    def __dealloc__(self):
        free(self.cols)

    def run(self, Py_ssize_t start, Py_ssize_t stop):
        """Interleave rows [start, stop) without the GIL."""
        cdef Column* shifted = self.cols
        cdef Py_ssize_t c
        if self.kernel == NULL or self.cols == NULL:
            # Only interleave_rows_with arms a job, and disarms it before it returns.
            raise RuntimeError("this _RowsJob has no checked call to run")
        if stop <= start:
            return
        if start < 0 or stop > self.nrows:
            raise ValueError(f"rows [{start}, {stop}) are outside [0, {self.nrows})")
        if start:
            shifted = <Column*>malloc(self.ncols * sizeof(Column))
            if shifted == NULL:
                raise MemoryError()
            for c in range(self.ncols):
                shifted[c] = self.cols[c]
                shifted[c].data = self.cols[c].data + start * self.cols[c].row_stride
        try:
            with nogil:
                self.kernel(shifted, self.ncols, self.size, stop - start,
                            self.dest + start * self.out_stride, self.out_stride)
        finally:
            if shifted != self.cols:
                free(shifted)


cdef object take_2d_column(object item, Py_ssize_t i, Py_buffer* view, list keep):
    """Fills `view` for a (N, L) uint8 column; returns the object actually viewed."""
    if isinstance(item, (str, bytes)):
        raise TypeError(
            f"columns[{i}] must be a 2-D uint8 array (rows, bytes), not {type(item).__name__}"
        )
    if not PyObject_CheckBuffer(item):
        raise TypeError(
            f"columns[{i}] must be a 2-D uint8 array (rows, bytes), not {type(item).__name__}"
        )
    PyObject_GetBuffer(item, view, PyBUF_RECORDS_RO)
    require_bytes(view, item, f"columns[{i}]", 2, "2-D (rows, bytes)", True)
    if view.shape[1] > 1 and view.strides[1] != 1:
        # Bytes within a row are not adjacent: read a contiguous copy instead.
        PyBuffer_Release(view)
        item = numpy.ascontiguousarray(item)
        keep.append(item)
        PyObject_GetBuffer(item, view, PyBUF_RECORDS_RO)
    return item


cdef object interleave_rows_with(RowsKernel kernel, object columns,
                                 object interleaved_size, object out, object threads):
    cdef Py_ssize_t requested = checked_size(interleaved_size)
    cdef Py_ssize_t nthreads, n, i, size, nrows = -1, chunk, start
    cdef list keep = []          # copies that must outlive the kernel call
    cdef list items
    cdef Py_buffer* views = NULL
    cdef Py_ssize_t nviews = 0
    cdef Py_buffer block_view
    cdef Py_buffer out_view
    cdef _RowsJob job
    cdef const uint8_t* lo
    cdef const uint8_t* hi
    cdef const uint8_t* out_lo
    cdef const uint8_t* out_hi
    cdef Column out_extent
    view_clear(&block_view)
    view_clear(&out_view)

    threads_index = checked_index(threads, "threads", "an int")
    if threads_index < 1:
        raise ValueError(f"threads must be >= 1, got {threads_index}")
    # More threads than rows is the same as one per chunk; cap so it fits a C integer.
    nthreads = threads_index if threads_index < (1 << 30) else (1 << 30)

    job = _RowsJob.__new__(_RowsJob)
    job.kernel = kernel
    try:
        if (not isinstance(columns, (list, tuple)) and PyObject_CheckBuffer(columns)
                and not isinstance(columns, (bytes, bytearray, str))):
            # One block: (N, n, L).
            PyObject_GetBuffer(columns, &block_view, PyBUF_RECORDS_RO)
            require_bytes(&block_view, columns, "columns", 0, "", False)
            if block_view.ndim != 3:
                raise ValueError(
                    "columns must be a sequence of 2-D uint8 arrays or one 3-D uint8 array "
                    f"(rows, columns, bytes), got a {block_view.ndim}-D array"
                    + (" (wrap a single column in a list)" if block_view.ndim == 2 else "")
                )
            if block_view.shape[2] > 1 and block_view.strides[2] != 1:
                PyBuffer_Release(&block_view)
                columns = numpy.ascontiguousarray(columns)
                keep.append(columns)
                PyObject_GetBuffer(columns, &block_view, PyBUF_RECORDS_RO)
            n = block_view.shape[1]
            if n == 0:
                raise ValueError("columns is empty: at least one column is needed")
            nrows = block_view.shape[0]
            job.cols = <Column*>calloc(n, sizeof(Column))   # calloc checks n * size
            if job.cols == NULL:
                raise MemoryError()
            for i in range(n):
                job.cols[i].data = <const uint8_t*>block_view.buf + i * block_view.strides[1]
                job.cols[i].row_stride = block_view.strides[0]
                job.cols[i].width = block_view.shape[2]
        else:
            items = as_column_list(columns)
            n = len(items)
            job.cols = <Column*>malloc(n * sizeof(Column))
            views = <Py_buffer*>malloc(n * sizeof(Py_buffer))
            if job.cols == NULL or views == NULL:
                raise MemoryError()
            for i in range(n):
                take_2d_column(items[i], i, &views[i], keep)
                nviews = i + 1
                if nrows < 0:
                    nrows = views[i].shape[0]
                elif views[i].shape[0] != nrows:
                    raise ValueError(
                        f"columns[{i}] has {views[i].shape[0]} rows, columns[0] has {nrows}"
                    )
                job.cols[i].data = <const uint8_t*>views[i].buf
                job.cols[i].row_stride = views[i].strides[0]
                job.cols[i].width = views[i].shape[1]
        job.ncols = n
        size = resolve_size(requested, job.cols, n)
        job.size = size

        if out is None:
            out = numpy.empty((nrows, size), dtype=numpy.uint8)
        take_out(out, &out_view, PyBUF_RECORDS, "a writable 2-D uint8 array", 2,
                 "2-D (rows, bytes)")
        if out_view.shape[0] != nrows:
            raise ValueError(f"out has {out_view.shape[0]} rows, columns have {nrows}")
        if out_view.shape[1] < size:
            raise ValueError(
                f"out rows have {out_view.shape[1]} bytes, fewer than interleaved_size={size}"
            )
        if size > 1 and out_view.strides[1] != 1:
            raise ValueError("out must have contiguous bytes within each row")
        if nrows > 1 and size and abs(out_view.strides[0]) < size:
            raise ValueError(
                f"out rows overlap each other (row stride {out_view.strides[0]}, "
                f"interleaved_size={size})"
            )
        job.dest = <uint8_t*>out_view.buf
        job.out_stride = out_view.strides[0]
        job.nrows = nrows
        if nrows == 0 or size == 0:
            return out
        out_extent.data = job.dest
        out_extent.row_stride = job.out_stride
        out_extent.width = size
        for i in range(n):
            if columns_overlap(&out_extent, &job.cols[i], nrows):
                raise ValueError(f"out overlaps columns[{i}]; use a separate array")

        chunk = (nrows + nthreads - 1) // nthreads
        if nthreads == 1 or chunk < MIN_ROWS_PER_THREAD:
            job.run(0, nrows)
        else:
            run_threaded(job, nrows, chunk)
        return out
    finally:
        job.kernel = NULL   # its pointers die with the views below: never run it again
        for i in range(nviews):
            PyBuffer_Release(&views[i])
        free(views)
        if view_held(&block_view):
            PyBuffer_Release(&block_view)
        if view_held(&out_view):
            PyBuffer_Release(&out_view)


cdef run_threaded(_RowsJob job, Py_ssize_t nrows, Py_ssize_t chunk):
    from concurrent.futures import ThreadPoolExecutor
    starts = range(chunk, nrows, chunk)
    with ThreadPoolExecutor(max_workers=len(starts)) as pool:
        futures = [pool.submit(job.run, s, min(s + chunk, nrows)) for s in starts]
        job.run(0, chunk)   # this thread takes the first range
        for f in futures:
            f.result()


# ---- one backend module's face ------------------------------------------------------

INTERLEAVE_BITS_DOC = """Interleave the bits of one row's columns, exactly as Iceberg's
ZOrderByteUtils.interleaveBits.

Output bits are filled from the most significant bit of byte 0: bit 7 of byte 0 of
every column in turn, then bit 6, ..., then byte 1. A column that has no byte at the
current index is skipped, so columns may differ in length.

Args:
    columns: a non-empty sequence of bytes-like columns (bytes, bytearray, memoryview,
        C-contiguous 1-D uint8 numpy arrays).
    interleaved_size: output length in bytes; defaults to the sum of the column lengths.
        A smaller size gives a prefix of the full interleaving (Iceberg truncates). A size
        larger than all input bytes is a ValueError (Iceberg's loop would spin, then
        throw), and so is size >= 1 with an empty first column (Iceberg throws).
    out: optional writable buffer of at least ``interleaved_size`` bytes, like Iceberg's
        reused ByteBuffer: its first ``interleaved_size`` bytes are overwritten, the rest
        left as they were, and ``out`` itself is returned. It must not overlap a column.

Returns:
    ``bytes`` of length ``interleaved_size``, or ``out``.

Example:
    >>> interleave_bits([b"\\x80", b"\\x40", b"\\x20"]).hex()
    '888000'
"""

INTERLEAVE_ROWS_DOC = """Interleave many rows at once; row i equals interleave_bits of row i.

Args:
    columns: a non-empty sequence of 2-D uint8 arrays of shape (N, L_c), one per column
        and all with the same N (widths may differ), or one 3-D uint8 array (N, n, L).
        Any row stride is read in place; a column whose bytes within a row are not
        contiguous is copied once first.
    interleaved_size: bytes per output row, default the sum of the widths; the same rules
        as interleave_bits.
    out: optional writable 2-D uint8 array of shape (N, W) with W >= interleaved_size and
        contiguous rows; only the first ``interleaved_size`` bytes of each row are written.
    threads: split the rows across this many threads (the kernels run without the GIL).

Returns:
    a C-contiguous (N, interleaved_size) uint8 numpy array, or ``out``.

Example:
    >>> import numpy as np
    >>> interleave_rows([np.array([[0x80]], np.uint8), np.array([[0x40]], np.uint8)])
    array([[144,   0]], dtype=uint8)
"""

# _vector_rows's probe: the backend whose vector kernel runs alone, and whether it declined
# (tests only, one thread).
cdef const BackendTable* probe_table = NULL
cdef bint probe_declined = False


cdef void probe_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                     Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    global probe_declined
    if probe_table.rows != NULL:
        if probe_table.rows(columns, ncolumns, size, nrows, out, out_stride):
            return
    elif probe_table.vector != NULL and ncolumns <= 8:
        if probe_table.vector(columns, <int>ncolumns, size, nrows, out, out_stride):
            return
    probe_declined = True


cdef class Backend:
    """A backend module's face: its name, whether it runs here and why not, and the public
    functions' RowsKernel (the generic driver run on its C table)."""

    def __init__(self):
        raise TypeError("a Backend is made by its module (zorder.interleave._frontend.publish)")

    def __reduce__(self):
        return backend_of, (self.name,)

    cdef int refuse(self) except -1:
        raise RuntimeError(f"the {self.name} backend cannot run here: {self.reason}")


    @property
    def capsule(self):
        """The capsule of the C RowsKernel (for kernels that call it: the dispatcher, the
        Hilbert transform)."""
        return PyCapsule_New(<void*>self.kernel, b"zorder_rows_kernel", NULL)

    def vector_rows(self, columns, interleaved_size=None, out=None):
        """Tests: the call on the vector kernel alone (the table's whole-call kernel, or its
        uniform one for up to 8 columns), to show a shape really takes it; LookupError for
        a shape it does not cover."""
        global probe_table, probe_declined
        if not self.supported:
            self.refuse()
        if self.table == NULL or (self.table.rows == NULL and self.table.vector == NULL):
            raise LookupError(f"the {self.name} backend has no vector kernel")
        probe_table, probe_declined = self.table, False
        result = interleave_rows_with(probe_rows, columns, interleaved_size, out, 1)
        if probe_declined:
            raise LookupError(f"the {self.name} backend's vector kernel does not cover this shape")
        return result

    def stream_min(self, value=None):
        """Tests: the output size (bytes) from which non-temporal stores are used; sets it
        if given (to reach the streaming path with small arrays). Returns the old value."""
        if self.table == NULL or self.table.stream_min == NULL:
            raise LookupError(f"the {self.name} backend has no streaming stores")
        old = self.table.stream_min[0]
        if value is not None:
            self.table.stream_min[0] = value
        return old

    def assemble(self, pieces, Py_ssize_t size, Py_ssize_t rows, uint8_t[::1] out):
        """Tests (tests/test_assemble_bounds.py, which puts the buffers against guard pages):
        the table's assembly of narrow ragged rows (csrc/generic/backend.h's
        zorder_assemble_fn) on caller-given buffers. pieces is a sequence of (src, stride,
        n, at); each src must hold its rows' bytes up to the last row's n, and out rows *
        size bytes, so that any byte read or written past them is the hook's own fault.
        Returns the rows it assembled; refused (RuntimeError), never run, where the CPU
        cannot run it."""
        cdef SegPiece cpieces[8]
        cdef const uint8_t[::1] src
        cdef Py_ssize_t npieces = len(pieces), p, r
        cdef AssembleFn assemble = self.table.assemble if self.table != NULL else NULL
        if not self.supported or assemble == NULL:
            raise RuntimeError(self.reason or "this backend has no assembly of narrow rows")
        if not 1 <= npieces <= 8:
            raise ValueError(f"pieces: 1 to 8 pieces, not {npieces}")
        if size < 1 or rows < 0:
            raise ValueError(f"size must be positive and rows not negative, not {size}, {rows}")
        if out.shape[0] != rows * size:
            raise ValueError(f"out: must be exactly rows * size = {rows * size} bytes, "
                             f"not {out.shape[0]}")
        sources = []   # keeps each src buffer while the hook runs
        for p, (src_obj, stride, n, at) in enumerate(pieces):
            src = src_obj
            sources.append(src)
            if stride < 1 or n < 1 or at < 0 or at + n > size:
                raise ValueError(f"pieces[{p}]: stride {stride}, n {n}, at {at} do not fit "
                                 f"a row of {size} bytes")
            if rows and src.shape[0] != (rows - 1) * stride + n:
                raise ValueError(f"pieces[{p}]: src must be exactly (rows - 1) * stride + n = "
                                 f"{(rows - 1) * stride + n} bytes, not {src.shape[0]}")
            cpieces[p].src = &src[0] if src.shape[0] else NULL
            cpieces[p].stride = stride
            cpieces[p].n = n
            cpieces[p].at = at
        if rows == 0:
            return 0
        with nogil:
            r = assemble(cpieces, <int>npieces, size, rows, &out[0])
        return r


def backend_of(name):
    """The Backend of module zorder.interleave.<name> (unpickling)."""
    return importlib.import_module(f"zorder.interleave.{name}").backend


cdef Backend publish(dict namespace, str name, RowsKernel kernel, const BackendTable* table,
                     bint supported=True, str reason=""):
    """Makes a backend module's Backend and puts its public names in the module's
    namespace: name, SUPPORTED, UNSUPPORTED_REASON, interleave_bits, interleave_rows and
    backend (the Backend itself). `table` may be NULL (the dispatcher has none)."""
    cdef Backend backend = Backend.__new__(Backend)
    backend.kernel = kernel
    backend.table = table
    backend.name = name
    backend.supported = supported
    backend.reason = "" if supported else reason

    def interleave_bits(columns, interleaved_size=None, out=None):
        if not supported:
            backend.refuse()
        return interleave_bits_with(kernel, columns, interleaved_size, out)

    def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
        if not supported:
            backend.refuse()
        return interleave_rows_with(kernel, columns, interleaved_size, out, threads)

    # the module's own functions, as if defined there (names, docs, pickling by reference)
    for function, doc in ((interleave_bits, INTERLEAVE_BITS_DOC),
                          (interleave_rows, INTERLEAVE_ROWS_DOC)):
        function.__module__ = namespace["__name__"]
        function.__qualname__ = function.__name__
        function.__doc__ = doc
    namespace.update(name=name, SUPPORTED=bool(supported), UNSUPPORTED_REASON=backend.reason,
                     interleave_bits=interleave_bits, interleave_rows=interleave_rows,
                     backend=backend)
    return backend
