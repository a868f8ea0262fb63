/* Advanced SIMD (NEON) backend for aarch64, where every CPU has it.
 *
 * The k-column interleave of one byte index j (a "group") is an 8x8 bit transpose: row c
 * of the matrix is column c's byte j (rows k..7 zero), and row i of the transpose holds,
 * from its top bit down, bit 7 - i of columns 0..k-1, the k bits the output stream puts at
 * [k*i, k*i + k). So the kernel works bit-sliced on 16 groups at once:
 *
 * 1. load: register A[c] holds, in lane m, column c's byte of group m. Groups are "slabs"
 *    of 8 byte indices of one row (columns of width 8n have n slabs a row), two slabs a
 *    block: 8-byte columns pair two rows (ldr d + ld1 {v.d}[1] per column), wider ones
 *    take 16 bytes of one row (ldr q); no gather is needed;
 * 2. transpose: the three block swaps of an 8x8 transpose (4-, 2- and 1-bit blocks
 *    between registers r and r + s), each a shift and a bit-select per register, on all 16
 *    lanes at once; with k < 8 the zero rows fold away at compile time;
 * 3. pack (k < 8): output byte b of a group is the OR of the level registers whose k-bit
 *    field overlaps it, each shifted into place (ushr/shl + orr, or usra);
 * 4. store: output byte b of group m goes to byte k*m + b of the slab's output, a byte
 *    interleave of the k packed registers: one st2/st3/st4 for 2-4 columns, zips and
 *    st4 (8 columns) or zips and st3 on 16-bit lanes (6 columns), and table lookups (tbl,
 *    tbx) for 5 and 7, whose index tables zorder_neon_init builds.
 *
 * Output rows get exactly their `size` bytes: a truncated slab is stored through a small
 * buffer, or, with rows back to back, whole when it only runs into later rows of the call
 * (which are written after it; the contract of spread_rows.h). Column bytes past the
 * rounded-up groups the row needs are never read, and the width being a multiple of 8
 * keeps every load inside the column. Other widths and one column are the caller's (the
 * generic driver: rows of 8 bytes through segments.h, or the table kernel). Instructions
 * executed per row, against table's: benchmarks/NOTES.md (tools/neon_icount.sh counts them
 * under emulation). */
#include <string.h>

#include "neon_kernel.h"
#include "segments.h"
#include "arch.h"

#if ZORDER_AARCH64 && !defined(ZORDER_NO_NEON) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>

const int zorder_neon_built = 1;

#define ZN_INLINE ZORDER_ALWAYS_INLINE

typedef uint8x16_t zv;

/* 5 and 7 columns: ZN_IDX[k == 7][h][o][p] is the index vector for output register o of
 * half h (lanes 8h..8h+7) into table part p: part 0 is the packed registers Q0..Q3 (tbl),
 * part 1 the rest (tbx); 0xFF where the byte comes from the other part. */
static uint8_t ZN_IDX[2][2][4][2][16];

void zorder_neon_init(void)
{
    int which, h, o, x;
    for (which = 0; which < 2; which++) {
        const int k = which ? 7 : 5;
        for (h = 0; h < 2; h++)
            for (o = 0; o < 4; o++)
                for (x = 0; x < 16; x++) {
                    const int pos = 16 * o + x, m = 8 * h + pos / k, b = pos % k;
                    const int inside = pos < 8 * k;
                    ZN_IDX[which][h][o][0][x] = (uint8_t)(inside && b < 4 ? 16 * b + m : 0xFF);
                    ZN_IDX[which][h][o][1][x] = (uint8_t)(inside && b >= 4 ? 16 * (b - 4) + m : 0xFF);
                }
    }
}

/* One block swap of the transpose: registers a (rows with bit s clear) and b keep their
 * `keep` bits (the columns with bit s clear, most significant first) and trade the rest. */
ZN_INLINE void zn_swap(zv *a, zv *b, const int s, const uint8_t keep)
{
    const zv l = vdupq_n_u8(keep);
    const zv na = (*a & l) | ((*b >> s) & ~l);
    const zv nb = ((*a << s) & l) | (*b & ~l);
    *a = na;
    *b = nb;
}

