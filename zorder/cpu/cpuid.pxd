from libc.stdint cimport uint32_t, uint64_t

cdef extern from "x86_cpuid.h" nogil:
    int ZORDER_X86_64
    int cpuid "zorder_cpuid"(uint32_t leaf, uint32_t subleaf, uint32_t* regs)
    uint64_t os_xcr0 "zorder_os_xcr0"()
