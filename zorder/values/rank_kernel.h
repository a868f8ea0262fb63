/* The rank encoding's search (zorder/values/_rank.pyx): each row's ordered bytes (1 to 8
 * bytes) to the big-endian bytes of its rank's code.
 *
 * A bucket table on the key above the first split point gives the number of points below
 * the key's bucket; the points after the bucket are larger than its keys, so that number
 * plus the count of the next ZRANK_PEEK points <= key is the rank whenever the bucket
 * holds at most ZRANK_PEEK points: four comparisons, no branch on the data. Only a bucket
 * flagged crowded is searched. Each point lies beside the code of its rank, so the code
 * comes from the cache lines the comparisons read. Every index is clamped to the tables,
 * whatever they hold, so a bad table gives wrong codes, never a bad read.
 *
 * The loop is compiled once per common shape (8-byte keys to 1, 2 or 4 code bytes) with
 * the widths constant, and once for any width.
 *
 * A compact table serves columns whose buckets are at most 2**30 keys wide (most
 * numbers, dates and timestamps of a few years): each point is stored as its 32-bit
 * offset within its bucket, the codes in an array of their own (znear_rows). At 65,536
 * points that is 0.6 MB, not 1.3, and it stays in a 1 MB L2 cache. With AVX2, adjacent
 * 8-byte keys go to their buckets 4 rows a register, 64 rows a block.
 *
 * A two-level table serves columns whose points cluster or whose buckets are wider
 * (ztwo_rows): a crowded bucket gets a sub-table of its own, and each point is kept as
 * the top 30 bits of its offset in an int32, the full point read only for a key with
 * the same bits.
 */
#ifndef ZORDER_RANK_KERNEL_H
#define ZORDER_RANK_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "compiler.h"

#if ZORDER_X86_64
#include <emmintrin.h>
#endif
#if ZORDER_X86_64 && ZORDER_CC_AVX2
#include <immintrin.h>
#endif

#define ZRANK_INLINE ZORDER_ALWAYS_INLINE
#define ZRANK_BSWAP64(x) ZORDER_BSWAP64(x)
#define ZRANK_LITTLE_ENDIAN ZORDER_LITTLE_ENDIAN
#define ZRANK_PREFETCH(p) ZORDER_PREFETCH(p)
#if ZORDER_MSVC
#define ZRANK_UNLIKELY(x) (x)
#else
#define ZRANK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

#define ZRANK_PEEK 4                  /* points compared with every key */
#define ZRANK_AHEAD 8                 /* rows ahead whose points are fetched early */
#define ZRANK_CACHED ((int64_t)1 << 18)  /* bytes of points that stay in cache: no fetch */
#define ZRANK_CROWDED 0x80000000u     /* a bucket entry's flag: more than ZRANK_PEEK points */
#define ZRANK_START 0x7FFFFFFFu       /* a bucket entry's number of points below it */

typedef struct {
    const uint64_t *pair;     /* (point, code of its rank) x k, then ZRANK_PEEK x (2**64 - 1,
                                 code), the first of them beside the code of rank k */
    const uint32_t *entries;  /* last + 2 entries: points below each bucket | ZRANK_CROWDED */
    int64_t k;                /* split points, >= 1 */
    uint64_t lo;              /* the first point */
    uint64_t last;            /* the last bucket */
    int shift;                /* bucket width in bits, 0 to 63 */
} zrank_table;

ZRANK_INLINE uint64_t zrank_load(const uint8_t *row, ptrdiff_t width)
{
    uint64_t key = 0;
    if (width == 8) {
        memcpy(&key, row, 8);
        return ZRANK_LITTLE_ENDIAN ? ZRANK_BSWAP64(key) : key;
    }
    for (ptrdiff_t i = 0; i < width; i++)
        key = (key << 8) | row[i];
    return key << (8 * (8 - width));
}

