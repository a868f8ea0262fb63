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
 *    lane holds K column bytes of each of 8/K consecutive byte indices j (K = 4, 8).
 * 2. Bit permutation of each 64-bit lane as a few delta swaps (shift, xor, and, shift,
 *    xor, xor): with a bit's position written as 6 index bits (byte, bit), the interleave is
 *    a permutation of those index bits, e.g. the 8-column case swaps (column, level) into
 *    (level, column): the 8x8 bit transpose. Each swap exchanges two index bits (or
 *    exchanges and complements both); the sequences below were found by a search over
 *    such swaps and are checked by every test vector.
 * 3. k = 7 runs as K = 8 with a zero column; the zero bit of every level is then
 *    squeezed out in three shift-and-or steps (fields of 8 bits, then 16, then 32), and
 *    vpshufb packs the 7 live bytes of each group.
 * 4. vperm2i128 puts each row's bytes together before the stores.
 * k = 2, 3, 5 and 6 use nibble lookups instead (lutblock: output byte b of a group is an
 * OR of vpshufb lookups of the column nibbles that land in it, then vpshufb/vpor put the
 * k results in group order), which measured faster for them (see ZLUT).
 * A width that is not a multiple of 8 runs its whole slabs here and its last bytes on the
 * caller's fallback kernel (or, for rows back to back, as rows of 8: segments.h). Rows
 * truncated inside a slab compute that slab and store only its needed bytes (`lim`);
 * prefixes of 1, 2 or 4 bytes pack 8 / need rows into each lane (prefix_rows_k). */
#include <stdlib.h>
#include <string.h>

#include "avx2_kernel.h"
#include "segments.h"
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

/* The nibble-lookup method (ZLUT(k) below). NIBLUT[k][b][c][h]: for each value of
 * column c's high (h = 1) or low (h = 0) nibble, its bits that land in output byte b of
 * the group. CHUNK[k][m][b]: vpshufb indices taking, for 16-byte output chunk m of a
 * 128-bit lane (16 groups), the bytes that come from result b (byte b of every group). */
static uint8_t NIBLUT[8][8][8][2][16];
static uint8_t CHUNK[8][8][8][16];

/* Row prefixes of `need` = 1 << e bytes from columns of 8-byte rows (prefix_rows_k):
 * PREFIX[e][2i + h] takes, in each 128-bit lane, the 2 rows that half h of loads i and
 * i + G/2 put there (vperm2i128) to their prefixes' places among the lane's 2G rows. */
static uint8_t PREFIX[3][8][16];

static void slice_plans_init(void);   /* zorder_avx2_slice's tables, below */
static void planar_windows_init(void);   /* zorder_avx2_planar's, below */

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

ZAVX2_INLINE __m256i ld256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

ZAVX2_INLINE void st16(uint8_t *p, __m128i v)
{
    _mm_storeu_si128((__m128i *)(void *)p, v);
}

/* Store modes of the blocks: ZST_NT non-temporal (whole 32-byte stores only), ZST_WHOLE
 * a register that holds any of a row's first n bytes stored whole (rows_packed's rows
 * back to back, which write again what it runs over). */
#define ZST_NT 1
#define ZST_WHOLE 2

/* The first n bytes of v at p (nothing when n <= 0, all of v when n >= 16). Rows
 * truncated inside a slab store exactly their bytes this way: no scratch rows to copy
 * from. Where n is a constant (whole slabs) the branches fold away. */
ZAVX2_INLINE void st16n(uint8_t *p, __m128i v, ptrdiff_t n)
{
    uint32_t u32;
    uint16_t u16;
    if (n >= 16) {
        st16(p, v);
        return;
    }
    if (n <= 0)
        return;
    if (n >= 8) {
        _mm_storel_epi64((__m128i *)(void *)p, v);
        p += 8;
        n -= 8;
        v = _mm_srli_si128(v, 8);
    }
    if (n >= 4) {
        u32 = (uint32_t)_mm_cvtsi128_si32(v);
        memcpy(p, &u32, 4);
        p += 4;
        n -= 4;
        v = _mm_srli_si128(v, 4);
    }
    if (n >= 2) {
        u16 = (uint16_t)_mm_cvtsi128_si32(v);
        memcpy(p, &u16, 2);
        p += 2;
        n -= 2;
        v = _mm_srli_si128(v, 2);
    }
    if (n)
        *p = (uint8_t)_mm_cvtsi128_si32(v);
}

ZAVX2_INLINE void st16m(uint8_t *p, __m128i v, ptrdiff_t n, const int mode)
{
    if (mode & ZST_WHOLE) {
        if (n > 0)
            st16(p, v);
    } else {
        st16n(p, v, n);
    }
}

/* The first n bytes of v at p, by mode (above). */
ZAVX2_INLINE void st32n(uint8_t *p, __m256i v, ptrdiff_t n, const int mode)
{
    if (mode & ZST_WHOLE) {
        if (n > 0)
            _mm256_storeu_si256((__m256i *)(void *)p, v);
    } else if (n >= 32) {
        st32(p, v, mode & ZST_NT);
    } else if (n > 16) {
        st16(p, _mm256_castsi256_si128(v));
        st16n(p + 16, _mm256_extracti128_si256(v, 1), n - 16);
    } else {
        st16n(p, _mm256_castsi256_si128(v), n);
    }
}

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

/* mode: ZST_NT, non-temporal stores (every block stores whole registers only where it
 * is asked: k = 7 never is), or ZST_WHOLE (above). lim: the bytes of each row's 8k to
 * store, less than 8k only with k = 2, 4, 6, 8 (the others store whole rows: the callers
 * stage them), rows apart or back to back. */
ZAVX2_INLINE void zblock_nt(const int k, const __m256i *X, uint8_t *dst, ptrdiff_t os,
                            const int mode, const zsqueeze *sq, const ptrdiff_t lim)
{
    if (ZLUT(k))
        lutblock(k, X, dst, os, mode, lim);   /* os == 8k for odd k: the callers check */
    else if (k == 4)
        block4(X, dst, os, mode, lim);
    else
        block8(k, X, dst, os, mode, sq, lim);
}

#define zblock(k, X, dst, os) zblock_nt(k, X, dst, os, 0, &sq, 8 * (k))

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

/* The strided row loop of rows_k: blocks of 4 rows, slab by slab; the last slab of each
 * row stores its first `last` bytes (8k: all). Columns with rows 8 bytes apart load 4
 * rows at once. */
