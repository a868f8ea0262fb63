/* AVX2 backend: zorder_avx2_squeeze, _squeeze_planes and _merge: zero columns squeezed
 * out of a padded many-column interleave. */
#ifndef ZORDER_AVX2_SQUEEZE_H
#define ZORDER_AVX2_SQUEEZE_H

#include "store.h"

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

#endif  /* ZORDER_AVX2_SQUEEZE_H */
