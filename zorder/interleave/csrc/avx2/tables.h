/* AVX2 backend: the tables zorder_avx2_init fills once (plain C), and ZLUT, which k run
 * the nibble lookups (lut.h) rather than the bit transposes (block.h). */
#ifndef ZORDER_AVX2_TABLES_H
#define ZORDER_AVX2_TABLES_H

#include "common.h"

/* Which k run the nibble-lookup method (lutblock); 4 and 8 run the bit transposes, 7 the
 * 8-column transpose with a zero column and the squeeze. Chosen by time per row with the
 * data in cache (2,000 rows; ns): k = 2: lookups 0.95 vs transposes 1.34; 3: 1.7-2.3 vs
 * 4.5 (zero column and squeeze); 4: 3.25 vs 3.15; 5: 6.4 vs 7.4; 6: 5.2 vs 7.7; 7: 10.1
 * vs 7.4. */
#define ZLUT(k) ((k) == 2 || (k) == 3 || (k) == 5 || (k) == 6)

/* ---- tables, filled once by zorder_avx2_init (plain C) ---------------------------- */

/* Squeezing k live bits out of K-bit fields, step s: fields of (K << s) bits pair up;
 * CMASK[k][s][0] keeps the upper one's live bits, [1] the lower one's, which move up by
 * (K - k) << s. The live bits of a field are its top ones (the lanes hold the stream
 * most significant bit first). */
static uint64_t CMASK[9][3][2];
/* vpshufb indices taking the k live bytes of each group to the front of each 128-bit
 * lane (the group's stream starts at its top byte). */
static uint8_t PACK[9][32];

/* The nibble-lookup method (ZLUT(k); lutblock, lut.h). NIBLUT[k][b][c][h]: for each value of
 * column c's high (h = 1) or low (h = 0) nibble, its bits that land in output byte b of
 * the group. CHUNK[k][m][b]: vpshufb indices taking, for 16-byte output chunk m of a
 * 128-bit lane (16 groups), the bytes that come from result b (byte b of every group). */
static uint8_t NIBLUT[8][8][8][2][16];
static uint8_t CHUNK[8][8][8][16];

/* Row prefixes of `need` = 1 << e bytes from columns of 8-byte rows (prefix_rows_k):
 * PREFIX[e][2i + h] takes, in each 128-bit lane, the 2 rows that half h of loads i and
 * i + G/2 put there (vperm2i128) to their prefixes' places among the lane's 2G rows. */
static uint8_t PREFIX[3][8][16];

static void slice_plans_init(void);   /* zorder_avx2_slice's tables, in slice.h */
static void planar_windows_init(void);   /* zorder_avx2_planar's, planar.h */

static int group_k(int k)
{
    return k <= 2 ? 2 : k <= 4 ? 4 : 8;
}

void zorder_avx2_init(void)
{
    int b, k, s, e, i;
    slice_plans_init();
    planar_windows_init();
    memset(CMASK, 0, sizeof CMASK);
    memset(PREFIX, 0x80, sizeof PREFIX);
    for (e = 0; e < 3; e++) {
        const int need = 1 << e, G = 8 / need;
        for (i = 0; i < G / 2; i++)
            for (s = 0; s < 2; s++)   /* s: the half h */
                for (k = 0; k < 2; k++)   /* k: the row t of the pair */
                    for (b = 0; b < need; b++)
                        PREFIX[e][2 * i + s][(4 * i + 2 * s + k) * need + b] = (uint8_t)(8 * k + b);
    }
    memset(NIBLUT, 0, sizeof NIBLUT);
    for (k = 2; k <= 7; k++) {
        int c, h, v, L, m;
        for (c = 0; c < k; c++)
            for (h = 0; h < 2; h++)
                for (v = 0; v < 16; v++)
                    for (i = 0; i < 4; i++) {
                        /* nibble bit 3 - i is level i (high nibble) or 4 + i (low) */
                        const int q = k * ((h ? 0 : 4) + i) + c;
                        L = (v >> (3 - i)) & 1;
                        if (L)
                            NIBLUT[k][q / 8][c][h][v] |= (uint8_t)(0x80 >> (q % 8));
                    }
        for (m = 0; m < k; m++)
            for (b = 0; b < k; b++)
                for (i = 0; i < 16; i++) {
                    const int t = 16 * m + i;
                    CHUNK[k][m][b][i] = (uint8_t)(t % k == b ? t / k : 0x80);
                }
    }
    for (k = 5; k <= 7; k++) {
        const int K = 8;
        if (ZLUT(k))
            continue;
        for (s = 0; s < 3; s++) {
            const int H = K << s, live = k << s, U = 2 * H;
            for (i = 0; i < 64; i++) {
                const int o = i % U;
                if (o >= U - live)
                    CMASK[k][s][0] |= (uint64_t)1 << i;
                else if (o >= H - live && o < H)
                    CMASK[k][s][1] |= (uint64_t)1 << i;
            }
        }
        memset(PACK[k], 0x80, 32);
        for (i = 0; i < 32; i += 16)
            for (e = 0; e < 2; e++)
                for (b = 0; b < k; b++)
                    PACK[k][i + e * k + b] = (uint8_t)(8 * e + 7 - b);
    }
}

#endif  /* ZORDER_AVX2_TABLES_H */
