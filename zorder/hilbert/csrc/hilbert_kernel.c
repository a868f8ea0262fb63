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
/* The interleave backend's streaming writer (whole 64-byte lines, non-temporal, realigned
 * to the output's start; masked ordinary stores at both ends); the threshold is kernel.h's
 * ZORDER_STREAM_MIN. Its load.h also brings row readers this file does not use. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "avx512/stream.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
#define ZH_X86_BUILD 0
#endif

#define ZH_RESTRICT ZORDER_RESTRICT

/* Rows per group of byte planes (VBMI), a multiple of the groups of vector tiles (4 tiles
 * of 8 rows); ZORDER_HILBERT_BLOCK is a multiple. */
#define ZH_PAD 64

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

/* ---- the state tables: Skilling's transform as a machine over the levels ------------
 *
 * Every step of the inverse undo at level q acts on the bits below q alike, so after the
 * levels above q the bits of level q have been through one signed permutation of the n
 * columns (a permutation, then some columns inverted), the same in every lower level.
 * That permutation, with the parity of the last transposed word's bits so far (the final
 * adjustment's flip), is the state; a level's n bits and the state give the level's n
 * output bits (Gray code and flip included) and the next state. A state whose column 0 is
 * inverted behaves as the same state with column 0 not inverted and the parity flipped,
 * so states keep column 0 uninverted: 4 states for 2 columns, 24 for 3, 192 for 4. */

#define ZH_STATE_COLUMNS 4

typedef struct {
    uint8_t perm[ZH_STATE_COLUMNS];   /* the level's bit j is the input's bit perm[j] */
    uint8_t sign;                     /* ... inverted where bit j is set */
    uint8_t parity;                   /* the flip of this level's bits */
} zh_state;

/* One level: x holds column i's bit at bit n-1-i; *y gets the output bits alike. */
static void state_level(const zh_state *s, int n, unsigned x, zh_state *next, unsigned *y)
{
    unsigned a[ZH_STATE_COLUMNS], acc = 0, out = 0;
    uint8_t tperm[ZH_STATE_COLUMNS], tsign = 0, t;
    int i, j;
    for (j = 0; j < n; j++)
        a[j] = ((x >> (n - 1 - s->perm[j])) & 1) ^ ((s->sign >> j) & 1);
    for (j = 0; j < n; j++) {
        acc ^= a[j];                          /* Gray code: word j ^= word j-1 */
        out |= (acc ^ s->parity) << (n - 1 - j);
    }
    *y = out;
    /* the undo steps of this level, in order, as one signed permutation of the bits below */
    for (j = 0; j < n; j++)
        tperm[j] = (uint8_t)j;
    for (i = 0; i < n; i++) {
        if (a[i]) {
            tsign ^= 1;                       /* invert the low bits of word 0 */
        } else if (i > 0) {                   /* exchange the low bits of words 0 and i */
            t = tperm[0]; tperm[0] = tperm[i]; tperm[i] = t;
            t = (uint8_t)(((tsign >> i) ^ tsign) & 1);
            tsign ^= (uint8_t)(t | (t << i));
        }
    }
    next->sign = 0;
    for (j = 0; j < n; j++) {
        next->perm[j] = s->perm[tperm[j]];
        next->sign |= (uint8_t)((((s->sign >> tperm[j]) ^ (tsign >> j)) & 1) << j);
    }
    next->parity = (uint8_t)(s->parity ^ acc);
    if (next->sign & 1) {
        next->sign ^= 1;
        next->parity ^= 1;
    }
}

/* The state's number in states[0 .. *count), added at the end if new (0 if full). */
static int state_id(zh_state *states, int *count, int capacity, const zh_state *s, int n)
{
    int k;
    for (k = 0; k < *count; k++)
        if (memcmp(states[k].perm, s->perm, (size_t)n) == 0 && states[k].sign == s->sign &&
            states[k].parity == s->parity)
            return k;
    if (*count == capacity)
        return -1;
    states[*count] = *s;
    return (*count)++;
}

/* table[state << (n * levels) | bits] = next << (n * levels) | output bits, for every
 * state reachable from the identity (state 0), `levels` levels a step: the bits of the
 * upper level first, column 0 first within a level. Returns the states found, or -1 if
 * there are more than `capacity`. */
static int build_states(int n, int levels, uint8_t *table, int capacity)
{
    zh_state states[64];
    int count = 0, done, width = n * levels;
    zh_state s;
    memset(&s, 0, sizeof s);
    for (done = 0; done < n; done++)
        s.perm[done] = (uint8_t)done;
    state_id(states, &count, capacity, &s, n);
    for (done = 0; done < count; done++) {
        unsigned x;
        for (x = 0; x < (1u << width); x++) {
            zh_state cur = states[done], nxt;
            unsigned y, out = 0;
            int l, id;
            for (l = 0; l < levels; l++) {
                state_level(&cur, n, (x >> (n * (levels - 1 - l))) & ((1u << n) - 1), &nxt, &y);
                out = (out << n) | y;
                cur = nxt;
            }
            id = state_id(states, &count, capacity, &cur, n);
            if (id < 0)
                return -1;
            table[(done << width) | x] = (uint8_t)((id << width) | out);
        }
    }
    return count;
}

/* 4 columns: 192 states x 16 inputs do not fit a byte permutation, so the state is split
 * as the signed permutation it is. Level bit j is x_{perm[j]} ^ f_j, with f the sign and
 * the parity in f_0 (the parity flips every output bit, as inverting column 0 does). With
 * the signs in the input's order (sbar_{perm[j]} = f_j) that is perm applied to
 * x' = x ^ sbar, and the claim checked while the tables are built is that perm and x'
 * alone give the output bits, the next perm and the change of sbar. perm is one of 24,
 * numbered lexicographically (the identity 0), in chunks of 8: the lookup index is perm's
 * place in its chunk (bits 4-6) and x' (bits 0-3), one 128-entry table per chunk.
 * zh_table4[0]: the next perm's place in its chunk << 4 | the bits sbar changes;
 * zh_table4[1]: the next perm's chunk (1: bit 6, 2: bit 7) | the output bits.
 * Chunks 1 and 2 are stored as their xor with chunk 0, which the vector code adds only
 * where the row's perm is in that chunk. */
#define ZH_PERMS4 24
static uint8_t zh_table4[2][3][128];

/* The lexicographic number of a permutation of 0..3. */
static int perm_rank4(const uint8_t *p)
{
    int i, j, rank = 0;
    for (i = 0; i < 4; i++) {
        int smaller = 0;
        for (j = i + 1; j < 4; j++)
            smaller += p[j] < p[i];
        rank = rank * (4 - i) + smaller;
    }
    return rank;
}

/* sbar: the state's signs (parity in column 0's) in the input's bit order. */
static unsigned input_signs4(const zh_state *s)
{
    unsigned sbar = 0;
    int j;
    for (j = 0; j < 4; j++) {
        unsigned f = ((s->sign >> j) & 1) ^ (j == 0 ? s->parity : 0);
        sbar |= f << (3 - s->perm[j]);
    }
    return sbar;
}

