/* Which architecture this translation unit is compiled for. Kernels include this (not
 * cpuid.h) to decide what to build; only the CPU floor reads CPUID. */
#ifndef ZORDER_ARCH_H
#define ZORDER_ARCH_H

#if defined(__x86_64__) || defined(_M_X64)
#define ZORDER_X86_64 1
#else
#define ZORDER_X86_64 0
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
#define ZORDER_AARCH64 1
#else
#define ZORDER_AARCH64 0
#endif

#endif
