/* AVX-512 backend: other n (2, 3, 5, 6, 7), the spread: n * n affines, then vpermt2b into
 * row order. */
#ifndef ZORDER_AVX512_SPREAD_H
#define ZORDER_AVX512_SPREAD_H

#include "tables.h"
#include "stream.h"

ZSIMD_INLINE void spread_block(const int n, const __m512i *C, const __m512i *mat, __m512i *O)
{
    __m512i Z[8];
    int b, c, o, p;
    for (b = 0; b < n; b++) {
        __m512i z = _mm512_gf2p8affine_epi64_epi8(C[0], mat[8 * b], 0);
        /* three-way XORs: half the combining instructions */
        for (c = 1; c + 1 < n; c += 2)
            z = _mm512_ternarylogic_epi64(z, _mm512_gf2p8affine_epi64_epi8(C[c], mat[8 * b + c], 0),
                                          _mm512_gf2p8affine_epi64_epi8(C[c + 1], mat[8 * b + c + 1], 0),
                                          0x96);
        if (c < n)
            z = _mm512_xor_si512(z, _mm512_gf2p8affine_epi64_epi8(C[c], mat[8 * b + c], 0));
        Z[b] = z;
    }
    for (o = 0; o < n; o++) {
        __m512i acc = _mm512_setzero_si512();
        for (p = 0; 2 * p < n; p++) {
            const __m512i idx = _mm512_loadu_si512((const void *)XOUT_IDX[n][o][p]);
            __m512i t = 2 * p + 1 < n ? _mm512_permutex2var_epi8(Z[2 * p], idx, Z[2 * p + 1])
                                      : _mm512_permutexvar_epi8(idx, Z[2 * p]);
            acc = p == 0 ? t : _mm512_mask_blend_epi8((__mmask64)XOUT_MASK[n][o][p], acc, t);
        }
        O[o] = acc;
    }
}

/* 8 rows (R valid) of 8n interleaved bytes each, `limit` per row kept. */
ZSIMD_INLINE void store_spread(const int n, const __m512i *O, int R, uint8_t *dst,
                               ptrdiff_t os, ptrdiff_t limit)
{
    const int w = 8 * n;
    int o, r;
    if (os == w && limit >= w) {
        /* rows are contiguous: whole registers, the last ones masked for a tail */
        ptrdiff_t total = (ptrdiff_t)R * w;
        for (o = 0; o < n && 64 * o < total; o++) {
            if (total >= 64 * (o + 1))
                _mm512_storeu_si512((void *)(dst + 64 * o), O[o]);
            else
                _mm512_mask_storeu_epi8((void *)(dst + 64 * o),
                                        (__mmask64)span_mask(0, total - 64 * o), O[o]);
        }
        return;
    }
    if (limit > w)
        limit = w;
    for (r = 0; r < R; r++) {
        int off = w * r, first = off & 63;
        ptrdiff_t len1 = limit < 64 - first ? limit : 64 - first;
        uint8_t *d = dst + r * os;
        o = off >> 6;
        _mm512_mask_storeu_epi8((void *)before(d, first), (__mmask64)span_mask(first, len1), O[o]);
        if (limit > len1)
            _mm512_mask_storeu_epi8((void *)(d + len1), (__mmask64)span_mask(0, limit - len1),
                                    O[o + 1]);
    }
}

ZSIMD_INLINE void rows_spread(const int n, const zsource *cols, ptrdiff_t size,
                              ptrdiff_t nrows, uint8_t *out, ptrdiff_t os, int packed)
{
    __m512i mat[64];
    const ptrdiff_t w = 8 * n;
    const ptrdiff_t nslabs = (size + w - 1) / w;
    int streaming = size == w && os == w && nrows * w >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int b, c, q;
    for (b = 0; b < n; b++)
        for (c = 0; c < n; c++)
            mat[8 * b + c] = _mm512_set1_epi64((long long)XMAT[n][b][c]);
    if (streaming)
        stream_init(&st, out);
    r0 = 0;
    if (size == w && os == w) {
        /* full rows back to back: whole blocks without the general loop's checks */
        int all_contiguous = 1;
        /* 2 columns packed in rows back to back: two plain loads and a qword permute
         * per column (column c of row i is qword 2i + c of the block) beat gathers a
         * little (1.42-1.56 vs 1.54-1.62 ns/row); for 3 columns they lost (3.0 vs 2.5). */
        const int picks = packed && n == 2 && cols[0].offset[0][1] == w;
        const __m512i pick0 = _mm512_set_epi64(7 * n, 6 * n, 5 * n, 4 * n, 3 * n, 2 * n, n, 0);
        for (c = 0; c < n; c++)
            all_contiguous &= cols[c].contiguous;
        for (; r0 + 8 <= nrows; r0 += 8) {
            __m512i C[8], O[8];
            if (picks) {
                const uint8_t *p = cols[0].data + w * r0;
                __m512i V[2];
                for (c = 0; c < n; c++) {
                    prefetch(p + 64 * c + PREFETCH_AHEAD);
                    V[c] = _mm512_loadu_si512((const void *)(p + 64 * c));
                }
                for (c = 0; c < n; c++) {
                    const __m512i idx = _mm512_add_epi64(pick0, _mm512_set1_epi64(c));
                    C[c] = _mm512_permutex2var_epi64(V[0], idx, V[1]);
                }
            } else if (all_contiguous) {
                for (c = 0; c < n; c++) {
                    const uint8_t *p = cols[c].data + 8 * r0;
                    prefetch(p + PREFETCH_AHEAD);
                    C[c] = _mm512_loadu_si512((const void *)p);
                }
            } else {
                for (c = 0; c < n; c++)
                    C[c] = load_column(&cols[c], r0, 8, 0);
            }
            spread_block(n, C, mat, O);
            for (q = 0; q < n; q++) {
                if (streaming)
                    stream_put(&st, O[q]);
                else
                    _mm512_storeu_si512((void *)(out + r0 * w + 64 * q), O[q]);
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
            __m512i C[8], O[8];
            /* Packed rows are gathered too: measured, gathers beat a plain load
             * and a qword permute per column at every n (3 x 8 B: 2.5 vs 3.6 ns/row). */
            for (c = 0; c < n; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            spread_block(n, C, mat, O);
            if (streaming) {
                for (q = 0; q < n; q++)
                    stream_put(&st, O[q]);
            } else {
                store_spread(n, O, R, out + r0 * os + w * k, os, size - w * k);
            }
        }
    }
    if (streaming)
        stream_finish(&st);
}

#define SPREAD_N(N) \
    ZSIMD static void rows_spread_##N(const zsource *cols, ptrdiff_t size, \
                                      ptrdiff_t nrows, uint8_t *out, ptrdiff_t os, \
                                      int packed) \
    { rows_spread(N, cols, size, nrows, out, os, packed); }
SPREAD_N(2)
SPREAD_N(3)
SPREAD_N(5)
SPREAD_N(6)
SPREAD_N(7)

#endif  /* ZORDER_AVX512_SPREAD_H */
