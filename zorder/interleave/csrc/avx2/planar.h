/* AVX2 backend: zorder_avx2_planar, rows of at most 16 bytes from byte planes. */
#ifndef ZORDER_AVX2_PLANAR_H
#define ZORDER_AVX2_PLANAR_H

#include "far.h"
#include "store.h"
#include "lut.h"

/* For rows cut to a few bytes of many columns or of a prefix (7x8 -> 10, 10x8 -> 10), the
 * other paths (rows.h, prefix.h) compute whole 8-byte pieces of every column, or 7
 * columns as 8 with a zero column, and throw most of the work away. Here a block of 32
 * rows is taken apart into byte planes instead: plane (c, j) holds byte j of column c for
 * the 32 rows, one row a byte lane (vpshufb picks from 16-byte windows of the rows).
 * Output byte b of the 32 rows is then an OR of vpshufb lookups, one per column nibble
 * that has bits in it, of a 16-entry table giving those bits' places in b (at most 8
 * nibbles a byte: one a bit). The output planes are turned into rows by a 16x16 byte
 * transpose per 128-bit lane, and each row is one 16-byte store, rows in order, the bytes
 * past the row written again by the next. Only the nibbles the rows use are looked up:
 * 7x8 -> 10 takes 71 lookups a block, 10x8 -> 10 80. The tables follow Iceberg's order
 * (level by level, the columns that still have bits, column order), so ragged widths are
 * the same code. Rows more than 8 bytes apart (16-byte columns cut to a prefix, the
 * columns of one 2-D block) are read 8 bytes a row, two rows a 16-byte window, and taken
 * apart as rows 8 apart. */
#define ZPL_COLS 32     /* columns a call may have */
#define ZPL_PLANES 32   /* byte planes a block may use */
#define ZPL_OPS 8       /* lookups of an output byte (padded with empty tables) */

typedef struct {
    int ncols, size, widest, nplanes;
    int need[ZPL_COLS];     /* bytes of column c the rows use */
    int plane0[ZPL_COLS];   /* its first plane */
    uint8_t src[16][ZPL_OPS];           /* lookup i of output byte b: nibble vector 2p + h */
    uint8_t tab[16][ZPL_OPS][16];       /* and its table (nibble value -> bits of byte b) */
} zplanar;

/* WINDOW[st][i][j]: vpshufb indices taking, from window i (bytes [16i, 16i + 16) of 16
 * rows st bytes apart), byte j of each row in it to the row's lane. WINDOW2[i]: from 4
 * windows of 2 rows of 8 bytes, bytes 0 and 1 of window i's rows to lanes 2i, 2i + 1 and
 * 8 + 2i, 8 + 2i + 1 (two planes' halves in one register). */
static uint8_t WINDOW[9][8][8][16];
static uint8_t WINDOW2[4][16];

static void planar_windows_init(void)
{
    int st, i, j, t;
    memset(WINDOW, 0x80, sizeof WINDOW);
    memset(WINDOW2, 0x80, sizeof WINDOW2);
    for (st = 1; st <= 8; st++)
        for (i = 0; i < st; i++)
            for (j = 0; j < st; j++)
                for (t = 0; t < 16; t++)
                    if ((t * st + j) / 16 == i)
                        WINDOW[st][i][j][t] = (uint8_t)((t * st + j) % 16);
    for (i = 0; i < 4; i++)
        for (t = 0; t < 2; t++) {
            WINDOW2[i][2 * i + t] = (uint8_t)(8 * t);
            WINDOW2[i][8 + 2 * i + t] = (uint8_t)(8 * t + 1);
        }
}

/* The shape of a call's plan (the bytes of each column the rows use, their planes), or 0
 * when this path cannot take it (plain C). Takes 1-32 columns whose rows are ascending
 * and no narrower than the column, 1-8 bytes apart, or further apart where the rows use
 * at most the column's first 8 bytes (a block reads those 8 of each row: far_window);
 * output rows of 1-16 bytes back to back; at most 32 planes. */
