/* CPUID and XGETBV, for the one-time CPU checks. Every instruction here exists on every
 * x86-64 CPU (XGETBV only after OSXSAVE is seen); on other architectures the functions
 * report nothing, so the BMI2 and AVX-512 kernels are never entered there. The bits are
 * decoded by _facts.pyx from the one feature table, zorder/cpu/features.py. */
#ifndef ZORDER_CPUID_H
#define ZORDER_CPUID_H

#include <stdint.h>
#include "arch.h"

#if ZORDER_X86_64
#if defined(_MSC_VER)
#include <intrin.h>
static inline int zorder_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    int r[4];
    __cpuidex(r, (int)leaf, (int)subleaf);
    regs[0] = (uint32_t)r[0]; regs[1] = (uint32_t)r[1];
    regs[2] = (uint32_t)r[2]; regs[3] = (uint32_t)r[3];
    return 1;
}
static inline uint64_t zorder_xgetbv0(void) { return _xgetbv(0); }
#else
#include <cpuid.h>
static inline int zorder_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
    return 1;
}
static inline uint64_t zorder_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif
#else
static inline int zorder_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    (void)leaf; (void)subleaf;
    regs[0] = regs[1] = regs[2] = regs[3] = 0;
    return 0;
}
static inline uint64_t zorder_xgetbv0(void) { return 0; }
#endif

/* XCR0, or 0 where the OS has not enabled XSAVE; which bits a kernel needs is
 * zorder/cpu/features.py's OS_STATES. */
static inline uint64_t zorder_os_xcr0(void)
{
    uint32_t r[4];
    if (!zorder_cpuid(0, 0, r) || r[0] < 1)
        return 0;
    zorder_cpuid(1, 0, r);
    if (!(r[2] & (1u << 27)))  /* OSXSAVE: XGETBV is usable */
        return 0;
    return zorder_xgetbv0();
}

#endif
