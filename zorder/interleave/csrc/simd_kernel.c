/* AVX-512 (F, BW, VBMI) + GFNI backend: Z-order at the speed of a memory copy.
 *
 * Every function using these instructions carries a target attribute instead of the
 * file being compiled with -mavx512*, so nothing else (the module's import included)
 * can ever execute them; _simd.pyx calls in only after CPUID and XGETBV say they run.
 *
 * A row's output is independent per 8-byte "slab" of the columns: output bytes
 * [8n*k, 8n*(k+1)) use only bytes [8k, 8k+8) of each of the n columns. So every shape
 * handled here is a loop over blocks of rows and slabs, and three methods cover n:
 *
 * - n = 8, "transpose": one vpermb puts byte j of every column into 64-bit lane j;
 *   vgf2p8affineqb with the data as the matrix transposes each 8x8 bit block, which is
 *   exactly the 8-column interleave.
 * - n = 4, "paired transpose": a lane holds byte j and j+1 of the 4 columns; the
 *   transpose gives, per bit level, group j's 4 bits in the high nibble and group j+1's
 *   in the low one. A second transpose of the lane with its halves swapped (a 32-bit
 *   rotate) gives the nibble-swapped bytes, and one bit-select merges the two into the
 *   finished 8 output bytes: no work is thrown away and no final permutation is needed.
 * - other n (2, 3, 5, 6, 7), "spread": with 8 rows of a column in one register, output
 *   byte b of each group is the XOR over columns c of a fixed linear map of column c's
 *   byte (vgf2p8affineqb with a constant matrix: pick the column's bits that land in
 *   byte b and move them there). That is n*n affines per 8 rows, then a byte
 *   interleave (vpermt2b) of the n results into row order.
 * - n = 1 is the identity: a copy.
 *
 * Columns of width 8m read in full are taken as m times as many rows of width 8, so
 * the slab loop only runs for truncated output. Row tails use masked loads, gathers and
 * stores (which never touch masked-off bytes), and truncated output is a masked store
 * of the last slab. Large outputs with rows back to back are written as whole 64-byte
 * lines with non-temporal stores (zstream below): that, not the arithmetic, is what
 * brings 4 and 8 columns under the time of a copy, which reads its destination first.
 * Measurements: benchmarks/NOTES.md, section simd. */
#include <stdlib.h>
#include <string.h>

#include "simd_kernel.h"
#include "arch.h"

#if !defined(ZORDER_NO_SIMD) && ZORDER_X86_64 && \
    ((defined(__clang__) && __clang_major__ >= 7) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define ZORDER_SIMD_BUILD 1
#else
#define ZORDER_SIMD_BUILD 0
#endif

#if ZORDER_SIMD_BUILD
#include <immintrin.h>

#define ZSIMD __attribute__((target("avx512f,avx512bw,avx512vbmi,gfni")))
#define ZSIMD_INLINE ZSIMD static inline __attribute__((always_inline))

const int zorder_simd_built = 1;

/* ---- tables, filled once by zorder_simd_init (plain C) ---------------------------- */

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

/* ---- helpers ---------------------------------------------------------------------- */

/* Bits [lo, lo+len) of a 64-bit mask; len may run past 64. */
static inline uint64_t span_mask(int lo, ptrdiff_t len)
{
    uint64_t hi_part = (lo + len >= 64) ? ~(uint64_t)0 : (((uint64_t)1 << (lo + len)) - 1);
    return hi_part & ~(((uint64_t)1 << lo) - 1);
}

/* dst - back as an address for a masked store whose first enabled byte is `back`
 * bytes into the register; the bytes before it are never accessed. */
static inline uint8_t *before(uint8_t *dst, ptrdiff_t back)
{
    return (uint8_t *)((uintptr_t)dst - (uintptr_t)back);
}

/* Width 8 with column c at byte 8c of a row and one row stride for all (a (N, n, 8)
 * block, any row stride): what the packed 4- and 8-column paths read a row at a time. */
static int is_packed(const zorder_column *cols, int n)
{
    int c;
    if (cols[0].width != 8)
        return 0;
    for (c = 0; c < n; c++)
        if (cols[c].row_stride != cols[0].row_stride || cols[c].data != cols[0].data + 8 * c)
            return 0;
    return 1;
}

/* Software prefetch a few blocks ahead of the loads: a small but steady gain over the
 * hardware prefetcher alone (2 x 8 B rows: 1.68 -> 1.45 ns/row in one run; 4 and 8
 * columns within noise). Prefetches never fault, so running past the end is harmless. */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 256
#endif

static inline void prefetch(const uint8_t *p)
{
    _mm_prefetch((const char *)p, _MM_HINT_T0);
}

/* Where the 8-byte pieces of one column are, for blocks of 8 rows. Block b starts at
 * data + (b / m) * step, and its row i at offset[b % m][i] from there: plain rows have
 * m = 1 and offset[0][i] = i * row_stride. Columns of width 8m read in full into rows
 * back to back are seen as m times as many rows of width 8 (see zorder_simd_rows), and
 * then a block's pattern repeats every m blocks. */
typedef struct {
    const uint8_t *data;
    ptrdiff_t step;
    int m;
    int contiguous;   /* row i of every block at 8i: one plain load */
    long long offset[8][8];
} zsource;

/* The 8 bytes at a in the low qword, the 8 at b in the high one (plain loads). */
ZSIMD_INLINE __m128i load_two_rows(const uint8_t *a, const uint8_t *b)
{
    long long high;
    memcpy(&high, b, 8);
    return _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(const void *)a), high, 1);
}

