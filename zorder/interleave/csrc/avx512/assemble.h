/* AVX-512 backend: zorder_simd_assemble, narrow ragged rows put together by masked loads
 * and vpermb. */
#ifndef ZORDER_AVX512_ASSEMBLE_H
#define ZORDER_AVX512_ASSEMBLE_H

#include "load.h"

/* Blocks of R = 64 / size output rows: each piece's bytes of a block lie within 64 bytes
 * (else 0: the caller's moves), so one masked load takes them and one merge-masked vpermb
 * puts them in place; the block's R * size bytes are one masked store, no byte outside
 * them written. The moves it replaces, one 8-byte load and store per piece and row, were
 * half of 1+2+3+4 -> 10 (store bound). */
ZSIMD ptrdiff_t zorder_simd_assemble(const zorder_seg_piece *pieces, int npieces,
                                     ptrdiff_t size, ptrdiff_t rows, uint8_t *out)
{
    __m512i idx[ZORDER_MAX_GROUP];
    __mmask64 put[ZORDER_MAX_GROUP], load[ZORDER_MAX_GROUP], store;
    const ptrdiff_t R = size > 0 ? 64 / size : 0;
    ptrdiff_t r;
    int p, o;
    if (R < 1 || npieces < 1 || npieces > ZORDER_MAX_GROUP || rows < R)
        return 0;
    for (p = 0; p < npieces; p++) {
        const ptrdiff_t span = (R - 1) * pieces[p].stride + pieces[p].n;
        uint8_t ix[64];
        uint64_t m = 0;
        if (pieces[p].stride < 0 || pieces[p].n < 1 || span > 64)
            return 0;
        for (o = 0; o < 64; o++) {
            const ptrdiff_t i = o / size, b = o % size - pieces[p].at;
            ix[o] = 0;
            if (i < R && b >= 0 && b < pieces[p].n) {
                ix[o] = (uint8_t)(i * pieces[p].stride + b);
                m |= (uint64_t)1 << o;
            }
        }
        idx[p] = _mm512_loadu_si512((const void *)ix);
        put[p] = (__mmask64)m;
        load[p] = (__mmask64)span_mask(0, span);
    }
    store = (__mmask64)span_mask(0, R * size);
    for (r = 0; r + R <= rows; r += R) {
        __m512i v = _mm512_setzero_si512();
        for (p = 0; p < npieces; p++)
            v = _mm512_mask_permutexvar_epi8(
                v, put[p], idx[p],
                _mm512_maskz_loadu_epi8(load[p], (const void *)(pieces[p].src + r * pieces[p].stride)));
        _mm512_mask_storeu_epi8((void *)(out + r * size), store, v);
    }
    return r;
}

#endif  /* ZORDER_AVX512_ASSEMBLE_H */
