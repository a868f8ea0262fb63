/* Iceberg's Hilbert index for blocks of rows; see hilbert_kernel.h.
 *
 * The transform (J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004)
 * on the n words of a row, each `bits` wide, in three steps:
 *   1. inverse undo, for each level q = bits-1 down to 1, with low = 2^q - 1, and each
 *      column i in order: if bit q of word i is set, invert the low bits of word 0;
 *      otherwise exchange the low bits of words 0 and i;
 *   2. Gray encode: word i ^= word i-1, for i = 1 .. n-1 in order;
 *   3. final adjustment: every set bit q >= 1 of the last word flips bits 0 .. q-1 of
 *      every word, i.e. bit k of the flip is the parity of the last word's bits above k.
 * Rows are independent, so each step is the same operation on every lane of a vector
 * of rows: the level tests become lane masks, and nothing branches on data.
 *
 * Only the x86 code carries target attributes (as in interleave/csrc/avx512/); the baseline
 * object runs on any x86-64 and the file builds to the plain code on other machines. */
#include <stdlib.h>
#include <string.h>

#include "hilbert_kernel.h"
#include "arch.h"
#include "compiler.h"

#if ZORDER_X86_64 && ZORDER_CC_AVX512_VBMI_GFNI
#define ZH_X86_BUILD 1
#include <immintrin.h>
#else
#define ZH_X86_BUILD 0
#endif

#define ZH_RESTRICT ZORDER_RESTRICT

/* Rows per group of vector tiles (4 tiles of 8 rows); ZORDER_HILBERT_BLOCK is a multiple. */
#define ZH_PAD 32

const int zorder_hilbert_avx2_built = ZH_X86_BUILD;
const int zorder_hilbert_avx512_built = ZH_X86_BUILD;

static inline uint64_t load_be(const uint8_t *p, int nbytes)
{
    uint64_t v = 0;
    int b;
    for (b = 0; b < nbytes; b++)
        v = (v << 8) | p[b];
    return v;
}

static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if ZORDER_LITTLE_ENDIAN
    v = ZORDER_BSWAP64(v);
#endif
    return v;
}

/* Bit k of the result: parity of bits k+1 .. 63 of w (the final adjustment's flip). */
static inline uint64_t flip_of(uint64_t w)
{
    uint64_t y = w >> 1;
    y ^= y >> 1;
    y ^= y >> 2;
    y ^= y >> 4;
    y ^= y >> 8;
    y ^= y >> 16;
    y ^= y >> 32;
    return y;
}

/* ---- plain C: one level for one column over a block, a loop compilers vectorize ---- */

static void undo_level_first(uint64_t *ZH_RESTRICT x0, ptrdiff_t count, int q)
{
    const uint64_t low = ((uint64_t)1 << q) - 1;
    ptrdiff_t r;
    for (r = 0; r < count; r++)
        x0[r] ^= low & (0 - ((x0[r] >> q) & 1));
}

static void undo_level(uint64_t *ZH_RESTRICT x0, uint64_t *ZH_RESTRICT xi, ptrdiff_t count, int q)
{
    const uint64_t low = ((uint64_t)1 << q) - 1;
    ptrdiff_t r;
    for (r = 0; r < count; r++) {
        uint64_t a = x0[r], c = xi[r];
        uint64_t set = 0 - ((c >> q) & 1);          /* all ones where bit q of xi is set */
        uint64_t swap = (a ^ c) & low & ~set;
        x0[r] = a ^ swap ^ (low & set);
        xi[r] = c ^ swap;
    }
}

static void transform_plain(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits, ptrdiff_t count)
{
    ptrdiff_t i, r;
    int q;
    for (q = bits - 1; q > 0; q--) {
        undo_level_first(words, count, q);
        for (i = 1; i < n; i++)
            undo_level(words, words + i * ws, count, q);
    }
    for (i = 1; i < n; i++)
        for (r = 0; r < count; r++)
            words[i * ws + r] ^= words[(i - 1) * ws + r];
    for (r = 0; r < count; r++) {
        uint64_t flip = flip_of(words[(n - 1) * ws + r]);
        for (i = 0; i < n; i++)
            words[i * ws + r] ^= flip;
    }
}