ZRANK_INLINE void zrank_store(uint8_t *out, uint64_t code, ptrdiff_t nbytes)
{
    if (nbytes == 1) {
        out[0] = (uint8_t)code;
    } else if (nbytes == 2) {
        uint16_t half = (uint16_t)code;
        if (ZRANK_LITTLE_ENDIAN)
            half = (uint16_t)((half >> 8) | (half << 8));
        memcpy(out, &half, 2);
    } else {
        uint64_t word = code << (8 * (8 - nbytes));
        if (ZRANK_LITTLE_ENDIAN)
            word = ZRANK_BSWAP64(word);
        if (nbytes == 8)
            memcpy(out, &word, 8);
        else if (nbytes == 4)
            memcpy(out, &word, 4);
        else
            for (ptrdiff_t j = 0; j < nbytes; j++)
                out[j] = ((const uint8_t *)&word)[j];
    }
}

/* A crowded bucket's search, a + the points of [a, b) that are <= key (binary, then the
 * last few in turn), for points of TYPE stored STRIDE elements apart: NAME(points, a, b,
 * key). One definition for each table's layout. */
#define ZRANK_SEARCH(NAME, TYPE, STRIDE)                                                  \
    static int64_t NAME(const TYPE *points, int64_t a, int64_t b, TYPE key)               \
    {                                                                                     \
        while (b - a > 8) {                                                               \
            int64_t mid = a + (b - a) / 2;                                                \
            if (points[(STRIDE) * mid] <= key)                                            \
                a = mid + 1;                                                              \
            else                                                                          \
                b = mid;                                                                  \
        }                                                                                 \
        while (a < b && points[(STRIDE) * a] <= key)                                      \
            a++;                                                                          \
        return a;                                                                         \
    }

/* The 64-bit table: each point beside its code. */
ZRANK_SEARCH(zrank_search, uint64_t, 2)

ZRANK_INLINE uint64_t zrank_bucket(const zrank_table *t, uint64_t key)
{
    uint64_t bucket = ((key >= t->lo ? key : t->lo) - t->lo) >> t->shift;
    return bucket <= t->last ? bucket : t->last;
}

ZRANK_INLINE uint64_t zrank_code(const zrank_table *t, uint64_t key)
{
    uint64_t bucket = zrank_bucket(t, key);
    uint32_t entry = t->entries[bucket];
    int64_t at = entry & ZRANK_START, rank;
    if (at > t->k)
        at = t->k;
    if (entry & ZRANK_CROWDED) {
        int64_t end = t->entries[bucket + 1] & ZRANK_START;
        rank = zrank_search(t->pair, at, end < t->k ? end : t->k, key);
    } else {
        const uint64_t *peek = t->pair + 2 * at;
        rank = at + (peek[0] <= key) + (peek[2] <= key) + (peek[4] <= key) + (peek[6] <= key);
        if (rank > t->k)    /* a key of 2**64 - 1 counts the padding */
            rank = t->k;
    }
    return t->pair[2 * rank + 1];
}

ZRANK_INLINE void zrank_loop(const zrank_table *t, const uint8_t *row, ptrdiff_t stride,
                             ptrdiff_t width, uint8_t *out, ptrdiff_t nbytes, ptrdiff_t n)
{
    const zrank_table table = *t;   /* (in registers: the stores may alias *t) */
    ptrdiff_t i = 0;
    /* The points a row ZRANK_AHEAD rows on will compare with are fetched now: a large
     * table misses the cache on every row, and the rows do not wait for each other. A
     * small one stays in cache, where the fetch only costs its instructions. */
    ptrdiff_t ahead_end = 16 * (table.k + ZRANK_PEEK) > ZRANK_CACHED ? n - ZRANK_AHEAD : 0;
    for (; i < ahead_end; i++) {
        uint64_t ahead = zrank_bucket(&table, zrank_load(row + (i + ZRANK_AHEAD) * stride, width));
        uint32_t at = table.entries[ahead] & ZRANK_START;
        ZRANK_PREFETCH(table.pair + 2 * (at < table.k ? at : table.k));
        zrank_store(out + i * nbytes, zrank_code(&table, zrank_load(row + i * stride, width)),
                    nbytes);
    }
    for (; i < n; i++)
        zrank_store(out + i * nbytes, zrank_code(&table, zrank_load(row + i * stride, width)),
                    nbytes);
}