static int planar_shape(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t out_stride,
                        zplanar *pl)
{
    int c, p;
    if (k < 1 || k > ZPL_COLS || size < 1 || size > 16 || out_stride != size)
        return 0;
    zorder_bytes_used(cols, k, size, pl->need);
    if (!zorder_rows_reachable(cols, k, pl->need))
        return 0;
    pl->widest = 0;
    for (c = 0, p = 0; c < k; c++) {
        if (cols[c].width > pl->widest)
            pl->widest = (int)cols[c].width;
        pl->plane0[c] = p;
        p += pl->need[c];
    }
    if (p > ZPL_PLANES)
        return 0;
    pl->ncols = k;
    pl->size = (int)size;
    pl->nplanes = p;
    return 1;
}

/* The lookups of a plan whose shape planar_shape made: 0 if some output byte needed more
 * than ZPL_OPS (plain C). Built only for the calls the path runs: 17 KiB of tables. */
static int planar_tables(const zorder_column *cols, zplanar *pl)
{
    uint8_t tab[2 * ZPL_PLANES][16][16];
    uint8_t used[2 * ZPL_PLANES][16];
    int count[16];
    ptrdiff_t level, pos;
    const int k = pl->ncols, size = pl->size, p = pl->nplanes;
    int c, b, v, i;
    memset(tab, 0, sizeof tab);
    memset(used, 0, sizeof used);
    for (level = 0, pos = 0; level < 8 * pl->widest && pos < 8 * size; level++)
        for (c = 0; c < k && pos < 8 * size; c++)
            if (level < 8 * cols[c].width) {
                /* bit 7 - level % 8 of byte level / 8: the high nibble's bit 3 - level % 4,
                 * or the low one's */
                const int q = 2 * (pl->plane0[c] + (int)(level / 8)) + (level % 8 < 4);
                const int bit = 3 - (int)(level % 4);
                used[q][pos / 8] = 1;
                for (v = 0; v < 16; v++)
                    if ((v >> bit) & 1)
                        tab[q][pos / 8][v] |= (uint8_t)(0x80 >> (pos % 8));
                pos++;
            }
    for (b = 0; b < size; b++) {
        count[b] = 0;
        for (v = 0; v < 2 * p; v++)
            if (used[v][b]) {
                if (count[b] == ZPL_OPS)   /* (cannot be: a byte has 8 bits) */
                    return 0;
                pl->src[b][count[b]] = (uint8_t)v;
                memcpy(pl->tab[b][count[b]], tab[v][b], 16);
                count[b]++;
            }
        for (i = count[b]; i < ZPL_OPS; i++) {   /* empty lookups */
            pl->src[b][i] = 0;
            memset(pl->tab[b][i], 0, 16);
        }
    }
    return 1;
}

/* Window i of 16 rows at p (lane 0) and of the 16 rows after them (lane 1). */
ZAVX2_INLINE __m256i planar_window(const uint8_t *p, const ptrdiff_t st, const int i)
{
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i))),
        _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * st + 16 * i)), 1);
}

/* Window i (< 8) of 16 rows st > 8 bytes apart, as if they were 8 apart: the first 8
 * bytes of rows 2i and 2i + 1 at p (lane 0) and of the 16 rows after them (lane 1). */
ZAVX2_INLINE __m256i far_window(const uint8_t *p, const ptrdiff_t st, const int i)
{
    return far_lanes(p + 2 * i * st, p + (16 + 2 * i) * st, st);
}

/* Window i of a block's rows st bytes apart: planar_window's for 1-8 (i < st), far_window's
 * for rows further apart, taken as rows 8 apart (i < 8). */
ZAVX2_INLINE __m256i row_window(const uint8_t *p, const ptrdiff_t st, const int i)
{
    return st > 8 ? far_window(p, st, i) : planar_window(p, st, i);
}

