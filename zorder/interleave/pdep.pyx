"""BMI2 backend: each byte's bits deposited into place by one _pdep_u64.

Fast on Intel since Haswell and on AMD since Zen 3; microcoded and very slow on AMD
before Zen 3 and on Hygon, which is why `auto` never picks it there. The BMI2 code is
in csrc/pdep_kernel.c behind a target attribute and runs only after the CPU floor
(zorder.cpu, the one place that reads CPUID) says BMI2 is usable.
"""

from libc.stdint cimport uint8_t

from zorder.interleave.bitloop cimport bitloop_rows
from zorder.interleave._frontend cimport interleave_bits_with, interleave_rows_with
from zorder.interleave.kernel cimport Column

from zorder.cpu import usable
from zorder.interleave._frontend import INTERLEAVE_BITS_DOC, INTERLEAVE_ROWS_DOC

cdef extern from "pdep_kernel.h" nogil:
    const int zorder_pdep_built
    void zorder_pdep_init()
    int zorder_pdep_rows(const Column* cols, Py_ssize_t ncols, Py_ssize_t size,
                         Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride)
    void zorder_pdep_uniform(const Column* cols, int k, Py_ssize_t size, Py_ssize_t nrows,
                             uint8_t* out, Py_ssize_t out_stride)

name = "pdep"

cdef bint _supported = zorder_pdep_built and usable("bmi2")
if _supported:
    zorder_pdep_init()

#: Whether this CPU can run the kernel (from the CPU facts read once at import).
SUPPORTED = bool(_supported)
UNSUPPORTED_REASON = (
    "" if SUPPORTED
    else "this build has no BMI2 kernel" if not zorder_pdep_built
    else "this CPU has no BMI2 (no PDEP instruction)"
)


cdef bint pdep_supported() noexcept nogil:
    return _supported


cdef void pdep_rows(const Column* columns, Py_ssize_t ncolumns, Py_ssize_t size,
                    Py_ssize_t nrows, uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    if not zorder_pdep_rows(columns, ncolumns, size, nrows, out, out_stride):
        bitloop_rows(columns, ncolumns, size, nrows, out, out_stride)


cdef void pdep_uniform(const Column* columns, int k, Py_ssize_t size, Py_ssize_t nrows,
                       uint8_t* out, Py_ssize_t out_stride) noexcept nogil:
    zorder_pdep_uniform(columns, k, size, nrows, out, out_stride)


cdef inline int check_supported() except -1:
    if not _supported:
        raise RuntimeError(f"the pdep backend cannot run here: {UNSUPPORTED_REASON}")
    return 0


def interleave_bits(columns, interleaved_size=None, out=None):
    check_supported()
    return interleave_bits_with(pdep_rows, columns, interleaved_size, out)


def interleave_rows(columns, interleaved_size=None, out=None, *, threads=1):
    check_supported()
    return interleave_rows_with(pdep_rows, columns, interleaved_size, out, threads)


interleave_bits.__doc__ = INTERLEAVE_BITS_DOC
interleave_rows.__doc__ = INTERLEAVE_ROWS_DOC