/* Every row's code: rows of `width` bytes `stride` apart, codes of `nbytes` bytes. */
static void zrank_rows(const zrank_table *t, const uint8_t *row, ptrdiff_t stride,
                       ptrdiff_t width, uint8_t *out, ptrdiff_t nbytes, ptrdiff_t n)
{
    if (width == 8 && nbytes == 2)
        zrank_loop(t, row, stride, 8, out, 2, n);
    else if (width == 8 && nbytes == 4)
        zrank_loop(t, row, stride, 8, out, 4, n);
    else if (width == 8 && nbytes == 1)
        zrank_loop(t, row, stride, 8, out, 1, n);
    else
        zrank_loop(t, row, stride, width, out, nbytes, n);
}

/* ---- the compact table ----------------------------------------------------------------
 *
 * A key's offset from the origin (the first point - 1, so that every key below the
 * first point has offset 0 and no point is <= it) is clamped to the table's range; its
 * high bits are the bucket, its low `shift` bits (<= 30) its offset within the bucket.
 * A bucket's entry holds the number of points below it (the low ZNEAR_START_BITS bits),
 * a mask of the next 4 points that lie in it (4 bits) and ZRANK_CROWDED when it holds
 * more than 4. The rank is that number plus the masked count of the next 4 points whose
 * offsets are <= the key's: one 16-byte load and one vector comparison. Points and codes
 * are indexed through a power-of-two mask of the arrays' length, so any entry reads
 * inside them. */

#define ZNEAR_START_BITS 27
#define ZNEAR_SHIFT_MAX 30

typedef struct {
    const uint32_t *entries;  /* last + 2 entries: points below | in-bucket mask << 27 |
                                 ZRANK_CROWDED */
    const int32_t *offsets;   /* at >= mask + 4: each point's offset in its bucket */
    const uint8_t *codes;     /* at >= mask + 5 codes of nbytes big-endian bytes, by rank */
    uint64_t origin;          /* the first point - 1 (0 if the first point is 0) */
    uint64_t top;             /* the largest offset a key is clamped to */
    uint64_t index_mask;      /* 2**p - 1, p <= ZNEAR_START_BITS: a start's clamp */
    uint64_t last;            /* the last bucket */
    int shift;                /* bucket width in bits, 0 to ZNEAR_SHIFT_MAX */
} znear_table;

/* Bits set in each 4-bit mask. */
static const uint8_t znear_ones[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

/* The mask of offset[0..3] < bound (a bit a lane). */
ZRANK_INLINE unsigned znear_below(const int32_t *offset, int32_t bound)
{
#if ZORDER_X86_64
    __m128i lanes = _mm_loadu_si128((const __m128i *)offset);
    __m128i below = _mm_cmpgt_epi32(_mm_set1_epi32(bound), lanes);
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(below));
#else
    return (unsigned)(offset[0] < bound) | (unsigned)(offset[1] < bound) << 1
           | (unsigned)(offset[2] < bound) << 2 | (unsigned)(offset[3] < bound) << 3;
#endif
}

/* The compact table: each point's offset in its bucket. */
ZRANK_SEARCH(znear_search, int32_t, 1)

/* A key's offset from a table's origin, clamped to [0, top] (so its bucket is <= the last):
 * the compact and two-level tables' first step. */
ZRANK_INLINE uint64_t zrank_offset(uint64_t origin, uint64_t top, uint64_t key)
{
    uint64_t offset = (key > origin ? key : origin) - origin;
    return offset < top ? offset : top;
}

