/* CPUID and XGETBV, for the one-time CPU checks. Every instruction here exists on every
 * x86-64 CPU (XGETBV only after OSXSAVE is seen); on other architectures the functions
 * report nothing, so the BMI2 and AVX-512 kernels are never entered there. */
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

/* XCR0 bits the OS must enable: SSE and AVX state (1, 2); opmask, ZMM0-15 upper halves and
 * ZMM16-31 (5, 6, 7) for AVX-512. */
#define ZORDER_XCR0_AVX 0x06u
#define ZORDER_XCR0_AVX512 0xE6u

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

static inline int zorder_cpu_has_bmi2(void)
{
    uint32_t r[4];
    if (!zorder_cpuid(0, 0, r) || r[0] < 7)
        return 0;
    zorder_cpuid(7, 0, r);
    return (r[1] >> 8) & 1;
}

/* AVX-512 F, BW, VBMI and GFNI, with the OS saving the ZMM state; and AVX2, which every
 * such CPU has but a hand-made VM CPU model may leave out: the kernels' target attribute
 * (avx512f) lets the compiler use AVX2 instructions, and it does (vinserti128). */
static inline int zorder_cpu_has_avx512_vbmi_gfni(void)
{
    uint32_t r[4];
    if (!zorder_cpuid(0, 0, r) || r[0] < 7)
        return 0;
    zorder_cpuid(7, 0, r);
    if (!((r[1] >> 5) & 1))                          /* AVX2 */
        return 0;
    if (!((r[1] >> 16) & 1) || !((r[1] >> 30) & 1))  /* AVX512F, AVX512BW */
        return 0;
    if (!((r[2] >> 1) & 1) || !((r[2] >> 8) & 1))    /* AVX512_VBMI, GFNI */
        return 0;
    return (zorder_os_xcr0() & ZORDER_XCR0_AVX512) == ZORDER_XCR0_AVX512;
}

/* AVX2 with the OS saving the YMM state. */
static inline int zorder_cpu_has_avx2(void)
{
    uint32_t r[4];
    if (!zorder_cpuid(0, 0, r) || r[0] < 7)
        return 0;
    zorder_cpuid(7, 0, r);
    if (!((r[1] >> 5) & 1))
        return 0;
    return (zorder_os_xcr0() & ZORDER_XCR0_AVX) == ZORDER_XCR0_AVX;
}

#endif