/* Fills zh_table4 from state_level over the 192 states; 0 if the split does not hold. */
static int build_states4(void)
{
    zh_state states[192];
    uint8_t filled[3][128];
    int count = 0, done, c, k;
    zh_state s;
    memset(&s, 0, sizeof s);
    memset(filled, 0, sizeof filled);
    for (done = 0; done < 4; done++)
        s.perm[done] = (uint8_t)done;
    state_id(states, &count, 192, &s, 4);
    for (done = 0; done < count; done++) {
        const int rank = perm_rank4(states[done].perm);
        const unsigned sbar = input_signs4(&states[done]);
        unsigned x;
        for (x = 0; x < 16; x++) {
            zh_state nxt;
            unsigned y, slot;
            int next_rank;
            uint8_t a, b;
            state_level(&states[done], 4, x, &nxt, &y);
            if (state_id(states, &count, 192, &nxt, 4) < 0)
                return 0;
            next_rank = perm_rank4(nxt.perm);
            a = (uint8_t)(((next_rank & 7) << 4) | (input_signs4(&nxt) ^ sbar));
            b = (uint8_t)(((next_rank >> 3) << 6) | y);
            slot = (unsigned)((rank & 7) << 4) | (x ^ sbar);
            if (filled[rank >> 3][slot] &&
                (zh_table4[0][rank >> 3][slot] != a || zh_table4[1][rank >> 3][slot] != b))
                return 0;
            filled[rank >> 3][slot] = 1;
            zh_table4[0][rank >> 3][slot] = a;
            zh_table4[1][rank >> 3][slot] = b;
        }
    }
    for (c = 0; c < 3; c++)
        for (k = 0; k < 128; k++)
            if (!filled[c][k])
                return 0;
    for (c = 1; c < 3; c++)
        for (k = 0; k < 128; k++) {
            zh_table4[0][c][k] ^= zh_table4[0][0][k];
            zh_table4[1][c][k] ^= zh_table4[1][0][k];
        }
    return count == 192;
}

/* 2 columns: 4 states, two levels a step (6-bit index); 3 columns: 24 states, one level. */
static uint8_t zh_table2[64];
static uint8_t zh_table3[192];
static int zh_tables_ready = 0;