/* The 16x16 byte transpose of each 128-bit lane: O[b] byte t becomes O[t] byte b. */
ZAVX2_INLINE void planar_transpose(__m256i *O)
{
    __m256i T[16], U[16], V[16];
    int i, g;
    for (i = 0; i < 8; i++) {
        T[i] = _mm256_unpacklo_epi8(O[2 * i], O[2 * i + 1]);
        T[8 + i] = _mm256_unpackhi_epi8(O[2 * i], O[2 * i + 1]);
    }
    for (i = 0; i < 4; i++)
        for (g = 0; g < 2; g++) {
            U[8 * g + i] = _mm256_unpacklo_epi16(T[8 * g + 2 * i], T[8 * g + 2 * i + 1]);
            U[8 * g + 4 + i] = _mm256_unpackhi_epi16(T[8 * g + 2 * i], T[8 * g + 2 * i + 1]);
        }
    for (i = 0; i < 2; i++)
        for (g = 0; g < 4; g++) {
            V[4 * g + i] = _mm256_unpacklo_epi32(U[4 * g + 2 * i], U[4 * g + 2 * i + 1]);
            V[4 * g + 2 + i] = _mm256_unpackhi_epi32(U[4 * g + 2 * i], U[4 * g + 2 * i + 1]);
        }
    for (i = 0; i < 8; i++) {
        O[2 * i] = _mm256_unpacklo_epi64(V[2 * i], V[2 * i + 1]);
        O[2 * i + 1] = _mm256_unpackhi_epi64(V[2 * i], V[2 * i + 1]);
    }
}

/* Blocks of 32 rows [0, blocks * 32) of output rows of S bytes (a constant: the lookups
 * and stores unroll). */
ZAVX2_INLINE void planar_blocks(const zorder_column *cols, const zplanar *pl, ptrdiff_t blocks,
                                uint8_t *out, const int S)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    ptrdiff_t r0;
    int c, i, j, b;
    for (r0 = 0; r0 < 32 * blocks; r0 += 32) {
        __m256i N[2 * ZPL_PLANES], O[16];
        uint8_t *d = out + r0 * S;
        for (c = 0; c < pl->ncols; c++) {
            const ptrdiff_t st = cols[c].row_stride;
            const int n = pl->need[c];
            const uint8_t *p = cols[c].data + r0 * st;
            __m256i P[8], G[8];
            if (n == 0)
                continue;
            rows_prefetch(p + AHEAD_BLOCKS * 32 * st, 32, st);
            if (st == 1) {
                P[0] = _mm256_loadu_si256((const __m256i *)(const void *)p);
            } else if (st >= 8 && n == 2) {
                /* 4 windows' bytes 0 and 1 side by side, then the planes' halves paired */
                __m256i R0 = _mm256_setzero_si256(), R1 = R0;
                for (i = 0; i < 4; i++) {
                    const __m256i m = bcast16(WINDOW2[i]);
                    R0 = _mm256_or_si256(R0, _mm256_shuffle_epi8(row_window(p, st, i), m));
                    R1 = _mm256_or_si256(R1, _mm256_shuffle_epi8(row_window(p, st, 4 + i), m));
                }
                P[0] = _mm256_unpacklo_epi64(R0, R1);
                P[1] = _mm256_unpackhi_epi64(R0, R1);
            } else {
                const int sw = (int)zorder_row_reach(st);   /* the windows' row stride */
                for (i = 0; i < sw; i++)
                    G[i] = row_window(p, st, i);
                for (j = 0; j < n; j++) {
                    __m256i x = _mm256_shuffle_epi8(G[0], bcast16(WINDOW[sw][0][j]));
                    for (i = 1; i < sw; i++)
                        x = _mm256_or_si256(x, _mm256_shuffle_epi8(G[i], bcast16(WINDOW[sw][i][j])));
                    P[j] = x;
                }
            }
            for (j = 0; j < n; j++) {
                N[2 * (pl->plane0[c] + j)] = _mm256_and_si256(P[j], low4);
                N[2 * (pl->plane0[c] + j) + 1] = _mm256_and_si256(_mm256_srli_epi16(P[j], 4), low4);
            }
        }
        for (b = 0; b < 16; b++) {
            __m256i acc = _mm256_setzero_si256();
            if (b < S)
                for (i = 0; i < ZPL_OPS; i++)
                    acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(bcast16(pl->tab[b][i]),
                                                                   N[pl->src[b][i]]));
            O[b] = acc;
        }
        planar_transpose(O);
        for (i = 0; i < 16; i++)
            st16(d + i * S, _mm256_castsi256_si128(O[i]));
        for (i = 0; i < 16; i++)
            st16(d + (16 + i) * S, _mm256_extracti128_si256(O[i], 1));
    }
}