ZRANK_INLINE uint64_t znear_rank(const znear_table *t, uint64_t key, int crowded)
{
    uint64_t offset = zrank_offset(t->origin, t->top, key);
    uint64_t bucket = offset >> t->shift;
    int32_t within = (int32_t)(offset & ((UINT64_C(1) << t->shift) - 1));
    uint32_t entry = t->entries[bucket];
    uint64_t at = entry & t->index_mask;
    if (crowded && (entry & ZRANK_CROWDED))
        return (uint64_t)znear_search(t->offsets, (int64_t)at,
                                      (int64_t)(t->entries[bucket + 1] & t->index_mask), within);
    return at + znear_ones[znear_below(t->offsets + at, within + 1) & (entry >> ZNEAR_START_BITS)];
}

ZRANK_INLINE void znear_loop(const znear_table *t, const uint8_t *row, ptrdiff_t stride,
                             ptrdiff_t width, uint8_t *out, ptrdiff_t nbytes, ptrdiff_t n,
                             int crowded)
{
    const znear_table table = *t;   /* (in registers: the stores may alias *t) */
    for (ptrdiff_t i = 0; i < n; i++) {
        uint64_t rank = znear_rank(&table, zrank_load(row + i * stride, width), crowded);
        memcpy(out + i * nbytes, table.codes + rank * nbytes, nbytes);
    }
}

#if ZORDER_X86_64 && ZORDER_CC_AVX2
#define ZNEAR_AVX2_BUILT 1
#define ZNEAR_BLOCK 64

/* zrank_offset of 4 adjacent big-endian 8-byte keys a register: unsigned max(key, origin)
 * - origin, then min(., top), by signed compares of the values with their top bit
 * flipped. The constants are made once a call (zrank_clamp4_of). */
typedef struct {
    __m256i order, sign, origin, origin_signed, top, top_signed;
} zrank_clamp4;

ZORDER_TARGET_ISA("avx2")
ZRANK_INLINE zrank_clamp4 zrank_clamp4_of(uint64_t origin, uint64_t top)
{
    zrank_clamp4 c;
    c.order = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                               7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
    c.sign = _mm256_set1_epi64x(INT64_MIN);
    c.origin = _mm256_set1_epi64x((int64_t)origin);
    c.origin_signed = _mm256_xor_si256(c.origin, c.sign);
    c.top = _mm256_set1_epi64x((int64_t)top);
    c.top_signed = _mm256_xor_si256(c.top, c.sign);
    return c;
}

ZORDER_TARGET_ISA("avx2")
ZRANK_INLINE __m256i zrank_offsets4(const zrank_clamp4 *c, const uint8_t *keys)
{
    __m256i key = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)keys), c->order);
    __m256i below = _mm256_cmpgt_epi64(c->origin_signed, _mm256_xor_si256(key, c->sign));
    __m256i offset = _mm256_sub_epi64(_mm256_blendv_epi8(key, c->origin, below), c->origin);
    __m256i above = _mm256_cmpgt_epi64(_mm256_xor_si256(offset, c->sign), c->top_signed);
    return _mm256_blendv_epi8(offset, c->top, above);
}

/* Adjacent 8-byte rows in blocks: AVX2 takes each block's keys to buckets and offsets 4
 * rows a register (the clamps and shifts that were half a row's instructions), then each
 * row's entry, points and code are read as above. */