/* 8 rows (R valid) of one column's 8 bytes at byte `off`, row i in qword i. */
ZSIMD_INLINE __m512i load_column(const zsource *col, ptrdiff_t r0, int R, ptrdiff_t off)
{
    const ptrdiff_t b = r0 >> 3, q = col->m == 1 ? b : b / col->m, t = b - q * col->m;
    const uint8_t *base = col->data + q * col->step + off;
    __mmask8 k = (__mmask8)((1u << R) - 1);
    if (col->contiguous) {
        base = col->data + 64 * b + off;  /* = q * step + offset[t][0] */
        return R == 8 ? (prefetch(base + PREFETCH_AHEAD), _mm512_loadu_si512((const void *)base))
                      : _mm512_maskz_loadu_epi64(k, (const void *)base);
    }
    if (R == 8) {
        /* eight plain loads, not a gather: on Zen 4 a gather of rows 16 bytes apart ran at
         * half of avx2's time or worse (benchmarks/NOTES.md, "simd on strided columns") */
        const long long *o = col->offset[t];
        const __m128i r01 = load_two_rows(base + o[0], base + o[1]);
        const __m128i r23 = load_two_rows(base + o[2], base + o[3]);
        const __m128i r45 = load_two_rows(base + o[4], base + o[5]);
        const __m128i r67 = load_two_rows(base + o[6], base + o[7]);
        return _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(r01), r23, 1)),
            _mm256_inserti128_si256(_mm256_castsi128_si256(r45), r67, 1), 1);
    }
    return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), k,
                                       _mm512_loadu_si512((const void *)col->offset[t]),
                                       (const void *)base, 1);
}


/* ---- streaming output ------------------------------------------------------------- */

/* When the output rows are back to back and large, the kernels hand their registers,
 * in output order, to this writer: it realigns them to 64-byte lines (numpy's buffers
 * are 16-byte aligned) with one vpermt2b and writes whole lines with non-temporal
 * stores, so the destination is never read for ownership (measured: 8 x 8 B went from
 * 1.2x to 0.7x the time of np.copyto). The partial lines at both ends are ordinary
 * masked stores, so no byte outside the call's rows is touched and threads writing
 * neighbouring row ranges stay apart. Below STREAM_MIN bytes ordinary stores are kept:
 * measured on the Intel Xeon, they win up to about 2 MiB (0.8 vs 1.0 ns/row at 2x8B)
 * and lose from 30 MiB (8x8B: 10.6 vs 5.4 ns/row); a small result is also likely read
 * again soon, from the cache. On the AMD EPYC (Zen 4) streaming already won from 4 MiB,
 * where 16 MiB was the threshold: 2x8B -> 16 on 280,000 rows (4 MiB) 0.61 vs 0.76 ns/row,
 * 4x8B on 400,000 (12 MiB) 1.44 vs 2.29, 2x8B on 1,000,000 (15 MiB) 0.83 vs 1.18; the
 * avx2 backend streams from 4 MiB too. */
#ifndef STREAM_MIN
#define STREAM_MIN ((ptrdiff_t)4 << 20)
#endif
ptrdiff_t zorder_simd_stream_min = STREAM_MIN;

typedef struct {
    uint8_t *line;   /* the next 64-byte-aligned line to write */
    __m512i prev;    /* the register put last */
    __m512i shift;   /* line = last `mis` bytes of prev, then the first 64 - mis of next */
    int mis;         /* start address mod 64 */
    int started;
} zstream;

ZSIMD_INLINE void stream_init(zstream *st, uint8_t *start)
{
    uint8_t idx[64];
    int i;
    st->mis = (int)((uintptr_t)start & 63);
    st->line = before(start, st->mis);
    for (i = 0; i < 64; i++)
        idx[i] = (uint8_t)(i < st->mis ? 64 - st->mis + i : 64 + i - st->mis);
    st->shift = _mm512_loadu_si512((const void *)idx);
    st->prev = _mm512_setzero_si512();
    st->started = 0;
}

