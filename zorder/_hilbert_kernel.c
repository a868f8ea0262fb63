/* Iceberg's Hilbert index for blocks of rows; see _hilbert_kernel.h.
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
 * Only the x86 code carries target attributes (as in _simd_kernel.c); the baseline
 * object runs on any x86-64 and the file builds to the plain code on other machines. */
#include <stdlib.h>
#include <string.h>

#include "_hilbert_kernel.h"
#include "_cpuid.h"

#if ZORDER_X86_64 && ((defined(__clang__) && __clang_major__ >= 7) || \
                      (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define ZH_X86_BUILD 1
#include <immintrin.h>
#else
#define ZH_X86_BUILD 0
#endif

const int zorder_hilbert_avx2_built = ZH_X86_BUILD;
const int zorder_hilbert_avx512_built = ZH_X86_BUILD;

int zorder_hilbert_cpu_level(void)
{
    uint32_t r[4];
    if (!ZH_X86_BUILD || !zorder_cpuid(0, 0, r) || r[0] < 7)
        return ZORDER_HILBERT_PLAIN;
    zorder_cpuid(7, 0, r);
    /* AVX512F (EBX bit 16) and AVX512BW (bit 30), with the ZMM state saved by the OS. */
    if (((r[1] >> 16) & 1) && ((r[1] >> 30) & 1) &&
        (zorder_os_xcr0() & ZORDER_XCR0_AVX512) == ZORDER_XCR0_AVX512)
        return ZORDER_HILBERT_AVX512;
    if (zorder_cpu_has_avx2())
        return ZORDER_HILBERT_AVX2;
    return ZORDER_HILBERT_PLAIN;
}

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
#if defined(__GNUC__) || defined(__clang__)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
#else
    return load_be(p, 8);
#endif
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

static void undo_level_first(uint64_t *restrict x0, ptrdiff_t count, int q)
{
    const uint64_t low = ((uint64_t)1 << q) - 1;
    ptrdiff_t r;
    for (r = 0; r < count; r++)
        x0[r] ^= low & (0 - ((x0[r] >> q) & 1));
}

static void undo_level(uint64_t *restrict x0, uint64_t *restrict xi, ptrdiff_t count, int q)
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

/* ternarylogic immediate for (a, b, c) -> c ? b : a, a bitwise select. */
#define ZH_SELECT 0xD8

/* ---- AVX-512: 8 rows per register ------------------------------------------------- */

#define ZH512 __attribute__((target("avx512f,avx512bw")))
#define ZH512_INLINE ZH512 static inline __attribute__((always_inline))

ZH512_INLINE __m512i bswap512(__m512i v)
{
    /* vpshufb indices, within each 128-bit lane: every qword's bytes reversed. */
    const __m512i idx = _mm512_set_epi64(
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
        0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    return _mm512_shuffle_epi8(v, idx);
}

/* One level step for column i against column 0 (i >= 1). */
ZH512_INLINE void step512(__m512i *x0, __m512i *xi, __m512i bit, __m512i low)
{
    __mmask8 set = _mm512_test_epi64_mask(*xi, bit);
    __m512i mixed = _mm512_ternarylogic_epi64(*x0, *xi, low, ZH_SELECT);   /* swapped x0 */
    *xi = _mm512_mask_ternarylogic_epi64(*xi, (__mmask8)~set, *x0, low, ZH_SELECT);
    *x0 = _mm512_mask_xor_epi64(mixed, set, *x0, low);                    /* inverted x0 */
}

/* The whole transform of 8 rows (lanes) of n <= 8 columns, kept in registers; n is a
 * constant in each caller so the column loops unroll. Writes big-endian words. */
ZH512_INLINE void tile512(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, __mmask8 lanes,
                          const int n, int bits)
{
    __m512i x[8], bit, flip;
    const __m512i one = _mm512_set1_epi64(1);
    int i, q;
    for (i = 0; i < n; i++)
        x[i] = _mm512_maskz_loadu_epi64(lanes, words + i * ws + r);
    bit = _mm512_set1_epi64((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        __m512i low = _mm512_sub_epi64(bit, one);
        x[0] = _mm512_mask_xor_epi64(x[0], _mm512_test_epi64_mask(x[0], bit), x[0], low);
        for (i = 1; i < n; i++)
            step512(&x[0], &x[i], bit, low);
        bit = _mm512_srli_epi64(bit, 1);
    }
    for (i = 1; i < n; i++)
        x[i] = _mm512_xor_si512(x[i], x[i - 1]);
    flip = _mm512_srli_epi64(x[n - 1], 1);
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 1));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 2));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 4));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 8));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 16));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 32));
    for (i = 0; i < n; i++) {
        __m512i v = _mm512_xor_si512(x[i], flip);
        v = bswap512(_mm512_sll_epi64(v, _mm_cvtsi32_si128(64 - bits)));
        _mm512_mask_storeu_epi64(words + i * ws + r, lanes, v);
    }
}

