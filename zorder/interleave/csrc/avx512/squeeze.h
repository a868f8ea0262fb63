/* AVX-512 backend: zorder_simd_squeeze, zero columns squeezed out of a padded many-column
 * interleave. */
#ifndef ZORDER_AVX512_SQUEEZE_H
#define ZORDER_AVX512_SQUEEZE_H

#include "load.h"

/* segments.h interleaves k > 8 columns (k not a multiple of 8) as K = 8 * nb columns, the
 * last K - k zero, and squeezes: each group of K bytes is 8 fields of K bits whose first k
 * bits are kept, side by side. Output byte o of a group covers field f = 8o / k from bit
 * t = 8o - fk: 8 bits of the field (A) or, where the field ends inside the byte, its last
 * k - t bits and the first bits of field f + 1 (B, taken 8 bits from k - t bits before
 * that field starts; a mask picks). Each is two source bytes, as a big-endian 16-bit word
 * put together by vpermb, shifted left by the bit offset (vpsllvw): the high byte is the
 * result. g = 64 / K groups a step, one table for all. Scalar: 64 fields a row, one word
 * each, measured 70 ns/row at k = 11; this 8. */
ZSIMD static void squeeze_avx512(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                                 ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    const int K = 8 * nb, g = 64 / K, step_out = g * k;
    uint8_t ia[2][64], ib[2][64], pack[64];
    uint16_t sa[2][32], sb[2][32], sel[2][32];
    __m512i IA[2], IB[2], SA[2], SB[2], SEL[2], PACK;
    const int two = step_out > 32;
    int o, h;
    ptrdiff_t row, gs;
    memset(ia, 0, sizeof ia);
    memset(ib, 0, sizeof ib);
    memset(sa, 0, sizeof sa);
    memset(sb, 0, sizeof sb);
    memset(sel, 0, sizeof sel);
    for (o = 0; o < step_out; o++) {
        const int gi = o / k, ob = o % k, f = 8 * ob / k, t = 8 * ob - f * k;
        const int s_a = gi * 8 * K + f * K + t;
        const int s_b = gi * 8 * K + (f + 1) * K - (k - t);
        const int keep = t + 8 <= k ? 8 : k - t;   /* top bits from A */
        h = o / 32;
        ia[h][2 * (o % 32)] = (uint8_t)((s_a / 8 + 1) & 63);
        ia[h][2 * (o % 32) + 1] = (uint8_t)(s_a / 8);
        sa[h][o % 32] = (uint16_t)(s_a % 8);
        if (keep < 8) {
            ib[h][2 * (o % 32)] = (uint8_t)((s_b / 8 + 1) & 63);
            ib[h][2 * (o % 32) + 1] = (uint8_t)(s_b / 8);
            sb[h][o % 32] = (uint16_t)(s_b % 8);
        }
        sel[h][o % 32] = (uint16_t)((0xFF00u << (8 - keep)) & 0xFF00u);
    }
    for (o = 0; o < 64; o++)
        pack[o] = (uint8_t)(o < 32 ? 2 * o + 1 : 64 + 2 * (o - 32) + 1);
    for (h = 0; h < 2; h++) {
        IA[h] = _mm512_loadu_si512((const void *)ia[h]);
        IB[h] = _mm512_loadu_si512((const void *)ib[h]);
        SA[h] = _mm512_loadu_si512((const void *)sa[h]);
        SB[h] = _mm512_loadu_si512((const void *)sb[h]);
        SEL[h] = _mm512_loadu_si512((const void *)sel[h]);
    }
    PACK = _mm512_loadu_si512((const void *)pack);
    if (limit == w * k && out_stride == limit) {
        /* rows back to back on both sides: one stream of rows * w groups */
        w *= rows;
        limit = out_stride = w * k;
        rows = 1;
    }
    for (row = 0; row < rows; row++) {
        const uint8_t *s = src + row * w * K;
        uint8_t *d = out + row * out_stride;
        for (gs = 0; gs < w && gs * k < limit; gs += g) {
            const ptrdiff_t ng = w - gs < g ? w - gs : g;
            const ptrdiff_t nout = limit - gs * k < ng * k ? limit - gs * k : ng * k;
            const __m512i v = ng == g && 64 <= (w - gs) * K
                                  ? _mm512_loadu_si512((const void *)(s + gs * K))
                                  : _mm512_maskz_loadu_epi8((__mmask64)span_mask(0, ng * K),
                                                            (const void *)(s + gs * K));
            __m512i r[2];
            for (h = 0; h <= two; h++) {
                const __m512i a = _mm512_sllv_epi16(_mm512_permutexvar_epi8(IA[h], v), SA[h]);
                const __m512i b = _mm512_sllv_epi16(_mm512_permutexvar_epi8(IB[h], v), SB[h]);
                r[h] = _mm512_ternarylogic_epi64(a, b, SEL[h], 0xE4);
            }
            if (!two)
                r[1] = r[0];
            r[0] = _mm512_permutex2var_epi8(r[0], PACK, r[1]);
            if (nout == 64)
                _mm512_storeu_si512((void *)(d + gs * k), r[0]);
            else
                _mm512_mask_storeu_epi8((void *)(d + gs * k), (__mmask64)span_mask(0, nout), r[0]);
        }
    }
}

void zorder_simd_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    squeeze_avx512(src, k, nb, w, limit, rows, out, out_stride);
}

#endif  /* ZORDER_AVX512_SQUEEZE_H */