/* The transposed words as big-endian bytes in place: word w's bits/8 bytes first. */
static void to_big_endian(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits, ptrdiff_t count)
{
    ptrdiff_t i, r;
    int b, shift = 64 - bits;
    for (i = 0; i < n; i++)
        for (r = 0; r < count; r++) {
            uint64_t v = words[i * ws + r] << shift;
            uint8_t *dst = (uint8_t *)&words[i * ws + r];
            for (b = 0; b < 8; b++)
                dst[b] = (uint8_t)(v >> (56 - 8 * b));
        }
}

#if ZH_X86_BUILD

/* Both vector transforms work on groups of T tiles (registers of rows) at a time and
 * read and write whole tiles: the block's column arrays are padded to a multiple of
 * ZH_PAD rows, and rows past the block's count are computed but never interleaved.
 * Word 0 is one long dependency chain per tile (every step reads and writes it), so a
 * group interleaves T independent tiles to keep the vector units busy. */

/* Case N (columns) of a transform's switch: groups of T tiles of LANES rows; a block with
 * a single tile of rows (one row from hilbert_index) runs one tile. */
#define ZH_TILES_CASE(TILES, LANES, N, T)                       \
    case N:                                                     \
        if (count <= (LANES))                                   \
            TILES(words, ws, 0, N, 1, bits);                    \
        else                                                    \
            for (r = 0; r < count; r += (LANES) * (T))          \
                TILES(words, ws, r, N, T, bits);                \
        break;

/* ternarylogic immediate for (a, b, c) -> c ? b : a, a bitwise select. */
#define ZH_SELECT 0xD8

/* ---- AVX-512: 8 rows per register ------------------------------------------------- */

#define ZH512 ZORDER_TARGET_ISA("avx512f,avx512bw")
#define ZH512_INLINE ZH512 ZORDER_ALWAYS_INLINE