ZORDER_TARGET_ISA("avx2")
ZRANK_INLINE void znear_blocks_avx2(const znear_table *t, const uint8_t *row, uint8_t *out,
                                    ptrdiff_t nbytes, ptrdiff_t blocks, int crowded)
{
    const znear_table table = *t;
    uint32_t bucket[ZNEAR_BLOCK];
    int32_t bound[ZNEAR_BLOCK];      /* a key's offset in its bucket, + 1 */
    const zrank_clamp4 clamp = zrank_clamp4_of(table.origin, table.top);
    const __m256i low = _mm256_set1_epi64x((int64_t)((UINT64_C(1) << table.shift) - 1));
    const __m256i one = _mm256_set1_epi64x(1);
    const __m128i shift = _mm_cvtsi32_si128(table.shift);
    const __m256i evens = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (ptrdiff_t b = 0; b < blocks; b++) {
        const uint8_t *keys = row + b * ZNEAR_BLOCK * 8;
        for (int j = 0; j < ZNEAR_BLOCK; j += 4) {
            __m256i offset = zrank_offsets4(&clamp, keys + 8 * j);
            __m256i index = _mm256_permutevar8x32_epi32(_mm256_srl_epi64(offset, shift), evens);
            __m256i within = _mm256_permutevar8x32_epi32(
                _mm256_add_epi64(_mm256_and_si256(offset, low), one), evens);
            _mm_storeu_si128((__m128i *)(bucket + j), _mm256_castsi256_si128(index));
            _mm_storeu_si128((__m128i *)(bound + j), _mm256_castsi256_si128(within));
        }
        uint8_t *dest = out + b * ZNEAR_BLOCK * nbytes;
        for (int j = 0; j < ZNEAR_BLOCK; j++) {
            uint32_t entry = table.entries[bucket[j]];
            uint64_t at = entry & table.index_mask, rank;
            if (crowded && (entry & ZRANK_CROWDED))
                rank = (uint64_t)znear_search(table.offsets, (int64_t)at,
                                              (int64_t)(table.entries[bucket[j] + 1] & table.index_mask),
                                              bound[j] - 1);
            else
                rank = at + znear_ones[znear_below(table.offsets + at, bound[j])
                                       & (entry >> ZNEAR_START_BITS)];
            memcpy(dest + j * nbytes, table.codes + rank * nbytes, nbytes);
        }
    }
}

ZORDER_TARGET_ISA("avx2") static ZORDER_NOINLINE
void znear_avx2(const znear_table *t, const uint8_t *row, uint8_t *out, ptrdiff_t nbytes,
                ptrdiff_t blocks, int crowded)
{
    if (nbytes == 2 && !crowded)
        znear_blocks_avx2(t, row, out, 2, blocks, 0);
    else if (nbytes == 2)
        znear_blocks_avx2(t, row, out, 2, blocks, 1);
    else if (nbytes == 4)
        znear_blocks_avx2(t, row, out, 4, blocks, crowded);
    else if (nbytes == 1)
        znear_blocks_avx2(t, row, out, 1, blocks, crowded);
    else
        znear_blocks_avx2(t, row, out, nbytes, blocks, crowded);
}
#else
#define ZNEAR_AVX2_BUILT 0
#endif

/* Every row's code from the compact table; `crowded`: some bucket is flagged crowded
 * (without, such a bucket gets a wrong code, never a bad read); `avx2`: the CPU has it
 * (adjacent 8-byte rows are then taken in blocks). Not inlined into its caller, so the
 * loops have the registers to themselves; adjacent 8-byte rows with 2-byte codes and no
 * crowded bucket (a number column at 16 rank bits) get a loop of their own. */
static ZORDER_NOINLINE void znear_rows(const znear_table *t, const uint8_t *row,
                                       ptrdiff_t stride, ptrdiff_t width, uint8_t *out,
                                       ptrdiff_t nbytes, ptrdiff_t n, int crowded, int avx2)
{
#if ZNEAR_AVX2_BUILT
    if (avx2 && width == 8 && stride == 8 && n >= ZNEAR_BLOCK) {
        ptrdiff_t blocks = n / ZNEAR_BLOCK, done = blocks * ZNEAR_BLOCK;
        znear_avx2(t, row, out, nbytes, blocks, crowded);
        row += done * 8;
        out += done * nbytes;
        n -= done;
    }
#else
    (void)avx2;
#endif
    if (width == 8 && stride == 8 && nbytes == 2 && !crowded)
        znear_loop(t, row, 8, 8, out, 2, n, 0);
    else if (width == 8 && nbytes == 2)
        znear_loop(t, row, stride, 8, out, 2, n, crowded);
    else if (width == 8 && nbytes == 4)
        znear_loop(t, row, stride, 8, out, 4, n, crowded);
    else if (width == 8 && nbytes == 1)
        znear_loop(t, row, stride, 8, out, 1, n, crowded);
    else
        znear_loop(t, row, stride, width, out, nbytes, n, crowded);
}