/* More than 8 columns: the same steps with the columns in memory, word 0 in a register. */
ZH512 static void tile512_wide(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, __mmask8 lanes,
                               ptrdiff_t n, int bits)
{
    __m512i x0, xi, prev, bit, flip;
    const __m512i one = _mm512_set1_epi64(1);
    ptrdiff_t i;
    int q;
    x0 = _mm512_maskz_loadu_epi64(lanes, words + r);
    bit = _mm512_set1_epi64((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        __m512i low = _mm512_sub_epi64(bit, one);
        x0 = _mm512_mask_xor_epi64(x0, _mm512_test_epi64_mask(x0, bit), x0, low);
        for (i = 1; i < n; i++) {
            xi = _mm512_maskz_loadu_epi64(lanes, words + i * ws + r);
            step512(&x0, &xi, bit, low);
            _mm512_mask_storeu_epi64(words + i * ws + r, lanes, xi);
        }
        bit = _mm512_srli_epi64(bit, 1);
    }
    _mm512_mask_storeu_epi64(words + r, lanes, x0);
    prev = x0;
    for (i = 1; i < n; i++) {
        prev = _mm512_xor_si512(prev, _mm512_maskz_loadu_epi64(lanes, words + i * ws + r));
        _mm512_mask_storeu_epi64(words + i * ws + r, lanes, prev);
    }
    flip = _mm512_srli_epi64(prev, 1);
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 1));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 2));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 4));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 8));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 16));
    flip = _mm512_xor_si512(flip, _mm512_srli_epi64(flip, 32));
    for (i = 0; i < n; i++) {
        __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi64(lanes, words + i * ws + r), flip);
        v = bswap512(_mm512_sll_epi64(v, _mm_cvtsi32_si128(64 - bits)));
        _mm512_mask_storeu_epi64(words + i * ws + r, lanes, v);
    }
}

#define ZH512_CASE(N) \
    case N: \
        for (r = 0; r < count; r += 8) \
            tile512(words, ws, r, tail_mask(count - r), N, bits); \
        break;

static inline __mmask8 tail_mask(ptrdiff_t left)
{
    return left >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << left) - 1);
}

ZH512 static void transform512(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                               ptrdiff_t count)
{
    ptrdiff_t r;
    switch (n) {
    ZH512_CASE(1)
    ZH512_CASE(2)
    ZH512_CASE(3)
    ZH512_CASE(4)
    ZH512_CASE(5)
    ZH512_CASE(6)
    ZH512_CASE(7)
    ZH512_CASE(8)
    default:
        for (r = 0; r < count; r += 8)
            tile512_wide(words, ws, r, tail_mask(count - r), n, bits);
    }
}

/* ---- AVX2: 4 rows per register ---------------------------------------------------- */

#define ZH256 __attribute__((target("avx2")))
#define ZH256_INLINE ZH256 static inline __attribute__((always_inline))

ZH256_INLINE __m256i bswap256(__m256i v)
{
    const __m256i idx = _mm256_set_epi64x(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                          0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    return _mm256_shuffle_epi8(v, idx);
}

ZH256_INLINE __m256i lanes_of(ptrdiff_t left)
{
    /* Lane j enabled (all ones) when j < left. */
    const __m256i index = _mm256_set_epi64x(3, 2, 1, 0);
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(left < 4 ? left : 4)), index);
}

ZH256_INLINE void step256(__m256i *x0, __m256i *xi, __m256i bit, __m256i low)
{
    __m256i set = _mm256_cmpeq_epi64(_mm256_and_si256(*xi, bit), bit);
    __m256i swap = _mm256_andnot_si256(set, _mm256_and_si256(_mm256_xor_si256(*x0, *xi), low));
    *xi = _mm256_xor_si256(*xi, swap);
    *x0 = _mm256_xor_si256(*x0, _mm256_blendv_epi8(swap, low, set));
}