ZAVX2_INLINE void rows_strided(const int k, const zorder_column *cols, ptrdiff_t m,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t os,
                               const ptrdiff_t last, const zsqueeze *sqp)
{
    const ptrdiff_t rs = 8 * k;
    const int spill = !ZLUT(k) && (k == 5 || k == 7);   /* stores past a row's end: block8 */
    const int whole_rows = ZLUT(k) && k % 2;   /* writes 4 rows back to back: lutblock */
    /* blocks that store whole rows (odd k): truncated or spaced-out rows are staged */
    const int direct = !spill && !(whole_rows && (os != rs || last != rs));
    uint8_t stage[4 * 64 + 16];
    __m256i X[8];
    ptrdiff_t r0, s;
    int c, i;
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    for (r0 = 0; r0 < nrows; r0 += 4) {
        const int R = nrows - r0 < 4 ? (int)(nrows - r0) : 4;
        for (s = 0; s < m; s++) {
            const ptrdiff_t n = s == m - 1 ? last : rs;
            for (c = 0; c < k; c++) {
                const ptrdiff_t st = cols[c].row_stride;
                const uint8_t *p = cols[c].data + r0 * st + 8 * s;
                if (R == 4 && st == 8) {
                    _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                    X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
                } else if (R == 4) {
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
            if (R == 4 && direct) {
                zblock_nt(k, X, out + r0 * os + s * rs, os, 0, sqp, n);
            } else {
                zblock_nt(k, X, stage, rs, 0, sqp, rs);
                for (i = 0; i < R; i++)
                    zorder_copy_short(out + (r0 + i) * os + s * rs, stage + i * rs, n);
            }
        }
    }
}

/* Rows of 8 bytes back to back in every column (32-byte loads of 4 rows): output row t at
 * out + t * os, its first `lim` bytes (8k: all). Streaming stores for rows back to back
 * and whole. */
ZAVX2_INLINE void rows_packed(const int k, const zorder_column *cols, ptrdiff_t n,
                              uint8_t *out, ptrdiff_t os, const ptrdiff_t lim,
                              const zsqueeze *sqp)
{
    const ptrdiff_t rs = 8 * k, nb = n / 4, R = n - 4 * nb;
    const int spill = !ZLUT(k) && (k == 5 || k == 7);   /* stores past a row's end: block8 */
    const int whole_rows = ZLUT(k) && k % 2;   /* writes 4 rows back to back: lutblock */
    /* blocks that store whole rows (odd k): truncated or spaced-out rows are staged */
    const int direct = !(whole_rows || spill) || (os == rs && lim == rs);
    /* rows back to back and cut inside the slab (2x8 -> 12, 8x8 -> 40): each row's
     * whole slab is stored, rows in order, running over the next rows' starts, which
     * they write again; only the rows whose slab would pass the output's end store
     * exactly. Stores cut to the row (8 + 4 bytes, 32 + 8) made those shapes 1.5-2.6x
     * slower than the whole rows in cache. */
    const int over = !(whole_rows || spill) && os == lim && lim < rs;
    uint8_t stage[4 * 64 + 16];
    __m256i X[8];
    ptrdiff_t b = 0, i;
    int c;
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    if (k != 7 && os == rs && lim == rs && ((uintptr_t)out & 15) == 0
        && n * rs >= zorder_avx2_stream_min) {
        for (; b < nb; b++) {
            for (c = 0; c < k; c++) {
                const uint8_t *p = cols[c].data + 32 * b;
                _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
            }
            zblock_nt(k, X, out + 4 * rs * b, rs, 1, sqp, rs);
        }
        _mm_sfence();
    }
    for (; b < nb; b++) {
        for (c = 0; c < k; c++) {
            const uint8_t *p = cols[c].data + 32 * b;
            _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
            X[c] = _mm256_loadu_si256((const __m256i *)(const void *)p);
        }
        if (over && (4 * b + 3) * os + rs <= n * os) {
            zblock_nt(k, X, out + 4 * os * b, os, ZST_WHOLE, sqp, lim);
        } else if (direct && !(spill && b == nb - 1)) {
            zblock_nt(k, X, out + 4 * os * b, os, 0, sqp, lim);
        } else {
            zblock_nt(k, X, stage, rs, 0, sqp, rs);
            for (i = 0; i < 4; i++)
                zorder_copy_short(out + (4 * b + i) * os, stage + i * rs, lim);
        }
    }
    if (R) {
        uint8_t buf[8][32];
        for (c = 0; c < k; c++) {
            memset(buf[c], 0, 32);
            memcpy(buf[c], cols[c].data + 32 * nb, (size_t)(8 * R));
            X[c] = _mm256_loadu_si256((const __m256i *)(const void *)buf[c]);
        }
        zblock_nt(k, X, stage, rs, 0, sqp, rs);
        for (i = 0; i < R; i++)
            zorder_copy_short(out + (4 * nb + i) * os, stage + i * rs, lim);
    }
}

/* Rows [0, nrows) of slabs [0, m) of k columns (bytes [0, 8m) of each column row, any
 * strides), writing the first 8k(m - 1) + last bytes of each output row (last <= 8k). */
ZAVX2_INLINE void rows_k(const int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t os, ptrdiff_t last)
{
    const ptrdiff_t rs = 8 * k;                 /* output bytes of one slab */
    zsqueeze sq;
    int c, packed = 1;
    if (k != 2 && k != 4 && k != 8 && !ZLUT(k))
        squeeze_init(&sq, k);
    for (c = 0; c < k; c++)
        packed &= cols[c].row_stride == 8 * m;
    /* (each loop twice, so whole rows keep their constant stores) */
    if (packed && os == rs * m && last == rs) {
        /* rows of 8m bytes back to back, in and out: m times as many rows of 8 */
        rows_packed(k, cols, nrows * m, out, rs, rs, &sq);
    } else if (packed && m == 1) {
        if (os == rs && last == rs)
            rows_packed(k, cols, nrows, out, rs, rs, &sq);
        else
            rows_packed(k, cols, nrows, out, os, last, &sq);
    } else if (last == rs) {
        rows_strided(k, cols, m, nrows, out, os, rs, &sq);
    } else {
        rows_strided(k, cols, m, nrows, out, os, last, &sq);
    }
}

/* One function per k, so each gets its own registers and unrolled blocks. */
#define ROWS_K(K) \
    ZAVX2 static void rows_##K(const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows, \
                               uint8_t *out, ptrdiff_t os, ptrdiff_t last) \
    { rows_k(K, cols, m, nrows, out, os, last); }
ROWS_K(2)
ROWS_K(3)
ROWS_K(4)
ROWS_K(5)
ROWS_K(6)
ROWS_K(7)
ROWS_K(8)

static void rows_any(int k, const zorder_column *cols, ptrdiff_t m, ptrdiff_t nrows,
                     uint8_t *out, ptrdiff_t os, ptrdiff_t last)
{
    switch (k) {
    case 2: rows_2(cols, m, nrows, out, os, last); break;
    case 3: rows_3(cols, m, nrows, out, os, last); break;
    case 4: rows_4(cols, m, nrows, out, os, last); break;
    case 5: rows_5(cols, m, nrows, out, os, last); break;
    case 6: rows_6(cols, m, nrows, out, os, last); break;
    case 7: rows_7(cols, m, nrows, out, os, last); break;
    default: rows_8(cols, m, nrows, out, os, last); break;
    }
}

/* The first 8 bytes of the rows at p and p + st, side by side (two rows more than 8 bytes
 * apart as if they were 8 apart). */
ZAVX2_INLINE __m128i far_pair(const uint8_t *p, const ptrdiff_t st)
{
    return _mm_castpd_si128(_mm_loadh_pd(
        _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(const void *)p)),
        (const double *)(const void *)(p + st)));
}

