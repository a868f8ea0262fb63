/* AVX2 backend: the uniform kernel on 256-bit registers, for x86-64 CPUs with AVX2 but
 * without the simd backend's AVX-512 VBMI + GFNI (Intel Haswell to Comet Lake, Alder Lake
 * and later client cores, AMD Zen 1-3).
 *
 * Every function using AVX2 carries a target attribute instead of the file being
 * compiled with -mavx2, so nothing else (the module's import included) can execute it;
 * avx2.pyx calls in only after CPUID and XGETBV say AVX2 runs (zorder.cpu.usable).
 *
 * As in simd_kernel.c, output bytes [8k*s, 8k*(s+1)) of a row depend only on bytes
 * [8s, 8s+8) of each of the k columns (a "slab"), so the kernel works on blocks of 4 rows
 * of one slab: register X[c] holds the 8 bytes of column c of the 4 rows, one per qword.
 * Columns of width 8m with rows back to back (and output rows back to back) are taken
 * as m times as many rows of width 8, so the loads are plain 32-byte loads.
 *
 * 1. Gather (vpunpck{l,h}{bw,wd,dq}): byte j of each column side by side, so a 64-bit
 *    lane holds K column bytes of each of 8/K consecutive byte indices j (K = 2, 4, 8).
 * 2. Bit permutation of each 64-bit lane as a few delta swaps (shift, xor, and, shift,
 *    xor): with a bit's position written as 6 index bits (byte, bit), the interleave is
 *    a permutation of those index bits, e.g. the 8-column case swaps (column, level) into
 *    (level, column): the 8x8 bit transpose. Each swap exchanges two index bits (or
 *    exchanges and complements both); the sequences below were found by a search over
 *    such swaps and are checked by every test vector.
 * 3. k = 3, 5, 6, 7 run as K = 4 or 8 with zero columns; the K - k zero bits of every
 *    level are then squeezed out in three shift-and-or steps (fields of K bits, then
 *    2K, then 4K), and vpshufb/vpermd pack the k live bytes of each group.
 * 4. vperm2i128 puts each row's bytes together before the stores.
 * A width that is not a multiple of 8 runs its whole slabs here and its last bytes on the
 * caller's fallback kernel (or, for rows back to back, as rows of 8: segments.h). */
#include <stdlib.h>
#include <string.h>

#include "avx2_kernel.h"
#include "arch.h"

#if !defined(ZORDER_NO_AVX2) && ZORDER_X86_64 && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5))
#define ZORDER_AVX2_BUILD 1
#else
#define ZORDER_AVX2_BUILD 0
#endif

#if ZORDER_AVX2_BUILD
#include <immintrin.h>

#define ZAVX2 __attribute__((target("avx2")))
#define ZAVX2_INLINE ZAVX2 static inline __attribute__((always_inline))

const int zorder_avx2_built = 1;

/* ---- tables, filled once by zorder_avx2_init (plain C) ---------------------------- */

/* Squeezing k live bits out of K-bit fields, step s: fields of (K << s) bits pair up;
 * CMASK[k][s][0] keeps the upper one's live bits, [1] the lower one's, which move up by
 * (K - k) << s. The live bits of a field are its top ones (the lanes hold the stream
 * most significant bit first). */
static uint64_t CMASK[9][3][2];
/* vpshufb indices taking the k live bytes of each group to the front of each 128-bit
 * lane (the group's stream starts at its top byte). */
static uint8_t PACK[9][32];

static int group_k(int k)
{
    return k <= 2 ? 2 : k <= 4 ? 4 : 8;
}

void zorder_avx2_init(void)
{
    int b, k, s, e, g, i;
    memset(CMASK, 0, sizeof CMASK);
    for (k = 3; k <= 7; k++) {
        const int K = group_k(k);
        if (k == 4)
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
            for (e = 0; e < 2; e++) {
                if (K == 8) {
                    for (b = 0; b < k; b++)
                        PACK[k][i + e * k + b] = (uint8_t)(8 * e + 7 - b);
                } else {
                    /* two groups per lane: group g in bytes 4g..4g+3 */
                    for (g = 0; g < 2; g++)
                        for (b = 0; b < k; b++)
                            PACK[k][i + 2 * k * e + k * g + b] = (uint8_t)(8 * e + 4 * g + 3 - b);
                }
            }
    }
}

/* ---- bit permutations ------------------------------------------------------------- */

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

ZAVX2_INLINE __m256i t4_padded(__m256i x)
{
    x = ZSW(x, 0, 1, 0);
    x = ZSW(x, 0, 2, 1);
    x = ZSW(x, 0, 3, 0);
    return ZSW(x, 0, 4, 1);
}