/* ---- the two-level table --------------------------------------------------------------
 *
 * For columns whose points cluster (doubles around a few centres, a dense run of small
 * ids among sparse ones) or whose buckets are wider than 2**30 keys. The key's clamped
 * offset from the origin (as in the compact table) picks a first-level entry. A bucket
 * of at most 4 points holds the compact table's entry (points below | in-bucket mask <<
 * 27); a crowded one, flagged ZTWO_SUB_TABLE, holds where its sub-table of 2**d
 * sub-buckets starts in the second level (the low ZTWO_BASE_BITS bits) and their width s
 * in bits (the next 6), and the second level holds entries of the same form (or
 * ZRANK_CROWDED). So a lookup is one or two table reads and the four-point peek; only a
 * second-level bucket still crowded (points closer than the finest sub-bucket) is
 * searched.
 *
 * Each point is stored as the int32 top bits of its offset in its second-level bucket:
 * all of them when s <= 30, else the offset >> (s - 30). A key compares its own offset
 * the same way; a point it cannot tell from the key's (the same top bits: in practice a
 * key equal to the point) is compared in full from the 64-bit points (`exact`). So the
 * points read on every row are 4 bytes each whatever the key's width, and the 64-bit
 * ones only for those rows. The second level is indexed through a power-of-two mask,
 * the points and codes as in the compact table: a bad table gives wrong codes, never a
 * bad read.
 *
 * A key clamped to the table's range ranks as the clamped key (origin + offset) does: a
 * key below the first point ranks 0 and so does the origin; a key past the table's top
 * is past every point and so is the top. So the loops carry only the clamped offset. */

#define ZTWO_BASE_BITS 25
#define ZTWO_BASE_MASK ((UINT32_C(1) << ZTWO_BASE_BITS) - 1)
#define ZTWO_SUB_TABLE 0x80000000u  /* a first-level entry's flag: start | shift << 25 */
#define ZTWO_TOP_BITS 30            /* bits of a point's offset kept in its int32 */
#define ZTWO_BLOCK 64               /* rows whose ties are told apart together */

typedef struct {
    const uint32_t *first;    /* last + 1 entries: as the second's, or a sub-table's start |
                                 its shift << 25 | ZTWO_SUB_TABLE */
    const uint32_t *second;   /* second_mask + 1 entries, as znear_table's entries */
    const int32_t *offsets;   /* at >= index_mask + 5: top bits of the offset in the bucket */
    const uint64_t *points;   /* (exact) at >= index_mask + 5: the points */
    const uint8_t *codes;     /* at >= index_mask + 5 codes of nbytes bytes, by rank */
    uint64_t origin;          /* the first point - 1 (0 if the first point is 0) */
    uint64_t top;             /* the largest offset a key is clamped to */
    uint64_t low;             /* 2**shift - 1: a key's offset in its first-level bucket */
    uint64_t index_mask;      /* 2**p - 1, p <= ZNEAR_START_BITS: a start's clamp */
    uint64_t second_mask;     /* 2**q - 1, q <= ZTWO_BASE_BITS + 1: a second-level index's clamp */
    int shift;                /* first-level bucket width in bits, 0 to 63 */
} ztwo_table;

/* The mask of offset[0..3] == value (a bit a lane). */
ZRANK_INLINE unsigned ztwo_equal(const int32_t *offset, int32_t value)
{
#if ZORDER_X86_64
    __m128i lanes = _mm_loadu_si128((const __m128i *)offset);
    __m128i equal = _mm_cmpeq_epi32(_mm_set1_epi32(value), lanes);
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(equal));
#else
    return (unsigned)(offset[0] == value) | (unsigned)(offset[1] == value) << 1
           | (unsigned)(offset[2] == value) << 2 | (unsigned)(offset[3] == value) << 3;
#endif
}

/* The two-level table's 64-bit points (read where a key's top bits tie with a point's). */
ZRANK_SEARCH(ztwo_search, uint64_t, 1)

