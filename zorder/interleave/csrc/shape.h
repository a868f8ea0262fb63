/* The shape classes of a call, the one list: auto.pyx's classifier returns them and
 * zorder.cpu.select.DISPATCH holds one preference row for each, in this order (a test
 * and auto's import check that the names agree). Adding a class: one line here, one
 * DISPATCH row, one branch of the classifier. */
#ifndef ZORDER_SHAPE_H
#define ZORDER_SHAPE_H

/* X(enum name, class name). Uniform: 1-8 columns of one width; 8n: a multiple of 8 bytes;
 * ragged: 1-8 columns of different widths; narrow: a width that is not a multiple of 8.
 *   uniform-8n-full           all bytes of uniform 8n columns
 *   uniform-8n-truncated-1-3  the same, truncated, 1-3 columns
 *   uniform-8n-truncated-4-8  the same, truncated, 4-8 columns (but the prefixes below)
 *   uniform-narrow            uniform narrow columns
 *   ragged-full               ragged, all bytes
 *   ragged-truncated-first    ragged, ending within the first segment, at its end or
 *                             inside 8-byte pieces of the columns that make at most 16 bytes
 *   ragged-truncated-first-wide  ragged, cut inside the first segment's 8-byte pieces where
 *                             those make more than 16 bytes (16+32->24, 8+8+16->20): rows
 *                             of a whole 1-, 2- or 4-byte prefix of every column, and the
 *                             rest in calls of ZORDER_SHAPE_CACHE_BYTES or more (smaller
 *                             ones are ragged-truncated-first)
 *   ragged-truncated-later    ragged, truncated in a later segment
 *   ragged-narrow             ragged with a narrow width, any size
 *   many-columns              more than 8 columns
 *   uniform-8n-prefix         4-6 uniform 8n columns cut to a whole 1-, 2- or 4-byte prefix
 *                             of each, or 5-7 whose rows use a 2- or 4-byte prefix
 *   uniform-6x8-truncated     6 columns of 8 bytes cut inside, but not to a prefix
 *   many-columns-8n-prefix    16, 24, 32 or 64 uniform 8n columns whose rows use a 2- or
 *                             4-byte prefix of each
 *   many-columns-short        9-32 columns cut to rows of at most 16 bytes back to back
 *                             that use fewer bytes of some column than its rows are
 *                             apart, each column's rows 1-8 bytes apart or the rows using
 *                             at most its first 8 bytes */
#define ZORDER_SHAPES(X) \
    X(ZS_UNIFORM_8N_FULL, "uniform-8n-full")                   \
    X(ZS_UNIFORM_8N_TRUNCATED_1_3, "uniform-8n-truncated-1-3") \
    X(ZS_UNIFORM_8N_TRUNCATED_4_8, "uniform-8n-truncated-4-8") \
    X(ZS_UNIFORM_NARROW, "uniform-narrow")                     \
    X(ZS_RAGGED_FULL, "ragged-full")                           \
    X(ZS_RAGGED_TRUNCATED_FIRST, "ragged-truncated-first")     \
    X(ZS_RAGGED_TRUNCATED_FIRST_WIDE, "ragged-truncated-first-wide") \
    X(ZS_RAGGED_TRUNCATED_LATER, "ragged-truncated-later")     \
    X(ZS_RAGGED_NARROW, "ragged-narrow")                       \
    X(ZS_MANY_COLUMNS, "many-columns")                         \
    X(ZS_UNIFORM_8N_PREFIX, "uniform-8n-prefix")               \
    X(ZS_UNIFORM_6X8_TRUNCATED, "uniform-6x8-truncated")       \
    X(ZS_MANY_COLUMNS_8N_PREFIX, "many-columns-8n-prefix")     \
    X(ZS_MANY_COLUMNS_SHORT, "many-columns-short")

/* The bytes a call reads and writes (nrows * (the columns' widths + size)) from which its
 * rows no longer stay in the cache: ragged rows cut inside wide pieces run fastest on simd's
 * scratch path below it, and on avx2 from it (NOTES.md "Dispatch:
 * ragged-truncated-first-wide"). */
#define ZORDER_SHAPE_CACHE_BYTES ((ptrdiff_t)10 << 20)

#define ZORDER_SHAPE_ENUM(id, name) id,
typedef enum { ZORDER_SHAPES(ZORDER_SHAPE_ENUM) ZS_COUNT } zorder_shape;
#undef ZORDER_SHAPE_ENUM

#define ZORDER_SHAPE_NAME(id, name) name,
static const char *const zorder_shape_names[ZS_COUNT] = { ZORDER_SHAPES(ZORDER_SHAPE_NAME) };
#undef ZORDER_SHAPE_NAME

#endif
