/* BMI2 backend: _pdep_u64 deposits a byte's bits straight into their output positions.
 *
 * This file holds the only BMI2 instructions in zorder, each function marked with
 * target("bmi2") instead of compiling the file with -mbmi2, so nothing outside these
 * functions (the module's import included) can ever use them. _pdep.pyx calls in only
 * after CPUID says BMI2 is there. */
#include "pdep_kernel.h"
#include "arch.h"
#include "spread_rows.h"
#include "segments.h"

#if ZORDER_X86_64 && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#include <immintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define ZORDER_TARGET_BMI2 __attribute__((target("bmi2")))
#else
#define ZORDER_TARGET_BMI2
#endif

const int zorder_pdep_built = 1;

/* For 4 and 8 columns every second word is built from tables instead (see
 * zorder_pdep_word2): TAB4[t * 2 + p][b] and TAB8[t][b] hold byte b of column t at group
 * position p, already in place in the word, as in the table backend. */
static uint64_t TAB4[8][256];
static uint64_t TAB8[8][256];

void zorder_pdep_init(void)
{
    int t, p, b;
    for (b = 0; b < 256; b++) {
        const uint64_t s4 = zorder_spread_bits((uint64_t)b, 8, 4);
        const uint64_t s8 = zorder_spread_bits((uint64_t)b, 8, 8);
        for (t = 0; t < 8; t++) {
            TAB8[t][b] = s8 >> t;
            if (t < 4)
                for (p = 0; p < 2; p++)
                    TAB4[t * 2 + p][b] = (s4 << 32) >> (t + 32 * p);
        }
    }
}

/* Uniform widths: the kernel of spread_rows.h, with these hooks.
 *
 * For k = 1..4 one PDEP fills a whole word: the G = 8 / k bytes of a column (k = 3:
 * two bytes, 6 of the 8) are loaded as one little-endian integer, so byte g lands in
 * group slot g counted from the bottom, bits in the right order within each slot; the
 * slots are then reversed (a rotate for k = 4). That is 16 bits a PDEP for 4 columns,
 * not 8. For k = 5..8 one PDEP per byte. The masks are literals (constant k), so they
 * stay in registers: a table would be reloaded after every store, since `out` may
 * alias it as far as the compiler knows. */

/* Bits 63 - k*i (i < 8): column 0's byte in a group held in the top 8k bits. */
ZORDER_ALWAYS_INLINE uint64_t zorder_pdep_mask_top(const int k)
{
    switch (k) {
    case 1: return 0xff00000000000000ull;
    case 2: return 0xaaaa000000000000ull;
    case 3: return 0x9249240000000000ull;
    case 4: return 0x8888888800000000ull;
    case 5: return 0x8421084210000000ull;
    case 6: return 0x8208208208200000ull;
    case 7: return 0x8102040810204000ull;
    default: return 0x8080808080808080ull;
    }
}

/* Bits k-1 + k*i (i < 8G): column 0's bytes of G groups, first byte in the lowest slot. */
ZORDER_ALWAYS_INLINE uint64_t zorder_pdep_mask_low(const int k)
{
    switch (k) {
    case 1: return 0xffffffffffffffffull;
    case 2: return 0xaaaaaaaaaaaaaaaaull;
    case 3: return 0x0000924924924924ull;
    default: return 0x8888888888888888ull;
    }
}

#define ZORDER_PDEP_G(k) ((k) <= 4 ? 8 / (k) : 1)
#ifndef ZORDER_PDEP_HYBRID
#define ZORDER_PDEP_HYBRID 1
#endif

/* From slots in load order (first group lowest) to the word layout (first group on top). */
ZORDER_ALWAYS_INLINE uint64_t zorder_pdep_reverse_slots(const int k, uint64_t w)
{
    switch (k) {
    case 1:
        return ZORDER_BSWAP64(w);
    case 2:
        w = (w >> 32) | (w << 32);
        return ((w >> 16) & 0x0000ffff0000ffffull) | ((w & 0x0000ffff0000ffffull) << 16);
    case 3:
        return (w << 40) | ((w >> 24) << 16);
    case 4:
        return (w >> 32) | (w << 32);
    default:
        return w;
    }
}