int zorder_hilbert_tables_init(void)
{
    if (!zh_tables_ready)
        zh_tables_ready = build_states(2, 2, zh_table2, 4) == 4 &&
                          build_states(3, 1, zh_table3, 24) == 24 && build_states4();
    return ZH_X86_BUILD && zh_tables_ready;
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

/* ---- AVX2 bit slices: the state machine on 256 rows a register --------------------
 *
 * Without a byte permutation wide enough for the state tables, the machine runs as logic
 * on bit planes: a register holds one bit of 256 rows, so an AND or XOR is one step of
 * the machine for 256 rows. The state is kept as the signed permutation it is (see the
 * state tables above): for each of the level's bits j, the number of the input column it
 * is (source[j], in binary, a plane a bit) and its sign; and the parity. A level is then
 * - bit j = x[source[j]] ^ sign[j] (selections by the bits of source[j]);
 * - output bit j = bit 0 ^ .. ^ bit j (Gray code) ^ parity, and the parity ^= all bits;
 * - the undo steps in order on the rows (source[j], sign[j]): bit 0 inverts row 0; bit
 *   i >= 1 inverts row 0 where set and exchanges rows 0 and i where clear.
 * The output bits, in the order the levels give them, are Iceberg's interleave of the
 * transposed words, so each 64 of them are 8 bytes of each output row.
 *
 * Rows go to planes and back by two transposes (both involutions, so one code serves
 * both ways): 32 rows of 8 bytes to 8 registers of one byte of each row (a byte shuffle
 * and a transpose of 16-bit units), then the same byte of 8 such groups to 8 planes (a
 * transpose of the bits of each byte across the 8 registers). A plane's bit 8p + g is
 * then row 32g + (the row at byte p of its group), alike in every plane. */

/* The rows of a block of slices (ZORDER_HILBERT_BLOCK's), the columns the slices take and
 * the bits that number one of them. */
#define ZH_SLICE_ROWS 256
#if ZORDER_HILBERT_BLOCK != ZH_SLICE_ROWS
#error "the bit slices take whole blocks of ZORDER_HILBERT_BLOCK rows: 256"
#endif
#define ZH_SLICE_COLUMNS 8
#define ZH_SLICE_SOURCE_BITS 3

/* Registers r[0..7] as an 8 x 8 matrix of 16-bit units in each 128-bit lane, transposed:
 * unit h of r[b] becomes unit b of r[h]. */
ZH256_INLINE void transpose_units256(__m256i r[8])
{
    const __m256i t0 = _mm256_unpacklo_epi16(r[0], r[1]), t1 = _mm256_unpackhi_epi16(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi16(r[2], r[3]), t3 = _mm256_unpackhi_epi16(r[2], r[3]);
    const __m256i t4 = _mm256_unpacklo_epi16(r[4], r[5]), t5 = _mm256_unpackhi_epi16(r[4], r[5]);
    const __m256i t6 = _mm256_unpacklo_epi16(r[6], r[7]), t7 = _mm256_unpackhi_epi16(r[6], r[7]);
    const __m256i u0 = _mm256_unpacklo_epi32(t0, t2), u1 = _mm256_unpackhi_epi32(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi32(t1, t3), u3 = _mm256_unpackhi_epi32(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi32(t4, t6), u5 = _mm256_unpackhi_epi32(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi32(t5, t7), u7 = _mm256_unpackhi_epi32(t5, t7);
    r[0] = _mm256_unpacklo_epi64(u0, u4);
    r[1] = _mm256_unpackhi_epi64(u0, u4);
    r[2] = _mm256_unpacklo_epi64(u1, u5);
    r[3] = _mm256_unpackhi_epi64(u1, u5);
    r[4] = _mm256_unpacklo_epi64(u2, u6);
    r[5] = _mm256_unpackhi_epi64(u2, u6);
    r[6] = _mm256_unpacklo_epi64(u3, u7);
    r[7] = _mm256_unpackhi_epi64(u3, u7);
}

/* The bits of b under `low` (in each byte) and the bits of a `shift` above them trade
 * places. */
ZH256_INLINE void exchange_bits256(__m256i *a, __m256i *b, int shift, __m256i low)
{
    const __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi16(*a, shift), *b), low);
    *b = _mm256_xor_si256(*b, t);
    *a = _mm256_xor_si256(*a, _mm256_slli_epi16(t, shift));
}

/* Bit t of byte p of r[g] and bit g of byte p of r[t] trade places: three rounds of
 * exchanges between registers 4, 2 and 1 apart (unrolled: GCC kept a loop's registers in
 * memory). */
ZH256_INLINE void transpose_bits256(__m256i r[8])
{
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x33),
                  low1 = _mm256_set1_epi8(0x55);
    exchange_bits256(&r[0], &r[4], 4, low4);
    exchange_bits256(&r[1], &r[5], 4, low4);
    exchange_bits256(&r[2], &r[6], 4, low4);
    exchange_bits256(&r[3], &r[7], 4, low4);
    exchange_bits256(&r[0], &r[2], 2, low2);
    exchange_bits256(&r[1], &r[3], 2, low2);
    exchange_bits256(&r[4], &r[6], 2, low2);
    exchange_bits256(&r[5], &r[7], 2, low2);
    exchange_bits256(&r[0], &r[1], 1, low1);
    exchange_bits256(&r[2], &r[3], 1, low1);
    exchange_bits256(&r[4], &r[5], 1, low1);
    exchange_bits256(&r[6], &r[7], 1, low1);
}

/* 256 rows of 8 bytes, back to back, to 64 planes: plane 8b + t holds bit t of byte b. */
ZH256_INLINE void rows_to_slices(const uint8_t *in, __m256i planes[64])
{
    /* within a lane (2 rows): byte b of both rows side by side, as 16-bit unit b */
    const __m256i pair_bytes = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    __m256i bytes[8][8], r[8];
    int g, h, b;
    for (g = 0; g < 8; g++) {
        for (h = 0; h < 8; h++)
            bytes[g][h] = _mm256_shuffle_epi8(
                _mm256_loadu_si256((const __m256i *)(in + 256 * g + 32 * h)), pair_bytes);
        transpose_units256(bytes[g]);
    }
    for (b = 0; b < 8; b++) {
        for (g = 0; g < 8; g++)
            r[g] = bytes[g][b];
        transpose_bits256(r);
        for (g = 0; g < 8; g++)
            planes[8 * b + g] = r[g];
    }
}

/* 16 bytes at p; nt: non-temporal (p 16-byte aligned), not read for ownership first. */
ZH256_INLINE void store_pair(uint8_t *p, __m128i v, const int nt)
{
    if (nt)
        _mm_stream_si128((__m128i *)p, v);
    else
        _mm_storeu_si128((__m128i *)p, v);
}

ZH256_INLINE void store_line(uint8_t *p, __m256i v, const int nt)
{
    if (nt) {
        _mm_stream_si128((__m128i *)p, _mm256_castsi256_si128(v));
        _mm_stream_si128((__m128i *)(p + 16), _mm256_extracti128_si256(v, 1));
    } else {
        _mm256_storeu_si256((__m256i *)p, v);
    }
}

/* Rows a, a+1 (low lane) and a+2, a+3 (high lane) of output quad c in v[c], to
 * out + row * stride: whole rows of 2 and 4 quads back to back as 32-byte stores, other
 * rows two quads (16 bytes) at a time and an odd last quad alone. nt (an even n, rows
 * back to back from a 16-byte aligned start): every store non-temporal. */
ZH256_INLINE void store_row_quads(const int n, const __m256i *v, uint8_t *out, ptrdiff_t stride,
                                  const int nt)
{
    if (n == 2 && stride == 16) {
        const __m256i even = _mm256_unpacklo_epi64(v[0], v[1]);   /* rows a, a+2 */
        const __m256i odd = _mm256_unpackhi_epi64(v[0], v[1]);    /* rows a+1, a+3 */
        store_line(out, _mm256_permute2x128_si256(even, odd, 0x20), nt);
        store_line(out + 32, _mm256_permute2x128_si256(even, odd, 0x31), nt);
    } else if (n == 4 && stride == 32) {
        const __m256i even01 = _mm256_unpacklo_epi64(v[0], v[1]);
        const __m256i even23 = _mm256_unpacklo_epi64(v[2], v[3]);
        const __m256i odd01 = _mm256_unpackhi_epi64(v[0], v[1]);
        const __m256i odd23 = _mm256_unpackhi_epi64(v[2], v[3]);
        store_line(out, _mm256_permute2x128_si256(even01, even23, 0x20), nt);
        store_line(out + 32, _mm256_permute2x128_si256(odd01, odd23, 0x20), nt);
        store_line(out + 64, _mm256_permute2x128_si256(even01, even23, 0x31), nt);
        store_line(out + 96, _mm256_permute2x128_si256(odd01, odd23, 0x31), nt);
    } else {
        int c = 0;
        for (; c + 1 < n; c += 2) {
            const __m256i even = _mm256_unpacklo_epi64(v[c], v[c + 1]);
            const __m256i odd = _mm256_unpackhi_epi64(v[c], v[c + 1]);
            store_pair(out + 8 * c, _mm256_castsi256_si128(even), nt);
            store_pair(out + stride + 8 * c, _mm256_castsi256_si128(odd), nt);
            store_pair(out + 2 * stride + 8 * c, _mm256_extracti128_si256(even, 1), nt);
            store_pair(out + 3 * stride + 8 * c, _mm256_extracti128_si256(odd, 1), nt);
        }
        if (c < n) {
            const __m128i lo = _mm256_castsi256_si128(v[c]), hi = _mm256_extracti128_si256(v[c], 1);
            /* (the high quads by _mm_storel_epi64 too: _mm_storeh_pd is a double store,
             * which C requires aligned) */
            _mm_storel_epi64((__m128i *)(out + 8 * c), lo);
            _mm_storel_epi64((__m128i *)(out + stride + 8 * c), _mm_unpackhi_epi64(lo, lo));
            _mm_storel_epi64((__m128i *)(out + 2 * stride + 8 * c), hi);
            _mm_storel_epi64((__m128i *)(out + 3 * stride + 8 * c), _mm_unpackhi_epi64(hi, hi));
        }
    }
}

/* The inverse of rows_to_slices for n quads of output: planes y[c] (quad c, bytes 8c to
 * 8c+7 of each row) to 256 rows at out + row * stride, through bytes[c]. */
ZH256_INLINE void slices_to_rows(const int n, __m256i (*y)[64], __m256i (*bytes)[8][8],
                                 uint8_t *out, ptrdiff_t stride, const int nt)
{
    const __m256i unpair_bytes = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    __m256i r[8], v[ZH_SLICE_COLUMNS];
    int c, g, h, b;
    for (c = 0; c < n; c++)
        for (b = 0; b < 8; b++) {
            for (g = 0; g < 8; g++)
                r[g] = y[c][8 * b + g];
            transpose_bits256(r);
            for (g = 0; g < 8; g++)
                bytes[c][g][b] = r[g];
        }
    for (g = 0; g < 8; g++) {
        for (c = 0; c < n; c++)
            transpose_units256(bytes[c][g]);
        for (h = 0; h < 8; h++) {
            for (c = 0; c < n; c++)
                v[c] = _mm256_shuffle_epi8(bytes[c][g][h], unpair_bytes);
            store_row_quads(n, v, out + (32 * g + 4 * h) * stride, stride, nt);
        }
    }
}

/* The machine's state: source[j], the input column the level's bit j is, in binary (bit
 * b in plane source[j][b]); the signs and the parity. */
typedef struct {
    __m256i source[ZH_SLICE_COLUMNS][ZH_SLICE_SOURCE_BITS], sign[ZH_SLICE_COLUMNS], parity;
} zh_slice_state;

/* The bits that number n columns. */
#define ZH_SLICE_BITS(n) ((n) <= 2 ? 1 : (n) <= 4 ? 2 : 3)

/* The plane of the column numbered by `source` among x[0..n-1]: a tree of selections by
 * its bits, low bit first; pair[k] = x[2k] ^ x[2k+1], the same for every bit of a level. */
ZH256_INLINE __m256i slice_column(const int n, const __m256i *x, const __m256i *pair,
                                  const __m256i *source)
{
    __m256i v[ZH_SLICE_COLUMNS];
    int k, m = n, b;
    for (k = 0; 2 * k < m; k++)
        v[k] = 2 * k + 1 < m ? _mm256_xor_si256(x[2 * k], _mm256_and_si256(source[0], pair[k]))
                             : x[2 * k];
    m = (m + 1) / 2;
    for (b = 1; m > 1; b++) {
        for (k = 0; 2 * k < m; k++)
            v[k] = 2 * k + 1 >= m
                       ? v[2 * k]
                       : _mm256_xor_si256(v[2 * k], _mm256_and_si256(source[b], _mm256_xor_si256(
                                                                        v[2 * k], v[2 * k + 1])));
        m = (m + 1) / 2;
    }
    return v[0];
}

/* One level for 256 rows: x[c][t] is the level's plane of column c; output bit j goes to
 * plane y[(n * (7 - t) + j) ^ 7] (y: the 8 n planes of the output bits that the 8 levels
 * of one byte of the words give, MSB first). */
ZH256_INLINE void slice_level(const int n, const __m256i *const *x, const int t, __m256i *y,
                              zh_slice_state *st)
{
    __m256i xs[ZH_SLICE_COLUMNS], pair[ZH_SLICE_COLUMNS / 2], bit[ZH_SLICE_COLUMNS];
    __m256i gray = _mm256_setzero_si256(), v, set;
    int i, j, b;
    for (j = 0; j < n; j++)
        xs[j] = x[j][t];
    for (j = 0; 2 * j + 1 < n; j++)
        pair[j] = _mm256_xor_si256(xs[2 * j], xs[2 * j + 1]);
    for (j = 0; j < n; j++) {
        bit[j] = _mm256_xor_si256(slice_column(n, xs, pair, st->source[j]), st->sign[j]);
        gray = _mm256_xor_si256(gray, bit[j]);
        y[(n * (7 - t) + j) ^ 7] = _mm256_xor_si256(gray, st->parity);
    }
    st->parity = _mm256_xor_si256(st->parity, gray);
    /* the undo steps (after the last level they still run, and their state goes unused) */
    st->sign[0] = _mm256_xor_si256(st->sign[0], bit[0]);
    for (i = 1; i < n; i++) {
        /* where bit i is clear, rows 0 and i trade places; where set, row 0 inverts */
        set = bit[i];
        for (b = 0; b < ZH_SLICE_BITS(n); b++) {
            v = _mm256_andnot_si256(set, _mm256_xor_si256(st->source[0][b], st->source[i][b]));
            st->source[0][b] = _mm256_xor_si256(st->source[0][b], v);
            st->source[i][b] = _mm256_xor_si256(st->source[i][b], v);
        }
        v = _mm256_andnot_si256(set, _mm256_xor_si256(st->sign[0], st->sign[i]));
        st->sign[0] = _mm256_xor_si256(st->sign[0], _mm256_xor_si256(v, set));
        st->sign[i] = _mm256_xor_si256(st->sign[i], v);
    }
}

/* Registers of scratch the slices of n columns take: the input's planes, the output's,
 * and the output's bytes. */
#define ZH_SLICE_SCRATCH(n) (3 * 64 * (size_t)(n))

/* Skilling's transform and the interleave of 64-bit words for 256 rows of n columns:
 * in[c] + 8 * row holds column c's word, big-endian if be else native; the index goes to
 * out + row * stride (8 n bytes). Output bit o (MSB first) is plane y[o ^ 7]: quad o / 64,
 * its byte (o % 64) / 8, bit 7 - o % 8. The planes live in scratch, on the heap: 48 KiB
 * for 8 columns would crowd a thread's stack (musl gives 128 KiB). */
ZH256_INLINE void slices_block(const int n, const int be, const uint8_t *const *in,
                               uint8_t *out, ptrdiff_t stride, const int nt, __m256i *scratch)
{
    __m256i (*const x)[64] = (__m256i (*)[64])scratch;
    __m256i (*const y)[64] = x + n;
    __m256i (*const bytes)[8][8] = (__m256i (*)[8][8])(y + n);
    const __m256i *xb[ZH_SLICE_COLUMNS];
    zh_slice_state st;
    int c, j, k, b;
    for (c = 0; c < n; c++)
        rows_to_slices(in[c], x[c]);
    for (j = 0; j < n; j++) {
        st.sign[j] = _mm256_setzero_si256();
        for (k = 0; k < ZH_SLICE_SOURCE_BITS; k++)
            st.source[j][k] = (j >> k) & 1 ? _mm256_set1_epi8(-1) : _mm256_setzero_si256();
    }
    st.parity = _mm256_setzero_si256();
    /* the levels a byte of the words at a time, from the top: 8 levels, 8 n output bits */
    for (b = 0; b < 8; b++) {
        __m256i *yb = y[0] + 8 * n * b;
        for (c = 0; c < n; c++)
            xb[c] = x[c] + 8 * (be ? b : 7 - b);
        slice_level(n, xb, 7, yb, &st);
        slice_level(n, xb, 6, yb, &st);
        slice_level(n, xb, 5, yb, &st);
        slice_level(n, xb, 4, yb, &st);
        slice_level(n, xb, 3, yb, &st);
        slice_level(n, xb, 2, yb, &st);
        slice_level(n, xb, 1, yb, &st);
        slice_level(n, xb, 0, yb, &st);
    }
    slices_to_rows(n, y, bytes, out, stride, nt);
}

/* One function per column count, so that the loops over columns unroll. */
#define ZH_SLICES(N)                                                                       \
    ZH256 static void slices##N(int be, const uint8_t *const *in, uint8_t *out,              \
                                ptrdiff_t stride, int nt, __m256i *scratch)                \
    {                                                                                      \
        slices_block(N, be, in, out, stride, nt, scratch);                                 \
    }
ZH_SLICES(2)
ZH_SLICES(3)
ZH_SLICES(4)
ZH_SLICES(5)
ZH_SLICES(6)
ZH_SLICES(7)
ZH_SLICES(8)

/* The index of 256 rows of 2 to 8 columns of 64-bit words, written to out (nt: with
 * non-temporal stores, see store_row_quads); scratch holds ZH_SLICE_SCRATCH(n) registers. */
static void slices(ptrdiff_t n, int be, const uint8_t *const *in, uint8_t *out,
                   ptrdiff_t stride, int nt, __m256i *scratch)
{
    static void (*const by_columns[ZH_SLICE_COLUMNS - 1])(
        int, const uint8_t *const *, uint8_t *, ptrdiff_t, int, __m256i *) = {
        slices2, slices3, slices4, slices5, slices6, slices7, slices8};
    by_columns[n - 2](be, in, out, stride, nt, scratch);
}

/* After non-temporal stores: ordered before what the caller stores next. */
ZH256 static void slices_fence(void)
{
    _mm_sfence();
}

/* ---- AVX-512 VBMI + GFNI: the state tables on byte planes of 64 rows ----------------
 *
 * A group of 64 rows is turned into byte planes (plane k: byte k of each row's word,
 * column by column); a level's bits are then one bit of a plane, moved into place by a
 * GFNI affine, and a step of the state machine is one byte permutation (vpermb) of the
 * table for 64 rows at once. The output bits, in the order the levels give them, are
 * already Iceberg's interleave of the transposed words: they go into planes of output
 * bytes, the planes back to rows, and the rows straight to the output (no interleave
 * pass). */

#define ZHV ZORDER_TARGET_ISA("avx512f,avx512bw,avx512vbmi,gfni")
#define ZHV_INLINE ZHV ZORDER_ALWAYS_INLINE

/* GFNI affine matrix (one per qword) taking bit `src` of each byte to bit `dst`. */
#define ZH_MOVE(src, dst) ((uint64_t)1 << (8 * (7 - (dst)) + (src)))
/* ternarylogic immediate for a | b | c. */
#define ZH_OR3 0xFE

ZHV_INLINE __m512i affine(__m512i v, uint64_t matrix)
{
    return _mm512_gf2p8affine_epi64_epi8(v, _mm512_set1_epi64((long long)matrix), 0);
}

/* Bytes of `mask` from x, the others from y. */
ZHV_INLINE __m512i pick(__m512i mask, __m512i x, __m512i y)
{
    return _mm512_ternarylogic_epi64(y, x, mask, ZH_SELECT);
}

/* The 8x8 transpose of 16-bit units within each 128-bit lane of v[0..7]: its own
 * inverse. */
ZHV_INLINE void transpose16(__m512i v[8])
{
    __m512i t[8], u[8];
    int i;
    for (i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_epi16(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi16(v[i], v[i + 1]);
    }
    for (i = 0; i < 8; i += 4) {
        u[i] = _mm512_unpacklo_epi32(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi32(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi32(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi32(t[i + 1], t[i + 3]);
    }
    for (i = 0; i < 4; i++) {
        v[2 * i] = _mm512_unpacklo_epi64(u[i], u[i + 4]);
        v[2 * i + 1] = _mm512_unpackhi_epi64(u[i], u[i + 4]);
    }
}

/* 64 rows of one column's words (8 registers of 8 rows) -> plane[k]: byte k of every row
 * (in an order of rows shared by all columns and undone by from_planes). Each 128-bit lane
 * first holds its two rows byte by byte, then the 16-bit units are transposed. */
ZHV_INLINE void to_planes(const uint8_t *rows, __m512i plane[8])
{
    const __m512i bytewise = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    int i;
    for (i = 0; i < 8; i++)
        plane[i] = _mm512_shuffle_epi8(_mm512_loadu_si512(rows + 64 * i), bytewise);
    transpose16(plane);
}

ZHV_INLINE void from_planes(__m512i plane[8], uint64_t *words)
{
    const __m512i rowwise = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    int i;
    transpose16(plane);
    for (i = 0; i < 8; i++)
        _mm512_storeu_si512(words + 8 * i, _mm512_shuffle_epi8(plane[i], rowwise));
}

/* The input of the state tables: column c's rows at in[c] + 8 * row, each row's
 * MSB-first byte j at byte j (the column itself, big-endian: be) or at byte nbytes-1-j
 * (the block's words). */
typedef struct {
    const uint8_t *in[4];
    int be;
} zh_source;

/* The plane of MSB-first byte j. */
#define ZH_PLANE(src, nbytes, j) ((src)->be ? (j) : (nbytes) - 1 - (j))

/* 2 columns, rows [r, r + 64): two levels a step through zh_table2, whose index is the
 * state (bits 4-5) and the two levels' bits (column 0 first, upper level first). Its
 * output nibble has the same order, which is Iceberg's interleave of the transposed
 * words: a byte of the columns' planes gives output bytes 2j and 2j+1 of each row, as
 * planes; they go back to rows as quads (output bytes 8q .. 8q+7) at words + q * ws. */
ZHV static void states2_group(const zh_source *src, uint64_t *words, ptrdiff_t ws, ptrdiff_t r,
                              int nbytes)
{
    const __m512i table = _mm512_loadu_si512(zh_table2);
    const __m512i state_bits = _mm512_set1_epi8(0x30), high = _mm512_set1_epi8((char)0xF0);
    __m512i p0[8], p1[8], o[16], e = _mm512_setzero_si512();
    int j;
    to_planes(src->in[0] + 8 * r, p0);
    to_planes(src->in[1] + 8 * r, p1);
    for (j = 0; j < nbytes; j++) {
        const __m512i a = p0[ZH_PLANE(src, nbytes, j)], b = p1[ZH_PLANE(src, nbytes, j)];
        /* the byte's 8 levels, two bits each, as two bytes of Iceberg's interleave */
        const __m512i zhi = _mm512_or_si512(
            affine(a, ZH_MOVE(7, 7) | ZH_MOVE(6, 5) | ZH_MOVE(5, 3) | ZH_MOVE(4, 1)),
            affine(b, ZH_MOVE(7, 6) | ZH_MOVE(6, 4) | ZH_MOVE(5, 2) | ZH_MOVE(4, 0)));
        const __m512i zlo = _mm512_or_si512(
            affine(a, ZH_MOVE(3, 7) | ZH_MOVE(2, 5) | ZH_MOVE(1, 3) | ZH_MOVE(0, 1)),
            affine(b, ZH_MOVE(3, 6) | ZH_MOVE(2, 4) | ZH_MOVE(1, 2) | ZH_MOVE(0, 0)));
        __m512i e0, e1, e2;
        /* (vpermb reads the low 6 bits of each index byte: bits 6-7 may hold anything) */
        e0 = _mm512_permutexvar_epi8(pick(state_bits, e, _mm512_srli_epi16(zhi, 4)), table);
        e1 = _mm512_permutexvar_epi8(pick(state_bits, e0, zhi), table);
        e2 = _mm512_permutexvar_epi8(pick(state_bits, e1, _mm512_srli_epi16(zlo, 4)), table);
        e = _mm512_permutexvar_epi8(pick(state_bits, e2, zlo), table);
        o[2 * j] = pick(high, _mm512_slli_epi16(e0, 4), e1);
        o[2 * j + 1] = pick(high, _mm512_slli_epi16(e2, 4), e);
    }
    for (j = 2 * nbytes; j < 16; j++)
        o[j] = _mm512_setzero_si512();
    for (j = 0; 8 * j < 2 * nbytes; j++)
        from_planes(o + 8 * j, words + j * ws + r);
}

/* zh_table3[idx] for 64 indices (state in bits 3-7, below 24; the level's bits 0-2). */
ZHV_INLINE __m512i lookup3(__m512i idx, __m512i t0, __m512i t1, __m512i t2)
{
    __m512i low = _mm512_permutex2var_epi8(t0, idx, t1);
    return _mm512_mask_permutexvar_epi8(low, _mm512_movepi8_mask(idx), idx, t2);
}

/* The GFNI matrix taking level i's output bit of column c (bit 2 - c of the state byte)
 * to its place in output byte m of the 3 bytes 8 levels give (bit 3i + c of 24, MSB
 * first), or 0 where it lands in another byte. */
#define ZH_BIT3(i, c, m) \
    ((3 * (i) + (c)) / 8 == (m) ? ZH_MOVE(2 - (c), 7 - (3 * (i) + (c)) % 8) : 0)
#define ZH_LEVEL3(i, m) (ZH_BIT3(i, 0, m) | ZH_BIT3(i, 1, m) | ZH_BIT3(i, 2, m))

/* 3 columns, G groups of 64 rows from r: one level a step through zh_table3; the groups'
 * state chains are independent, which keeps the permute units busy. A level's three
 * output bits, column 0 first, are the next three bits of Iceberg's interleave of the
 * transposed words, so a byte of the columns' planes gives output bytes 3j .. 3j+2 of
 * each row, as planes; they go back to rows as quads (output bytes 8q .. 8q+7) at
 * words + q * ws. */
ZHV_INLINE void states3_groups(const zh_source *src, uint64_t *words, ptrdiff_t ws,
                               ptrdiff_t r, int nbytes, const int G)
{
    const __m512i t0 = _mm512_loadu_si512(zh_table3), t1 = _mm512_loadu_si512(zh_table3 + 64),
                  t2 = _mm512_loadu_si512(zh_table3 + 128);
    const __m512i state_bits = _mm512_set1_epi8((char)0xF8);
    __m512i p[2][3][8], o[2][24], e[2];
    int g, c, j, l, m;
    for (g = 0; g < G; g++) {
        for (c = 0; c < 3; c++)
            to_planes(src->in[c] + 8 * (r + 64 * g), p[g][c]);
        e[g] = _mm512_setzero_si512();
    }
    for (j = 0; j < nbytes; j++) {
        const int k = ZH_PLANE(src, nbytes, j);
        for (g = 0; g < G; g++)
            for (m = 0; m < 3; m++)
                o[g][3 * j + m] = _mm512_setzero_si512();
        for (l = 7; l >= 0; l--)
            for (g = 0; g < G; g++) {
                const __m512i x = _mm512_ternarylogic_epi64(
                    affine(p[g][0][k], ZH_MOVE(l, 2)), affine(p[g][1][k], ZH_MOVE(l, 1)),
                    affine(p[g][2][k], ZH_MOVE(l, 0)), ZH_OR3);
                e[g] = lookup3(pick(state_bits, e[g], x), t0, t1, t2);
                for (m = 0; m < 3; m++)
                    if (ZH_LEVEL3(7 - l, m) != 0)
                        o[g][3 * j + m] = _mm512_or_si512(o[g][3 * j + m],
                                                          affine(e[g], ZH_LEVEL3(7 - l, m)));
            }
    }
    for (g = 0; g < G; g++) {
        for (j = 3 * nbytes; j < 24; j++)
            o[g][j] = _mm512_setzero_si512();
        for (j = 0; 8 * j < 3 * nbytes; j++)
            from_planes(o[g] + 8 * j, words + j * ws + r + 64 * g);
    }
}

/* NAME_pair and NAME_one: NAME_groups on two groups of 64 rows (their chains
 * interleaved) or one, each compiled with the group count constant. */
#define ZH_PAIR_AND_ONE(NAME)                                                             \
    ZHV static void NAME##_pair(const zh_source *src, uint64_t *words, ptrdiff_t ws,      \
                                ptrdiff_t r, int nbytes)                                  \
    {                                                                                     \
        NAME##_groups(src, words, ws, r, nbytes, 2);                                      \
    }                                                                                     \
    ZHV static void NAME##_one(const zh_source *src, uint64_t *words, ptrdiff_t ws,       \
                               ptrdiff_t r, int nbytes)                                   \
    {                                                                                     \
        NAME##_groups(src, words, ws, r, nbytes, 1);                                      \
    }

ZH_PAIR_AND_ONE(states3)

/* ternarylogic immediates are built from the truth tables of its operands a, b, c. */
#define ZH_TA 0xF0
#define ZH_TB 0xCC
#define ZH_TC 0xAA
/* c ? a : a ^ b (the bits of c from a, the others from a ^ b) */
#define ZH_KEEP_XOR (((ZH_TC & ZH_TA) | (~ZH_TC & (ZH_TA ^ ZH_TB))) & 0xFF)
/* c ? b : b ^ a */
#define ZH_TAKE_XOR (((ZH_TC & ZH_TB) | (~ZH_TC & (ZH_TA ^ ZH_TB))) & 0xFF)
/* c ? a : b */
#define ZH_CHOOSE (((ZH_TC & ZH_TA) | (~ZH_TC & ZH_TB)) & 0xFF)

/* One of zh_table4's tables at 64 indices: chunk 0's entry, xor chunk 1's difference
 * where k1 (the row's perm is in chunk 1) and chunk 2's where k2. */
ZHV_INLINE __m512i lookup4(__m512i idx, __mmask64 k1, __mmask64 k2, const __m512i t[6])
{
    const __m512i r0 = _mm512_permutex2var_epi8(t[0], idx, t[1]);
    const __m512i r1 = _mm512_maskz_permutex2var_epi8(k1, t[2], idx, t[3]);
    const __m512i r2 = _mm512_maskz_permutex2var_epi8(k2, t[4], idx, t[5]);
    return _mm512_ternarylogic_epi64(r0, r1, r2, ZH_TA ^ ZH_TB ^ ZH_TC);
}

/* The state of 64 rows: e holds perm's place in its chunk (bits 4-6) and sbar (bits 0-3),
 * k1 and k2 its chunk. */
typedef struct {
    __m512i e;
    __mmask64 k1, k2;
} zh_state4;

/* One level: x holds the level's bits in bits 0-3 (bits 4-7 are ignored); returns the
 * output bits in bits 0-3 (bits 4-5 clear, 6-7 the chunk). */
ZHV_INLINE __m512i step4(zh_state4 *st, __m512i x, const __m512i ta[6], const __m512i tb[6])
{
    const __m512i high = _mm512_set1_epi8((char)0xF0), chunk1 = _mm512_set1_epi8(0x40);
    /* (vpermi2b reads the low 7 bits of each index byte: bit 7 may hold anything) */
    const __m512i idx = _mm512_ternarylogic_epi64(st->e, x, high, ZH_KEEP_XOR);
    const __m512i a = lookup4(idx, st->k1, st->k2, ta), b = lookup4(idx, st->k1, st->k2, tb);
    st->e = _mm512_ternarylogic_epi64(st->e, a, high, ZH_TAKE_XOR);
    st->k1 = _mm512_test_epi8_mask(b, chunk1);
    st->k2 = _mm512_movepi8_mask(b);
    return b;
}

/* 4 columns, G groups of 64 rows from r. A byte k of the four columns' planes gives four
 * bytes of two levels each (column 0 in bits 7 and 3); each level's output bits go to
 * the same place, which makes them bytes of Iceberg's interleave of the transposed words:
 * output byte m of a row is plane o[m]. Those planes are turned back into rows of 8
 * bytes, quad q (output bytes 8q .. 8q+7) at words + q * ws. */
ZHV_INLINE void states4_groups(const zh_source *src, uint64_t *words, ptrdiff_t ws,
                               ptrdiff_t r, int nbytes, const int G)
{
    const __m512i high = _mm512_set1_epi8((char)0xF0);
    __m512i ta[6], tb[6], p[2][4][8], o[2][32];
    zh_state4 st[2];
    int g, c, j, t, q;
    for (c = 0; c < 3; c++) {
        ta[2 * c] = _mm512_loadu_si512(zh_table4[0][c]);
        ta[2 * c + 1] = _mm512_loadu_si512(zh_table4[0][c] + 64);
        tb[2 * c] = _mm512_loadu_si512(zh_table4[1][c]);
        tb[2 * c + 1] = _mm512_loadu_si512(zh_table4[1][c] + 64);
    }
    for (g = 0; g < G; g++) {
        for (c = 0; c < 4; c++)
            to_planes(src->in[c] + 8 * (r + 64 * g), p[g][c]);
        st[g].e = _mm512_setzero_si512();
        st[g].k1 = st[g].k2 = 0;
    }
    for (j = 0; j < nbytes; j++) {
        const int k = ZH_PLANE(src, nbytes, j);
        for (t = 0; t < 4; t++) {
            const int hi = 7 - 2 * t, lo = 6 - 2 * t;
            __m512i x[2], bh[2], bl[2];
            for (g = 0; g < G; g++)
                x[g] = _mm512_or_si512(
                    _mm512_ternarylogic_epi64(
                        affine(p[g][0][k], ZH_MOVE(hi, 7) | ZH_MOVE(lo, 3)),
                        affine(p[g][1][k], ZH_MOVE(hi, 6) | ZH_MOVE(lo, 2)),
                        affine(p[g][2][k], ZH_MOVE(hi, 5) | ZH_MOVE(lo, 1)), ZH_OR3),
                    affine(p[g][3][k], ZH_MOVE(hi, 4) | ZH_MOVE(lo, 0)));
            for (g = 0; g < G; g++)
                bh[g] = step4(&st[g], _mm512_srli_epi16(x[g], 4), ta, tb);
            for (g = 0; g < G; g++)
                bl[g] = step4(&st[g], x[g], ta, tb);
            for (g = 0; g < G; g++)
                o[g][4 * j + t] =
                    _mm512_ternarylogic_epi64(_mm512_slli_epi16(bh[g], 4), bl[g], high, ZH_CHOOSE);
        }
    }
    for (g = 0; g < G; g++) {
        for (j = 4 * nbytes; j < 32; j++)
            o[g][j] = _mm512_setzero_si512();
        for (q = 0; q < (nbytes + 1) / 2; q++)
            from_planes(o[g] + 8 * q, words + q * ws + r + 64 * g);
    }
}

ZH_PAIR_AND_ONE(states4)

/* 8 rows of n quads (64-bit columns: row i's quad q at qword i of z[q]) as the 8n qwords
 * of those rows back to back, in 2 (n = 2), 3 or 4 registers. */
ZHV_INLINE void rows_of_quads(const __m512i *z, int n, __m512i *rows)
{
    if (n == 2) {
        rows[0] = _mm512_permutex2var_epi64(z[0], _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
                                            z[1]);
        rows[1] = _mm512_permutex2var_epi64(z[0], _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15),
                                            z[1]);
    } else if (n == 3) {
        /* qword s of register k is row (8k + s) / 3's quad (8k + s) % 3: quads 0 and 1
         * from one two-source permute, quad 2's lanes (mask) from a second one */
        rows[0] = _mm512_mask_permutexvar_epi64(
            _mm512_permutex2var_epi64(z[0], _mm512_setr_epi64(0, 8, 0, 1, 9, 1, 2, 10), z[1]),
            0x24, _mm512_setr_epi64(0, 0, 0, 1, 1, 1, 2, 2), z[2]);
        rows[1] = _mm512_mask_permutexvar_epi64(
            _mm512_permutex2var_epi64(z[0], _mm512_setr_epi64(2, 3, 11, 3, 4, 12, 4, 5), z[1]),
            0x49, _mm512_setr_epi64(2, 3, 3, 3, 4, 4, 4, 5), z[2]);
        rows[2] = _mm512_mask_permutexvar_epi64(
            _mm512_permutex2var_epi64(z[0], _mm512_setr_epi64(13, 5, 6, 14, 6, 7, 15, 7), z[1]),
            0x92, _mm512_setr_epi64(5, 5, 6, 6, 6, 7, 7, 7), z[2]);
    } else {
        /* quads 0-1 and 2-3 paired row by row, then each row's four quads together */
        const __m512i pair_lo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
                      pair_hi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15),
                      rows_lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
                      rows_hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
        const __m512i u0 = _mm512_permutex2var_epi64(z[0], pair_lo, z[1]),
                      u1 = _mm512_permutex2var_epi64(z[0], pair_hi, z[1]),
                      v0 = _mm512_permutex2var_epi64(z[2], pair_lo, z[3]),
                      v1 = _mm512_permutex2var_epi64(z[2], pair_hi, z[3]);
        rows[0] = _mm512_permutex2var_epi64(u0, rows_lo, v0);
        rows[1] = _mm512_permutex2var_epi64(u0, rows_hi, v0);
        rows[2] = _mm512_permutex2var_epi64(u1, rows_lo, v1);
        rows[3] = _mm512_permutex2var_epi64(u1, rows_hi, v1);
    }
}

/* Rows [0, count) of the quads the state tables left (quad q at words + q * ws) to out,
 * n * nbytes bytes a row: 8 rows at a time for 64-bit columns (through st, when not
 * NULL: rows back to back), byte runs otherwise. */
ZHV_INLINE void write_quads_of(const uint64_t *words, ptrdiff_t ws, int nbytes, ptrdiff_t count,
                               uint8_t *out, ptrdiff_t out_stride, zstream *st, const int n)
{
    const ptrdiff_t size = n * nbytes;
    ptrdiff_t row = 0, q;
    __m512i z[4], rows[4];
    int i;
    if (nbytes == 8 && st != NULL) {
        /* a copy of the stream's state, which stays in registers through the loop */
        zstream stream = *st;
        for (; row + 8 <= count; row += 8) {
            for (i = 0; i < n; i++)
                z[i] = _mm512_loadu_si512(words + i * ws + row);
            rows_of_quads(z, n, rows);
            for (i = 0; i < n; i++)
                stream_put(&stream, rows[i]);
        }
        *st = stream;
    } else if (nbytes == 8 && (n != 3 || out_stride == 24)) {
        /* (3 quads a row leave registers that straddle rows: only rows back to back) */
        for (; row + 8 <= count; row += 8) {
            for (i = 0; i < n; i++)
                z[i] = _mm512_loadu_si512(words + i * ws + row);
            rows_of_quads(z, n, rows);
            if (n == 3) {
                for (i = 0; i < 3; i++)
                    _mm512_storeu_si512(out + row * 24 + 64 * i, rows[i]);
            } else if (n == 2) {
                for (i = 0; i < 2; i++) {
                    uint8_t *dst = out + (row + 4 * i) * out_stride;
                    _mm_storeu_si128((__m128i *)dst, _mm512_castsi512_si128(rows[i]));
                    _mm_storeu_si128((__m128i *)(dst + out_stride),
                                     _mm512_extracti32x4_epi32(rows[i], 1));
                    _mm_storeu_si128((__m128i *)(dst + 2 * out_stride),
                                     _mm512_extracti32x4_epi32(rows[i], 2));
                    _mm_storeu_si128((__m128i *)(dst + 3 * out_stride),
                                     _mm512_extracti32x4_epi32(rows[i], 3));
                }
            } else {
                for (i = 0; i < 4; i++) {
                    uint8_t *dst = out + (row + 2 * i) * out_stride;
                    _mm256_storeu_si256((__m256i *)dst, _mm512_castsi512_si256(rows[i]));
                    _mm256_storeu_si256((__m256i *)(dst + out_stride),
                                        _mm512_extracti64x4_epi64(rows[i], 1));
                }
            }
        }
    }
    for (; row < count; row++)
        for (q = 0; 8 * q < size; q++)
            memcpy(out + row * out_stride + 8 * q, words + q * ws + row,
                   (size_t)(size - 8 * q < 8 ? size - 8 * q : 8));
}

ZHV static void write_quads(const uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int nbytes,
                            ptrdiff_t count, uint8_t *out, ptrdiff_t out_stride, zstream *st)
{
    if (n == 2)
        write_quads_of(words, ws, nbytes, count, out, out_stride, st, 2);
    else if (n == 3)
        write_quads_of(words, ws, nbytes, count, out, out_stride, st, 3);
    else
        write_quads_of(words, ws, nbytes, count, out, out_stride, st, 4);
}

/* The block's Hilbert index for 2, 3 or 4 columns by the state tables, written to out
 * (no interleave pass). */
static void states_block(const zh_source *src, uint64_t *words, ptrdiff_t ws, ptrdiff_t n,
                         int bits, ptrdiff_t count, uint8_t *out, ptrdiff_t out_stride,
                         zstream *st)
{
    ptrdiff_t r = 0;
    if (n == 2) {
        for (; r < count; r += 64)
            states2_group(src, words, ws, r, bits / 8);
    } else if (n == 3) {
        for (; r + 64 < count; r += 128)
            states3_pair(src, words, ws, r, bits / 8);
        if (r < count)
            states3_one(src, words, ws, r, bits / 8);
    } else {
        for (; r + 64 < count; r += 128)
            states4_pair(src, words, ws, r, bits / 8);
        if (r < count)
            states4_one(src, words, ws, r, bits / 8);
    }
    write_quads(words, ws, n, bits / 8, count, out, out_stride, st);
}

/* stream.h's start and end, called from the baseline code. */
ZHV static void start_stream(zstream *st, uint8_t *start)
{
    stream_init(st, start);
}

ZHV static void finish_stream(zstream *st)
{
    stream_finish(st);
}

/* Whether the state tables write this call's rows: 2, 3 or 4 columns. */
static int direct_tables(int level, ptrdiff_t ncols)
{
    return level == ZORDER_HILBERT_VBMI && ncols >= 2 && ncols <= 4;
}

/* Whether the AVX2 bit slices write this call's whole blocks: 2 to 8 columns of 64 bits
 * that the state tables do not take, on any level from AVX2 up, since AVX-512's steps on
 * 8 rows a register are slower than the slices' 256 rows (other widths and the last,
 * partial block run Skilling's steps). */
static int sliced(int level, ptrdiff_t ncols, int bits)
{
    return level >= ZORDER_HILBERT_AVX2 && !direct_tables(level, ncols) && ncols >= 2 &&
           ncols <= ZH_SLICE_COLUMNS && bits == 64;
}

#endif /* ZH_X86_BUILD */

/* Leaves the block's transposed words as big-endian bytes, column c at words + c * ws. */
static void transform_block(uint64_t *words, ptrdiff_t ws, ptrdiff_t n, int bits,
                            ptrdiff_t count, int level)
{
#if ZH_X86_BUILD
    if (level >= ZORDER_HILBERT_AVX512) {
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
#if ZH_X86_BUILD
    /* The state tables and the bit slices read whole groups of rows straight from columns
     * of 8-byte rows back to back (big-endian already): no copy into the block's words. */
    int direct = direct_tables(level, ncols) || sliced(level, ncols, bits);
    for (c = 0; c < ncols && direct; c++)
        direct = cols[c].row_stride == 8 && cols[c].width == 8;
    const uint8_t *slice_in[ZH_SLICE_COLUMNS];
    /* the slices' planes, 32-byte aligned; without them every block runs Skilling's steps */
    void *slice_alloc = NULL;
    __m256i *slice_scratch = NULL;
    if (sliced(level, ncols, bits) && nrows >= ZH_SLICE_ROWS) {
        slice_alloc = malloc(ZH_SLICE_SCRATCH(ncols) * sizeof(__m256i) + 32);
        if (slice_alloc != NULL)
            slice_scratch = (__m256i *)(((uintptr_t)slice_alloc + 31) & ~(uintptr_t)31);
    }
    /* ... and from the streaming size, for an even number of columns (whole 16-byte
     * pieces of rows back to back from an aligned start), non-temporal stores */
    const int slice_nt = ncols % 2 == 0 && out_stride == 8 * ncols &&
                         ((uintptr_t)out & 15) == 0 && nrows * out_stride >= ZORDER_STREAM_MIN;
    /* Large outputs of rows back to back leave as whole lines with non-temporal stores
     * (stream.h), from the size where the interleave backend streams too: ordinary
     * stores would read every output line for ownership first. */
    zstream stream_state, *stream = NULL;
    if (direct_tables(level, ncols) && bits == 64 && out_stride == 8 * ncols &&
        nrows * out_stride >= ZORDER_STREAM_MIN) {
        stream = &stream_state;
        start_stream(stream, out);
    }
#endif
    for (r0 = 0; r0 < nrows; r0 += ws) {
        const ptrdiff_t count = nrows - r0 < ws ? nrows - r0 : ws;
#if ZH_X86_BUILD
        if (direct && slice_scratch != NULL && count == ZH_SLICE_ROWS) {
            for (c = 0; c < ncols; c++)
                slice_in[c] = cols[c].data + r0 * 8;
            slices(ncols, 1, slice_in, out + r0 * out_stride, out_stride, slice_nt,
                   slice_scratch);
            continue;
        }
        if (direct && count % ZH_PAD == 0 && direct_tables(level, ncols)) {
            zh_source src;
            src.be = 1;
            for (c = 0; c < ncols; c++)
                src.in[c] = cols[c].data + r0 * 8;
            states_block(&src, words, ws, ncols, bits, count, out + r0 * out_stride, out_stride,
                         stream);
            continue;
        }
#endif
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
#if ZH_X86_BUILD
        if (slice_scratch != NULL && count == ZH_SLICE_ROWS) {
            for (c = 0; c < ncols; c++)
                slice_in[c] = (const uint8_t *)(words + c * ws);
            slices(ncols, 0, slice_in, out + r0 * out_stride, out_stride, slice_nt,
                   slice_scratch);
            continue;
        }
        /* (fewer rows than fill the 64-row planes run on transform512's tiles of 8) */
        if (direct_tables(level, ncols) && count > 16) {
            zh_source src;
            src.be = 0;
            for (c = 0; c < ncols; c++)
                src.in[c] = (const uint8_t *)(words + c * ws);
            states_block(&src, words, ws, ncols, bits, count, out + r0 * out_stride, out_stride,
                         stream);
            continue;
        }
#endif
        transform_block(words, ws, ncols, bits, count, level);
        interleave(block, ncols, ncols * nbytes, count, out + r0 * out_stride, out_stride);
    }
#if ZH_X86_BUILD
    if (stream != NULL)
        finish_stream(stream);
    if (slice_scratch != NULL && slice_nt)
        slices_fence();
    free(slice_alloc);
#endif
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
