/* AVX-512 backend: bit masks, prefetches, and the loads of a block of column rows
 * (zsource). */
#ifndef ZORDER_AVX512_LOAD_H
#define ZORDER_AVX512_LOAD_H

#include "common.h"

/* Bits [lo, lo+len) of a 64-bit mask; len may run past 64. */
static inline uint64_t span_mask(int lo, ptrdiff_t len)
{
    uint64_t hi_part = (lo + len >= 64) ? ~(uint64_t)0 : (((uint64_t)1 << (lo + len)) - 1);
    return hi_part & ~(((uint64_t)1 << lo) - 1);
}

/* dst - back as an address for a masked store whose first enabled byte is `back`
 * bytes into the register; the bytes before it are never accessed. */
static inline uint8_t *before(uint8_t *dst, ptrdiff_t back)
{
    return (uint8_t *)((uintptr_t)dst - (uintptr_t)back);
}

/* Width 8 with column c at byte 8c of a row and one row stride for all (a (N, n, 8)
 * block, any row stride): what the packed 4- and 8-column paths read a row at a time. */
static int is_packed(const zorder_column *cols, int n)
{
    int c;
    if (cols[0].width != 8)
        return 0;
    for (c = 0; c < n; c++)
        if (cols[c].row_stride != cols[0].row_stride || cols[c].data != cols[0].data + 8 * c)
            return 0;
    return 1;
}

/* Software prefetch a few blocks ahead of the loads: a small but steady gain over the
 * hardware prefetcher alone (2 x 8 B rows: 1.68 -> 1.45 ns/row in one run; 4 and 8
 * columns within noise). Prefetches never fault, so running past the end is harmless. */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 256
#endif

static inline void prefetch(const uint8_t *p)
{
    _mm_prefetch((const char *)p, _MM_HINT_T0);
}

/* Where the 8-byte pieces of one column are, for blocks of 8 rows. Block b starts at
 * data + (b / m) * step, and its row i at offset[b % m][i] from there: plain rows have
 * m = 1 and offset[0][i] = i * row_stride. Columns of width 8m read in full into rows
 * back to back are seen as m times as many rows of width 8 (see zorder_simd_rows), and
 * then a block's pattern repeats every m blocks. */
typedef struct {
    const uint8_t *data;
    ptrdiff_t step;
    int m;
    int contiguous;   /* row i of every block at 8i: one plain load */
    long long offset[8][8];
} zsource;

/* The 8 bytes at a in the low qword, the 8 at b in the high one (plain loads). */
ZSIMD_INLINE __m128i load_two_rows(const uint8_t *a, const uint8_t *b)
{
    long long high;
    memcpy(&high, b, 8);
    return _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(const void *)a), high, 1);
}

/* 8 rows (R valid) of one column's 8 bytes at byte `off`, row i in qword i. */
ZSIMD_INLINE __m512i load_column(const zsource *col, ptrdiff_t r0, int R, ptrdiff_t off)
{
    const ptrdiff_t b = r0 >> 3, q = col->m == 1 ? b : b / col->m, t = b - q * col->m;
    const uint8_t *base = col->data + q * col->step + off;
    __mmask8 k = (__mmask8)((1u << R) - 1);
    if (col->contiguous) {
        base = col->data + 64 * b + off;  /* = q * step + offset[t][0] */
        return R == 8 ? (prefetch(base + PREFETCH_AHEAD), _mm512_loadu_si512((const void *)base))
                      : _mm512_maskz_loadu_epi64(k, (const void *)base);
    }
    if (R == 8) {
        /* eight plain loads, not a gather: on Zen 4 a gather of rows 16 bytes apart ran at
         * half of avx2's time or worse (benchmarks/NOTES.md, "simd on strided columns") */
        const long long *o = col->offset[t];
        const __m128i r01 = load_two_rows(base + o[0], base + o[1]);
        const __m128i r23 = load_two_rows(base + o[2], base + o[3]);
        const __m128i r45 = load_two_rows(base + o[4], base + o[5]);
        const __m128i r67 = load_two_rows(base + o[6], base + o[7]);
        return _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(r01), r23, 1)),
            _mm256_inserti128_si256(_mm256_castsi128_si256(r45), r67, 1), 1);
    }
    return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), k,
                                       _mm512_loadu_si512((const void *)col->offset[t]),
                                       (const void *)base, 1);
}

#endif  /* ZORDER_AVX512_LOAD_H */