ZORDER_TARGET_BMI2 ZORDER_ALWAYS_INLINE
void zorder_pdep_word2(const uint8_t *const *src, const int k, ptrdiff_t j0,
                       uint64_t *w0, uint64_t *w1)
{
    const int G = ZORDER_PDEP_G(k);
    uint64_t a = 0, b = 0;
    int t;
    for (t = 0; t < k; t++) {
        if (k == 1) {
            a = ZORDER_LOAD_LE(src[0] + j0, 8);
            b = ZORDER_LOAD_LE(src[0] + j0 + 8, 8);
        } else if (k == 4 && ZORDER_PDEP_HYBRID) {
            /* One word by PDEP (port 1), the other by table lookups (the load ports),
             * so the two run side by side. */
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 4);
            a |= _pdep_u64(v, zorder_pdep_mask_low(k) >> t);
            b |= TAB4[t * 2][(uint8_t)(v >> 16)] | TAB4[t * 2 + 1][(uint8_t)(v >> 24)];
        } else if (k == 8 && ZORDER_PDEP_HYBRID) {
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 2);
            a |= _pdep_u64(v, zorder_pdep_mask_top(k) >> t);
            b |= TAB8[t][(uint8_t)(v >> 8)];
        } else if (k <= 4) {
            /* PDEP reads only the low 8G bits of its source. */
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 2 * G);
            a |= _pdep_u64(v, zorder_pdep_mask_low(k) >> t);
            b |= _pdep_u64(v >> (8 * G), zorder_pdep_mask_low(k) >> t);
        } else {
            const uint64_t v = ZORDER_LOAD_LE(src[t] + j0, 2);
            a |= _pdep_u64(v, zorder_pdep_mask_top(k) >> t);
            b |= _pdep_u64(v >> 8, zorder_pdep_mask_top(k) >> t);
        }
    }
    *w0 = zorder_pdep_reverse_slots(k, a);
    *w1 = ((k == 4 || k == 8) && ZORDER_PDEP_HYBRID) ? b : zorder_pdep_reverse_slots(k, b);
}

ZORDER_TARGET_BMI2 ZORDER_ALWAYS_INLINE
uint64_t zorder_pdep_word(const uint8_t *const *src, const int k, ptrdiff_t j0)
{
    const int G = ZORDER_PDEP_G(k);
    uint64_t w = 0;
    int t;
    for (t = 0; t < k; t++) {
        if (k == 1)
            w = ZORDER_LOAD_LE(src[0] + j0, 8);
        else if (k <= 4)
            w |= _pdep_u64(ZORDER_LOAD_LE(src[t] + j0, G), zorder_pdep_mask_low(k) >> t);
        else
            w |= _pdep_u64(src[t][j0], zorder_pdep_mask_top(k) >> t);
    }
    return zorder_pdep_reverse_slots(k, w);
}

ZORDER_TARGET_BMI2 ZORDER_ALWAYS_INLINE
uint64_t zorder_pdep_group(const uint8_t *const *src, const int k, ptrdiff_t j)
{
    uint64_t w = 0;
    int t;
    for (t = 0; t < k; t++)
        w |= _pdep_u64(src[t][j], zorder_pdep_mask_top(k) >> t);
    return w;
}

#define ZORDER_TARGET ZORDER_TARGET_BMI2
#define ZORDER_G(k) ZORDER_PDEP_G(k)
#define ZORDER_WORD2(k, src, j0, w0, w1) zorder_pdep_word2(src, k, j0, &(w0), &(w1))
#define ZORDER_WORD(k, src, j0) zorder_pdep_word(src, k, j0)
#define ZORDER_GROUP(k, src, j) zorder_pdep_group(src, k, j)
#include "spread_rows.h"

/* Whether a ragged call goes padded (zorder_pdep_padded_rows) rather than by segments:
 * 2-8 columns, one width not a multiple of 8 (the segments of those are a few bytes each,
 * each paying a gather and a scatter), a padded row of at most 64 bytes. */
static inline int zorder_pad_wanted(const zorder_column *cols, ptrdiff_t ncols)
{
    ptrdiff_t c, W = 0;
    int odd = 0;
    if (ncols < 2 || ncols > ZORDER_MAX_GROUP)
        return 0;
    for (c = 0; c < ncols; c++) {
        if (cols[c].width > W)
            W = cols[c].width;
        odd |= cols[c].width % 8 != 0;
    }
    return odd && ncols * W <= 64;
}