/* The rank of the key at a clamped offset; `exact`: points wider than their int32 are
 * told apart in full (t->points is read), here on a branch or, given `tie` (the block
 * loop), later: the rank without the points whose top bits equal the key's is returned
 * and *tie set when there are some. */
ZRANK_INLINE uint64_t ztwo_rank(const ztwo_table *t, uint64_t offset, int exact, int crowded,
                                unsigned *tie)
{
    uint32_t entry = t->first[offset >> t->shift];
    unsigned sub = (unsigned)t->shift;
    uint64_t index = 0;
    if (entry & ZTWO_SUB_TABLE) {
        sub = (entry >> ZTWO_BASE_BITS) & 63;
        index = ((entry & ZTWO_BASE_MASK) + ((offset & t->low) >> sub)) & t->second_mask;
        entry = t->second[index];
    }
    uint64_t at = entry & t->index_mask;
    unsigned cut = sub > ZTWO_TOP_BITS ? sub - ZTWO_TOP_BITS : 0;
    int32_t within = (int32_t)((offset & ((UINT64_C(1) << sub) - 1)) >> cut);
    if (crowded && (entry & ZRANK_CROWDED)) {
        int64_t end = (int64_t)(t->second[(index + 1) & t->second_mask] & t->index_mask);
        if (exact)
            return (uint64_t)ztwo_search(t->points, (int64_t)at, end, offset + t->origin);
        return (uint64_t)znear_search(t->offsets, (int64_t)at, end, within);
    }
    unsigned in_bucket = (entry >> ZNEAR_START_BITS) & 15;
    if (exact && cut) {
        unsigned below = znear_below(t->offsets + at, within) & in_bucket;
        unsigned equal = ztwo_equal(t->offsets + at, within) & in_bucket;
        if (tie) {
            *tie = equal;
            return at + znear_ones[below];
        }
        if (ZRANK_UNLIKELY(equal)) {
            uint64_t key = offset + t->origin;
            const uint64_t *point = t->points + at;
            below = ((unsigned)(point[0] <= key) | (unsigned)(point[1] <= key) << 1
                     | (unsigned)(point[2] <= key) << 2 | (unsigned)(point[3] <= key) << 3)
                    & in_bucket;
        }
        return at + znear_ones[below];
    }
    return at + znear_ones[znear_below(t->offsets + at, within + 1) & in_bucket];
}

/* The codes of n <= ZTWO_BLOCK rows at these clamped offsets. Rows whose top bits tie
 * with a point's are listed without a branch and told apart after the others: their
 * 64-bit points, seldom read and out of cache, are then fetched together, not each
 * behind a mispredicted branch. */
ZRANK_INLINE void ztwo_block(const ztwo_table *t, const uint64_t *offsets, int n,
                             uint8_t *out, ptrdiff_t nbytes, int exact, int crowded)
{
    uint32_t ranks[ZTWO_BLOCK];
    uint8_t tied[ZTWO_BLOCK];
    int ties = 0;
    for (int j = 0; j < n; j++) {
        unsigned tie = 0;
        ranks[j] = (uint32_t)ztwo_rank(t, offsets[j], exact, crowded, exact ? &tie : NULL);
        tied[ties] = (uint8_t)j;
        ties += tie != 0;
    }
    for (int i = 0; i < ties; i++)
        ranks[tied[i]] = (uint32_t)ztwo_rank(t, offsets[tied[i]], exact, crowded, NULL);
    for (int j = 0; j < n; j++)
        memcpy(out + j * nbytes, t->codes + (size_t)ranks[j] * nbytes, nbytes);
}

