/* AVX2 backend: zorder_avx2_slice, the column slices of narrow ragged rows, by vpshufb
 * picks from 16-byte windows. */
#ifndef ZORDER_AVX2_SLICE_H
#define ZORDER_AVX2_SLICE_H

#include "store.h"

/* zorder_slice_fn for 1 <= w < st <= 8 (the narrow ragged rows' column slices), blocks of
 * 16 rows. Output word i (bytes [16i, 16i + 16) of the block's 16w) is the OR of vpshufb
 * picks from the fewest 16-byte windows of the block's source that hold its bytes (greedy:
 * each window starts at the first byte not yet covered; one that would pass the block's
 * last slice is moved back to end there, so nothing after it is read). Every word of a
 * (w, st) takes the same number of windows, nw (padded with windows that pick nothing),
 * so the loops unroll: w * nw <= 16 (at most 8 a word, at w = 1 and st = 8). The
 * compiler's loops for these byte gathers are scalar for most (w, st): 3+5+8 -> 16's
 * 3-byte slices of 8-byte rows were a fifth of its time. */
typedef struct {
    int nw;                  /* windows a word; 0: not a (w, st) taken here */
    int16_t at[16];          /* window j of word i: at[i * nw + j] bytes into the block */
    uint8_t pick[16][16];    /* and its vpshufb indices (0x80: not from this window) */
} zslice_plan;
static zslice_plan SLICE[9][9];   /* [w][st] */

static void slice_plans_init(void)
{
    int w, st, i, o, j, n[8];
    int16_t at[8][16];
    memset(SLICE, 0, sizeof SLICE);
    for (st = 2; st <= 8; st++)
        for (w = 1; w < st; w++) {
            zslice_plan *p = &SLICE[w][st];
            const int span = 15 * st + w;   /* the block's bytes: >= 16 */
            uint8_t pick[8][16][16];
            memset(pick, 0x80, sizeof pick);
            p->nw = 0;
            for (i = 0; i < w; i++) {
                n[i] = 0;
                for (o = 0; o < 16; o++) {
                    const int s = (16 * i + o) / w * st + (16 * i + o) % w;
                    /* a word's bytes ascend in s: only its newest window can hold this one */
                    if (n[i] == 0 || s >= at[i][n[i] - 1] + 16) {
                        at[i][n[i]] = (int16_t)(s + 16 <= span ? s : span - 16);
                        n[i]++;
                    }
                    pick[i][n[i] - 1][o] = (uint8_t)(s - at[i][n[i] - 1]);
                }
                if (n[i] > p->nw)
                    p->nw = n[i];
            }
            for (i = 0; i < w; i++)
                for (j = 0; j < p->nw; j++) {
                    p->at[i * p->nw + j] = j < n[i] ? at[i][j] : 0;
                    memcpy(p->pick[i * p->nw + j], pick[i][j], 16);
                }
        }
}

ZAVX2_INLINE ptrdiff_t slice_wn(const int w, const int nw, const zslice_plan *p, uint8_t *dst,
                                const uint8_t *src, ptrdiff_t rows, ptrdiff_t st)
{
    __m128i pick[16];
    ptrdiff_t at[16], r;
    int i, j;
    for (i = 0; i < w * nw; i++) {
        pick[i] = _mm_loadu_si128((const __m128i *)(const void *)p->pick[i]);
        at[i] = p->at[i];
    }
    for (r = 0; r + 16 <= rows; r += 16) {
        const uint8_t *s = src + r * st;
        uint8_t *d = dst + r * w;
        for (i = 0; i < w; i++) {
            __m128i v = _mm_setzero_si128();
            for (j = 0; j < nw; j++)
                v = _mm_or_si128(v, _mm_shuffle_epi8(
                                        _mm_loadu_si128((const __m128i *)(const void *)(s + at[i * nw + j])),
                                        pick[i * nw + j]));
            st16(d + 16 * i, v);
        }
    }
    return r;
}

#define SLICE_WN(W, NW) \
    case (W) * 16 + (NW): return slice_wn(W, NW, p, dst, src, rows, st);

ZAVX2 ptrdiff_t zorder_avx2_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows,
                                  ptrdiff_t w, ptrdiff_t st)
{
    const zslice_plan *p;
    if (w < 1 || st > 8 || w >= st || rows < 16)
        return 0;
    p = &SLICE[w][st];
    switch (w * 16 + p->nw) {   /* the (w, nw) of st = 2..8 */
    SLICE_WN(1, 2) SLICE_WN(1, 3) SLICE_WN(1, 4) SLICE_WN(1, 6) SLICE_WN(1, 8)
    SLICE_WN(2, 2) SLICE_WN(2, 3) SLICE_WN(2, 4) SLICE_WN(3, 2) SLICE_WN(3, 3)
    SLICE_WN(4, 2) SLICE_WN(5, 2) SLICE_WN(6, 2) SLICE_WN(7, 2)
    default: return 0;
    }
}

#endif  /* ZORDER_AVX2_SLICE_H */