ZSIMD_INLINE void stream_put(zstream *st, __m512i v)
{
    if (st->mis == 0) {
        _mm512_stream_si512((void *)st->line, v);
    } else {
        __m512i line = _mm512_permutex2var_epi8(st->prev, st->shift, v);
        if (st->started)
            _mm512_stream_si512((void *)st->line, line);
        else  /* the first line starts before the output */
            _mm512_mask_storeu_epi8((void *)st->line, (__mmask64)span_mask(st->mis, 64), line);
    }
    st->line += 64;
    st->prev = v;
    st->started = 1;
}

/* Writes what is still carried and orders the non-temporal stores before any later
 * store (a thread's "done" included). Ordinary stores may follow for the tail. */
ZSIMD_INLINE void stream_finish(zstream *st)
{
    if (st->started && st->mis)
        _mm512_mask_storeu_epi8((void *)st->line, (__mmask64)span_mask(0, st->mis),
                                _mm512_permutex2var_epi8(st->prev, st->shift, st->prev));
    _mm_sfence();
}

/* ---- n = 8: transpose ------------------------------------------------------------- */

ZSIMD_INLINE void store_limited(uint8_t *dst, __m512i v, ptrdiff_t limit)
{
    if (limit >= 64)
        _mm512_storeu_si512((void *)dst, v);
    else
        _mm512_mask_storeu_epi8((void *)dst, (__mmask64)span_mask(0, limit), v);
}

ZSIMD static void rows_packed_8(const zorder_column *cols, ptrdiff_t size, ptrdiff_t nrows,
                                uint8_t *out, ptrdiff_t os)
{
    const __m512i idx = _mm512_loadu_si512((const void *)IDX8);
    const __m512i x = _mm512_set1_epi64((long long)X8_CONST);
    const uint8_t *src = cols[0].data;
    const ptrdiff_t s = cols[0].row_stride;
    ptrdiff_t r;
    if (size == 64 && os == 64 && nrows * 64 >= zorder_simd_stream_min) {
        zstream st;
        stream_init(&st, out);
        for (r = 0; r < nrows; r++) {
            __m512i v;
            prefetch(src + (r + 4) * s);
            v = _mm512_loadu_si512((const void *)(src + r * s));
            stream_put(&st, _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0));
        }
        stream_finish(&st);
        return;
    }
    if (size == 64) {
        for (r = 0; r < nrows; r++) {
            __m512i v;
            prefetch(src + (r + 4) * s);
            v = _mm512_loadu_si512((const void *)(src + r * s));
            v = _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0);
            _mm512_storeu_si512((void *)(out + r * os), v);
        }
        return;
    }
    for (r = 0; r < nrows; r++) {
        __m512i v;
        prefetch(src + (r + 4) * s);
        v = _mm512_loadu_si512((const void *)(src + r * s));
        v = _mm512_gf2p8affine_epi64_epi8(x, _mm512_permutexvar_epi8(idx, v), 0);
        store_limited(out + r * os, v, size);
    }
}