/* far_pair of the rows at a (lane 0) and at b (lane 1). */
ZAVX2_INLINE __m256i far_lanes(const uint8_t *a, const uint8_t *b, const ptrdiff_t st)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(far_pair(a, st)), far_pair(b, st), 1);
}

/* Blocks that read a few bytes a row from many columns, or 8 bytes of rows more than 8
 * apart, leave the hardware prefetchers behind: the lines of the first 8 bytes of `rows`
 * rows at p are asked for AHEAD_BLOCKS blocks before they are read (2-8 measured the
 * same).
 * Intel Xeon (family 6 model 167), 1M rows, best of 7, avx2 ns a row without -> with:
 * 8x16 -> 8 8.5 -> 4.7, 6x16 -> 6 6.3 -> 3.4, 10x16 -> 10 13.0 -> 6.9, 12x8 -> 16 6.0 ->
 * 4.9, 20x8 -> 8 9.9 -> 8.0 (benchmarks/NOTES.md, "Rows far apart, prefetches, ..."). */
#define AHEAD_BLOCKS 4
ZAVX2_INLINE void rows_prefetch(const uint8_t *p, const ptrdiff_t rows, const ptrdiff_t st)
{
    const ptrdiff_t step = st < 64 ? 64 : st;
    ptrdiff_t q;
    for (q = 0; q < rows * st; q += step)
        _mm_prefetch((const char *)(p + q), _MM_HINT_T0);
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
    int c, v, i, first8 = 1;
    if (k != 2 && k != 4 && k != 8 && !ZLUT(k))
        squeeze_init(&sq, k);
    for (c = k; c < 8; c++)
        X[c] = _mm256_setzero_si256();
    /* Each row's first 8 bytes the column's own, read 8 bytes a row (a narrower column 8
     * bytes apart, such as a[:, 4:8] of an (n, 8) array, would be read past its last
     * row) */
    for (c = 0; c < k; c++)
        first8 &= cols[c].row_stride >= 8 && cols[c].width >= 8;
    if (first8) {
        /* rows 8 bytes apart: G loads of 4 rows each, a lane's worth of rows paired up by
         * vperm2i128; further apart: two rows a 16-byte half, straight to their lanes;
         * then vpshufb takes their prefixes to their places */
        const int e = need == 1 ? 0 : need == 2 ? 1 : 2;
        for (r0 = 0; r0 + step <= nrows; r0 += step) {
            for (c = 0; c < k; c++) {
                const ptrdiff_t st = cols[c].row_stride;
                const uint8_t *p = cols[c].data + st * r0;
                __m256i x = _mm256_setzero_si256();
                if (st == 8)
                    _mm_prefetch((const char *)(p + AHEAD), _MM_HINT_T0);
                else
                    rows_prefetch(p + AHEAD_BLOCKS * step * st, step, st);
                for (v = 0; v < G / 2; v++) {
                    __m256i lo, hi;
                    if (st == 8) {
                        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * v));
                        const __m256i b = _mm256_loadu_si256(
                            (const __m256i *)(const void *)(p + 32 * (v + G / 2)));
                        lo = _mm256_permute2x128_si256(a, b, 0x20);
                        hi = _mm256_permute2x128_si256(a, b, 0x31);
                    } else {
                        const uint8_t *a = p + 4 * v * st, *b = p + 4 * (v + G / 2) * st;
                        lo = far_lanes(a, b, st);
                        hi = far_lanes(a + 2 * st, b + 2 * st, st);
                    }
                    x = _mm256_or_si256(x, _mm256_shuffle_epi8(lo, bcast16(PREFIX[e][2 * v])));
                    x = _mm256_or_si256(x, _mm256_shuffle_epi8(hi, bcast16(PREFIX[e][2 * v + 1])));
                }
                X[c] = x;
            }
            zblock(k, X, out + r0 * k * need, rs);
        }
        return r0;
    }
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
PREFIX_K(5)
PREFIX_K(6)
PREFIX_K(7)
PREFIX_K(8)

/* staged: out is scratch with room past its rows, so the blocks that store past a row's
 * end (block8 with k = 7; k = 5 has the nibble-lookup block, ZLUT) may run too. */
static ptrdiff_t prefix_any(int k, const zorder_column *cols, int need, ptrdiff_t nrows,
                            uint8_t *out, int staged)
{
    switch (k) {
    case 2: return prefix_rows_2(cols, need, nrows, out);
    case 3: return prefix_rows_3(cols, need, nrows, out);
    case 4: return prefix_rows_4(cols, need, nrows, out);
    case 5: return ZLUT(5) || staged ? prefix_rows_5(cols, need, nrows, out) : 0;
    case 6: return prefix_rows_6(cols, need, nrows, out);
    case 7: return ZLUT(7) || staged ? prefix_rows_7(cols, need, nrows, out) : 0;
    default: return prefix_rows_8(cols, need, nrows, out);
    }
}

#define PREFIX_STAGE_ROWS 1024   /* a multiple of every block's rows (4 * 8 / need) */

/* Rows that need only a 1-, 2- or 4-byte prefix of each column but keep fewer bytes than
 * those prefixes make (5x8 -> 8, 7x8 -> 10), or whose blocks store past a row's end (7
 * columns): the prefix rows into scratch, a chunk at a time, and each row's first `size`
 * bytes copied out. Before, such rows computed whole 8-byte slabs of every column: 7x8 ->
 * 10 cost more than the table backend. Returns the rows done (a multiple of the block's
 * rows), 0 when scratch memory is short. */
static ptrdiff_t prefix_staged(int k, const zorder_column *cols, int need, ptrdiff_t size,
                               ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    const ptrdiff_t rs = (ptrdiff_t)k * need, step = 4 * (8 / need);
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t r0 = 0, rows, done;
    int c;
    uint8_t *tmp = (uint8_t *)malloc((size_t)(PREFIX_STAGE_ROWS * rs) + 256);
    if (tmp == NULL)
        return 0;
    while (nrows - r0 >= step) {
        rows = nrows - r0 < PREFIX_STAGE_ROWS ? (nrows - r0) / step * step : PREFIX_STAGE_ROWS;
        for (c = 0; c < k; c++) {
            view[c] = cols[c];
            view[c].data = cols[c].data + r0 * cols[c].row_stride;
        }
        done = prefix_any(k, view, need, rows, tmp, 1);
        if (done <= 0)
            break;
        if (out_stride == size && size <= 16) {
            /* rows back to back: 16 bytes written from each row's start (zorder_seg_copy_rows'
             * room), the spill landing in later rows of the chunk, which write it again;
             * the last rows, whose spill would pass the chunk, exactly. (7x8 -> 10's copy
             * out of scratch was a sixth of its time in 8 + 2-byte moves.) */
            const ptrdiff_t spill_rows = (16 + size - 1) / size;
            const ptrdiff_t whole = done >= spill_rows ? done - spill_rows + 1 : 0;
            zorder_seg_copy_rows(out + r0 * size, size, tmp, rs, size, whole, 16);
            zorder_copy_rows_exact(out + (r0 + whole) * size, size, tmp + whole * rs, rs, size,
                                   done - whole);
        } else {
            zorder_copy_rows_exact(out + r0 * out_stride, out_stride, tmp, rs, size, done);
        }
        r0 += done;
    }
    free(tmp);
    return r0;
}

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

