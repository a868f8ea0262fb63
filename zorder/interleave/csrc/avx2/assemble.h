/* AVX2 backend: zorder_avx2_assemble, narrow ragged rows put together. */
#ifndef ZORDER_AVX2_ASSEMBLE_H
#define ZORDER_AVX2_ASSEMBLE_H

#include "store.h"

/* Rows of at most 16 bytes in blocks of R = 16 / size rows, two blocks a register (one a
 * 128-bit lane): each piece's bytes of a block lie within 16 bytes (else 0: the caller's
 * moves), so one 16-byte load a lane and one vpshufb put them in place, and the pieces'
 * results OR together. A lane's 16 bytes are stored whole, blocks in order: past the
 * block's R * size bytes they run over the next rows, which write them again; only blocks
 * whose stores and loads stay within the call's rows run here. The moves it replaces, a
 * load and a store per piece and row, were a quarter of 1+2+3+4 -> 10. The stores are
 * plain: rows staged and sent out with non-temporal stores (de36ea9, measured a little
 * faster on the AMD EPYC Zen 4 alone in a loop) were slower on the Intel Xeon in every
 * case measured, and 1.8-2.6x slower where the output's lines were in the cache from an
 * earlier write (benchmarks/NOTES.md, "Rows far apart, prefetches, and the narrow
 * assembly's streamed stores"; the AMD was not measured again). */
ZAVX2_INLINE void assemble_pair(const int n, const int one_load, const uint8_t *const *src,
                                const ptrdiff_t *stride, const __m256i *pick, const ptrdiff_t size,
                                const ptrdiff_t R, const ptrdiff_t r, uint8_t *o)
{
    __m256i v = _mm256_setzero_si256();
    int p;
    for (p = 0; p < n; p++) {
        const uint8_t *a = src[p] + r * stride[p];
        const __m256i x = one_load
            ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)a))
            : _mm256_inserti128_si256(
                  _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)a)),
                  _mm_loadu_si128((const __m128i *)(const void *)(a + R * stride[p])), 1);
        v = _mm256_or_si256(v, _mm256_shuffle_epi8(x, pick[p]));
    }
    if (R * size == 16) {
        _mm256_storeu_si256((__m256i *)(void *)o, v);
    } else {
        st16(o, _mm256_castsi256_si128(v));
        st16(o + R * size, _mm256_extracti128_si256(v, 1));
    }
}

ZAVX2_INLINE ptrdiff_t assemble_n(const int n, const int one_load, const zorder_seg_piece *pieces,
                                  const __m256i *pick, const ptrdiff_t size, const ptrdiff_t R,
                                  const ptrdiff_t last_pair, uint8_t *out)
{
    const uint8_t *src[ZORDER_MAX_GROUP];
    ptrdiff_t stride[ZORDER_MAX_GROUP], r;
    int p;
    for (p = 0; p < n; p++) {
        src[p] = pieces[p].src;
        stride[p] = pieces[p].stride;
    }
    for (r = 0; r <= last_pair; r += 2 * R)
        assemble_pair(n, one_load, src, stride, pick, size, R, r, out + r * size);
    return r;
}

/* assemble_n with the piece count a constant where it is common (the pieces' pointers then
 * stay in registers), one_load a constant in each of the callers below */
ZAVX2_INLINE ptrdiff_t assemble_npieces(const int one_load, const int npieces,
                                        const zorder_seg_piece *pieces, const __m256i *pick,
                                        const ptrdiff_t size, const ptrdiff_t R,
                                        const ptrdiff_t last_pair, uint8_t *out)
{
    switch (npieces) {
    case 2: return assemble_n(2, one_load, pieces, pick, size, R, last_pair, out);
    case 3: return assemble_n(3, one_load, pieces, pick, size, R, last_pair, out);
    case 4: return assemble_n(4, one_load, pieces, pick, size, R, last_pair, out);
    default: return assemble_n(npieces, one_load, pieces, pick, size, R, last_pair, out);
    }
}

ZAVX2 ptrdiff_t zorder_avx2_assemble(const zorder_seg_piece *pieces, int npieces,
                                     ptrdiff_t size, ptrdiff_t rows, uint8_t *out)
{
    __m256i pick[ZORDER_MAX_GROUP];
    const ptrdiff_t R = size >= 1 && size <= 16 ? 16 / size : 0;
    /* the first row of the last pair of blocks: r + 2R rows exist, and lane 1's store (16
     * bytes from row r + R) ends within them */
    ptrdiff_t last_pair = rows - 2 * R, o;
    int p, one_load = 1;
    if (R < 1 || npieces < 1 || npieces > ZORDER_MAX_GROUP)
        return 0;
    if (R * size < 16 && rows - R - (16 + size - 1) / size < last_pair)
        last_pair = rows - R - (16 + size - 1) / size;
    for (p = 0; p < npieces; p++) {
        const ptrdiff_t st = pieces[p].stride, n = pieces[p].n, at = pieces[p].at;
        if (st < 1 || n < 1 || at < 0 || (R - 1) * st + n > 16)
            return 0;
        one_load &= (2 * R - 1) * st + n <= 16;
    }
    /* Where every piece's bytes of both blocks lie within 16 bytes, one load broadcast
     * to both lanes serves both (lane 1 picks from R rows on), not two loads and an
     * insert: 1+2+3+4 -> 10, four pieces of strides 2-4. */
    for (p = 0; p < npieces; p++) {
        const ptrdiff_t st = pieces[p].stride, n = pieces[p].n, at = pieces[p].at;
        uint8_t ix[32];
        for (o = 0; o < 16; o++) {
            const ptrdiff_t i = o / size, b = o % size - at;
            const int in_row = i < R && b >= 0 && b < n;
            ix[o] = in_row ? (uint8_t)(i * st + b) : 0x80;
            ix[o + 16] = in_row ? (uint8_t)((one_load ? R * st : 0) + i * st + b) : 0x80;
        }
        pick[p] = ld256(ix);
        /* lane 1's load, 16 bytes from row r + R, ends within the last row's n bytes (the
         * contract's): (r + R) st + 16 <= (rows - 1) st + n */
        if (rows - 1 - R - (16 - n + st - 1) / st < last_pair)
            last_pair = rows - 1 - R - (16 - n + st - 1) / st;
    }
    if (last_pair < 0)
        return 0;
    return one_load
        ? assemble_npieces(1, npieces, pieces, pick, size, R, last_pair, out)
        : assemble_npieces(0, npieces, pieces, pick, size, R, last_pair, out);
}

#endif  /* ZORDER_AVX2_ASSEMBLE_H */