ZSIMD static void rows_cols_8(const zsource *cols, ptrdiff_t size, ptrdiff_t nrows,
                              uint8_t *out, ptrdiff_t os)
{
    const __m512i i1lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i i1hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m512i i2a = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i i2b = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    const __m512i i3[2] = {_mm512_loadu_si512((const void *)IDX8C[0]),
                           _mm512_loadu_si512((const void *)IDX8C[1])};
    const __m512i x = _mm512_set1_epi64((long long)X8_CONST);
    const ptrdiff_t nslabs = (size + 63) / 64;
    int streaming = size == 64 && os == 64 && nrows * 64 >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int c;
    if (streaming)
        stream_init(&st, out);
    for (r0 = 0; r0 < nrows; r0 += 8) {
        int R = nrows - r0 < 8 ? (int)(nrows - r0) : 8;
        if (streaming && R < 8) {
            stream_finish(&st);
            streaming = 0;
        }
        for (k = 0; k < nslabs; k++) {
            __m512i C[8], T[4][2], U[2][2][2];
            ptrdiff_t limit = size - 64 * k;
            int p, h, g, rr;
            for (c = 0; c < 8; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            /* stage 1: T[p][h] qword 2i+e = column 2p+e, row 4h+i */
            for (p = 0; p < 4; p++) {
                T[p][0] = _mm512_permutex2var_epi64(C[2 * p], i1lo, C[2 * p + 1]);
                T[p][1] = _mm512_permutex2var_epi64(C[2 * p], i1hi, C[2 * p + 1]);
            }
            /* stage 2: U[q][h][g] qword 4rr+cc = column 4q+cc, row 4h+2g+rr */
            for (p = 0; p < 2; p++)
                for (h = 0; h < 2; h++) {
                    U[p][h][0] = _mm512_permutex2var_epi64(T[2 * p][h], i2a, T[2 * p + 1][h]);
                    U[p][h][1] = _mm512_permutex2var_epi64(T[2 * p][h], i2b, T[2 * p + 1][h]);
                }
            /* stage 3 (fused with the lane gather) and the transpose, per row */
            for (h = 0; h < 2; h++)
                for (g = 0; g < 2; g++)
                    for (rr = 0; rr < 2; rr++) {
                        int r = 4 * h + 2 * g + rr;
                        __m512i a;
                        if (r >= R)
                            continue;
                        a = _mm512_permutex2var_epi8(U[0][h][g], i3[rr], U[1][h][g]);
                        a = _mm512_gf2p8affine_epi64_epi8(x, a, 0);
                        if (streaming)
                            stream_put(&st, a);
                        else
                            store_limited(out + (r0 + r) * os + 64 * k, a, limit);
                    }
        }
    }
    if (streaming)
        stream_finish(&st);
}

/* ---- n = 4: paired transpose ------------------------------------------------------ */

ZSIMD_INLINE __m512i pair4(__m512i a, __m512i xq, __m512i xs, __m512i sel)
{
    __m512i q = _mm512_gf2p8affine_epi64_epi8(xq, a, 0);
    __m512i s = _mm512_gf2p8affine_epi64_epi8(xs, _mm512_rol_epi64(a, 32), 0);
    return _mm512_ternarylogic_epi64(sel, q, s, 0xCA);  /* sel ? q : s */
}

/* Rows r and r+1 (if two) of a 2-row register: 32 bytes each, `limit` of them kept. */
ZSIMD_INLINE void store_pair(uint8_t *dst0, uint8_t *dst1, int two, __m512i v, ptrdiff_t limit)
{
    _mm512_mask_storeu_epi8((void *)dst0, (__mmask64)span_mask(0, limit < 32 ? limit : 32), v);
    if (two)
        _mm512_mask_storeu_epi8((void *)before(dst1, 32),
                                (__mmask64)span_mask(32, limit < 32 ? limit : 32), v);
}

ZSIMD static void rows_packed_4(const zorder_column *cols, ptrdiff_t size, ptrdiff_t nrows,
                                uint8_t *out, ptrdiff_t os)
{
    const __m512i idx = _mm512_loadu_si512((const void *)IDX4);
    const __m512i xq = _mm512_set1_epi64((long long)X4Q);
    const __m512i xs = _mm512_set1_epi64((long long)X4S);
    const __m512i sel = _mm512_set1_epi64((long long)M4SEL_CONST);
    const uint8_t *src = cols[0].data;
    const ptrdiff_t s = cols[0].row_stride;
    const ptrdiff_t even = nrows & ~(ptrdiff_t)1;
    ptrdiff_t r;
    if (s == 32 && os == 32 && size == 32 && nrows * 32 >= zorder_simd_stream_min) {
        zstream st;
        stream_init(&st, out);
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + r * 32 + PREFETCH_AHEAD);
            v = _mm512_loadu_si512((const void *)(src + r * 32));
            stream_put(&st, pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel));
        }
        stream_finish(&st);
    } else if (s == 32 && os == 32 && size == 32) {
        /* one contiguous block in, one out */
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + r * 32 + PREFETCH_AHEAD);
            v = _mm512_loadu_si512((const void *)(src + r * 32));
            v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
            _mm512_storeu_si512((void *)(out + r * 32), v);
        }
    } else {
        for (r = 0; r < even; r += 2) {
            __m512i v;
            prefetch(src + (r + 8) * s);
            prefetch(src + (r + 9) * s);
            v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(src + r * s)));
            v = _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i *)(src + (r + 1) * s)), 1);
            v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
            store_pair(out + r * os, out + (r + 1) * os, 1, v, size);
        }
    }
    if (even < nrows) {
        __m512i v = _mm512_maskz_loadu_epi8((__mmask64)0xFFFFFFFFu, (const void *)(src + even * s));
        v = pair4(_mm512_permutexvar_epi8(idx, v), xq, xs, sel);
        store_pair(out + even * os, NULL, 0, v, size);
    }
}