ZRANK_INLINE void ztwo_loop(const ztwo_table *t, const uint8_t *row, ptrdiff_t stride,
                            ptrdiff_t width, uint8_t *out, ptrdiff_t nbytes, ptrdiff_t n,
                            int exact, int crowded)
{
    const ztwo_table table = *t;   /* (in registers: the stores may alias *t) */
    uint64_t offsets[ZTWO_BLOCK];
    for (ptrdiff_t i = 0; i < n; i += ZTWO_BLOCK) {
        int rows = n - i < ZTWO_BLOCK ? (int)(n - i) : ZTWO_BLOCK;
        for (int j = 0; j < rows; j++)
            offsets[j] = zrank_offset(table.origin, table.top,
                                      zrank_load(row + (i + j) * stride, width));
        ztwo_block(&table, offsets, rows, out + i * nbytes, nbytes, exact, crowded);
    }
}

#if ZNEAR_AVX2_BUILT
/* Adjacent 8-byte rows: AVX2 takes each block's keys to their clamped offsets 4 rows a
 * register, then ztwo_block. */
ZORDER_TARGET_ISA("avx2")
ZRANK_INLINE void ztwo_blocks_avx2(const ztwo_table *t, const uint8_t *row, uint8_t *out,
                                   ptrdiff_t nbytes, ptrdiff_t blocks, int exact, int crowded)
{
    const ztwo_table table = *t;
    uint64_t offsets[ZTWO_BLOCK];
    const zrank_clamp4 clamp = zrank_clamp4_of(table.origin, table.top);
    for (ptrdiff_t b = 0; b < blocks; b++) {
        const uint8_t *keys = row + b * ZTWO_BLOCK * 8;
        for (int j = 0; j < ZTWO_BLOCK; j += 4)
            _mm256_storeu_si256((__m256i *)(offsets + j), zrank_offsets4(&clamp, keys + 8 * j));
        ztwo_block(&table, offsets, ZTWO_BLOCK, out + b * ZTWO_BLOCK * nbytes, nbytes, exact,
                   crowded);
    }
}

ZORDER_TARGET_ISA("avx2") static ZORDER_NOINLINE
void ztwo_avx2(const ztwo_table *t, const uint8_t *row, uint8_t *out, ptrdiff_t nbytes,
               ptrdiff_t blocks, int exact, int crowded)
{
    if (nbytes == 2 && exact && crowded)
        ztwo_blocks_avx2(t, row, out, 2, blocks, 1, 1);
    else if (nbytes == 2 && exact)
        ztwo_blocks_avx2(t, row, out, 2, blocks, 1, 0);
    else if (nbytes == 2 && crowded)
        ztwo_blocks_avx2(t, row, out, 2, blocks, 0, 1);
    else if (nbytes == 2)
        ztwo_blocks_avx2(t, row, out, 2, blocks, 0, 0);
    else
        ztwo_blocks_avx2(t, row, out, nbytes, blocks, exact, crowded);
}
#endif

/* Every row's code from the two-level table; `exact`: t->points holds the 64-bit points
 * (some second-level bucket is wider than 2**30 keys; without, such a bucket's points are
 * told apart by their top bits only: a wrong code for a key among them, never a bad
 * read); `crowded`, `avx2`: as for znear_rows. */
static ZORDER_NOINLINE void ztwo_rows(const ztwo_table *t, const uint8_t *row,
                                      ptrdiff_t stride, ptrdiff_t width, uint8_t *out,
                                      ptrdiff_t nbytes, ptrdiff_t n, int exact, int crowded,
                                      int avx2)
{
#if ZNEAR_AVX2_BUILT
    if (avx2 && width == 8 && stride == 8 && n >= ZTWO_BLOCK) {
        ptrdiff_t blocks = n / ZTWO_BLOCK, done = blocks * ZTWO_BLOCK;
        ztwo_avx2(t, row, out, nbytes, blocks, exact, crowded);
        row += done * 8;
        out += done * nbytes;
        n -= done;
    }
#else
    (void)avx2;
#endif
    if (width == 8 && nbytes == 2 && exact)
        ztwo_loop(t, row, stride, 8, out, 2, n, 1, crowded);
    else if (width == 8 && nbytes == 2)
        ztwo_loop(t, row, stride, 8, out, 2, n, 0, crowded);
    else
        ztwo_loop(t, row, stride, width, out, nbytes, n, exact, crowded);
}

#endif