ZAVX2_INLINE __m256i t2_exact(__m256i x)
{
    x = ZSW(x, 0, 1, 0);
    x = ZSW(x, 0, 2, 0);
    return ZSW(x, 1, 3, 0);
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

/* ---- blocks of 4 rows ------------------------------------------------------------- */

/* nt: non-temporal stores (16-byte aligned p), so the destination lines are not read
 * for ownership first: what a copy pays and a large interleave need not. */
ZAVX2_INLINE void st32(uint8_t *p, __m256i v, const int nt)
{
    if (nt) {
        _mm_stream_si128((__m128i *)(void *)p, _mm256_castsi256_si128(v));
        _mm_stream_si128((__m128i *)(void *)(p + 16), _mm256_extracti128_si256(v, 1));
    } else {
        _mm256_storeu_si256((__m256i *)(void *)p, v);
    }
}

ZAVX2_INLINE void st16(uint8_t *p, __m128i v)
{
    _mm_storeu_si128((__m128i *)(void *)p, v);
}

/* 24 bytes: the first 12 of each 128-bit lane (vpermd), as 16 + 8. */
ZAVX2_INLINE void st24(uint8_t *p, __m256i v)
{
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(v));
    _mm_storel_epi64((__m128i *)(void *)(p + 16), _mm256_extracti128_si256(v, 1));
}

/* k = 2: one unpack gathers byte j of both columns; a 64-bit lane is 4 groups. */
ZAVX2_INLINE void block2(const __m256i *X, uint8_t *dst, ptrdiff_t os, const int nt)
{
    /* lane 0 of A[p] is row p, lane 1 row p + 2 */
    const __m256i a0 = t2_exact(_mm256_unpacklo_epi8(X[0], X[1]));
    const __m256i a1 = t2_exact(_mm256_unpackhi_epi8(X[0], X[1]));
    if (os == 16) {
        st32(dst, _mm256_permute2x128_si256(a0, a1, 0x20), nt);
        st32(dst + 32, _mm256_permute2x128_si256(a0, a1, 0x31), nt);
    } else {
        st16(dst, _mm256_castsi256_si128(a0));
        st16(dst + os, _mm256_castsi256_si128(a1));
        st16(dst + 2 * os, _mm256_extracti128_si256(a0, 1));
        st16(dst + 3 * os, _mm256_extracti128_si256(a1, 1));
    }
}

/* k = 3, 4: a 64-bit lane is 2 groups of 4 column bytes. */
ZAVX2_INLINE void block4(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                         const int nt, const zsqueeze *sq)
{
    __m256i Y[4], A[2][2], B[2][2];
    int c, q, p, h;
    for (c = 0; c < 4; c++)   /* padded: columns reversed, the zero one first */
        Y[c] = k == 4 ? X[c] : (3 - c < k ? X[3 - c] : _mm256_setzero_si256());
    for (q = 0; q < 2; q++) {
        A[q][0] = _mm256_unpacklo_epi8(Y[2 * q], Y[2 * q + 1]);
        A[q][1] = _mm256_unpackhi_epi8(Y[2 * q], Y[2 * q + 1]);
    }
    /* B[p][h]: lane 0 = row p, byte indices 4h..4h+3; lane 1 = row p + 2 */
    for (p = 0; p < 2; p++) {
        B[p][0] = _mm256_unpacklo_epi16(A[0][p], A[1][p]);
        B[p][1] = _mm256_unpackhi_epi16(A[0][p], A[1][p]);
        for (h = 0; h < 2; h++)
            B[p][h] = k == 4 ? t4_exact(B[p][h]) : t4_padded(B[p][h]);
    }
    if (k == 3 && os == 24) {
        /* rows back to back: the 4 rows' 96 bytes as 3 whole registers. Row r's 24 bytes
         * are dwords 0-2 and 4-6 of S[r]; vpermd + vpblendd lay them end to end. */
        __m256i S[4];
        for (p = 0; p < 2; p++) {
            S[p] = squeeze(_mm256_permute2x128_si256(B[p][0], B[p][1], 0x20), k);
            S[p + 2] = squeeze(_mm256_permute2x128_si256(B[p][0], B[p][1], 0x31), k);
        }
        st32(dst, _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(S[0], _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 0, 0)),
            _mm256_permutevar8x32_epi32(S[1], _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 0, 1)), 0xC0), nt);
        st32(dst + 32, _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(S[1], _mm256_setr_epi32(2, 4, 5, 6, 0, 0, 0, 0)),
            _mm256_permutevar8x32_epi32(S[2], _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 4)), 0xF0), nt);
        st32(dst + 64, _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(S[2], _mm256_setr_epi32(5, 6, 0, 0, 0, 0, 0, 0)),
            _mm256_permutevar8x32_epi32(S[3], _mm256_setr_epi32(0, 0, 0, 1, 2, 4, 5, 6)), 0xFC), nt);
        return;
    }
    for (p = 0; p < 2; p++) {
        const __m256i r0 = _mm256_permute2x128_si256(B[p][0], B[p][1], 0x20);
        const __m256i r2 = _mm256_permute2x128_si256(B[p][0], B[p][1], 0x31);
        if (k == 4) {
            st32(dst + p * os, r0, nt);
            st32(dst + (p + 2) * os, r2, nt);
        } else {
            st24(dst + p * os, squeeze(r0, k));
            st24(dst + (p + 2) * os, squeeze(r2, k));
        }
    }
}