ZSIMD static void rows_cols_4(const zsource *cols, ptrdiff_t size, ptrdiff_t nrows,
                              uint8_t *out, ptrdiff_t os)
{
    const __m512i i1lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i i1hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    const __m512i i2[2] = {_mm512_loadu_si512((const void *)IDX4C[0]),
                           _mm512_loadu_si512((const void *)IDX4C[1])};
    const __m512i xq = _mm512_set1_epi64((long long)X4Q);
    const __m512i xs = _mm512_set1_epi64((long long)X4S);
    const __m512i sel = _mm512_set1_epi64((long long)M4SEL_CONST);
    const ptrdiff_t nslabs = (size + 31) / 32;
    int streaming = size == 32 && os == 32 && nrows * 32 >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int c;
    if (streaming)
        stream_init(&st, out);
    r0 = 0;
    if (size == 32 && os == 32 && cols[0].contiguous && cols[1].contiguous &&
        cols[2].contiguous && cols[3].contiguous) {
        /* whole blocks of full rows from contiguous columns: 4 rows of two columns per
         * register straight from two 32-byte loads, no first shuffle stage */
        const __m512i il[2] = {_mm512_loadu_si512((const void *)IDX4L[0]),
                               _mm512_loadu_si512((const void *)IDX4L[1])};
        for (; r0 + 8 <= nrows; r0 += 8) {
            int h, g;
            for (c = 0; c < 4; c++)
                prefetch(cols[c].data + 8 * r0 + PREFETCH_AHEAD);
            for (h = 0; h < 2; h++) {
                const ptrdiff_t o = 8 * r0 + 32 * h;
                __m512i x = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(cols[0].data + o))),
                    _mm256_loadu_si256((const __m256i *)(cols[1].data + o)), 1);
                __m512i y = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(cols[2].data + o))),
                    _mm256_loadu_si256((const __m256i *)(cols[3].data + o)), 1);
                for (g = 0; g < 2; g++) {
                    __m512i v = pair4(_mm512_permutex2var_epi8(x, il[g], y), xq, xs, sel);
                    if (streaming)
                        stream_put(&st, v);
                    else
                        _mm512_storeu_si512((void *)(out + (r0 + 4 * h + 2 * g) * 32), v);
                }
            }
        }
    }
    for (; r0 < nrows; r0 += 8) {
        int R = nrows - r0 < 8 ? (int)(nrows - r0) : 8;
        if (streaming && R < 8) {
            stream_finish(&st);
            streaming = 0;
        }
        for (k = 0; k < nslabs; k++) {
            __m512i C[4], T[2][2];
            ptrdiff_t limit = size - 32 * k;
            int p, h, g;
            for (c = 0; c < 4; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            /* T[p][h] qword 2i+e = column 2p+e, row 4h+i */
            for (p = 0; p < 2; p++) {
                T[p][0] = _mm512_permutex2var_epi64(C[2 * p], i1lo, C[2 * p + 1]);
                T[p][1] = _mm512_permutex2var_epi64(C[2 * p], i1hi, C[2 * p + 1]);
            }
            for (h = 0; h < 2; h++)
                for (g = 0; g < 2; g++) {
                    int r = 4 * h + 2 * g;
                    __m512i v;
                    if (r >= R)
                        continue;
                    v = _mm512_permutex2var_epi8(T[0][h], i2[g], T[1][h]);
                    v = pair4(v, xq, xs, sel);
                    if (streaming)
                        stream_put(&st, v);
                    else
                        store_pair(out + (r0 + r) * os + 32 * k, out + (r0 + r + 1) * os + 32 * k,
                                   r + 1 < R, v, limit);
                }
        }
    }
    if (streaming)
        stream_finish(&st);
}

/* ---- other n: spread -------------------------------------------------------------- */

ZSIMD_INLINE void spread_block(const int n, const __m512i *C, const __m512i *mat, __m512i *O)
{
    __m512i Z[8];
    int b, c, o, p;
    for (b = 0; b < n; b++) {
        __m512i z = _mm512_gf2p8affine_epi64_epi8(C[0], mat[8 * b], 0);
        /* three-way XORs: half the combining instructions */
        for (c = 1; c + 1 < n; c += 2)
            z = _mm512_ternarylogic_epi64(z, _mm512_gf2p8affine_epi64_epi8(C[c], mat[8 * b + c], 0),
                                          _mm512_gf2p8affine_epi64_epi8(C[c + 1], mat[8 * b + c + 1], 0),
                                          0x96);
        if (c < n)
            z = _mm512_xor_si512(z, _mm512_gf2p8affine_epi64_epi8(C[c], mat[8 * b + c], 0));
        Z[b] = z;
    }
    for (o = 0; o < n; o++) {
        __m512i acc = _mm512_setzero_si512();
        for (p = 0; 2 * p < n; p++) {
            const __m512i idx = _mm512_loadu_si512((const void *)XOUT_IDX[n][o][p]);
            __m512i t = 2 * p + 1 < n ? _mm512_permutex2var_epi8(Z[2 * p], idx, Z[2 * p + 1])
                                      : _mm512_permutexvar_epi8(idx, Z[2 * p]);
            acc = p == 0 ? t : _mm512_mask_blend_epi8((__mmask64)XOUT_MASK[n][o][p], acc, t);
        }
        O[o] = acc;
    }
}