/* ---- narrow ragged rows put together (zorder_seg_narrow's assembly) ---------------- */

/* Rows of at most 16 bytes in blocks of R = 16 / size rows, two blocks a register (one a
 * 128-bit lane): each piece's bytes of a block lie within 16 bytes (else 0: the caller's
 * moves), so one 16-byte load a lane and one vpshufb put them in place, and the pieces'
 * results OR together. A lane's 16 bytes are stored whole, blocks in order: past the
 * block's R * size bytes they run over the next rows, which write them again; only blocks
 * whose stores and loads stay within the call's rows run here. The moves it replaces, a
 * load and a store per piece and row, were a quarter of 1+2+3+4 -> 10. The stores are
 * plain: rows staged and sent out with non-temporal stores (de36ea9, measured a little
 * faster on the AMD EPYC Zen 4 alone in a loop) were slower on the Intel Xeon in every
 * case measured, and 1.8-2.6x slower where the output's lines were in the cache from an
 * earlier write (benchmarks/NOTES.md, "Rows far apart, prefetches, and the narrow
 * assembly's streamed stores"; the AMD was not measured again). */
ZAVX2_INLINE void assemble_pair(const int n, const int one_load, const uint8_t *const *src,
                                const ptrdiff_t *stride, const __m256i *pick, const ptrdiff_t size,
                                const ptrdiff_t R, const ptrdiff_t r, uint8_t *o)
{
    __m256i v = _mm256_setzero_si256();
    int p;
    for (p = 0; p < n; p++) {
        const uint8_t *a = src[p] + r * stride[p];
        const __m256i x = one_load
            ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)a))
            : _mm256_inserti128_si256(
                  _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)a)),
                  _mm_loadu_si128((const __m128i *)(const void *)(a + R * stride[p])), 1);
        v = _mm256_or_si256(v, _mm256_shuffle_epi8(x, pick[p]));
    }
    if (R * size == 16) {
        _mm256_storeu_si256((__m256i *)(void *)o, v);
    } else {
        st16(o, _mm256_castsi256_si128(v));
        st16(o + R * size, _mm256_extracti128_si256(v, 1));
    }
}

ZAVX2_INLINE ptrdiff_t assemble_n(const int n, const int one_load, const zorder_seg_piece *pieces,
                                  const __m256i *pick, const ptrdiff_t size, const ptrdiff_t R,
                                  const ptrdiff_t last_pair, uint8_t *out)
{
    const uint8_t *src[ZORDER_MAX_GROUP];
    ptrdiff_t stride[ZORDER_MAX_GROUP], r;
    int p;
    for (p = 0; p < n; p++) {
        src[p] = pieces[p].src;
        stride[p] = pieces[p].stride;
    }
    for (r = 0; r <= last_pair; r += 2 * R)
        assemble_pair(n, one_load, src, stride, pick, size, R, r, out + r * size);
    return r;
}

/* assemble_n with the piece count a constant where it is common (the pieces' pointers then
 * stay in registers), one_load a constant in each of the callers below */
ZAVX2_INLINE ptrdiff_t assemble_npieces(const int one_load, const int npieces,
                                        const zorder_seg_piece *pieces, const __m256i *pick,
                                        const ptrdiff_t size, const ptrdiff_t R,
                                        const ptrdiff_t last_pair, uint8_t *out)
{
    switch (npieces) {
    case 2: return assemble_n(2, one_load, pieces, pick, size, R, last_pair, out);
    case 3: return assemble_n(3, one_load, pieces, pick, size, R, last_pair, out);
    case 4: return assemble_n(4, one_load, pieces, pick, size, R, last_pair, out);
    default: return assemble_n(npieces, one_load, pieces, pick, size, R, last_pair, out);
    }
}

ZAVX2 ptrdiff_t zorder_avx2_assemble(const zorder_seg_piece *pieces, int npieces,
                                     ptrdiff_t size, ptrdiff_t rows, uint8_t *out)
{
    __m256i pick[ZORDER_MAX_GROUP];
    const ptrdiff_t R = size >= 1 && size <= 16 ? 16 / size : 0;
    /* the first row of the last pair of blocks: r + 2R rows exist, and lane 1's store (16
     * bytes from row r + R) ends within them */
    ptrdiff_t last_pair = rows - 2 * R, o;
    int p, one_load = 1;
    if (R < 1 || npieces < 1 || npieces > ZORDER_MAX_GROUP)
        return 0;
    if (R * size < 16 && rows - R - (16 + size - 1) / size < last_pair)
        last_pair = rows - R - (16 + size - 1) / size;
    for (p = 0; p < npieces; p++) {
        const ptrdiff_t st = pieces[p].stride, n = pieces[p].n, at = pieces[p].at;
        if (st < 1 || n < 1 || at < 0 || (R - 1) * st + n > 16)
            return 0;
        one_load &= (2 * R - 1) * st + n <= 16;
    }
    /* Where every piece's bytes of both blocks lie within 16 bytes, one load broadcast
     * to both lanes serves both (lane 1 picks from R rows on), not two loads and an
     * insert: 1+2+3+4 -> 10, four pieces of strides 2-4. */
    for (p = 0; p < npieces; p++) {
        const ptrdiff_t st = pieces[p].stride, n = pieces[p].n, at = pieces[p].at;
        uint8_t ix[32];
        for (o = 0; o < 16; o++) {
            const ptrdiff_t i = o / size, b = o % size - at;
            const int in_row = i < R && b >= 0 && b < n;
            ix[o] = in_row ? (uint8_t)(i * st + b) : 0x80;
            ix[o + 16] = in_row ? (uint8_t)((one_load ? R * st : 0) + i * st + b) : 0x80;
        }
        pick[p] = ld256(ix);
        /* lane 1's load, 16 bytes from row r + R, ends within the last row's n bytes (the
         * contract's): (r + R) st + 16 <= (rows - 1) st + n */
        if (rows - 1 - R - (16 - n + st - 1) / st < last_pair)
            last_pair = rows - 1 - R - (16 - n + st - 1) / st;
    }
    if (last_pair < 0)
        return 0;
    return one_load
        ? assemble_npieces(1, npieces, pieces, pick, size, R, last_pair, out)
        : assemble_npieces(0, npieces, pieces, pick, size, R, last_pair, out);
}

/* ---- squeeze: zero columns out of a padded many-column interleave ------------------ */