/* k = 5..8: a 64-bit lane is one group of 8 column bytes. For k = 5 and 7 each row's
 * last 16-byte store runs 16 - 2k bytes past the row: the caller gives room for that,
 * and rows are stored in order so every such byte is written again by the next row. */
ZAVX2_INLINE void block8(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                         const int nt, const zsqueeze *sq)
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
                st32(d + 32 * h, V[r][h], nt);
            } else if (k == 6) {
                st24(d + 24 * h, squeeze(V[r][h], k));
            } else {
                const __m256i v = squeeze(V[r][h], k);
                st16(d + 4 * k * h, _mm256_castsi256_si128(v));
                st16(d + (4 * h + 2) * k, _mm256_extracti128_si256(v, 1));
            }
        }
}

/* nt only where every store is st32 (k = 2 and 3 with rows back to back, 4, 8). */
ZAVX2_INLINE void zblock_nt(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                            const int nt, const zsqueeze *sq)
{
    if (k == 2)
        block2(X, dst, os, nt);
    else if (k <= 4)
        block4(k, X, dst, os, nt, sq);
    else
        block8(k, X, dst, os, nt, sq);
}

#define zblock(k, X, dst, os) zblock_nt(k, X, dst, os, 0, &sq)

/* ---- row loops -------------------------------------------------------------------- */

ZAVX2_INLINE uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define AHEAD 512

/* Outputs of at least this many bytes (rows back to back) use non-temporal stores: they
 * no longer fit the caches, and the stores skip reading the lines first. */
ptrdiff_t zorder_avx2_stream_min = (ptrdiff_t)4 << 20;

/* Rows [0, nrows) of slabs [0, m) of k columns (bytes [0, 8m) of each column row, any
 * strides), writing exactly 8km bytes per output row. */
ZAVX2_INLINE void rows_k(const int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t os)
{
    const ptrdiff_t rs = 8 * k;                 /* output bytes of one slab */
    const int spill = k == 5 || k == 7;         /* stores past a row's end: see block8 */
    uint8_t stage[4 * 64 + 16];
    __m256i X[8];
    zsqueeze sq;
    ptrdiff_t r0, s, b;
    int c, i, contiguous = os == rs * m;
    if (k != 2 && k != 4 && k != 8)
        squeeze_init(&sq, k);
    for (c = 0; c < k; c++)
        contiguous &= cols[c].row_stride == 8 * m;
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    if (contiguous) {
        /* rows of 8 bytes back to back, in and out: plain loads, rows of 8k bytes */
        const ptrdiff_t n = nrows * m, nb = n / 4, R = n - 4 * nb;
        b = 0;
        if ((k <= 4 || k == 8) && ((uintptr_t)out & 15) == 0
            && n * rs >= zorder_avx2_stream_min) {
            for (; b < nb; b++) {
                for (c = 0; c < k; c++) {
                    const uint8_t *p = cols[c].data + 32 * b;
                    _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                    X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
                }
                zblock_nt(k, X, out + 4 * rs * b, rs, 1, &sq);
            }
            _mm_sfence();
        }
        for (; b < nb; b++) {
            for (c = 0; c < k; c++) {
                const uint8_t *p = cols[c].data + 32 * b;
                _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
            }
            if (spill && b == nb - 1) {
                zblock(k, X, stage, rs);
                memcpy(out + 4 * rs * b, stage, (size_t)(4 * rs));
            } else {
                zblock(k, X, out + 4 * rs * b, rs);
            }
        }
        if (R) {
            uint8_t buf[8][32];
            for (c = 0; c < k; c++) {
                memset(buf[c], 0, 32);
                memcpy(buf[c], cols[c].data + 32 * nb, (size_t)(8 * R));
                X[c] = _mm256_loadu_si256((const __m256i *)(const void *)buf[c]);
            }
            zblock(k, X, stage, rs);
            memcpy(out + 4 * rs * nb, stage, (size_t)(R * rs));
        }
        return;
    }
    for (r0 = 0; r0 < nrows; r0 += 4) {
        const int R = nrows - r0 < 4 ? (int)(nrows - r0) : 4;
        for (s = 0; s < m; s++) {
            for (c = 0; c < k; c++) {
                const ptrdiff_t st = cols[c].row_stride;
                const uint8_t *p = cols[c].data + r0 * st + 8 * s;
                if (R == 4) {
                    _mm_prefetch((const char *)(p + 8 * st), _MM_HINT_T0);
                    X[c] = _mm256_set_epi64x((long long)ld64(p + 3 * st), (long long)ld64(p + 2 * st),
                                             (long long)ld64(p + st), (long long)ld64(p));
                } else {
                    uint64_t v[4] = {0, 0, 0, 0};
                    for (i = 0; i < R; i++)
                        v[i] = ld64(p + i * st);
                    X[c] = _mm256_set_epi64x((long long)v[3], (long long)v[2], (long long)v[1],
                                             (long long)v[0]);
                }
            }
            if (R == 4 && !spill) {
                zblock(k, X, out + r0 * os + s * rs, os);
            } else {
                zblock(k, X, stage, rs);
                for (i = 0; i < R; i++)
                    memcpy(out + (r0 + i) * os + s * rs, stage + i * rs, (size_t)rs);
            }
        }
    }
}

