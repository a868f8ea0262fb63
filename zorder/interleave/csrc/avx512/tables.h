/* AVX-512 backend: the tables zorder_simd_init fills once (plain C): vpermb indices and
 * the GF(2) matrices of the affines. */
#ifndef ZORDER_AVX512_TABLES_H
#define ZORDER_AVX512_TABLES_H

#include "common.h"

/* n = 8. Packed row (column c at bytes 8c..8c+7) -> lane j = byte j of each column. */
static uint8_t IDX8[64];
/* n = 8 from column registers: the last shuffle stage fused with IDX8, for the even
 * (0) and odd (1) row of a pair. */
static uint8_t IDX8C[2][64];
/* n = 4. Two packed rows -> lanes (row, j pair); and the same from column registers
 * for row pairs (0,1) / (2,3) of the 4-row half. */
static uint8_t IDX4[64];
static uint8_t IDX4C[2][64];
/* n = 4 from contiguous columns, 4 rows of columns 0,1 in one register and of 2,3 in
 * another (two 32-byte loads each), for row pairs (0,1) / (2,3) of the 4 rows. */
static uint8_t IDX4L[2][64];
/* Spread method: XMAT[n][b][c] maps column c's byte to its bits in output byte b. */
static uint64_t XMAT[9][8][8];
/* Spread method output: register o of 8 interleaved rows takes its bytes from the
 * results of columns pair p through XOUT_IDX, where XOUT_MASK says. */
static uint8_t XOUT_IDX[9][8][4][64];
static uint64_t XOUT_MASK[9][8][4];

/* GF2P8AFFINEQB with the data as matrix: output byte i, bit 7-p = bit s_i of byte p. */
#define X8_CONST 0x0102040810204080ULL
static uint64_t X4Q, X4S;
/* Which nibbles the paired transpose takes from Q (the rest from S). */
#define M4SEL_CONST 0x0F0F0F0FF0F0F0F0ULL

void zorder_simd_init(void)
{
    int n, b, c, p, q, j, o, r, i;
    for (j = 0; j < 8; j++)
        for (c = 0; c < 8; c++)
            IDX8[8 * j + c] = (uint8_t)(8 * c + j);
    /* Column registers are combined in three stages (see rows_cols_8); after stage 2,
     * register U[q][h][g] holds in qword 4*rr + cc column 4q+cc of row 4h+2g+rr. */
    for (r = 0; r < 2; r++)
        for (j = 0; j < 8; j++)
            for (c = 0; c < 8; c++)
                IDX8C[r][8 * j + c] = (uint8_t)(64 * (c / 4) + 8 * (4 * r + c % 4) + j);
    /* n = 4: lane q = 4*rr + jp, byte p: column p%4, source byte j = 2*jp + p/4. */
    for (q = 0; q < 8; q++)
        for (p = 0; p < 8; p++) {
            int rr = q / 4, jp = q % 4;
            c = p % 4;
            j = 2 * jp + p / 4;
            IDX4[8 * q + p] = (uint8_t)(32 * rr + 8 * c + j);
            /* after stage 1, T[c/2] holds qword 2*row + c%2 for the 4 rows of a half */
            for (o = 0; o < 2; o++) {
                IDX4C[o][8 * q + p] = (uint8_t)(64 * (c / 2) + 8 * (2 * (2 * o + rr) + c % 2) + j);
                IDX4L[o][8 * q + p] = (uint8_t)(64 * (c / 2) + 8 * (4 * (c % 2) + 2 * o + rr) + j);
            }
        }
    X4Q = X4S = 0;
    for (i = 0; i < 4; i++) {
        /* Q: bytes 0-3 = bit levels 0, 2, 4, 6; bytes 4-7 = levels 1, 3, 5, 7. */
        X4Q |= (uint64_t)(1u << (7 - 2 * i)) << (8 * i);
        X4Q |= (uint64_t)(1u << (6 - 2 * i)) << (8 * (i + 4));
        /* S: the odd levels first, then the even ones. */
        X4S |= (uint64_t)(1u << (6 - 2 * i)) << (8 * i);
        X4S |= (uint64_t)(1u << (7 - 2 * i)) << (8 * (i + 4));
    }
    memset(XMAT, 0, sizeof XMAT);
    memset(XOUT_MASK, 0, sizeof XOUT_MASK);
    for (n = 1; n <= 8; n++) {
        /* x-operand affine: result bit 7-p = parity(matrix byte p & x). Output byte b,
         * bit 7-p is stream bit i = 8b+p: column i%n, bit 7 - i/n of its byte. */
        for (b = 0; b < n; b++)
            for (p = 0; p < 8; p++) {
                i = 8 * b + p;
                XMAT[n][b][i % n] |= (uint64_t)(1u << (7 - i / n)) << (8 * p);
            }
        /* 8 output rows of 8n bytes: byte t of row r is group j = t/n, byte b = t%n,
         * which the spread step left at byte 8r + j of result b. */
        for (i = 0; i < 64 * n; i++) {
            int t = i % (8 * n);
            r = i / (8 * n);
            j = t / n;
            b = t % n;
            o = i / 64;
            XOUT_IDX[n][o][b / 2][i % 64] = (uint8_t)(64 * (b % 2) + 8 * r + j);
            XOUT_MASK[n][o][b / 2] |= (uint64_t)1 << (i % 64);
        }
    }
}

#endif  /* ZORDER_AVX512_TABLES_H */