/* zorder_squeeze_fn (segments.h) on AVX2. Output byte o of a group (K = 8 nb input bytes,
 * k output bytes) is bits [8o, 8o + 8) of the group's 8 fields of k live bits each: the 8
 * bits from bit t = 8o - fk of field f = 8o / k (A), and where the field ends inside the
 * byte (k - t < 8) the first bits of field f + 1 below them (B: the 8 bits from k - t bits
 * before field f + 1 starts, its top k - t bits masked off). Each is two input bytes in a
 * 16-bit word slot, put there by vpshufb from 16-byte chunks of the row broadcast to both
 * lanes, and shifted left by its bit offset with vpmullw (AVX2 has no per-word shift); the
 * high bytes, masked and ORed, are the output. 16 output bytes a step, whose tables repeat
 * every k / gcd(k, 16) steps (16 / gcd(k, 16) groups on in the input); every k = 9..63
 * takes at most 2 chunks a step. The last steps of the last row, whose chunks would read
 * more than the 8 bytes of room past it, read a copy of the row's last bytes instead. The
 * scalar squeeze was 60% of 11x8 -> 88 (about 30 ns a row). */
#define SQ_CHUNKS 3   /* (every k = 9..63 takes 2; one more as headroom) */
#define SQ_TAIL 64
typedef struct {
    int at[SQ_CHUNKS];              /* the chunks' offsets from the period's first input byte */
    int first, end;                 /* the first byte a chunk reads, and past the last */
    uint8_t pick[SQ_CHUNKS][2][32]; /* vpshufb indices for A (0) and B (1), per chunk */
    uint16_t mul[2][16], keep[2][16];
} zsqueeze_step;

/* The tables of one period; returns the chunks a step needs, 0 if more than SQ_CHUNKS. */
static int squeeze_tables(zsqueeze_step *tab, int period, int k, int K)
{
    int p, o, h, b, c, most = 1;
    memset(tab, 0, sizeof(zsqueeze_step) * (size_t)period);
    for (p = 0; p < period; p++) {
        zsqueeze_step *t = &tab[p];
        int n = 0;
        memset(t->pick, 0x80, sizeof t->pick);
        for (o = 0; o < 16; o++) {
            /* output byte 16p + o of the period: byte ob of group q */
            const int q = (16 * p + o) / k, ob = (16 * p + o) % k;
            const int f = 8 * ob / k, bit = 8 * ob - f * k;
            const int pos[2] = {q * K * 8 + f * K + bit, q * K * 8 + (f + 1) * K - (k - bit)};
            for (h = 0; h < 2; h++) {
                if (h == 1 && k - bit >= 8)
                    break;   /* all of the byte is A's */
                for (b = 0; b < 2; b++) {
                    /* the word's high byte (b = 0), then its low one */
                    const int byte = pos[h] / 8 + b;
                    for (c = 0; c < n; c++)
                        if (byte >= t->at[c] && byte < t->at[c] + 16)
                            break;
                    if (c == n) {
                        if (n == SQ_CHUNKS)
                            return 0;
                        t->at[n++] = byte;
                        if (byte + 16 > t->end)
                            t->end = byte + 16;
                        if (n == 1 || byte < t->first)
                            t->first = byte;
                    }
                    /* word slot o: lane o / 8, bytes 2 (o % 8) (low) and + 1 (high) */
                    t->pick[c][h][16 * (o / 8) + 2 * (o % 8) + 1 - b] = (uint8_t)(byte - t->at[c]);
                }
                t->mul[h][o] = (uint16_t)(1u << (pos[h] % 8));
                t->keep[h][o] = (uint16_t)(h == 0 ? (k - bit >= 8 ? 0xFF00u : (0xFF00u << (8 - (k - bit))) & 0xFF00u)
                                                  : (0xFF00u >> (k - bit)) & 0xFF00u);
            }
        }
        for (c = n; c < SQ_CHUNKS; c++)
            t->at[c] = t->at[0];   /* (picks nothing) */
        if (n > most)
            most = n;
    }
    return most;
}

/* One step's 16 output bytes, one per word's low byte, from the row at `from`: its chunks
 * at shift + t->at[c]. */
ZAVX2_INLINE __m256i squeeze_words(const zsqueeze_step *t, const int nchunks, const uint8_t *from,
                                   const ptrdiff_t shift)
{
    __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
    int c;
    for (c = 0; c < nchunks; c++) {
        const __m256i x = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(const void *)(from + (shift + t->at[c]))));
        a = _mm256_or_si256(a, _mm256_shuffle_epi8(x, ld256(t->pick[c][0])));
        b = _mm256_or_si256(b, _mm256_shuffle_epi8(x, ld256(t->pick[c][1])));
    }
    a = _mm256_and_si256(_mm256_mullo_epi16(a, ld256(t->mul[0])), ld256(t->keep[0]));
    b = _mm256_and_si256(_mm256_mullo_epi16(b, ld256(t->mul[1])), ld256(t->keep[1]));
    return _mm256_srli_epi16(_mm256_or_si256(a, b), 8);
}

/* The squeeze of 16 padded columns (nb = 2) to 9 <= k <= 14: a group of 8 big-endian
 * 16-bit words (one byte index of the 16 columns, a word a bit level, column 0 at its
 * top) is k output bytes, its words' top k bits in order. Two groups a 32-byte register,
 * by arithmetic instead of squeeze_tables' gathers: vpshufb swaps each word's bytes and a
 * shift keeps its k bits; vpmaddwd joins word pairs (2k bits a dword, the earlier one
 * high: k <= 14 keeps 1 << k a signed 16-bit factor); shifts join dword pairs (4k bits a
 * qword); vpsllvq puts the lane's two qwords at their bit offsets (0 and 4k: with k odd
 * the second starts at a nibble) and vpshufb takes their bytes to big-endian order (an OR
 * of two picks for the byte they share with k odd). 11x8 -> 88's squeeze took 140 ps an
 * output byte in cache on the gathers. */
typedef struct {
    __m256i bswap, madd, mask, counts, pick0, pick1;
    __m128i keep_shift, join_shift;   /* 16 - k, 2k */
} zsq16;

/* Two groups of little-endian words (bit level 7 - i in word i, column 0 at its top). */
ZAVX2_INLINE __m256i squeeze16_words(const zsq16 *t, __m256i x, const int odd)
{
    __m256i r;
    x = _mm256_srl_epi16(x, t->keep_shift);
    x = _mm256_madd_epi16(x, t->madd);
    x = _mm256_or_si256(_mm256_and_si256(_mm256_sll_epi64(x, t->join_shift), t->mask),
                        _mm256_srli_epi64(x, 32));
    x = _mm256_sllv_epi64(x, t->counts);
    r = _mm256_shuffle_epi8(x, t->pick0);
    return odd ? _mm256_or_si256(r, _mm256_shuffle_epi8(x, t->pick1)) : r;
}

/* Two groups of big-endian words, as the padded interleave holds them. */
ZAVX2_INLINE __m256i squeeze16_groups(const zsq16 *t, const __m256i x, const int odd)
{
    return squeeze16_words(t, _mm256_shuffle_epi8(x, t->bswap), odd);
}

