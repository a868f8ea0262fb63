/* What differs between the compilers zorder is built with: GCC and clang (Linux, macOS)
 * and MSVC (Windows). Every kernel says these things through the macros below, so this
 * is the one file to read for a new compiler.
 *
 * Instruction sets. GCC and clang compile AVX2, BMI2 or AVX-512 code only inside
 * functions marked target(...), so that nothing else in a module (its import included)
 * can use those instructions. MSVC has no such attribute; its own rule gives the same
 * isolation: it compiles any intrinsic in any function, and without /arch it emits
 * baseline x86-64 code everywhere else. So ZORDER_TARGET_ISA is empty there, and no file is
 * compiled with /arch. The intrinsics a backend needs gate its build (ZORDER_CC_AVX2,
 * ZORDER_CC_AVX512_VBMI_GFNI): a compiler without them builds the backend as
 * unavailable. */
#ifndef ZORDER_COMPILER_H
#define ZORDER_COMPILER_H

#include <stdint.h>
#include <stdlib.h>

#if defined(_MSC_VER) && !defined(__clang__)
#define ZORDER_MSVC 1
#else
#define ZORDER_MSVC 0
#endif

#if ZORDER_MSVC
#define ZORDER_TARGET_ISA(isa)
#define ZORDER_ALWAYS_INLINE static __forceinline
#define ZORDER_NOINLINE __declspec(noinline)
#define ZORDER_UNUSED
#define ZORDER_RESTRICT __restrict
#define ZORDER_BSWAP64(x) _byteswap_uint64(x)
/* every target MSVC builds zorder for (x64, ARM64) is little-endian */
#define ZORDER_LITTLE_ENDIAN 1
#else
#define ZORDER_TARGET_ISA(isa) __attribute__((target(isa)))
#define ZORDER_ALWAYS_INLINE static inline __attribute__((always_inline))
#define ZORDER_NOINLINE __attribute__((noinline))
#define ZORDER_UNUSED __attribute__((unused))
#define ZORDER_RESTRICT restrict
#define ZORDER_BSWAP64(x) __builtin_bswap64(x)
#define ZORDER_LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#endif

#if ZORDER_MSVC
#if defined(_M_X64)
#include <intrin.h>
#define ZORDER_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define ZORDER_PREFETCH(p) ((void)0)
#endif
#else
#define ZORDER_PREFETCH(p) __builtin_prefetch(p)
#endif

/* The intrinsics each x86-64 backend needs: AVX2 (GCC 5, any clang, MSVC 2019), and
 * AVX-512 VBMI with GFNI (GCC 8, clang 7, MSVC 2022). */
#if (defined(__clang__)) || (defined(__GNUC__) && __GNUC__ >= 5) || (ZORDER_MSVC && _MSC_VER >= 1920)
#define ZORDER_CC_AVX2 1
#else
#define ZORDER_CC_AVX2 0
#endif
#if (defined(__clang__) && __clang_major__ >= 7) || \
    (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8) || (ZORDER_MSVC && _MSC_VER >= 1930)
#define ZORDER_CC_AVX512_VBMI_GFNI 1
#else
#define ZORDER_CC_AVX512_VBMI_GFNI 0
#endif

#endif  /* ZORDER_COMPILER_H */
