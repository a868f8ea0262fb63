/* AVX2 backend: what every header of the unit needs: the build test (ZORDER_AVX2_BUILD)
 * and the target attributes every AVX2 function carries. */
#ifndef ZORDER_AVX2_COMMON_H
#define ZORDER_AVX2_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "avx2_kernel.h"
#include "segments.h"
#include "arch.h"
#include "compiler.h"

#if !defined(ZORDER_NO_AVX2) && ZORDER_X86_64 && ZORDER_CC_AVX2
#define ZORDER_AVX2_BUILD 1
#else
#define ZORDER_AVX2_BUILD 0
#endif

#if ZORDER_AVX2_BUILD
#include <immintrin.h>

#define ZAVX2 ZORDER_TARGET_ISA("avx2")
#define ZAVX2_INLINE ZAVX2 ZORDER_ALWAYS_INLINE
#endif

#endif  /* ZORDER_AVX2_COMMON_H */