/* Group g's k bytes of lane v (16 stored: the bytes past k are zeros, and written again
 * by the next group, or the next row's first ones) at d + g k, where `room` bytes from d
 * may be written; the bytes of the row's first `limit` exactly otherwise. */
ZAVX2_INLINE void squeeze16_store(uint8_t *d, const __m128i v, const int k, const ptrdiff_t g,
                                  const ptrdiff_t limit, const ptrdiff_t room)
{
    if (g * k + 16 <= room)
        st16(d + g * k, v);
    else
        st16n(d + g * k, v, limit - g * k);
}

ZAVX2_INLINE void squeeze16_rows(const zsq16 *t, const int odd, const uint8_t *src, const int k,
                                 const ptrdiff_t w, const ptrdiff_t limit, const ptrdiff_t rows,
                                 uint8_t *out, const ptrdiff_t out_stride)
{
    const ptrdiff_t in_stride = 16 * w, groups = (limit + k - 1) / k;
    ptrdiff_t row, g;
    for (row = 0; row < rows; row++) {
        const uint8_t *s = src + row * in_stride;
        uint8_t *d = out + row * out_stride;
        /* rows back to back: stores may run into the next row, which writes them again */
        const ptrdiff_t room = out_stride == limit && row + 1 < rows ? 2 * limit : limit;
        for (g = 0; g + 2 <= groups; g += 2) {
            const __m256i r = squeeze16_groups(t, ld256(s + 16 * g), odd);
            squeeze16_store(d, _mm256_castsi256_si128(r), k, g, limit, room);
            squeeze16_store(d, _mm256_extracti128_si256(r, 1), k, g + 1, limit, room);
        }
        if (g < groups) {
            /* (one group: the upper lane is undefined and never stored) */
            const __m256i r = squeeze16_groups(
                t, _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(s + 16 * g))),
                odd);
            squeeze16_store(d, _mm256_castsi256_si128(r), k, g, limit, room);
        }
    }
}

/* The same from the two planes (segments.h): a group's words are byte pairs of plane 0
 * (columns 0-7, the high byte) and plane 1 (8-15), so unpacks make them, and no pass merges
 * the planes first. The planes hold the rows' w groups back to back, so the groups are
 * taken as one stream, four a step whatever the rows (the unpacks work within 128-bit
 * lanes: groups g and g + 2 in one register, g + 1 and g + 3 in the other), and each is
 * stored at its row's place, the groups a row's `limit` cuts off skipped. Row by row, rows
 * of fewer than four groups, and a row's last one to three, went through zero-padded
 * copies: 11x1 -> 9 and 10x2 -> 15 took 21 ns a row, the table backend 12. */
ZAVX2_INLINE void squeeze16_planes_rows(const zsq16 *t, const int odd, const uint8_t *p0,
                                        const uint8_t *p1, const int k, const ptrdiff_t w,
                                        const ptrdiff_t limit, const ptrdiff_t rows,
                                        uint8_t *out, const ptrdiff_t out_stride)
{
    const ptrdiff_t groups = (limit + k - 1) / k, total = rows * w;
    /* the bytes after a row's that later rows write (rows back to back) */
    const ptrdiff_t after = out_stride == limit ? limit : 0;
    ptrdiff_t next = 0, g = 0, later = (rows - 1) * after;
    uint8_t *d = out;
    while (next < total) {
        __m256i va, vb, x0, x1;
        if (next + 4 <= total) {
            va = ld256(p0 + 8 * next);
            vb = ld256(p1 + 8 * next);
        } else {
            uint8_t ta[32], tb[32];
            memset(ta, 0, sizeof ta);
            memset(tb, 0, sizeof tb);
            memcpy(ta, p0 + 8 * next, (size_t)(8 * (total - next)));
            memcpy(tb, p1 + 8 * next, (size_t)(8 * (total - next)));
            va = ld256(ta);
            vb = ld256(tb);
        }
        x0 = squeeze16_words(t, _mm256_unpacklo_epi8(vb, va), odd);   /* next, next + 2 */
        x1 = squeeze16_words(t, _mm256_unpackhi_epi8(vb, va), odd);   /* next + 1, next + 3 */
        /* group `next` stored at d + g k, if the row keeps it: 16 bytes where the rest of
         * the row and the later rows take them (all written after it), else exactly */
#define ZSQ16_GROUP(v) \
        if (next < total) { \
            if (g < groups) { \
                const ptrdiff_t room = limit - g * k + later; \
                if (room >= 16) \
                    st16(d + g * k, (v)); \
                else \
                    st16n(d + g * k, (v), room); \
            } \
            next++; \
            if (++g == w) { \
                g = 0; \
                d += out_stride; \
                later -= after; \
            } \
        }
        ZSQ16_GROUP(_mm256_castsi256_si128(x0))
        ZSQ16_GROUP(_mm256_castsi256_si128(x1))
        ZSQ16_GROUP(_mm256_extracti128_si256(x0, 1))
        ZSQ16_GROUP(_mm256_extracti128_si256(x1, 1))
#undef ZSQ16_GROUP
    }
}

/* One long row (rows back to back, merged by squeeze16) from the two planes: four groups a
 * step, the last one to three from copies of their bytes. The stream below, with its
 * test of every group's row, took 10x1 -> 10 from 1.8 to 2.3 ns a row. */
ZAVX2_INLINE void squeeze16_planes_row(const zsq16 *t, const int odd, const uint8_t *a,
                                       const uint8_t *b, const int k, const ptrdiff_t limit,
                                       uint8_t *d)
{
    const ptrdiff_t groups = (limit + k - 1) / k;
    ptrdiff_t g;
    for (g = 0; g + 4 <= groups && (g + 3) * k + 16 <= limit; g += 4) {
        const __m256i va = ld256(a + 8 * g), vb = ld256(b + 8 * g);
        const __m256i x0 = squeeze16_words(t, _mm256_unpacklo_epi8(vb, va), odd);
        const __m256i x1 = squeeze16_words(t, _mm256_unpackhi_epi8(vb, va), odd);
        st16(d + g * k, _mm256_castsi256_si128(x0));
        st16(d + (g + 1) * k, _mm256_castsi256_si128(x1));
        st16(d + (g + 2) * k, _mm256_extracti128_si256(x0, 1));
        st16(d + (g + 3) * k, _mm256_extracti128_si256(x1, 1));
    }
    if (g < groups)
        squeeze16_planes_rows(t, odd, a + 8 * g, b + 8 * g, k, groups - g, limit - g * k, 1,
                              d + g * k, limit - g * k);
}

