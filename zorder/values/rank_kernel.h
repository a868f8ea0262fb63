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
 */
#ifndef ZORDER_RANK_KERNEL_H
#define ZORDER_RANK_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

#define ZRANK_INLINE ZORDER_ALWAYS_INLINE
#define ZRANK_BSWAP64(x) ZORDER_BSWAP64(x)
#define ZRANK_LITTLE_ENDIAN ZORDER_LITTLE_ENDIAN
#define ZRANK_PREFETCH(p) ZORDER_PREFETCH(p)

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

/* The rank of key in a crowded bucket: a + the points of [a, b) that are <= key. */
static int64_t zrank_search(const uint64_t *pair, int64_t a, int64_t b, uint64_t key)
{
    while (b - a > 8) {
        int64_t mid = a + (b - a) / 2;
        if (pair[2 * mid] <= key)
            a = mid + 1;
        else
            b = mid;
    }
    while (a < b && pair[2 * a] <= key)
        a++;
    return a;
}

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

#endif