/* A[c] (c < K) -> Q[b] (b < K): lane m of Q[b] is output byte b of group m. */
ZN_INLINE void zn_interleave(const zv *A, const int K, zv *Q)
{
    zv x[8];
    int r, b, i;
    for (r = 0; r < 8; r++)
        x[r] = r < K ? A[r] : vdupq_n_u8(0);
    for (r = 0; r < 8; r++)
        if (!(r & 4))
            zn_swap(&x[r], &x[r + 4], 4, 0xF0);
    for (r = 0; r < 8; r++)
        if (!(r & 2))
            zn_swap(&x[r], &x[r + 2], 2, 0xCC);
    for (r = 0; r < 8; r++)
        if (!(r & 1))
            zn_swap(&x[r], &x[r + 1], 1, 0xAA);
    if (K == 8) {
        for (b = 0; b < 8; b++)
            Q[b] = x[b];
        return;
    }
    /* x[i]: level i's K bits at the top; they go to stream bits [K*i, K*i + K). */
    for (b = 0; b < K; b++) {
        zv q = vdupq_n_u8(0);
        for (i = 0; i < 8; i++) {
            const int d = K * i - 8 * b;   /* the field's start relative to byte b */
            if (d >= 8 || d <= -K)
                continue;
            q |= d >= 0 ? x[i] >> d : x[i] << -d;
        }
        Q[b] = q;
    }
}

/* 5 or 7 columns: output register o of half h by table lookup. */
ZN_INLINE zv zn_lookup(const zv *Q, const int K, const int h, const int o)
{
    const uint8_t *idx = ZN_IDX[K == 7][h][o][0];
    const uint8x16x4_t lo = {{Q[0], Q[1], Q[2], Q[3]}};
    zv v = vqtbl4q_u8(lo, vld1q_u8(idx));
    if (K == 5) {
        v = vqtbx1q_u8(v, Q[4], vld1q_u8(idx + 16));
    } else {
        const uint8x16x3_t hi = {{Q[4], Q[5], Q[6]}};
        v = vqtbx3q_u8(v, hi, vld1q_u8(idx + 16));
    }
    return v;
}

/* The 8K output bytes of lanes 8h..8h+7 (one slab) at dst. */
ZN_INLINE void zn_store_half(uint8_t *dst, const zv *Q, const int K, const int h)
{
    int b;
    switch (K) {
    case 2:
        vst1q_u8(dst, h ? vzip2q_u8(Q[0], Q[1]) : vzip1q_u8(Q[0], Q[1]));
        break;
    case 3: {
        uint8x8x3_t v;
        for (b = 0; b < 3; b++)
            v.val[b] = h ? vget_high_u8(Q[b]) : vget_low_u8(Q[b]);
        vst3_u8(dst, v);
        break;
    }
    case 4: {
        uint8x8x4_t v;
        for (b = 0; b < 4; b++)
            v.val[b] = h ? vget_high_u8(Q[b]) : vget_low_u8(Q[b]);
        vst4_u8(dst, v);
        break;
    }
    case 6: {
        /* byte pairs (2q, 2q + 1) as 16-bit lanes, then a 3-way interleave of those */
        uint16x8x3_t v;
        for (b = 0; b < 3; b++)
            v.val[b] = vreinterpretq_u16_u8(h ? vzip2q_u8(Q[2 * b], Q[2 * b + 1])
                                              : vzip1q_u8(Q[2 * b], Q[2 * b + 1]));
        vst3q_u16((uint16_t *)(void *)dst, v);
        break;
    }
    case 8: {
        /* (b, b + 4) zipped: lane 2m + e holds byte 4e + b of group m; st4 finishes it */
        uint8x16x4_t v;
        for (b = 0; b < 4; b++)
            v.val[b] = h ? vzip2q_u8(Q[b], Q[b + 4]) : vzip1q_u8(Q[b], Q[b + 4]);
        vst4q_u8(dst, v);
        break;
    }
    default: {   /* 5, 7: 8K = 40 or 56 bytes, the last register half used */
        int o;
        for (o = 0; o + 1 < (8 * K + 15) / 16; o++)
            vst1q_u8(dst + 16 * o, zn_lookup(Q, K, h, o));
        vst1_u8(dst + 16 * o, vget_low_u8(zn_lookup(Q, K, h, o)));
        break;
    }
    }
}