/* src: the padded interleave (p1 NULL), or plane 0 (p1 plane 1). */
ZAVX2 static void squeeze16(const uint8_t *src, const uint8_t *p1, int k, ptrdiff_t w,
                            ptrdiff_t limit, ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    uint8_t pick[2][32];
    zsq16 t;
    const int half = k / 2, odd = k & 1;
    int o;
    memset(pick, 0x80, sizeof pick);
    for (o = 0; o < 32; o++) {
        const int b = o % 16;   /* (vpshufb picks within each 128-bit lane) */
        if (b < half + odd)   /* the first qword's big-endian bytes */
            pick[0][o] = (uint8_t)(7 - b);
        if (b >= half && b < k)   /* the second's from byte k / 2 (apart from the first's
                                   * only with k even) */
            pick[odd][o] = (uint8_t)(15 - (b - half));
    }
    t.bswap = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
                               1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    t.madd = _mm256_set1_epi32((int)((1u << 16) | (1u << k)));   /* words: 1 << k, 1 */
    t.keep_shift = _mm_cvtsi32_si128(16 - k);
    t.join_shift = _mm_cvtsi32_si128(2 * k);
    t.mask = _mm256_set1_epi64x((long long)(((uint64_t)1 << (4 * k)) - 1));
    t.counts = _mm256_setr_epi64x(64 - 4 * k, 64 - 4 * k - 4 * odd, 64 - 4 * k, 64 - 4 * k - 4 * odd);
    t.pick0 = ld256(pick[0]);
    t.pick1 = ld256(pick[1]);
    if (limit == k * w && out_stride == limit) {
        /* whole rows back to back in and out: one long row, two groups a register
         * whatever w (11x1 -> 11 ran one group a register, a row at a time) */
        w *= rows;
        limit *= rows;
        out_stride = limit;
        rows = 1;
    }
    if (p1 != NULL && rows == 1 && odd)
        squeeze16_planes_row(&t, 1, src, p1, k, limit, out);
    else if (p1 != NULL && rows == 1)
        squeeze16_planes_row(&t, 0, src, p1, k, limit, out);
    else if (p1 != NULL && odd)
        squeeze16_planes_rows(&t, 1, src, p1, k, w, limit, rows, out, out_stride);
    else if (p1 != NULL)
        squeeze16_planes_rows(&t, 0, src, p1, k, w, limit, rows, out, out_stride);
    else if (odd)
        squeeze16_rows(&t, 1, src, k, w, limit, rows, out, out_stride);
    else
        squeeze16_rows(&t, 0, src, k, w, limit, rows, out, out_stride);
}

/* zorder_squeeze_planes_fn: 16 columns padded from 9-14 (squeeze16); others declined. */
ZAVX2 int zorder_avx2_squeeze_planes(const uint8_t *planes, int k, int nb, ptrdiff_t w,
                                     ptrdiff_t limit, ptrdiff_t rows, uint8_t *out,
                                     ptrdiff_t out_stride)
{
    if (nb != 2 || k < 9 || k > 14)
        return 0;
    if (limit > 0 && rows > 0)
        squeeze16(planes, planes + rows * 8 * w, k, w, limit, rows, out, out_stride);
    return 1;
}

/* zorder_merge_fn: segments.h's loops compiled for AVX2 (vpshufb and unpacks; plain
 * x86-64 code leaves 3, 5, 6 and 7 planes scalar). */
ZAVX2 void zorder_avx2_merge(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out)
{
    zorder_seg_merge(planes, nb, n, out);
}

ZAVX2 void zorder_avx2_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w,
                               ptrdiff_t limit, ptrdiff_t rows, uint8_t *out,
                               ptrdiff_t out_stride)
{
    const int K = 8 * nb, g = (k & -k) < 16 ? (k & -k) : 16;   /* gcd(k, 16) */
    const int period = k / g;
    const ptrdiff_t in_stride = (ptrdiff_t)K * w, advance = (ptrdiff_t)(16 / g) * K;
    const ptrdiff_t steps = (limit + 15) / 16, last = limit - 16 * (steps - 1);
    /* the row's last `tail_bytes` input bytes, then zeros: a step past the row reads up to
     * 94 bytes of it (k = 9, w = 9; every k and w up to 299 checked by a model of these
     * tables), and a step that would read outside it runs its row on the scalar squeeze */
    const ptrdiff_t tail_bytes = in_stride < SQ_TAIL ? in_stride : SQ_TAIL;
    const ptrdiff_t tail_at = in_stride - tail_bytes;
    uint8_t tail[SQ_TAIL + 64];
    zsqueeze_step *tab;
    ptrdiff_t row, m;
    int nchunks;
    if (limit <= 0 || rows <= 0)
        return;
    if (nb == 2 && k >= 9 && k <= 14) {
        squeeze16(src, NULL, k, w, limit, rows, out, out_stride);
        return;
    }
    tab = k > 8 && k < 64 ? (zsqueeze_step *)malloc(sizeof(zsqueeze_step) * (size_t)period) : NULL;
    if (tab == NULL || (nchunks = squeeze_tables(tab, period, k, K)) == 0) {
        free(tab);
        zorder_seg_squeeze(src, k, nb, w, limit, rows, out, out_stride);
        return;
    }
    /* two rows a step while neither is the last (the step's tables read once for both:
     * the calls' loads are shared, nothing is stored between them) */
    for (row = 0; row + 2 < rows; row += 2) {
        const uint8_t *s0 = src + row * in_stride, *s1 = s0 + in_stride;
        uint8_t *d0 = out + row * out_stride, *d1 = d0 + out_stride;
        int p = 0;
        ptrdiff_t base = 0;   /* (a period's first input byte: m / period * advance) */
        for (m = 0; m < steps; m++) {
            const zsqueeze_step *t = &tab[p];
            /* (reads from s1 end within the row after it: s1 is never the last row) */
            const __m256i words0 = squeeze_words(t, nchunks, s0, base);
            const __m256i words1 = squeeze_words(t, nchunks, s1, base);
            /* row 0's 16 bytes in the low lane, row 1's in the high one */
            const __m256i r = _mm256_permute4x64_epi64(_mm256_packus_epi16(words0, words1), 0xD8);
            if (m < steps - 1) {
                st16(d0 + 16 * m, _mm256_castsi256_si128(r));
                st16(d1 + 16 * m, _mm256_extracti128_si256(r, 1));
            } else {
                st16n(d0 + 16 * m, _mm256_castsi256_si128(r), last);
                st16n(d1 + 16 * m, _mm256_extracti128_si256(r, 1), last);
            }
            if (++p == period) {
                p = 0;
                base += advance;
            }
        }
    }
    memset(tail, 0, sizeof tail);
    for (; row < rows; row++) {
        const uint8_t *s = src + row * in_stride;
        uint8_t *d = out + row * out_stride;
        /* bytes readable from s: the rows after it, the 8 bytes of room after the last
         * (so only the last row's last steps read the copy: its stores, then 16-byte
         * loads across them, stall store forwarding) */
        const ptrdiff_t readable = (rows - row) * in_stride + 8;
        int copied = 0, p = 0;
        ptrdiff_t base = 0;
        for (m = 0; m < steps; m++) {
            const zsqueeze_step *t = &tab[p];
            __m256i r;
            if (base + t->end <= readable) {
                r = squeeze_words(t, nchunks, s, base);
            } else if (base - tail_at + t->first >= 0
                       && base - tail_at + t->end <= (ptrdiff_t)sizeof tail) {
                if (!copied) {
                    memcpy(tail, s + tail_at, (size_t)tail_bytes);
                    copied = 1;
                }
                r = squeeze_words(t, nchunks, tail, base - tail_at);
            } else {
                zorder_seg_squeeze(s, k, nb, w, limit, 1, d, out_stride);
                break;
            }
            r = _mm256_permute4x64_epi64(_mm256_packus_epi16(r, r), 0x08);
            if (m < steps - 1)
                st16(d + 16 * m, _mm256_castsi256_si128(r));
            else
                st16n(d + 16 * m, _mm256_castsi256_si128(r), last);
            if (++p == period) {
                p = 0;
                base += advance;
            }
        }
    }
    free(tab);
}

