/* AVX-512 backend: zorder_simd_slice, the column slices of narrow ragged rows. */
#ifndef ZORDER_AVX512_SLICE_H
#define ZORDER_AVX512_SLICE_H

#include "load.h"

/* zorder_slice_fn: blocks of R = (64 - w) / st + 1 rows, whose bytes lie within 64, one
 * masked load, one vpermb and one masked store of R * w bytes each (the compiler's loops
 * for these byte gathers were a fifth of 1+2+3+4 -> 10 after the assembly, assemble.h).
 * Takes rows up to 64 bytes apart (w <= st <= 64), so it also cuts whole rows in scratch to
 * their first w bytes (zorder_uniform_rows_cut). */
ZSIMD ptrdiff_t zorder_simd_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows,
                                  ptrdiff_t w, ptrdiff_t st)
{
    uint8_t ix[64];
    ptrdiff_t R, r;
    int o;
    __m512i idx;
    __mmask64 load, store;
    if (w < 1 || st < w || st > 64)
        return 0;
    R = (64 - w) / st + 1;
    if (R * w > 64)
        R = 64 / w;
    if (rows < R)
        return 0;
    for (o = 0; o < 64; o++)
        ix[o] = (uint8_t)(o < R * w ? (o / w) * st + o % w : 0);
    idx = _mm512_loadu_si512((const void *)ix);
    load = (__mmask64)span_mask(0, (R - 1) * st + w);
    store = (__mmask64)span_mask(0, R * w);
    for (r = 0; r + R <= rows; r += R)
        _mm512_mask_storeu_epi8((void *)(dst + r * w), store,
                                _mm512_permutexvar_epi8(idx, _mm512_maskz_loadu_epi8(
                                                                 load, (const void *)(src + r * st))));
    return r;
}

#endif  /* ZORDER_AVX512_SLICE_H */
