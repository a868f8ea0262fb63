/* AVX2 backend: bit permutations of 64-bit lanes as delta swaps (the 8x8 and 4-column bit
 * transposes), and the squeeze of a zero column's bits (k = 7 run as 8). */
#ifndef ZORDER_AVX2_TRANSPOSE_H
#define ZORDER_AVX2_TRANSPOSE_H

#include "tables.h"

/* The lanes' bits p that have index bit i set (p >> i & 1). */
#define PBIT(i) ((i) == 0 ? 0xAAAAAAAAAAAAAAAAULL : (i) == 1 ? 0xCCCCCCCCCCCCCCCCULL : \
                 (i) == 2 ? 0xF0F0F0F0F0F0F0F0ULL : (i) == 3 ? 0xFF00FF00FF00FF00ULL : \
                 (i) == 4 ? 0xFFFF0000FFFF0000ULL : 0xFFFFFFFF00000000ULL)

/* A delta swap of index bits a > b moves the bits p with bit a clear and bit b set
 * (plain: exchange) or both clear (anti: exchange and complement both) to their partner
 * p + (2^a - 2^b), resp. p + (2^a + 2^b), and back. The masks are constants. */
ZAVX2_INLINE __m256i zswap(__m256i x, const int shift, const uint64_t mask)
{
    const __m256i m = _mm256_set1_epi64x((long long)mask);
    __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi64(x, shift), x), m);
    return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, shift)));
}

#define ZSW(x, anti, a, b) \
    zswap(x, (anti) ? (1 << (a)) + (1 << (b)) : (1 << (a)) - (1 << (b)), \
          ~PBIT(a) & ((anti) ? ~PBIT(b) : PBIT(b)))

/* Input lanes as the gather leaves them: byte index = (group g, column c), bit 7 - L
 * holds level L. Exact targets: the output bytes in memory order. Padded targets (the
 * columns given in reverse order): each group's stream from the top bit down. */
ZAVX2_INLINE __m256i t8_exact(__m256i x)
{
    x = ZSW(x, 1, 3, 0);
    x = ZSW(x, 1, 4, 1);
    return ZSW(x, 1, 5, 2);
}

ZAVX2_INLINE __m256i t8_padded(__m256i x)
{
    x = ZSW(x, 0, 3, 0);
    x = ZSW(x, 0, 4, 1);
    return ZSW(x, 0, 5, 2);
}

ZAVX2_INLINE __m256i t4_exact(__m256i x)
{
    x = ZSW(x, 0, 1, 0);
    x = ZSW(x, 0, 2, 1);
    x = ZSW(x, 1, 3, 0);
    return ZSW(x, 1, 4, 1);
}

/* The K - k zero bits of each level squeezed out; then vpshufb to the front of each
 * 128-bit lane. */
/* The squeeze masks and vpshufb indices of one k in registers, loaded once per call
 * (loaded inside the loop they would be read again after every store to the output). */
typedef struct {
    __m256i up[3], lo[3], pack;
} zsqueeze;

ZAVX2_INLINE void squeeze_init(zsqueeze *q, const int k)
{
    int s;
    for (s = 0; s < 3; s++) {
        q->up[s] = _mm256_set1_epi64x((long long)CMASK[k][s][0]);
        q->lo[s] = _mm256_set1_epi64x((long long)CMASK[k][s][1]);
    }
    q->pack = _mm256_loadu_si256((const __m256i *)(const void *)PACK[k]);
}

ZAVX2_INLINE __m256i squeeze_q(__m256i x, const int k, const zsqueeze *q)
{
    const int K = group_k(k);
    int s;
    for (s = 0; s < 3; s++)
        x = _mm256_or_si256(_mm256_and_si256(x, q->up[s]),
                            _mm256_slli_epi64(_mm256_and_si256(x, q->lo[s]), (K - k) << s));
    return _mm256_shuffle_epi8(x, q->pack);
}

#define squeeze(x, k) squeeze_q(x, k, sq)

#endif  /* ZORDER_AVX2_TRANSPOSE_H */
