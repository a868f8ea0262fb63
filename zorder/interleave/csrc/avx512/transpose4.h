/* AVX-512 backend: n = 4 columns, the paired transpose. */
#ifndef ZORDER_AVX512_TRANSPOSE4_H
#define ZORDER_AVX512_TRANSPOSE4_H

#include "tables.h"
#include "stream.h"
#include "transpose8.h"

ZSIMD_INLINE __m512i pair4(__m512i a, __m512i xq, __m512i xs, __m512i sel)
{
    __m512i q = _mm512_gf2p8affine_epi64_epi8(xq, a, 0);
    __m512i s = _mm512_gf2p8affine_epi64_epi8(xs, _mm512_rol_epi64(a, 32), 0);
    return _mm512_ternarylogic_epi64(sel, q, s, 0xCA);  /* sel ? q : s */
}

/* Rows r and r+1 (if two) of a 2-row register: 32 bytes each, `limit` of them kept. */
ZSIMD_INLINE void store_pair(uint8_t *dst0, uint8_t *dst1, int two, __m512i v, ptrdiff_t limit)
{
    _mm512_mask_storeu_epi8((void *)dst0, (__mmask64)span_mask(0, limit < 32 ? limit : 32), v);
    if (two)
        _mm512_mask_storeu_epi8((void *)before(dst1, 32),
                                (__mmask64)span_mask(32, limit < 32 ? limit : 32), v);
}

ZSIMD static void rows_packed_4(const zorder_column *cols, ptrdiff_t size, ptrdiff_t nrows,
                                uint8_t *out, ptrdiff_t os)
{
    const __m512i idx = _mm512_loadu_si512((const void *)IDX4);
    const __m512i xq = _mm512_set1_epi64((long long)X4Q);
    const __m512i xs = _mm512_set1_epi64((long long)X4S);
    const __m512i sel = _mm512_set1_epi64((long long)M4SEL_CONST);
    const uint8_t *src = cols[0].data;
    const ptrdiff_t s = cols[0].row_stride;
    const ptrdiff_t even = nrows & ~(ptrdiff_t)1;
    ptrdiff_t r;
    if (s == 32 && os == 32 && size == 32 && nrows * 32 >= zorder_simd_stream_min) {
        zstream st;
        stream_init(&st, out);
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + r * 32 + PREFETCH_AHEAD);
            v = _mm512_loadu_si512((const void *)(src + r * 32));
            stream_put(&st, pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel));
        }
        stream_finish(&st);
    } else if (s == 32 && os == 32 && size == 32) {
        /* one contiguous block in, one out */
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + r * 32 + PREFETCH_AHEAD);
            v = _mm512_loadu_si512((const void *)(src + r * 32));
            v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
            _mm512_storeu_si512((void *)(out + r * 32), v);
        }
    } else {
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + (r + 8) * s);
            prefetch(src + (r + 9) * s);
            v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(src + r * s)));
            v = _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i *)(src + (r + 1) * s)), 1);
            v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
            store_pair(out + r * os, out + (r + 1) * os, 1, v, size);
        }
    }
    if (even < nrows) {
        __m512i v = _mm512_maskz_loadu_epi8((__mmask64)0xFFFFFFFFu, (const void *)(src + even * s));
        v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
        store_pair(out + even * os, NULL, 0, v, size);
    }
}

ZSIMD static void rows_cols_4(const zsource *cols, ptrdiff_t size, ptrdiff_t nrows,
                              uint8_t *out, ptrdiff_t os)
{
    const __m512i i1lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i i1hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m512i i2[2] = {_mm512_loadu_si512((const void *)IDX4C[0]),
                           _mm512_loadu_si512((const void *)IDX4C[1])};
    const __m512i xq = _mm512_set1_epi64((long long)X4Q);
    const __m512i xs = _mm512_set1_epi64((long long)X4S);
    const __m512i sel = _mm512_set1_epi64((long long)M4SEL_CONST);
    const ptrdiff_t nslabs = (size + 31) / 32;
    int streaming = size == 32 && os == 32 && nrows * 32 >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int c;
    if (streaming)
        stream_init(&st, out);
    r0 = 0;
    if (size == 32 && os == 32 && cols[0].contiguous && cols[1].contiguous &&
        cols[2].contiguous && cols[3].contiguous) {
        /* whole blocks of full rows from contiguous columns: 4 rows of two columns per
         * register straight from two 32-byte loads, no first shuffle stage */
        const __m512i il[2] = {_mm512_loadu_si512((const void *)IDX4L[0]),
                               _mm512_loadu_si512((const void *)IDX4L[1])};
        for (; r0 + 8 <= nrows; r0 += 8) {
            int h, g;
            for (c = 0; c < 4; c++)
                prefetch(cols[c].data + 8 * r0 + PREFETCH_AHEAD);
            for (h = 0; h < 2; h++) {
                const ptrdiff_t o = 8 * r0 + 32 * h;
                __m512i x = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(cols[0].data + o))),
                    _mm256_loadu_si256((const __m256i *)(cols[1].data + o)), 1);
                __m512i y = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(cols[2].data + o))),
                    _mm256_loadu_si256((const __m256i *)(cols[3].data + o)), 1);
                for (g = 0; g < 2; g++) {
                    __m512i v = pair4(_mm512_permutex2var_epi8(x, il[g], y), xq, xs, sel);
                    if (streaming)
                        stream_put(&st, v);
                    else
                        _mm512_storeu_si512((void *)(out + (r0 + 4 * h + 2 * g) * 32), v);
                }
            }
        }
    }
    for (; r0 < nrows; r0 += 8) {
        int R = nrows - r0 < 8 ? (int)(nrows - r0) : 8;
        if (streaming && R < 8) {
            stream_finish(&st);
            streaming = 0;
        }
        for (k = 0; k < nslabs; k++) {
            __m512i C[4], T[2][2];
            ptrdiff_t limit = size - 32 * k;
            int p, h, g;
            for (c = 0; c < 4; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            /* T[p][h] qword 2i+e = column 2p+e, row 4h+i */
            for (p = 0; p < 2; p++) {
                T[p][0] = _mm512_permutex2var_epi64(C[2 * p], i1lo, C[2 * p + 1]);
                T[p][1] = _mm512_permutex2var_epi64(C[2 * p], i1hi, C[2 * p + 1]);
            }
            for (h = 0; h < 2; h++)
                for (g = 0; g < 2; g++) {
                    int r = 4 * h + 2 * g;
                    __m512i v;
                    if (r >= R)
                        continue;
                    v = _mm512_permutex2var_epi8(T[0][h], i2[g], T[1][h]);
                    v = pair4(v, xq, xs, sel);
                    if (streaming)
                        stream_put(&st, v);
                    else
                        store_pair(out + (r0 + r) * os + 32 * k, out + (r0 + r + 1) * os + 32 * k,
                                   r + 1 < R, v, limit);
                }
        }
    }
    if (streaming)
        stream_finish(&st);
}

#endif  /* ZORDER_AVX512_TRANSPOSE4_H */
