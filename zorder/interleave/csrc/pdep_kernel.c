/* BMI2 backend: _pdep_u64 deposits a byte's bits straight into their output positions.
 *
 * This file holds the only BMI2 instructions in zorder, each function marked with
 * target("bmi2") instead of compiling the file with -mbmi2, so nothing outside these
 * functions (the module's import included) can ever use them. pdep.pyx (and simd.pyx, its
 * fallback) call in only after CPUID says BMI2 is there. */
#include "pdep_kernel.h"
#include "arch.h"
#include "spread_rows.h"
#include "segments.h"

#if ZORDER_X86_64
#include <immintrin.h>

#define ZORDER_TARGET_BMI2 ZORDER_TARGET_ISA("bmi2")

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

ZORDER_TARGET_BMI2
int zorder_pdep_rows(const zorder_column *cols, ptrdiff_t ncols, ptrdiff_t size,
                     ptrdiff_t nrows, uint8_t *out, ptrdiff_t out_stride)
{
    if (zorder_is_uniform(cols, ncols)) {
        zorder_uniform_rows(cols, (int)ncols, size, nrows, out, out_stride, zorder_spread_uniform);
        return 1;
    }
    /* Ragged widths and more than 8 columns: the same kernel per segment (segments.h). */
    return zorder_segments_rows(cols, ncols, size, nrows, out, out_stride, zorder_spread_uniform, 0, 0, NULL);
}

ZORDER_TARGET_BMI2
void zorder_pdep_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                         uint8_t *out, ptrdiff_t out_stride)
{
    zorder_spread_uniform(cols, k, size, nrows, out, out_stride);
}

#else

const int zorder_pdep_built = 0;

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
