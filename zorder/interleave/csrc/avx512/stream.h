/* AVX-512 backend: streaming output, whole 64-byte lines with non-temporal stores
 * (zstream). */
#ifndef ZORDER_AVX512_STREAM_H
#define ZORDER_AVX512_STREAM_H

#include "load.h"

/* When the output rows are back to back and large, the kernels hand their registers,
 * in output order, to this writer: it realigns them to 64-byte lines (numpy's buffers
 * are 16-byte aligned) with one vpermt2b and writes whole lines with non-temporal
 * stores, so the destination is never read for ownership. The partial lines at both
 * ends are ordinary masked stores, so no byte outside the call's rows is touched and
 * threads writing neighbouring row ranges stay apart. Below ZORDER_STREAM_MIN bytes
 * (kernel.h) ordinary stores are kept: they win while the output stays in the cache,
 * where a small result is also likely read again soon (NOTES.md, "simd"). */
ptrdiff_t zorder_simd_stream_min = ZORDER_STREAM_MIN;

typedef struct {
    uint8_t *line;   /* the next 64-byte-aligned line to write */
    __m512i prev;    /* the register put last */
    __m512i shift;   /* line = last `mis` bytes of prev, then the first 64 - mis of next */
    int mis;         /* start address mod 64 */
    int started;
} zstream;

ZSIMD_INLINE void stream_init(zstream *st, uint8_t *start)
{
    uint8_t idx[64];
    int i;
    st->mis = (int)((uintptr_t)start & 63);
    st->line = before(start, st->mis);
    for (i = 0; i < 64; i++)
        idx[i] = (uint8_t)(i < st->mis ? 64 - st->mis + i : 64 + i - st->mis);
    st->shift = _mm512_loadu_si512((const void *)idx);
    st->prev = _mm512_setzero_si512();
    st->started = 0;
}

ZSIMD_INLINE void stream_put(zstream *st, __m512i v)
{
    if (st->mis == 0) {
        _mm512_stream_si512((void *)st->line, v);
    } else {
        __m512i line = _mm512_permutex2var_epi8(st->prev, st->shift, v);
        if (st->started)
            _mm512_stream_si512((void *)st->line, line);
        else  /* the first line starts before the output */
            _mm512_mask_storeu_epi8((void *)st->line, (__mmask64)span_mask(st->mis, 64), line);
    }
    st->line += 64;
    st->prev = v;
    st->started = 1;
}

/* Writes what is still carried and orders the non-temporal stores before any later
 * store (a thread's "done" included). Ordinary stores may follow for the tail. */
ZSIMD_INLINE void stream_finish(zstream *st)
{
    if (st->started && st->mis)
        _mm512_mask_storeu_epi8((void *)st->line, (__mmask64)span_mask(0, st->mis),
                                _mm512_permutex2var_epi8(st->prev, st->shift, st->prev));
    _mm_sfence();
}

#endif  /* ZORDER_AVX512_STREAM_H */
