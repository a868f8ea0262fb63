/* AVX-512 backend: n = 8 columns, the transpose (one vpermb, one vgf2p8affineqb). */
#ifndef ZORDER_AVX512_TRANSPOSE8_H
#define ZORDER_AVX512_TRANSPOSE8_H

#include "tables.h"
#include "stream.h"

ZSIMD_INLINE void store_limited(uint8_t *dst, __m512i v, ptrdiff_t limit)
{
    if (limit >= 64)
        _mm512_storeu_si512((void *)dst, v);
    else
        _mm512_mask_storeu_epi8((void *)dst, (__mmask64)span_mask(0, limit), v);
}

ZSIMD static void rows_packed_8(const zorder_column *cols, ptrdiff_t size, ptrdiff_t nrows,
                                uint8_t *out, ptrdiff_t os)
{
    const __m512i idx = _mm512_loadu_si512((const void *)IDX8);
    const __m512i x = _mm512_set1_epi64((long long)X8_CONST);
    const uint8_t *src = cols[0].data;
    const ptrdiff_t s = cols[0].row_stride;
    ptrdiff_t r;
    if (size == 64 && os == 64 && nrows * 64 >= zorder_simd_stream_min) {
        zstream st;
        stream_init(&st, out);
        for (r = 0; r < nrows; r++) {
            __m512i v;
            prefetch(src + (r + 4) * s);
            v = _mm512_loadu_si512((const void *)(src + r * s));
            stream_put(&st, _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0));
        }
        stream_finish(&st);
        return;
    }
    if (size == 64) {
        for (r = 0; r < nrows; r++) {
            __m512i v;
            prefetch(src + (r + 4) * s);
            v = _mm512_loadu_si512((const void *)(src + r * s));
            v = _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0);
            _mm512_storeu_si512((void *)(out + r * os), v);
        }
        return;
    }
    for (r = 0; r < nrows; r++) {
        __m512i v;
        prefetch(src + (r + 4) * s);
        v = _mm512_loadu_si512((const void *)(src + r * s));
        v = _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0);
        store_limited(out + r * os, v, size);
    }
}

ZSIMD static void rows_cols_8(const zsource *cols, ptrdiff_t size, ptrdiff_t nrows,
                              uint8_t *out, ptrdiff_t os)
{
    const __m512i i1lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i i1hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m512i i2a = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i i2b = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    const __m512i i3[2] = {_mm512_loadu_si512((const void *)IDX8C[0]),
                           _mm512_loadu_si512((const void *)IDX8C[1])};
    const __m512i x = _mm512_set1_epi64((long long)X8_CONST);
    const ptrdiff_t nslabs = (size + 63) / 64;
    int streaming = size == 64 && os == 64 && nrows * 64 >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int c;
    if (streaming)
        stream_init(&st, out);
    for (r0 = 0; r0 < nrows; r0 += 8) {
        int R = nrows - r0 < 8 ? (int)(nrows - r0) : 8;
        if (streaming && R < 8) {
            stream_finish(&st);
            streaming = 0;
        }
        for (k = 0; k < nslabs; k++) {
            __m512i C[8], T[4][2], U[2][2][2];
            ptrdiff_t limit = size - 64 * k;
            int p, h, g, rr;
            for (c = 0; c < 8; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            /* stage 1: T[p][h] qword 2i+e = column 2p+e, row 4h+i */
            for (p = 0; p < 4; p++) {
                T[p][0] = _mm512_permutex2var_epi64(C[2 * p], i1lo, C[2 * p + 1]);
                T[p][1] = _mm512_permutex2var_epi64(C[2 * p], i1hi, C[2 * p + 1]);
            }
            /* stage 2: U[q][h][g] qword 4rr+cc = column 4q+cc, row 4h+2g+rr */
            for (p = 0; p < 2; p++)
                for (h = 0; h < 2; h++) {
                    U[p][h][0] = _mm512_permutex2var_epi64(T[2 * p][h], i2a, T[2 * p + 1][h]);
                    U[p][h][1] = _mm512_permutex2var_epi64(T[2 * p][h], i2b, T[2 * p + 1][h]);
                }
            /* stage 3 (fused with the lane gather) and the transpose, per row */
            for (h = 0; h < 2; h++)
                for (g = 0; g < 2; g++)
                    for (rr = 0; rr < 2; rr++) {
                        int r = 4 * h + 2 * g + rr;
                        __m512i a;
                        if (r >= R)
                            continue;
                        a = _mm512_permutex2var_epi8(U[0][h][g], i3[rr], U[1][h][g]);
                        a = _mm512_gf2p8affine_epi64_epi8(x, a, 0);
                        if (streaming)
                            stream_put(&st, a);
                        else
                            store_limited(out + (r0 + r) * os + 64 * k, a, limit);
                    }
        }
    }
    if (streaming)
        stream_finish(&st);
}

#endif  /* ZORDER_AVX512_TRANSPOSE8_H */
