/* AVX2 backend: blocks of 4 rows by nibble lookups (lutblock), for the k that ZLUT names. */
#ifndef ZORDER_AVX2_LUT_H
#define ZORDER_AVX2_LUT_H

#include "tables.h"
#include "store.h"

ZAVX2_INLINE __m256i bcast16(const uint8_t *p)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* k = 3, 5, 6, 7 by nibble lookups: output byte b of every group is the OR, over the
 * column nibbles whose bits land in it, of a vpshufb table lookup; then the k results
 * (byte b of the 32 groups of 4 rows) are interleaved into group order, 16 bytes at a
 * time, and written as 4 rows back to back (dst, 32k bytes). */
ZAVX2_INLINE void lutblock(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                           const int mode, const ptrdiff_t lim)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i N[8][2], R[8], C[8];
    int c, h, b, m, p;
    for (c = 0; c < k; c++) {
        N[c][0] = _mm256_and_si256(X[c], low4);
        N[c][1] = _mm256_and_si256(_mm256_srli_epi16(X[c], 4), low4);
    }
    for (b = 0; b < k; b++)
        R[b] = _mm256_setzero_si256();
    for (c = 0; c < k; c++)
        for (h = 0; h < 2; h++) {
            /* the bytes this nibble's 4 levels land in (constants: k, c, h are) */
            const int first = (k * (h ? 0 : 4) + c) / 8, last = (k * (h ? 3 : 7) + c) / 8;
            for (b = first; b <= last; b++)
                R[b] = _mm256_or_si256(R[b], _mm256_shuffle_epi8(bcast16(NIBLUT[k][b][c][h]),
                                                                 N[c][h]));
        }
    for (m = 0; m < k; m++) {
        C[m] = _mm256_shuffle_epi8(R[0], bcast16(CHUNK[k][m][0]));
        for (b = 1; b < k; b++)
            C[m] = _mm256_or_si256(C[m], _mm256_shuffle_epi8(R[b], bcast16(CHUNK[k][m][b])));
    }
    if (os != 8 * k || lim != 8 * k) {
        /* rows apart or truncated (even k only): a row is k/2 whole chunks, C[e k/2 + j]
         * holding chunk j of row e in lane 0 and of row 2 + e in lane 1. A row's chunks 0
         * and 1 go out as one 32-byte store (a vperm2i128), chunk 2 (k = 6) as 16 bytes,
         * rows in order (rows_packed may let a row's stores run over the next rows'
         * starts). A loop over the chunks, rolled by the compiler with C[] on the stack,
         * made 6x8 -> 40 slower than 6x8 -> 48. */
        const int half = k / 2;
        int r;
        for (r = 0; r < 4; r++) {
            const __m256i *row = C + (r & 1) * half;
            uint8_t *d = dst + r * os;
            if (half == 1) {
                st16m(d, r < 2 ? _mm256_castsi256_si128(row[0]) : _mm256_extracti128_si256(row[0], 1),
                      lim, mode);
                continue;
            }
            st32n(d, r < 2 ? _mm256_permute2x128_si256(row[0], row[1], 0x20)
                           : _mm256_permute2x128_si256(row[0], row[1], 0x31), lim, mode);
            if (half == 3)
                st16m(d + 32, r < 2 ? _mm256_castsi256_si128(row[2])
                                    : _mm256_extracti128_si256(row[2], 1), lim - 32, mode);
        }
        return;
    }
    /* lane 0 of C[m] is chunk m of rows 0-1, lane 1 of rows 2-3: 2k chunks in order */
    for (p = 0; p < k; p++) {
        const int i0 = 2 * p, i1 = 2 * p + 1;
        const __m256i a = C[i0 % k], b2 = C[i1 % k];
        const int imm = (i0 / k) | ((2 + i1 / k) << 4);
        __m256i v;
        switch (imm) {
        case 0x20: v = _mm256_permute2x128_si256(a, b2, 0x20); break;
        case 0x30: v = _mm256_permute2x128_si256(a, b2, 0x30); break;
        case 0x31: v = _mm256_permute2x128_si256(a, b2, 0x31); break;
        default: v = _mm256_permute2x128_si256(a, b2, 0x21); break;
        }
        st32(dst + 32 * p, v, mode & ZST_NT);
    }
}

#endif  /* ZORDER_AVX2_LUT_H */
