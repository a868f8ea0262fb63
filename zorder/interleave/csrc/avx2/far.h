/* AVX2 backend: rows more than 8 bytes apart: their first 8 bytes loaded in pairs, and
 * prefetched ahead of the blocks. */
#ifndef ZORDER_AVX2_FAR_H
#define ZORDER_AVX2_FAR_H

#include "common.h"

/* The first 8 bytes of the rows at p and p + st, side by side (two rows more than 8 bytes
 * apart as if they were 8 apart). */
ZAVX2_INLINE __m128i far_pair(const uint8_t *p, const ptrdiff_t st)
{
    return _mm_castpd_si128(_mm_loadh_pd(
        _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(const void *)p)),
        (const double *)(const void *)(p + st)));
}

/* far_pair of the rows at a (lane 0) and at b (lane 1). */
ZAVX2_INLINE __m256i far_lanes(const uint8_t *a, const uint8_t *b, const ptrdiff_t st)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(far_pair(a, st)), far_pair(b, st), 1);
}

/* Blocks that read a few bytes a row from many columns, or 8 bytes of rows more than 8
 * apart, leave the hardware prefetchers behind: the lines of the first 8 bytes of `rows`
 * rows at p are asked for AHEAD_BLOCKS blocks before they are read (2-8 measured the
 * same).
 * Intel Xeon (family 6 model 167), 1M rows, best of 7, avx2 ns a row without -> with:
 * 8x16 -> 8 8.5 -> 4.7, 6x16 -> 6 6.3 -> 3.4, 10x16 -> 10 13.0 -> 6.9, 12x8 -> 16 6.0 ->
 * 4.9, 20x8 -> 8 9.9 -> 8.0 (benchmarks/NOTES.md, "Rows far apart, prefetches, ..."). */
#define AHEAD_BLOCKS 4
ZAVX2_INLINE void rows_prefetch(const uint8_t *p, const ptrdiff_t rows, const ptrdiff_t st)
{
    const ptrdiff_t step = st < 64 ? 64 : st;
    ptrdiff_t q;
    for (q = 0; q < rows * st; q += step)
        _mm_prefetch((const char *)(p + q), _MM_HINT_T0);
}

/* n (1, 2 or 4) bytes at p as the low bytes of an integer. */

#endif  /* ZORDER_AVX2_FAR_H */