/* 8 rows (R valid) of 8n interleaved bytes each, `limit` per row kept. */
ZSIMD_INLINE void store_spread(const int n, const __m512i *O, int R, uint8_t *dst,
                               ptrdiff_t os, ptrdiff_t limit)
{
    const int w = 8 * n;
    int o, r;
    if (os == w && limit >= w) {
        /* rows are contiguous: whole registers, the last ones masked for a tail */
        ptrdiff_t total = (ptrdiff_t)R * w;
        for (o = 0; o < n && 64 * o < total; o++) {
            if (total >= 64 * (o + 1))
                _mm512_storeu_si512((void *)(dst + 64 * o), O[o]);
            else
                _mm512_mask_storeu_epi8((void *)(dst + 64 * o),
                                        (__mmask64)span_mask(0, total - 64 * o), O[o]);
        }
        return;
    }
    if (limit > w)
        limit = w;
    for (r = 0; r < R; r++) {
        int off = w * r, first = off & 63;
        ptrdiff_t len1 = limit < 64 - first ? limit : 64 - first;
        uint8_t *d = dst + r * os;
        o = off >> 6;
        _mm512_mask_storeu_epi8((void *)before(d, first), (__mmask64)span_mask(first, len1), O[o]);
        if (limit > len1)
            _mm512_mask_storeu_epi8((void *)(d + len1), (__mmask64)span_mask(0, limit - len1),
                                    O[o + 1]);
    }
}

ZSIMD_INLINE void rows_spread(const int n, const zsource *cols, ptrdiff_t size,
                              ptrdiff_t nrows, uint8_t *out, ptrdiff_t os, int packed)
{
    __m512i mat[64];
    const ptrdiff_t w = 8 * n;
    const ptrdiff_t nslabs = (size + w - 1) / w;
    int streaming = size == w && os == w && nrows * w >= zorder_simd_stream_min;
    zstream st = {0};
    ptrdiff_t r0, k;
    int b, c, q;
    for (b = 0; b < n; b++)
        for (c = 0; c < n; c++)
            mat[8 * b + c] = _mm512_set1_epi64((long long)XMAT[n][b][c]);
    if (streaming)
        stream_init(&st, out);
    r0 = 0;
    if (size == w && os == w) {
        /* full rows back to back: whole blocks without the general loop's checks */
        int all_contiguous = 1;
        /* 2 columns packed in rows back to back: two plain loads and a qword permute
         * per column (column c of row i is qword 2i + c of the block) beat gathers a
         * little (1.42-1.56 vs 1.54-1.62 ns/row); for 3 columns they lost (3.0 vs 2.5). */
        const int picks = packed && n == 2 && cols[0].offset[0][1] == w;
        const __m512i pick0 = _mm512_set_epi64(7 * n, 6 * n, 5 * n, 4 * n, 3 * n, 2 * n, n, 0);
        for (c = 0; c < n; c++)
            all_contiguous &= cols[c].contiguous;
        for (; r0 + 8 <= nrows; r0 += 8) {
            __m512i C[8], O[8];
            if (picks) {
                const uint8_t *p = cols[0].data + w * r0;
                __m512i V[2];
                for (c = 0; c < n; c++) {
                    prefetch(p + 64 * c + PREFETCH_AHEAD);
                    V[c] = _mm512_loadu_si512((const void *)(p + 64 * c));
                }
                for (c = 0; c < n; c++) {
                    const __m512i idx = _mm512_add_epi64(pick0, _mm512_set1_epi64(c));
                    C[c] = _mm512_permutex2var_epi64(V[0], idx, V[1]);
                }
            } else if (all_contiguous) {
                for (c = 0; c < n; c++) {
                    const uint8_t *p = cols[c].data + 8 * r0;
                    prefetch(p + PREFETCH_AHEAD);
                    C[c] = _mm512_loadu_si512((const void *)p);
                }
            } else {
                for (c = 0; c < n; c++)
                    C[c] = load_column(&cols[c], r0, 8, 0);
            }
            spread_block(n, C, mat, O);
            for (q = 0; q < n; q++) {
                if (streaming)
                    stream_put(&st, O[q]);
                else
                    _mm512_storeu_si512((void *)(out + r0 * w + 64 * q), O[q]);
            }
        }
    }
    for (; r0 < nrows; r0 += 8) {
        int R = nrows - r0 < 8 ? (int)(nrows - r0) : 8;
        if (streaming && R < 8) {
            stream_finish(&st);
            streaming = 0;
        }
        for (k = 0; k < nslabs; k++) {
            __m512i C[8], O[8];
            /* Packed rows are gathered too: measured, gathers beat a plain load
             * and a qword permute per column at every n (3 x 8 B: 2.5 vs 3.6 ns/row). */
            for (c = 0; c < n; c++)
                C[c] = load_column(&cols[c], r0, R, 8 * k);
            spread_block(n, C, mat, O);
            if (streaming) {
                for (q = 0; q < n; q++)
                    stream_put(&st, O[q]);
            } else {
                store_spread(n, O, R, out + r0 * os + w * k, os, size - w * k);
            }
        }
    }
    if (streaming)
        stream_finish(&st);
}