ZORDER_TARGET_BMI2
int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    if (zorder_is_uniform(cols, ncols)) {
        zorder_uniform_rows(cols, (int)ncols, size, nrows, out, out_stride, zorder_spread_uniform);
        return 1;
    }
    /* Ragged widths and more than 8 columns: the same kernel per segment (segments.h).
     * (Padded and compacted, zorder_pdep_padded_rows, lost here: the padded row costs
     * this kernel more than the segments' gathers; 3+5+8 -> 16 10.2 vs 7.7 ns/row.) */
    return zorder_segments_rows(cols, ncols, size, nrows, out, out_stride, zorder_spread_uniform, 0, 0, NULL);
}

ZORDER_TARGET_BMI2
void zorder_pdep_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t out_stride)
{
    zorder_spread_uniform(cols, k, size, nrows, out, out_stride);
}

/* ---- ragged widths as a padded uniform interleave, compacted by PEXT ------------------
 *
 * Zero-padding every column to the widest width W gives a uniform interleave of n columns
 * whose stream holds, at byte index j, bit level i, one bit per column in column order.
 * Iceberg's ragged interleave is that stream with the bits of the columns that have no
 * byte j left out (they are not zeros there: they are absent). So a row is the padded
 * row (the uniform kernel at its best shape, rows back to back) with a fixed set of bit
 * positions removed: one PEXT per padded 64-bit word, the pieces stitched end to end.
 * Narrow ragged shapes (3+5+8, 1+2+3+4) otherwise pay a gather, a kernel call and a
 * scatter per segment. */

#define ZORDER_PAD_MAX_BYTES 64         /* padded row, at most 8 words */
#define ZORDER_PAD_CHUNK_BYTES (24 << 10)

/* The compaction of `rows` padded rows (P bytes each, readable 8 bytes past the last)
 * into `size`-byte output rows; Q padded words per row (a constant) are read. Rows whose
 * stores may run into later rows of the call (out_stride == size and enough rows left)
 * store whole words; the others go through a local buffer and are exact. */
ZORDER_TARGET_BMI2 ZORDER_ALWAYS_INLINE
void zorder_pad_compact(const int Q, const uint64_t *mask, const int *count,
                        const uint8_t *tmp, ptrdiff_t P, ptrdiff_t rows, ptrdiff_t spill_rows,
                        uint8_t *out, ptrdiff_t out_stride, ptrdiff_t size)
{
    ptrdiff_t r;
    for (r = 0; r < rows; r++) {
        const uint8_t *src = tmp + r * P;
        uint8_t local[ZORDER_PAD_MAX_BYTES + 16];
        uint8_t *d = r < spill_rows ? out + r * out_stride : local;
        uint64_t acc = 0;
        int nacc = 0, q;
        for (q = 0; q < Q; q++) {
            const uint64_t e = _pext_u64(ZORDER_BSWAP64(zorder_load_le64(src + 8 * q)), mask[q]);
            const int p = count[q];
            if (nacc + p < 64) {
                acc = (acc << p) | e;
                nacc += p;
            } else {
                const int rest = nacc + p - 64;
                zorder_store_be64(d, (nacc ? acc << (64 - nacc) : 0) | (e >> rest));
                d += 8;
                acc = e;
                nacc = rest;
            }
        }
        if (nacc)
            zorder_store_be64(d, acc << (64 - nacc));
        if (r >= spill_rows)
            zorder_copy_short(out + r * out_stride, local, size);
    }
}

static inline int zorder_pad_gathers(const zorder_column *col, ptrdiff_t W)
{
    return col->width < W || (W % 8 != 0 && col->row_stride != W);
}