/* Both slabs, back to back at dst (16K bytes). */
ZN_INLINE void zn_store_full(uint8_t *dst, const zv *Q, const int K)
{
    switch (K) {
    case 2: {
        const uint8x16x2_t v = {{Q[0], Q[1]}};
        vst2q_u8(dst, v);
        break;
    }
    case 3: {
        const uint8x16x3_t v = {{Q[0], Q[1], Q[2]}};
        vst3q_u8(dst, v);
        break;
    }
    case 4: {
        const uint8x16x4_t v = {{Q[0], Q[1], Q[2], Q[3]}};
        vst4q_u8(dst, v);
        break;
    }
    default:
        zn_store_half(dst, Q, K, 0);
        zn_store_half(dst + 8 * K, Q, K, 1);
        break;
    }
}

/* n (1..64) bytes with a few overlapping moves: a memcpy call costs more than the slab.
 * Below 16 bytes, the shared short copy (segments.h). */
ZN_INLINE void zn_copy(uint8_t *dst, const uint8_t *src, ptrdiff_t n)
{
    ptrdiff_t o;
    if (n < 16) {
        zorder_copy_short(dst, src, n);
        return;
    }
    for (o = 0; o + 16 < n; o += 16)
        vst1q_u8(dst + o, vld1q_u8(src + o));
    vst1q_u8(dst + n - 16, vld1q_u8(src + n - 16));
}

/* Slab h's first n (1..8K) bytes at dst: directly when whole, else through tmp. */
ZN_INLINE void zn_put(uint8_t *dst, const zv *Q, const int K, const int h, ptrdiff_t n,
                      uint8_t *tmp)
{
    if (n == 8 * K) {
        zn_store_half(dst, Q, K, h);
    } else {
        zn_store_half(tmp, Q, K, h);
        zn_copy(dst, tmp, n);
    }
}

ZN_INLINE zv zn_load2(const uint8_t *a, const uint8_t *b)
{
    return vcombine_u8(vld1_u8(a), vld1_u8(b));
}

ZN_INLINE zv zn_load1(const uint8_t *a)
{
    return vcombine_u8(vld1_u8(a), vdup_n_u8(0));
}