#define SPREAD_N(N) \
    ZSIMD static void rows_spread_##N(const zsource *cols, ptrdiff_t size, \
                                      ptrdiff_t nrows, uint8_t *out, ptrdiff_t os, \
                                      int packed) \
    { rows_spread(N, cols, size, nrows, out, os, packed); }
SPREAD_N(2)
SPREAD_N(3)
SPREAD_N(5)
SPREAD_N(6)
SPREAD_N(7)

/* ---- entry ------------------------------------------------------------------------ */

/* The first `size` bytes of each of R rows, as 64-byte pieces (a memcpy call per row
 * cost more than the interleave). */
ZSIMD static void copy_prefixes(const uint8_t *src, ptrdiff_t src_stride, ptrdiff_t R,
                                ptrdiff_t size, uint8_t *dst, ptrdiff_t dst_stride)
{
    const __mmask64 last = (__mmask64)span_mask(0, size - 64 * ((size - 1) / 64));
    ptrdiff_t r, o;
    for (r = 0; r < R; r++) {
        const uint8_t *s = src + r * src_stride;
        uint8_t *d = dst + r * dst_stride;
        for (o = 0; o + 64 < size; o += 64)
            _mm512_storeu_si512((void *)(d + o), _mm512_loadu_si512((const void *)(s + o)));
        _mm512_mask_storeu_epi8((void *)(d + o), last, _mm512_maskz_loadu_epi8(last, (const void *)(s + o)));
    }
}

/* Truncated output of 2, 3, 5, 6 or 7 columns 16 to 64 bytes wide, or 2, 3, 6 or 7 columns
 * 8 bytes wide: the full rows of a chunk (the fast rows-of-width-8 path) into a small buffer,
 * then each row's first `size` bytes copied out. Cheaper than per-slab gathers and per-row
 * masked stores (Intel Xeon: 2x16B cut by a byte 7.7 -> 2.6 ns/row, 2x32B 17.6 -> 12.4;
 * AMD EPYC, Zen 4, in a C loop: 2x8B->8 2.5 -> 1.6, 3x8B->8 3.0 -> 2.6). Cutting wider
 * columns to the 8-byte pieces a short output needs lost (strided loads: 2x16B->8 3.1 ->
 * 5.1). Returns 0 if the buffer cannot be had. */
#define WIDE_CHUNK_ROWS 512

static int truncated_wide_rows(const zorder_column *cols, int n, ptrdiff_t size,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    const ptrdiff_t full = n * cols[0].width;
    uint8_t *tmp = (uint8_t *)malloc((size_t)(WIDE_CHUNK_ROWS * full));
    zorder_column part[8];
    ptrdiff_t r0;
    int c;
    if (tmp == NULL)
        return 0;
    for (r0 = 0; r0 < nrows; r0 += WIDE_CHUNK_ROWS) {
        const ptrdiff_t R = nrows - r0 < WIDE_CHUNK_ROWS ? nrows - r0 : WIDE_CHUNK_ROWS;
        for (c = 0; c < n; c++) {
            part[c] = cols[c];
            part[c].data = cols[c].data + r0 * cols[c].row_stride;
        }
        zorder_simd_rows(part, n, full, R, tmp, full);
        copy_prefixes(tmp, full, R, size, out + r0 * out_stride, out_stride);
    }
    free(tmp);
    return 1;
}

