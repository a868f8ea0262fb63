/* AVX2 backend: blocks of 4 rows by the bit transposes (block4 for k = 4, block8 for k =
 * 7 and 8). */
#ifndef ZORDER_AVX2_BLOCK_H
#define ZORDER_AVX2_BLOCK_H

#include "transpose.h"
#include "store.h"

/* k = 4: a 64-bit lane is 2 groups of 4 column bytes. */
ZAVX2_INLINE void block4(const __m256i *X, uint8_t *dst, ptrdiff_t os, const int mode,
                         const ptrdiff_t lim)
{
    __m256i A[2][2], B[2][2];
    int q, p, h;
    for (q = 0; q < 2; q++) {
        A[q][0] = _mm256_unpacklo_epi8(X[2 * q], X[2 * q + 1]);
        A[q][1] = _mm256_unpackhi_epi8(X[2 * q], X[2 * q + 1]);
    }
    /* B[p][h]: lane 0 = row p, byte indices 4h..4h+3; lane 1 = row p + 2 */
    for (p = 0; p < 2; p++) {
        B[p][0] = _mm256_unpacklo_epi16(A[0][p], A[1][p]);
        B[p][1] = _mm256_unpackhi_epi16(A[0][p], A[1][p]);
        for (h = 0; h < 2; h++)
            B[p][h] = t4_exact(B[p][h]);
    }
    /* rows in order: with rows back to back a row's store may run over the next rows'
     * starts (rows_packed), which they then write again */
    st32n(dst, _mm256_permute2x128_si256(B[0][0], B[0][1], 0x20), lim, mode);
    st32n(dst + os, _mm256_permute2x128_si256(B[1][0], B[1][1], 0x20), lim, mode);
    st32n(dst + 2 * os, _mm256_permute2x128_si256(B[0][0], B[0][1], 0x31), lim, mode);
    st32n(dst + 3 * os, _mm256_permute2x128_si256(B[1][0], B[1][1], 0x31), lim, mode);
}

/* k = 7, 8: a 64-bit lane is one group of 8 column bytes. For k = 7 each row's
 * last 16-byte store runs 16 - 2k bytes past the row: the caller gives room for that,
 * and rows are stored in order so every such byte is written again by the next row.
 * lim: the bytes of each row's 8k to store (k = 8; k = 7 always stores all). */
ZAVX2_INLINE void block8(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                         const int mode, const zsqueeze *sq, const ptrdiff_t lim)
{
    __m256i Y[8], A[4][2], B[2][2][2], D[2][2][2], V[4][2];
    int c, q, p, h, g, r;
    for (c = 0; c < 8; c++)
        Y[c] = k == 8 ? X[c] : (7 - c < k ? X[7 - c] : _mm256_setzero_si256());
    for (q = 0; q < 4; q++) {
        A[q][0] = _mm256_unpacklo_epi8(Y[2 * q], Y[2 * q + 1]);
        A[q][1] = _mm256_unpackhi_epi8(Y[2 * q], Y[2 * q + 1]);
    }
    for (g = 0; g < 2; g++)
        for (p = 0; p < 2; p++) {
            B[g][p][0] = _mm256_unpacklo_epi16(A[2 * g][p], A[2 * g + 1][p]);
            B[g][p][1] = _mm256_unpackhi_epi16(A[2 * g][p], A[2 * g + 1][p]);
        }
    /* D[p][h][e]: lane 0 = row p, byte indices 4h + 2e and 4h + 2e + 1; lane 1 = row p + 2 */
    for (p = 0; p < 2; p++)
        for (h = 0; h < 2; h++) {
            D[p][h][0] = _mm256_unpacklo_epi32(B[0][p][h], B[1][p][h]);
            D[p][h][1] = _mm256_unpackhi_epi32(B[0][p][h], B[1][p][h]);
            D[p][h][0] = k == 8 ? t8_exact(D[p][h][0]) : t8_padded(D[p][h][0]);
            D[p][h][1] = k == 8 ? t8_exact(D[p][h][1]) : t8_padded(D[p][h][1]);
            V[p][h] = _mm256_permute2x128_si256(D[p][h][0], D[p][h][1], 0x20);
            V[p + 2][h] = _mm256_permute2x128_si256(D[p][h][0], D[p][h][1], 0x31);
        }
    for (r = 0; r < 4; r++)
        for (h = 0; h < 2; h++) {
            uint8_t *d = dst + r * os;
            if (k == 8) {
                st32n(d + 32 * h, V[r][h], lim - 32 * h, mode);
            } else {
                const __m256i v = squeeze(V[r][h], k);
                st16(d + 4 * k * h, _mm256_castsi256_si128(v));
                st16(d + (4 * h + 2) * k, _mm256_extracti128_si256(v, 1));
            }
        }
}

#endif  /* ZORDER_AVX2_BLOCK_H */
