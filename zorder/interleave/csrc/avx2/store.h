/* AVX2 backend: loads and stores of blocks: non-temporal, whole registers, or only the
 * first n bytes of a row. */
#ifndef ZORDER_AVX2_STORE_H
#define ZORDER_AVX2_STORE_H

#include "common.h"

/* nt: non-temporal stores (16-byte aligned p), so the destination lines are not read
 * for ownership first: what a copy pays and a large interleave need not. */
ZAVX2_INLINE void st32(uint8_t *p, __m256i v, const int nt)
{
    if (nt) {
        _mm_stream_si128((__m128i *)(void *)p, _mm256_castsi256_si128(v));
        _mm_stream_si128((__m128i *)(void *)(p + 16), _mm256_extracti128_si256(v, 1));
    } else {
        _mm256_storeu_si256((__m256i *)(void *)p, v);
    }
}

ZAVX2_INLINE __m256i ld256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

ZAVX2_INLINE void st16(uint8_t *p, __m128i v)
{
    _mm_storeu_si128((__m128i *)(void *)p, v);
}

/* Store modes of the blocks: ZST_NT non-temporal (whole 32-byte stores only), ZST_WHOLE
 * a register that holds any of a row's first n bytes stored whole (rows_packed's rows
 * back to back, which write again what it runs over). */
#define ZST_NT 1
#define ZST_WHOLE 2

/* The first n bytes of v at p (nothing when n <= 0, all of v when n >= 16). Rows
 * truncated inside a slab store exactly their bytes this way: no scratch rows to copy
 * from. Where n is a constant (whole slabs) the branches fold away. */
ZAVX2_INLINE void st16n(uint8_t *p, __m128i v, ptrdiff_t n)
{
    uint32_t u32;
    uint16_t u16;
    if (n >= 16) {
        st16(p, v);
        return;
    }
    if (n <= 0)
        return;
    if (n >= 8) {
        _mm_storel_epi64((__m128i *)(void *)p, v);
        p += 8;
        n -= 8;
        v = _mm_srli_si128(v, 8);
    }
    if (n >= 4) {
        u32 = (uint32_t)_mm_cvtsi128_si32(v);
        memcpy(p, &u32, 4);
        p += 4;
        n -= 4;
        v = _mm_srli_si128(v, 4);
    }
    if (n >= 2) {
        u16 = (uint16_t)_mm_cvtsi128_si32(v);
        memcpy(p, &u16, 2);
        p += 2;
        n -= 2;
        v = _mm_srli_si128(v, 2);
    }
    if (n)
        *p = (uint8_t)_mm_cvtsi128_si32(v);
}

ZAVX2_INLINE void st16m(uint8_t *p, __m128i v, ptrdiff_t n, const int mode)
{
    if (mode & ZST_WHOLE) {
        if (n > 0)
            st16(p, v);
    } else {
        st16n(p, v, n);
    }
}

/* The first n bytes of v at p, by mode (above). */
ZAVX2_INLINE void st32n(uint8_t *p, __m256i v, ptrdiff_t n, const int mode)
{
    if (mode & ZST_WHOLE) {
        if (n > 0)
            _mm256_storeu_si256((__m256i *)(void *)p, v);
    } else if (n >= 32) {
        st32(p, v, mode & ZST_NT);
    } else if (n > 16) {
        st16(p, _mm256_castsi256_si128(v));
        st16n(p + 16, _mm256_extracti128_si256(v, 1), n - 16);
    } else {
        st16n(p, _mm256_castsi256_si128(v), n);
    }
}

#endif  /* ZORDER_AVX2_STORE_H */