#define PLANAR_S(S) \
    ZAVX2 static void planar_blocks_##S(const zorder_column *cols, const zplanar *pl, \
                                        ptrdiff_t blocks, uint8_t *out) \
    { planar_blocks(cols, pl, blocks, out, S); }
PLANAR_S(1) PLANAR_S(2) PLANAR_S(3) PLANAR_S(4) PLANAR_S(5) PLANAR_S(6) PLANAR_S(7) PLANAR_S(8)
PLANAR_S(9) PLANAR_S(10) PLANAR_S(11) PLANAR_S(12) PLANAR_S(13) PLANAR_S(14) PLANAR_S(15)
PLANAR_S(16)

typedef void (*zplanar_fn)(const zorder_column *, const zplanar *, ptrdiff_t, uint8_t *);
static const zplanar_fn PLANAR_BLOCKS[17] = {
    NULL, planar_blocks_1, planar_blocks_2, planar_blocks_3, planar_blocks_4, planar_blocks_5,
    planar_blocks_6, planar_blocks_7, planar_blocks_8, planar_blocks_9, planar_blocks_10,
    planar_blocks_11, planar_blocks_12, planar_blocks_13, planar_blocks_14, planar_blocks_15,
    planar_blocks_16};

int zorder_avx2_planar_mode = 1;
ptrdiff_t zorder_avx2_planar_min_rows = 256;

/* The shapes this path is chosen for (zorder_avx2_planar_mode 1): those where the other
 * paths compute bytes the rows drop, rows cut inside columns read at 2-8 bytes a row,
 * where it was faster on both CPUs measured (1,000,000 rows, ns a row, other paths ->
 * this one; benchmarks/NOTES.md, "Byte planes"):
 *  - 9-32 columns: AMD EPYC Zen 4 10x8 -> 10 16.9 -> 4.0, 12x8 -> 16 15.8 -> 5.3; Intel
 *    Xeon (family 6 model 167) 10x8 -> 10 18.9 -> 4.7, 9x2 -> 9 3.9 -> 2.6, 14x4 -> 14
 *    7.5 -> 4.4, 15x8 -> 8 31.7 -> 6.4, 18x2 -> 9 9.9 -> 3.9, 20x8 -> 8 56 -> 8.9, 32x4
 *    -> 8 17.1 -> 8.1 (400,000 rows);
 *  - 5-8 columns of 8 bytes cut to 3 bytes each (no whole prefix the other paths gather):
 *    Intel 6x8 -> 16 5.3 -> 4.7, 7x8 -> 16 7.4 -> 5.1, 5x8 -> 15 6.5 -> 4.6;
 *  - 5 or 7 columns of 8 bytes cut inside 2-byte prefixes: AMD 7x8 -> 10 3.95 -> 2.87,
 *    Intel 3.1 -> 3.0;
 *  - 5 or 7 columns narrower than 8 bytes, which the other paths stage: Intel 7x4 -> 7
 *    4.2 -> 2.5, 5x4 -> 10 3.8 -> 2.7, 7x2 -> 7 2.3 -> 2.1.
 * Left to the other paths: 2-4 columns (AMD 4x8 -> 6 1.62 against 2.14), 5 or 6 columns
 * cut to their first bytes (AMD 5x8 -> 5 1.65 against 2.60), whole 1-, 2- and 4-byte
 * prefixes of 8-byte columns and 6 or 8 columns cut inside them, where the two CPUs
 * disagree (AMD 7x8 -> 7 6.55 -> 3.26 and 6x8 -> 10 3.49 -> 2.44, but Intel 2.6 -> 3.5
 * and 2.3 -> 2.7; Intel 5x8 -> 16 3.9 -> 4.7, 8x8 -> 12 2.8 -> 3.4), 6 or 8 narrower
 * columns (Intel 8x4 -> 12 2.9 -> 3.4), 16 columns of 8 bytes (AMD 16x8 -> 16 12.0
 * against 14.6; Intel 5.4 against 7.4 at 400,000 rows, since the prefetches 5.8-9.7
 * against 7.4-7.7, a tie), and columns read whole (AMD 10x1 -> 10 1.8 against 2.6).
 * 32 columns of 8 bytes run here since the prefetches (Intel 32x8 -> 16 15.8-17.2 against
 * 16.5-22.3, 32x8 -> 8 14.5-16.2 against 15.5-22.6; before them 21.5 against 18.2), and
 * so do 16 columns narrower than 8 bytes (16x2/8 -> 16 7.5 against 13.0) or whose rows
 * are more than 8 bytes apart (16x16 -> 16 20.5 against 25.9). */
