/* The vector Hilbert transform on tiles of rows, written once for every instruction set
 * (hilbert_kernel.c's steps 1-3 on ZH_LANES rows a register, then the big-endian store).
 * hilbert_kernel.c includes it once per instruction set, after that set's shim:
 *   ZH_V            the register type; ZH_LANES rows (64-bit words) a register
 *   ZH_MAX_COLUMNS  the columns ZH_TILES keeps in registers
 *   ZH_INLINE       the set's target attribute, static inline, always inline
 *   ZH_FLIP, ZH_TILES, ZH_TILES_WIDE   the names of the functions defined here
 *   zh_load, zh_store, zh_xor, zh_srli, zh_sll, zh_sub, zh_set1   the vector operations
 *   zh_first, zh_step, zh_bswap   the set's level steps (hilbert_kernel.c) and byte swap
 * and it undefines them all at its end, ready for the next set. No include guard: it is
 * a template, meant to be included more than once. */

/* Bit k of each lane: the parity of bits k+1 .. 63 of the lane of `last` (flip_of). */
ZH_INLINE ZH_V ZH_FLIP(ZH_V last)
{
    ZH_V flip = zh_srli(last, 1);
    flip = zh_xor(flip, zh_srli(flip, 1));
    flip = zh_xor(flip, zh_srli(flip, 2));
    flip = zh_xor(flip, zh_srli(flip, 4));
    flip = zh_xor(flip, zh_srli(flip, 8));
    flip = zh_xor(flip, zh_srli(flip, 16));
    return zh_xor(flip, zh_srli(flip, 32));
}

/* T tiles of ZH_LANES rows of n <= ZH_MAX_COLUMNS columns, all in registers (n, T
 * constants per caller). */
ZH_INLINE void ZH_TILES(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, const int n,
                        const int T, int bits)
{
    ZH_V x[4][ZH_MAX_COLUMNS], bit;
    const ZH_V one = zh_set1(1);
    const __m128i shift = _mm_cvtsi32_si128(64 - bits);
    int i, q, t;
    for (t = 0; t < T; t++)
        for (i = 0; i < n; i++)
            x[t][i] = zh_load(words + i * ws + r + ZH_LANES * t);
    bit = zh_set1((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        ZH_V low = zh_sub(bit, one);
        for (t = 0; t < T; t++)
            x[t][0] = zh_first(x[t][0], bit, low);
        for (i = 1; i < n; i++)
            for (t = 0; t < T; t++)
                zh_step(&x[t][0], &x[t][i], bit, low);
        bit = zh_srli(bit, 1);
    }
    for (t = 0; t < T; t++) {
        /* Gray encode, final adjustment and big-endian store of the tile. */
        ZH_V flip;
        ptrdiff_t c;
        for (c = 1; c < n; c++)
            x[t][c] = zh_xor(x[t][c], x[t][c - 1]);
        flip = ZH_FLIP(x[t][n - 1]);
        for (c = 0; c < n; c++)
            zh_store(words + c * ws + r + ZH_LANES * t,
                     zh_bswap(zh_sll(zh_xor(x[t][c], flip), shift)));
    }
}

/* Any number of columns: word 0 of each of T tiles in a register, the other words read
 * and written back in the block, which stays in L1. */
ZH_INLINE void ZH_TILES_WIDE(uint64_t *words, ptrdiff_t ws, ptrdiff_t r, ptrdiff_t n,
                             const int T, int bits)
{
    ZH_V x0[4], bit;
    const ZH_V one = zh_set1(1);
    const __m128i shift = _mm_cvtsi32_si128(64 - bits);
    ptrdiff_t i;
    int q, t;
    for (t = 0; t < T; t++)
        x0[t] = zh_load(words + r + ZH_LANES * t);
    bit = zh_set1((long long)((uint64_t)1 << (bits - 1)));
    for (q = bits - 1; q > 0; q--) {
        ZH_V low = zh_sub(bit, one);
        for (t = 0; t < T; t++)
            x0[t] = zh_first(x0[t], bit, low);
        for (i = 1; i < n; i++)
            for (t = 0; t < T; t++) {
                uint64_t *p = words + i * ws + r + ZH_LANES * t;
                ZH_V xi = zh_load(p);
                zh_step(&x0[t], &xi, bit, low);
                zh_store(p, xi);
            }
        bit = zh_srli(bit, 1);
    }
    for (t = 0; t < T; t++) {
        /* Gray encode in place, then the flip from the last word. */
        ZH_V prev = x0[t], flip;
        zh_store(words + r + ZH_LANES * t, x0[t]);
        for (i = 1; i < n; i++) {
            uint64_t *p = words + i * ws + r + ZH_LANES * t;
            prev = zh_xor(prev, zh_load(p));
            zh_store(p, prev);
        }
        flip = ZH_FLIP(prev);
        for (i = 0; i < n; i++) {
            uint64_t *p = words + i * ws + r + ZH_LANES * t;
            zh_store(p, zh_bswap(zh_sll(zh_xor(zh_load(p), flip), shift)));
        }
    }
}

#undef ZH_V
#undef ZH_LANES
#undef ZH_MAX_COLUMNS
#undef ZH_INLINE
#undef ZH_FLIP
#undef ZH_TILES
#undef ZH_TILES_WIDE
#undef zh_load
#undef zh_store
#undef zh_xor
#undef zh_srli
#undef zh_sll
#undef zh_sub
#undef zh_set1
#undef zh_first
#undef zh_step
#undef zh_bswap