/* One function per k, so each gets its own registers and unrolled blocks. */
#define ROWS_K(K) \
    ZAVX2 static void rows_##K(const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows, \
                               uint8_t *out, ptrdiff_t os) \
    { rows_k(K, cols, m, nrows, out, os); }
ROWS_K(2)
ROWS_K(3)
ROWS_K(4)
ROWS_K(5)
ROWS_K(6)
ROWS_K(7)
ROWS_K(8)

static void rows_any(int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                     uint8_t *out, ptrdiff_t os)
{
    switch (k) {
    case 2: rows_2(cols, m, nrows, out, os); break;
    case 3: rows_3(cols, m, nrows, out, os); break;
    case 4: rows_4(cols, m, nrows, out, os); break;
    case 5: rows_5(cols, m, nrows, out, os); break;
    case 6: rows_6(cols, m, nrows, out, os); break;
    case 7: rows_7(cols, m, nrows, out, os); break;
    default: rows_8(cols, m, nrows, out, os); break;
    }
}

/* n (1, 2 or 4) bytes at p as the low bytes of an integer. */
ZAVX2_INLINE uint64_t ld_prefix(const uint8_t *p, const int n)
{
    uint32_t v32;
    uint16_t v16;
    if (n == 4) {
        memcpy(&v32, p, 4);
        return v32;
    }
    if (n == 2) {
        memcpy(&v16, p, 2);
        return v16;
    }
    return *p;
}

/* Rows truncated to the first `need` (1, 2 or 4) bytes of each column, output rows back
 * to back (size = k * need = out_stride): G = 8 / need rows make one row of 8 bytes per
 * column (their prefixes side by side), whose 8k output bytes are those G rows' outputs
 * in order. So a block of 4 such rows is 4G real rows on the full-width block, with no
 * work thrown away. Returns the rows done (a multiple of 4G). */
ZAVX2_INLINE ptrdiff_t prefix_rows_k(const int k, const int need, const zorder_column *cols,
                                     ptrdiff_t nrows, uint8_t *out)
{
    const int G = 8 / need;
    const ptrdiff_t step = 4 * G, rs = 8 * k;
    __m256i X[8];
    zsqueeze sq;
    ptrdiff_t r0;
    int c, v, i;
    if (k != 2 && k != 4 && k != 8)
        squeeze_init(&sq, k);
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    for (r0 = 0; r0 + step <= nrows; r0 += step) {
        for (c = 0; c < k; c++) {
            const ptrdiff_t st = cols[c].row_stride;
            const uint8_t *p = cols[c].data + r0 * st;
            uint64_t w[4];
            _mm_prefetch((const char *)(p + 2 * step * st), _MM_HINT_T0);
            for (v = 0; v < 4; v++) {
                uint64_t x = 0;
                for (i = 0; i < G; i++)
                    x |= ld_prefix(p + (v * G + i) * st, need) << (8 * need * i);
                w[v] = x;
            }
            X[c] = _mm256_set_epi64x((long long)w[3], (long long)w[2], (long long)w[1],
                                     (long long)w[0]);
        }
        zblock(k, X, out + r0 * k * need, rs);
    }
    return r0;
}