ZN_INLINE void zn_uniform_k(const zorder_column *cols, const int K, ptrdiff_t size,
                            ptrdiff_t nrows, uint8_t *out, ptrdiff_t os)
{
    const ptrdiff_t half = 8 * K;                  /* output bytes of one slab */
    const ptrdiff_t groups = (size + K - 1) / K;   /* byte indices a row needs */
    const ptrdiff_t ns = (groups + 7) / 8;         /* slabs a row */
    const ptrdiff_t last_n = size - half * (ns - 1);   /* bytes of a row's last slab */
    const uint8_t *src[8];
    ptrdiff_t stride[8], r, s;
    uint8_t tmp[128];
    zv A[8], Q[8];
    int c;
    for (c = 0; c < K; c++) {
        src[c] = cols[c].data;
        stride[c] = cols[c].row_stride;
    }
    if (ns == 1) {
        /* One slab a row (8-byte columns, or output cut to 8 groups): two rows a block. */
        const int whole = last_n == half, joined = whole && os == half;
        /* Truncated rows back to back: a row's whole slab may run into the rows after it,
         * which are written later, up to the end of the call's output (rows before
         * `spill_end` are stored whole; the rest, the last row included, exactly). */
        const ptrdiff_t spill_end = !whole && os == size ? nrows - (half + size - 1) / size : 0;
        for (r = 0; r + 2 <= nrows; r += 2) {
            uint8_t *dst = out + r * os;
            for (c = 0; c < K; c++) {
                A[c] = zn_load2(src[c], src[c] + stride[c]);
                src[c] += 2 * stride[c];
            }
            zn_interleave(A, K, Q);
            if (joined) {
                zn_store_full(dst, Q, K);
            } else if (r + 1 < spill_end) {
                zn_store_half(dst, Q, K, 0);
                zn_store_half(dst + os, Q, K, 1);
            } else {
                zn_put(dst, Q, K, 0, last_n, tmp);
                zn_put(dst + os, Q, K, 1, last_n, tmp);
            }
        }
        if (r < nrows) {
            for (c = 0; c < K; c++)
                A[c] = zn_load1(src[c]);
            zn_interleave(A, K, Q);
            zn_put(out + r * os, Q, K, 0, last_n, tmp);
        }
        return;
    }
    /* Several slabs a row: pairs of slabs along the row (one 16-byte load a column); an odd
     * slab count pairs each even row's last slab with the next row's. */
    for (r = 0; r < nrows; r++) {
        uint8_t *dst = out + r * os;
        for (s = 0; s + 2 <= ns; s += 2) {
            const ptrdiff_t n1 = s + 2 == ns ? last_n : half;
            for (c = 0; c < K; c++)
                A[c] = vld1q_u8(src[c] + 8 * s);
            zn_interleave(A, K, Q);
            if (n1 == half) {
                zn_store_full(dst + half * s, Q, K);
            } else {
                zn_store_half(dst + half * s, Q, K, 0);
                zn_put(dst + half * (s + 1), Q, K, 1, n1, tmp);
            }
        }
        if ((ns & 1) && !(r & 1)) {
            const int two = r + 1 < nrows;
            s = ns - 1;
            for (c = 0; c < K; c++)
                A[c] = two ? zn_load2(src[c] + 8 * s, src[c] + stride[c] + 8 * s)
                           : zn_load1(src[c] + 8 * s);
            zn_interleave(A, K, Q);
            zn_put(dst + half * s, Q, K, 0, last_n, tmp);
            if (two)
                zn_put(dst + os + half * s, Q, K, 1, last_n, tmp);
        }
        for (c = 0; c < K; c++)
            src[c] += stride[c];
    }
}

#define ZN_UNIFORM(K) \
    static ZORDER_NOINLINE void zn_uniform_##K( \
        const zorder_column *cols, ptrdiff_t size, ptrdiff_t nrows, uint8_t *out, ptrdiff_t os) \
    { \
        zn_uniform_k(cols, K, size, nrows, out, os); \
    }
ZN_UNIFORM(2)
ZN_UNIFORM(3)
ZN_UNIFORM(4)
ZN_UNIFORM(5)
ZN_UNIFORM(6)
ZN_UNIFORM(7)
ZN_UNIFORM(8)

int zorder_neon_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride)
{
    const ptrdiff_t w = cols[0].width;
    int c;
    if (k < 2 || k > 8 || w <= 0 || w % 8 != 0 || size > k * w)
        return 0;
    for (c = 1; c < k; c++)
        if (cols[c].width != w)
            return 0;
    if (nrows <= 0 || size <= 0)
        return 1;
    /* A constant K per function: the column loops unroll and the zero rows fold away; one
     * function per K keeps each one's registers its own (inlined into one function, the
     * seven spilled to the stack: 2 x 16 B took 125 instructions a row instead of 70). */
    switch (k) {
    case 2: zn_uniform_2(cols, size, nrows, out, out_stride); break;
    case 3: zn_uniform_3(cols, size, nrows, out, out_stride); break;
    case 4: zn_uniform_4(cols, size, nrows, out, out_stride); break;
    case 5: zn_uniform_5(cols, size, nrows, out, out_stride); break;
    case 6: zn_uniform_6(cols, size, nrows, out, out_stride); break;
    case 7: zn_uniform_7(cols, size, nrows, out, out_stride); break;
    default: zn_uniform_8(cols, size, nrows, out, out_stride); break;
    }
    return 1;
}

#else

const int zorder_neon_built = 0;

void zorder_neon_init(void)
{
}

int zorder_neon_uniform(const zorder_column *cols, int k, ptrdiff_t size, ptrdiff_t nrows,
                        uint8_t *out, ptrdiff_t out_stride)
{
    (void)cols; (void)k; (void)size; (void)nrows; (void)out; (void)out_stride;
    return 0;
}

#endif