ZH256_INLINE __m256i flip256(__m256i last)
{
    __m256i flip = _mm256_srli_epi64(last, 1);
    flip = _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 1));
    flip = _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 2));
    flip = _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 4));
    flip = _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 8));
    flip = _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 16));
    return _mm256_xor_si256(flip, _mm256_srli_epi64(flip, 32));
}

ZH256_INLINE void tile256(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, __m256i lanes,
                          const int n, int bits)
{
    __m256i x[8], bit, flip;
    const __m256i one = _mm256_set1_epi64x(1);
    int i, q;
    for (i = 0; i < n; i++)
        x[i] = _mm256_maskload_epi64((const long long *)(words + i * ws + r), lanes);
    bit = _mm256_set1_epi64x((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        __m256i low = _mm256_sub_epi64(bit, one);
        __m256i set = _mm256_cmpeq_epi64(_mm256_and_si256(x[0], bit), bit);
        x[0] = _mm256_xor_si256(x[0], _mm256_and_si256(set, low));
        for (i = 1; i < n; i++)
            step256(&x[0], &x[i], bit, low);
        bit = _mm256_srli_epi64(bit, 1);
    }
    for (i = 1; i < n; i++)
        x[i] = _mm256_xor_si256(x[i], x[i - 1]);
    flip = flip256(x[n - 1]);
    for (i = 0; i < n; i++) {
        __m256i v = _mm256_xor_si256(x[i], flip);
        v = bswap256(_mm256_sll_epi64(v, _mm_cvtsi32_si128(64 - bits)));
        _mm256_maskstore_epi64((long long *)(words + i * ws + r), lanes, v);
    }
}

ZH256 static void tile256_wide(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, __m256i lanes,
                               ptrdiff_t n, int bits)
{
    __m256i x0, xi, prev, bit, flip;
    const __m256i one = _mm256_set1_epi64x(1);
    ptrdiff_t i;
    int q;
    x0 = _mm256_maskload_epi64((const long long *)(words + r), lanes);
    bit = _mm256_set1_epi64x((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        __m256i low = _mm256_sub_epi64(bit, one);
        __m256i set = _mm256_cmpeq_epi64(_mm256_and_si256(x0, bit), bit);
        x0 = _mm256_xor_si256(x0, _mm256_and_si256(set, low));
        for (i = 1; i < n; i++) {
            xi = _mm256_maskload_epi64((const long long *)(words + i * ws + r), lanes);
            step256(&x0, &xi, bit, low);
            _mm256_maskstore_epi64((long long *)(words + i * ws + r), lanes, xi);
        }
        bit = _mm256_srli_epi64(bit, 1);
    }
    _mm256_maskstore_epi64((long long *)(words + r), lanes, x0);
    prev = x0;
    for (i = 1; i < n; i++) {
        prev = _mm256_xor_si256(
            prev, _mm256_maskload_epi64((const long long *)(words + i * ws + r), lanes));
        _mm256_maskstore_epi64((long long *)(words + i * ws + r), lanes, prev);
    }
    flip = flip256(prev);
    for (i = 0; i < n; i++) {
        __m256i v = _mm256_maskload_epi64((const long long *)(words + i * ws + r), lanes);
        v = bswap256(_mm256_sll_epi64(_mm256_xor_si256(v, flip), _mm_cvtsi32_si128(64 - bits)));
        _mm256_maskstore_epi64((long long *)(words + i * ws + r), lanes, v);
    }
}

#define ZH256_CASE(N) \
    case N: \
        for (r = 0; r < count; r += 4) \
            tile256(words, ws, r, lanes_of(count - r), N, bits); \
        break;

ZH256 static void transform256(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                               ptrdiff_t count)
{
    ptrdiff_t r;
    switch (n) {
    ZH256_CASE(1)
    ZH256_CASE(2)
    ZH256_CASE(3)
    ZH256_CASE(4)
    ZH256_CASE(5)
    ZH256_CASE(6)
    ZH256_CASE(7)
    ZH256_CASE(8)
    default:
        for (r = 0; r < count; r += 4)
            tile256_wide(words, ws, r, lanes_of(count - r), n, bits);
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
    const ptrdiff_t ws = nrows < ZORDER_HILBERT_BLOCK ? nrows : ZORDER_HILBERT_BLOCK;
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