#define PREFIX_K(K) \
    ZAVX2 static ptrdiff_t prefix_rows_##K(const zorder_column *cols, int need, \
                                           ptrdiff_t nrows, uint8_t *out) \
    { \
        return need == 4 ? prefix_rows_k(K, 4, cols, nrows, out) \
               : need == 2 ? prefix_rows_k(K, 2, cols, nrows, out) \
               : prefix_rows_k(K, 1, cols, nrows, out); \
    }
PREFIX_K(2)
PREFIX_K(3)
PREFIX_K(4)
PREFIX_K(6)
PREFIX_K(8)

static ptrdiff_t prefix_any(int k, const zorder_column *cols, int need, ptrdiff_t nrows,
                            uint8_t *out)
{
    switch (k) {
    case 2: return prefix_rows_2(cols, need, nrows, out);
    case 3: return prefix_rows_3(cols, need, nrows, out);
    case 4: return prefix_rows_4(cols, need, nrows, out);
    case 6: return prefix_rows_6(cols, need, nrows, out);
    case 8: return prefix_rows_8(cols, need, nrows, out);
    default: return 0;   /* 5 and 7: their blocks store past a row (block8) */
    }
}

/* Truncated rows ending inside a slab: the whole slabs of a chunk of rows into scratch,
 * then each row's first `size` bytes. */
#define CHUNK_BYTES (32 << 10)

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t width, need, whole, slabs, r0, r;
    int c;
    if (k < 2 || k > 8 || nrows < 4)
        return 0;
    if (size <= 0)
        return 1;
    width = cols[0].width;
    need = (size + k - 1) / k;   /* bytes of each column the rows use */
    whole = need / 8;
    slabs = (need + 7) / 8;
    if (size == 8 * k * whole) {
        rows_any(k, cols, whole, nrows, out, out_stride);
        return 1;
    }
    if ((need == 1 || need == 2 || need == 4) && size == k * need && out_stride == size) {
        ptrdiff_t done = prefix_any(k, cols, (int)need, nrows, out);
        if (done == nrows)
            return 1;
        if (done > 0) {
            /* the rows left (fewer than 32) as a call of their own */
            for (c = 0; c < k; c++) {
                view[c] = cols[c];
                view[c].data = cols[c].data + done * cols[c].row_stride;
            }
            if (!zorder_avx2_uniform(view, k, size, nrows - done, out + done * size,
                                     out_stride, fallback))
                fallback(view, k, size, nrows - done, out + done * size, out_stride);
            return 1;
        }
    }
    if (8 * slabs <= width) {
        const ptrdiff_t full = 8 * k * slabs;
        const ptrdiff_t chunk = CHUNK_BYTES / full + 4;
        uint8_t *tmp = (uint8_t *)malloc((size_t)(chunk * full));
        if (tmp == NULL)
            return 0;
        for (r0 = 0; r0 < nrows; r0 += chunk) {
            const ptrdiff_t R = nrows - r0 < chunk ? nrows - r0 : chunk;
            for (c = 0; c < k; c++) {
                view[c] = cols[c];
                view[c].data = cols[c].data + r0 * cols[c].row_stride;
            }
            rows_any(k, view, slabs, R, tmp, full);
            for (r = 0; r < R; r++)
                zorder_copy_short(out + (r0 + r) * out_stride, tmp + r * full, size);
        }
        free(tmp);
        return 1;
    }
    if (whole == 0)
        return 0;
    /* the whole slabs here, the bytes after them (fewer than 8 per column) on fallback */
    rows_any(k, cols, whole, nrows, out, out_stride);
    for (c = 0; c < k; c++) {
        view[c] = cols[c];
        view[c].data = cols[c].data + 8 * whole;
        view[c].width = width - 8 * whole;
    }
    fallback(view, k, size - 8 * k * whole, nrows, out + 8 * k * whole, out_stride);
    return 1;
}

#else  /* not x86-64, or a compiler without AVX2 target attributes */

const int zorder_avx2_built = 0;
ptrdiff_t zorder_avx2_stream_min = 0;

void zorder_avx2_init(void) {}

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    (void)cols; (void)k; (void)size; (void)nrows; (void)out; (void)out_stride; (void)fallback;
    return 0;
}

#endif