/* Rows [done, nrows) of a call whose first `done` rows a block loop wrote (fewer than a
 * block's rows left), as a call of their own; returns 1. */
static int uniform_rest(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        ptrdiff_t done, uint8_t *out, ptrdiff_t out_stride,
                        zorder_uniform_fn fallback)
{
    zorder_column view[ZORDER_MAX_GROUP];
    int c;
    if (done >= nrows)
        return 1;
    for (c = 0; c < k; c++) {
        view[c] = cols[c];
        view[c].data = cols[c].data + done * cols[c].row_stride;
    }
    if (!zorder_avx2_uniform(view, k, size, nrows - done, out + done * out_stride, out_stride,
                             fallback))
        fallback(view, k, size, nrows - done, out + done * out_stride, out_stride);
    return 1;
}

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    zorder_column view[ZORDER_MAX_GROUP];
    ptrdiff_t width, need, whole, slabs;
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
        rows_any(k, cols, whole, nrows, out, out_stride, 8 * k);
        return 1;
    }
    if (k >= 4 && (need == 2 || need == 4 || (need == 1 && k < 8))
        && (size != k * need || out_stride != size || (!ZLUT(k) && (k == 5 || k == 7)))) {
        /* cut inside the prefixes, rows apart, or blocks that store past a row's end (with
         * 2 or 3 columns, and 8 cut to 1-byte prefixes, a whole slab stored from the
         * registers is cheaper: 2x8 -> 3 2.0 vs 2.6 ns/row, 3x8 -> 5 3.1 vs 3.8, 8x8 -> 6
         * 7.6 vs 8.3-9.7) */
        const ptrdiff_t done = prefix_staged(k, cols, (int)need, size, nrows, out, out_stride);
        if (done > 0)
            return uniform_rest(cols, k, size, nrows, done, out, out_stride, fallback);
    }
    if ((need == 1 || need == 2 || need == 4) && size == k * need && out_stride == size) {
        const ptrdiff_t done = prefix_any(k, cols, (int)need, nrows, out, 0);
        if (done > 0)
            return uniform_rest(cols, k, size, nrows, done, out, out_stride, fallback);
    }
    if (8 * slabs <= width) {
        /* rows ending inside a slab: that slab computed whole, its needed bytes stored */
        rows_any(k, cols, slabs, nrows, out, out_stride, size - 8 * k * (slabs - 1));
        return 1;
    }
    if (whole == 0)
        return 0;
    /* the whole slabs here, the bytes after them (fewer than 8 per column) on fallback */
    rows_any(k, cols, whole, nrows, out, out_stride, 8 * k);
    for (c = 0; c < k; c++) {
        view[c] = cols[c];
        view[c].data = cols[c].data + 8 * whole;
        view[c].width = width - 8 * whole;
    }
    fallback(view, k, size - 8 * k * whole, nrows, out + 8 * k * whole, out_stride);
    return 1;
}

/* ---- rows of at most 16 bytes from byte planes (zorder_avx2_planar) ----------------- */

/* For rows cut to a few bytes of many columns or of a prefix (7x8 -> 10, 10x8 -> 10), the
 * paths above compute whole 8-byte pieces of every column, or 7 columns as 8 with a zero
 * column, and throw most of the work away. Here a block of 32 rows is taken apart into
 * byte planes instead: plane (c, j) holds byte j of column c for the 32 rows, one row a
 * byte lane (vpshufb picks from 16-byte windows of the rows). Output byte b of the 32
 * rows is then an OR of vpshufb lookups, one per column nibble that has bits in it, of a
 * 16-entry table giving those bits' places in b (at most 8 nibbles a byte: one a bit).
 * The output planes are turned into rows by a 16x16 byte transpose per 128-bit lane, and
 * each row is one 16-byte store, rows in order, the bytes past the row written again by
 * the next. Only the nibbles the rows use are looked up: 7x8 -> 10 takes 71 lookups a
 * block, 10x8 -> 10 80. The tables follow Iceberg's order (level by level, the columns
 * that still have bits, column order), so ragged widths are the same code. Rows more than
 * 8 bytes apart (16-byte columns cut to a prefix, the columns of one 2-D block) are read 8
 * bytes a row, two rows a 16-byte window, and taken apart as rows 8 apart. */
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

#else  /* not x86-64, or a compiler without AVX2 target attributes */

const int zorder_avx2_built = 0;
ptrdiff_t zorder_avx2_stream_min = 0;
int zorder_avx2_planar_mode = 0;
ptrdiff_t zorder_avx2_planar_min_rows = 0;

void zorder_avx2_init(void) {}

ptrdiff_t zorder_avx2_planar(const zorder_column *cols, int ncols, ptrdiff_t size, ptrdiff_t nrows,
                             uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

ptrdiff_t zorder_avx2_planar_rows(const zorder_column *cols, int ncols, ptrdiff_t size,
                                  ptrdiff_t nrows, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out_stride;
    return 0;
}

ptrdiff_t zorder_avx2_slice(uint8_t *dst, const uint8_t *src, ptrdiff_t rows, ptrdiff_t w,
                            ptrdiff_t st)
{
    (void)dst; (void)src; (void)rows; (void)w; (void)st;
    return 0;
}

ptrdiff_t zorder_avx2_assemble(const zorder_seg_piece *pieces, int npieces, ptrdiff_t size,
                               ptrdiff_t rows, uint8_t *out)
{
    (void)pieces; (void)npieces; (void)size; (void)rows; (void)out;
    return 0;
}

int zorder_avx2_squeeze_planes(const uint8_t *planes, int k, int nb, ptrdiff_t w,
                               ptrdiff_t limit, ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)planes; (void)k; (void)nb; (void)w; (void)limit; (void)rows; (void)out; (void)out_stride;
    return 0;
}

void zorder_avx2_merge(const uint8_t *planes, int nb, ptrdiff_t n, uint8_t *out)
{
    zorder_seg_merge(planes, nb, n, out);
}

void zorder_avx2_squeeze(const uint8_t *src, int k, int nb, ptrdiff_t w, ptrdiff_t limit,
                         ptrdiff_t rows, uint8_t *out, ptrdiff_t out_stride)
{
    zorder_seg_squeeze(src, k, nb, w, limit, rows, out, out_stride);
}

int zorder_avx2_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_uniform_fn fallback)
{
    (void)cols; (void)k; (void)size; (void)nrows; (void)out; (void)out_stride; (void)fallback;
    return 0;
}

#endif
