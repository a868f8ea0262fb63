"""BMI2 backend: each byte's bits deposited into place by one _pdep_u64.

Fast on Intel since Haswell and on AMD since Zen 3; microcoded and very slow on AMD
before Zen 3 and on Hygon, which is why `auto` never picks it there. The BMI2 code is
in csrc/pdep_kernel.c behind a target attribute and runs only after the CPU floor
(zorder.cpu, the one place that reads CPUID) says BMI2 is usable.
"""

from zorder.interleave._frontend cimport publish
from zorder.interleave.kernel cimport BackendTable, RowsKernel

from zorder.cpu import usable

cdef extern from *:
    """
    #include "pdep_kernel.h"
    #include "driver.h"
    ZORDER_BACKEND_ROWS(zorder_pdep_backend)
    """
    const int zorder_pdep_built
    void zorder_pdep_init()
    const BackendTable zorder_pdep_backend
    RowsKernel zorder_pdep_backend_rows

_supported = bool(zorder_pdep_built and usable("bmi2"))
if _supported:
    zorder_pdep_init()
publish(globals(), "pdep", zorder_pdep_backend_rows, &zorder_pdep_backend, _supported,
        "this build has no BMI2 kernel" if not zorder_pdep_built
        else "this CPU has no BMI2 (no PDEP instruction)")