static int planar_chosen(const zorder_column *cols, const zplanar *pl)
{
    const int k = pl->ncols;
    int c, cut = 0, need = 0, under8 = 0, far = 0, narrower = 0;
    for (c = 0; c < k; c++) {
        cut |= pl->need[c] < cols[c].row_stride;   /* (as auto.pyx sees it) */
        under8 |= cols[c].width > 0 && cols[c].row_stride < 8;   /* (as auto.pyx sees them) */
        far |= cols[c].width > 0 && cols[c].row_stride > 8;
        narrower |= cols[c].width > 0 && cols[c].width < 8;
        if (pl->need[c] > need)
            need = pl->need[c];
    }
    if (!cut || k < 5)
        return 0;
    if (need == 1 && k <= 6)
        return 0;
    if (k >= 9)   /* but 16 columns of 8 bytes: the 8-column planes (segments.h) */
        return under8 || far || narrower || k != 16;
    if (under8)
        return k % 2;
    return need == 3 || (k % 2 && need == 2 && pl->size < k * need);
}

/* The rows zorder_avx2_planar does of a call (a multiple of 32; 0: it does not take the
 * call), and their plan's shape in *pl (plain C). */
static ptrdiff_t planar_rows(const zorder_column *cols, int ncols, ptrdiff_t size,
                             ptrdiff_t nrows, ptrdiff_t out_stride, zplanar *pl)
{
    ptrdiff_t rows, spill;
    int c, narrow = 0;
    if (zorder_avx2_planar_mode == 0 || nrows < zorder_avx2_planar_min_rows
        || !planar_shape(cols, ncols, size, out_stride, pl)
        || (zorder_avx2_planar_mode == 1 && !planar_chosen(cols, pl)))
        return 0;
    /* a block reads its 32 rows' whole strides, or 8 bytes of each row further apart:
     * the last row stays with the caller where a column is narrower than that (its end may
     * be past the data); and the last row's 16-byte store must stay in the output */
    for (c = 0; c < ncols; c++)
        narrow |= pl->need[c] > 0 && cols[c].width < zorder_row_reach(cols[c].row_stride);
    spill = 15 / size;   /* (16 - size) / size, rounded up */
    rows = nrows - narrow - spill;
    return rows < 32 ? 0 : rows / 32 * 32;
}

ptrdiff_t zorder_avx2_planar_rows(const zorder_column *cols, int ncols, ptrdiff_t size,
                                  ptrdiff_t nrows, ptrdiff_t out_stride)
{
    zplanar pl;
    return planar_rows(cols, ncols, size, nrows, out_stride, &pl);
}

ZAVX2 ptrdiff_t zorder_avx2_planar(const zorder_column *cols, int ncols, ptrdiff_t size,
                                   ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    zplanar pl;
    const ptrdiff_t rows = planar_rows(cols, ncols, size, nrows, out_stride, &pl);
    if (rows == 0 || !planar_tables(cols, &pl))
        return 0;
    PLANAR_BLOCKS[size](cols, &pl, rows / 32, out);
    return rows;
}

#endif  /* ZORDER_AVX2_PLANAR_H */