ZH512_INLINE __m512i bswap512(__m512i v)
{
    /* vpshufb indices, within each 128-bit lane: every qword's bytes reversed. */
    const __m512i idx = _mm512_set_epi64(
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    return _mm512_shuffle_epi8(v, idx);
}

/* Level step for column 0: lanes where bit q of word 0 is set invert its low bits. */
ZH512_INLINE __m512i first512(__m512i x0, __m512i bit, __m512i low)
{
    return _mm512_mask_xor_epi64(x0, _mm512_test_epi64_mask(x0, bit), x0, low);
}

/* Level step for column i >= 1. Only lanes where bit q of word i is clear swap their low
 * bits; word 0 is inverted first in every lane, so in the swapping lanes its low bits
 * are replaced anyway and its high bits are unchanged (low has none). Four
 * instructions, two of them on word 0's chain. */
ZH512_INLINE void step512(__m512i *x0, __m512i *xi, __m512i bit, __m512i low)
{
    __mmask8 clear = _mm512_testn_epi64_mask(*xi, bit);
    __m512i inverted = _mm512_xor_si512(*x0, low);
    __m512i swapped_i = _mm512_mask_ternarylogic_epi64(*xi, clear, *x0, low, ZH_SELECT);
    *x0 = _mm512_mask_ternarylogic_epi64(inverted, clear, *xi, low, ZH_SELECT);
    *xi = swapped_i;
}

/* The tiles (hilbert_tiles.h) on 8 rows a ZMM register, 8 columns in registers. */
#define ZH_V __m512i
#define ZH_LANES 8
#define ZH_MAX_COLUMNS 8
#define ZH_INLINE ZH512_INLINE
#define ZH_FLIP flip512
#define ZH_TILES tiles512
#define ZH_TILES_WIDE tiles512_wide
#define zh_load(p) _mm512_loadu_si512(p)
#define zh_store(p, v) _mm512_storeu_si512(p, v)
#define zh_xor _mm512_xor_si512
#define zh_srli _mm512_srli_epi64
#define zh_sll _mm512_sll_epi64
#define zh_sub _mm512_sub_epi64
#define zh_set1 _mm512_set1_epi64
#define zh_first first512
#define zh_step step512
#define zh_bswap bswap512
#include "hilbert_tiles.h"

/* T = 4 tiles while 4n words fit the 32 ZMM registers with room to spare, else 2. */
#define ZH512_CASE(N, T) ZH_TILES_CASE(tiles512, 8, N, T)

ZH512 static void transform512(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                               ptrdiff_t count)
{
    ptrdiff_t r;
    switch (n) {
    ZH512_CASE(1, 4)
    ZH512_CASE(2, 4)
    ZH512_CASE(3, 4)
    ZH512_CASE(4, 4)
    ZH512_CASE(5, 4)
    ZH512_CASE(6, 2)
    ZH512_CASE(7, 2)
    ZH512_CASE(8, 2)
    default:
        if (count <= 8)
            tiles512_wide(words, ws, 0, n, 1, bits);
        else
            for (r = 0; r < count; r += 32)
                tiles512_wide(words, ws, r, n, 4, bits);
    }
}

/* ---- AVX2: 4 rows per register ---------------------------------------------------- */

#define ZH256 ZORDER_TARGET_ISA("avx2")
#define ZH256_INLINE ZH256 ZORDER_ALWAYS_INLINE

ZH256_INLINE __m256i bswap256(__m256i v)
{
    const __m256i idx = _mm256_set_epi64x(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                          0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    return _mm256_shuffle_epi8(v, idx);
}

ZH256_INLINE __m256i load256(const uint64_t *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

ZH256_INLINE void store256(uint64_t *p, __m256i v)
{
    _mm256_storeu_si256((__m256i *)p, v);
}

/* Lanes where bit q of x is set, as all-ones (AVX2 has no mask registers). */
ZH256_INLINE __m256i set256(__m256i x, __m256i bit)
{
    return _mm256_cmpeq_epi64(_mm256_and_si256(x, bit), bit);
}

ZH256_INLINE __m256i first256(__m256i x0, __m256i bit, __m256i low)
{
    return _mm256_xor_si256(x0, _mm256_and_si256(set256(x0, bit), low));
}

ZH256_INLINE void step256(__m256i *x0, __m256i *xi, __m256i bit, __m256i low)
{
    __m256i set = set256(*xi, bit);
    __m256i swap = _mm256_andnot_si256(set, _mm256_and_si256(_mm256_xor_si256(*x0, *xi), low));
    *xi = _mm256_xor_si256(*xi, swap);
    *x0 = _mm256_xor_si256(*x0, _mm256_or_si256(swap, _mm256_and_si256(set, low)));
}

/* The tiles (hilbert_tiles.h) on 4 rows a YMM register, 4 columns in the 16 registers. */
#define ZH_V __m256i
#define ZH_LANES 4
#define ZH_MAX_COLUMNS 4
#define ZH_INLINE ZH256_INLINE
#define ZH_FLIP flip256
#define ZH_TILES tiles256
#define ZH_TILES_WIDE tiles256_wide
#define zh_load load256
#define zh_store store256
#define zh_xor _mm256_xor_si256
#define zh_srli _mm256_srli_epi64
#define zh_sll _mm256_sll_epi64
#define zh_sub _mm256_sub_epi64
#define zh_set1 _mm256_set1_epi64x
#define zh_first first256
#define zh_step step256
#define zh_bswap bswap256
#include "hilbert_tiles.h"

#define ZH256_CASE(N, T) ZH_TILES_CASE(tiles256, 4, N, T)

ZH256 static void transform256(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                               ptrdiff_t count)
{
    ptrdiff_t r;
    switch (n) {
    ZH256_CASE(1, 4)
    ZH256_CASE(2, 4)
    ZH256_CASE(3, 2)
    ZH256_CASE(4, 2)
    default:
        /* From 5 columns two tiles no longer fit the registers: memory-backed tiles. */
        if (count <= 4)
            tiles256_wide(words, ws, 0, n, 1, bits);
        else
            for (r = 0; r < count; r += 16)
                tiles256_wide(words, ws, r, n, 4, bits);
    }
}

#endif /* ZH_X86_BUILD */

/* Leaves the block's transposed words as big-endian bytes, column c at words + c * ws. */
static void transform_block(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                            ptrdiff_t count, int level)
{
#if ZH_X86_BUILD
    if (level == ZORDER_HILBERT_AVX512) {
        transform512(words, ws, n, bits, count);
        return;
    }
    if (level == ZORDER_HILBERT_AVX2) {
        transform256(words, ws, n, bits, count);
        return;
    }
#else
    (void)level;
#endif
    transform_plain(words, ws, n, bits, count);
    to_big_endian(words, ws, n, bits, count);
}

int zorder_hilbert_rows(const zorder_column *cols, ptrdiff_t ncols, int bits, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride, zorder_rows_kernel interleave,
                        int level)
{
    uint64_t stack_words[ZORDER_HILBERT_STACK_COLUMNS * ZORDER_HILBERT_BLOCK];
    zorder_column stack_block[ZORDER_HILBERT_STACK_COLUMNS];
    uint64_t *words = stack_words;
    zorder_column *block = stack_block;
    const int nbytes = bits / 8;
    /* Column arrays padded to whole groups of vector tiles (see the x86 code). */
    const ptrdiff_t ws = ((nrows < ZORDER_HILBERT_BLOCK ? nrows : ZORDER_HILBERT_BLOCK) +
                          ZH_PAD - 1) / ZH_PAD * ZH_PAD;
    ptrdiff_t c, r, r0;
    if (nrows <= 0)
        return 1;
    if (ncols > ZORDER_HILBERT_STACK_COLUMNS) {
        words = (uint64_t *)malloc((size_t)ncols * (size_t)ws * sizeof(uint64_t));
        block = (zorder_column *)malloc((size_t)ncols * sizeof(zorder_column));
        if (words == NULL || block == NULL) {
            free(words);
            free(block);
            return 0;
        }
    }
    for (c = 0; c < ncols; c++) {
        block[c].data = (const uint8_t *)(words + c * ws);
        block[c].row_stride = 8;
        block[c].width = nbytes;
    }
    for (r0 = 0; r0 < nrows; r0 += ws) {
        const ptrdiff_t count = nrows - r0 < ws ? nrows - r0 : ws;
        for (c = 0; c < ncols; c++) {
            const uint8_t *src = cols[c].data + r0 * cols[c].row_stride;
            const ptrdiff_t stride = cols[c].row_stride;
            uint64_t *dst = words + c * ws;
            if (cols[c].width >= 8) {
                const int shift = 64 - bits;
                for (r = 0; r < count; r++)
                    dst[r] = load_be64(src + r * stride) >> shift;
            } else {
                for (r = 0; r < count; r++)
                    dst[r] = load_be(src + r * stride, nbytes);
            }
        }
        transform_block(words, ws, ncols, bits, count, level);
        interleave(block, ncols, ncols * nbytes, count, out + r0 * out_stride, out_stride);
    }
    if (words != stack_words) {
        free(words);
        free(block);
    }
    return 1;
}

/* ---- decode: Skilling's TransposetoAxes, one row at a time ------------------------ */

static void transposed_to_axes(uint64_t *x, ptrdiff_t n, int bits)
{
    uint64_t flip = x[n - 1] >> 1;
    ptrdiff_t i;
    int q;
    for (i = n - 1; i > 0; i--)
        x[i] ^= x[i - 1];
    x[0] ^= flip;
    for (q = 1; q < bits; q++) {
        const uint64_t low = ((uint64_t)1 << q) - 1;
        for (i = n - 1; i >= 0; i--) {
            if ((x[i] >> q) & 1) {
                x[0] ^= low;
            } else {
                uint64_t swap = (x[0] ^ x[i]) & low;
                x[0] ^= swap;
                x[i] ^= swap;
            }
        }
    }
}

int zorder_hilbert_decode_rows(uint8_t *data, ptrdiff_t nrows, ptrdiff_t row_stride,
                               ptrdiff_t ncols, int bits)
{
    uint64_t stack_words[ZORDER_HILBERT_STACK_COLUMNS];
    uint64_t *x = stack_words;
    const int nbytes = bits / 8;
    ptrdiff_t r, c;
    int b;
    if (ncols > ZORDER_HILBERT_STACK_COLUMNS) {
        x = (uint64_t *)malloc((size_t)ncols * sizeof(uint64_t));
        if (x == NULL)
            return 0;
    }
    for (r = 0; r < nrows; r++) {
        uint8_t *row = data + r * row_stride;
        for (c = 0; c < ncols; c++)
            x[c] = load_be(row + c * nbytes, nbytes);
        transposed_to_axes(x, ncols, bits);
        for (c = 0; c < ncols; c++)
            for (b = 0; b < nbytes; b++)
                row[c * nbytes + b] = (uint8_t)(x[c] >> (8 * (nbytes - 1 - b)));
    }
    if (x != stack_words)
        free(x);
    return 1;
}