int zorder_simd_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    zsource src[8];
    ptrdiff_t width, r, m;
    int c, n, virt, packed;
    if (ncols < 1 || ncols > 8)
        return 0;
    n = (int)ncols;
    width = cols[0].width;
    if (width < 8 || width % 8)
        return 0;
    for (c = 1; c < n; c++)
        if (cols[c].width != width)
            return 0;
    if (size <= 0 || nrows <= 0)
        return 1;
    if (n == 1) {
        /* one column interleaves to itself */
        for (r = 0; r < nrows; r++)
            memcpy(out + r * out_stride, cols[0].data + r * cols[0].row_stride, (size_t)size);
        return 1;
    }
    /* Read in full into rows back to back, columns of width 8m are m times as many
     * rows of width 8: output row r's piece k (bytes 8nk..) depends only on bytes 8k..
     * of each column, and sits where virtual row r*m + k's output would. The block
     * patterns repeat every m blocks; up to m = 8 (64-byte columns) they are kept. */
    m = width / 8;
    /* (4 and 8 columns keep their slab loops, which stored truncated rows as fast or
     * faster in an A/B run: 8x16B 22.9 vs 26.1 ns/row, 4x24B 17.9 vs 25.2 from a block;
     * so do 5 columns of 8 bytes: 5x8B->20 4.9 vs 5.4 on an AMD EPYC, Zen 4. 6 and 7
     * columns of 8 bytes do not: their slabs' spread costs n*n affines per 8 rows for
     * every slab, the whole rows' 8-row blocks less, in one process alternating builds,
     * 1M rows, ns/row: 6x8B->12 10.4 vs 6.9, 6x8B->40 11.7 vs 7.7, 7x8B->10 13.1 vs 7.7,
     * 7x8B->48 10.6 vs 8.9.) */
    if ((m > 1 || n <= 3 || n == 6 || n == 7) && m <= 8 && size < n * width && nrows >= 8)
        return truncated_wide_rows(cols, n, size, nrows, out, out_stride);
    virt = m > 1 && m <= 8 && size == n * width && (nrows == 1 || out_stride == size);
    for (c = 0; c < n; c++) {
        const long long s = (long long)cols[c].row_stride;
        long long q, piece;
        int t, i;
        src[c].data = cols[c].data;
        src[c].m = virt ? (int)m : 1;
        src[c].step = 8 * (ptrdiff_t)s;
        src[c].contiguous = 1;
        /* virtual row v = 8t + i of a group of m blocks is row v / m, piece v % m
         * (counted, not divided: this runs on every call) */
        q = piece = 0;
        for (t = 0; t < src[c].m; t++)
            for (i = 0; i < 8; i++) {
                long long o = virt ? q * s + 8 * piece : i * s;
                src[c].offset[t][i] = o;
                if (o != 8 * (8 * t + i))
                    src[c].contiguous = 0;
                if (++piece == m) {
                    piece = 0;
                    q++;
                }
            }
    }
    if (virt) {
        nrows *= m;
        size = out_stride = 8 * n;
    }
    packed = !virt && is_packed(cols, n);
    switch (n) {
    case 8:
        if (packed)
            rows_packed_8(cols, size, nrows, out, out_stride);
        else
            rows_cols_8(src, size, nrows, out, out_stride);
        break;
    case 4:
        if (packed)
            rows_packed_4(cols, size, nrows, out, out_stride);
        else
            rows_cols_4(src, size, nrows, out, out_stride);
        break;
    case 2: rows_spread_2(src, size, nrows, out, out_stride, packed); break;
    case 3: rows_spread_3(src, size, nrows, out, out_stride, packed); break;
    case 5: rows_spread_5(src, size, nrows, out, out_stride, packed); break;
    case 6: rows_spread_6(src, size, nrows, out, out_stride, packed); break;
    default: rows_spread_7(src, size, nrows, out, out_stride, packed); break;
    }
    return 1;
}

/* ---- narrow ragged rows put together (zorder_seg_narrow's assembly) ---------------- */

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

/* zorder_slice_fn: blocks of R = (64 - w) / st + 1 rows, whose bytes lie within 64, one
 * masked load, one vpermb and one masked store of R * w bytes each (the compiler's loops
 * for these byte gathers were a fifth of 1+2+3+4 -> 10 after the assembly above). Takes
 * rows up to 64 bytes apart (w <= st <= 64), so it also cuts whole rows in scratch to
 * their first w bytes (zorder_uniform_rows_cut). */
ZSIMD ptrdiff_t zorder_simd_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows,
                                  ptrdiff_t w, ptrdiff_t st)
{
    uint8_t ix[64];
    ptrdiff_t R, r;
    int o;
    __m512i idx;
    __mmask64 load, store;
    if (w < 1 || st < w || st > 64)
        return 0;
    R = (64 - w) / st + 1;
    if (R * w > 64)
        R = 64 / w;
    if (rows < R)
        return 0;
    for (o = 0; o < 64; o++)
        ix[o] = (uint8_t)(o < R * w ? (o / w) * st + o % w : 0);
    idx = _mm512_loadu_si512((const void *)ix);
    load = (__mmask64)span_mask(0, (R - 1) * st + w);
    store = (__mmask64)span_mask(0, R * w);
    for (r = 0; r + R <= rows; r += R)
        _mm512_mask_storeu_epi8((void *)(dst + r * w), store,
                                _mm512_permutexvar_epi8(idx, _mm512_maskz_loadu_epi8(
                                                                 load, (const void *)(src + r * st))));
    return r;
}

/* ---- squeeze: zero columns out of a padded many-column interleave ------------------ */

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

#else  /* no AVX-512 intrinsics in this compiler, or not x86-64 */

const int zorder_simd_built = 0;
ptrdiff_t zorder_simd_stream_min = 0;

void zorder_simd_init(void) {}

ptrdiff_t zorder_simd_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out)
{
    (void)pieces; (void)npieces; (void)size; (void)rows; (void)out;
    return 0;
}

ptrdiff_t zorder_simd_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st)
{
    (void)dst; (void)src; (void)rows; (void)w; (void)st;
    return 0;
}

int zorder_simd_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

void zorder_simd_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)src; (void)k; (void)nb; (void)w; (void)limit; (void)rows; (void)out; (void)out_stride;
}

#endif