ZORDER_TARGET_BMI2
int zorder_pdep_padded_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                            ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                            zorder_uniform_fn uniform)
{
    zorder_column view[ZORDER_MAX_GROUP];
    uint64_t mask[8] = {0};
    int count[8] = {0};
    const int n = (int)ncols;
    ptrdiff_t W = 0, P, chunk, r0, r, s, need, got, spill;
    uint8_t *scratch;
    int c, q, Q, gathered = 0;
    if (!zorder_pad_wanted(cols, ncols) || nrows < 16 || size <= 0)
        return 0;
    for (c = 0; c < n; c++)
        if (cols[c].width > W)
            W = cols[c].width;
    P = n * W;
    if (P > ZORDER_PAD_MAX_BYTES || size > P)
        return 0;
    /* stream bit s = 8nj + ni + c (byte index j, level i, column c) is bit 63 - s % 64 of
     * big-endian padded word s / 64; kept when column c has a byte j */
    for (s = 0; s < 8 * P; s++)
        if (cols[s % n].width > s / (8 * n))
            mask[s / 64] |= 1ull << (63 - s % 64);
    for (q = 0, got = 0, need = 8 * size; got < need && q < 8; q++) {
        uint64_t bits = mask[q];
        for (count[q] = 0; bits; bits &= bits - 1)
            count[q]++;
        got += count[q];
    }
    if (got < need)
        return 0;   /* size beyond the columns' bytes (the front end never asks) */
    Q = q;
    /* Columns to gather into zero-padded rows back to back: the short ones, and when W is
     * not a multiple of 8 also those whose rows are not back to back (the kernels take
     * such widths only as rows of 8 bytes). */
    for (c = 0; c < n; c++)
        gathered += zorder_pad_gathers(&cols[c], W);
    chunk = ZORDER_PAD_CHUNK_BYTES / P + 1;
    scratch = (uint8_t *)calloc((size_t)(chunk * (gathered * W + P) + 64), 1);
    if (scratch == NULL)
        return 0;
    /* rows whose whole-word stores (up to 15 bytes past `size`) stay inside later rows */
    spill = out_stride == size ? nrows - (15 + size) / size - 1 : 0;
    for (r0 = 0; r0 < nrows; r0 += chunk) {
        const ptrdiff_t rows = nrows - r0 < chunk ? nrows - r0 : chunk;
        uint8_t *g = scratch, *tmp = scratch + chunk * gathered * W;
        for (c = 0; c < n; c++) {
            const ptrdiff_t w = cols[c].width, stride = cols[c].row_stride;
            const uint8_t *src = cols[c].data + r0 * stride;
            view[c] = cols[c];
            view[c].data = src;
            if (!zorder_pad_gathers(&cols[c], W))
                continue;
            /* Bytes w..W-1 of every row stay zero (calloc): each row writes only its w
             * bytes, or 8 masked bytes whose part past w is zero. An 8-byte load from row r
             * must end inside a later row of this call. */
            {
                const ptrdiff_t m = w == 8 ? 0 : w < 8 && stride > 0 ? (8 - w + stride - 1) / stride
                                                                      : nrows;
                const ptrdiff_t fast = nrows - r0 - m < 0 ? 0 : nrows - r0 - m > rows ? rows
                                                                               : nrows - r0 - m;
                const uint64_t keep = w >= 8 ? ~0ull : (1ull << (8 * w)) - 1;
                for (r = 0; r < fast; r++) {
                    const uint64_t v = zorder_load_le64(src + r * stride) & keep;
                    memcpy(g + r * W, &v, 8);
                }
                for (; r < rows; r++)
                    zorder_copy_short(g + r * W, src + r * stride, w);
            }
            view[c].data = g;
            view[c].row_stride = W;
            view[c].width = W;
            g += chunk * W;
        }
        for (c = 0; c < n; c++)
            view[c].width = W;
        zorder_uniform_rows(view, n, P, rows, tmp, P, uniform);
        {
            const ptrdiff_t sr = spill - r0 < 0 ? 0 : spill - r0 > rows ? rows : spill - r0;
            uint8_t *dst = out + r0 * out_stride;
            switch (Q) {
            case 1: zorder_pad_compact(1, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 2: zorder_pad_compact(2, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 3: zorder_pad_compact(3, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 4: zorder_pad_compact(4, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 5: zorder_pad_compact(5, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 6: zorder_pad_compact(6, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            case 7: zorder_pad_compact(7, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            default: zorder_pad_compact(8, mask, count, tmp, P, rows, sr, dst, out_stride, size); break;
            }
        }
    }
    free(scratch);
    return 1;
}

#else

const int zorder_pdep_built = 0;

int zorder_pdep_padded_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                            ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride,
                            zorder_uniform_fn uniform)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    (void)uniform;
    return 0;
}

void zorder_pdep_init(void) {}

int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)ncols; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

void zorder_pdep_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)k; (void)size; (void)nrows; (void)out; (void)out_stride;
}

#endif
