"""Differential tests for the shapes of issue 13: ragged widths, narrow widths and 9-64
columns, every backend against bitloop.

The fast backends run these shapes segment by segment (zorder/_segments.h): one uniform
interleave per run of byte indices with the same active columns, 9-64 columns in two
stages or in blocks of 8, and uniform narrow columns as rows of 8 bytes. So the shapes
here are drawn to put the output size at, just before and just after every segment
boundary, to cross the row chunks the driver works in, and to reach the row-of-8-bytes
rewrite with and without a tail. `out=` buffers are wider than `size` and filled with a
sentinel first: nothing past a row's first `size` bytes may change.
"""

import importlib
import random

import numpy as np
import pytest

import zorder

BITLOOP = zorder.get_backend("bitloop")
SENTINEL = 0xA5


def segment_boundaries(widths):
    """Output offsets where a segment of the interleave ends (0 and the total included)."""
    ends, pos, start = {0}, 0, 0
    for end in sorted(set(w for w in widths if w > 0)):
        k = sum(1 for w in widths if w > start)
        pos += k * (end - start)
        ends.add(pos)
        start = end
    return sorted(ends)


def sizes_around_boundaries(widths):
    total = sum(widths)
    sizes = set()
    for b in segment_boundaries(widths):
        sizes.update({b - 1, b, b + 1})
    return sorted(s for s in sizes if 1 <= s <= total)


def random_columns(rng, widths, nrows):
    return [np.frombuffer(rng.randbytes(nrows * w), dtype=np.uint8).reshape(nrows, w).copy()
            for w in widths]


def check_rows(backend, columns, size, threads=1):
    """backend == bitloop, into a fresh array, into rows back to back with sentinel bytes
    after the last (the kernels' stores that run over the next rows must stop there), and
    into a sentinel-filled wider out=."""
    want = BITLOOP.interleave_rows(columns, size)
    got = backend.interleave_rows(columns, size, threads=threads)
    shape = [c.shape[-1] for c in columns]
    assert np.array_equal(got, want), (shape, size)
    nrows = want.shape[0]
    flat = np.full(nrows * size + 64, SENTINEL, dtype=np.uint8)
    backend.interleave_rows(columns, size, out=flat[:nrows * size].reshape(nrows, size),
                            threads=threads)
    assert np.array_equal(flat[:nrows * size].reshape(nrows, size), want), (shape, size)
    assert (flat[nrows * size:] == SENTINEL).all(), (shape, size)
    wide = np.full((nrows, size + 9), SENTINEL, dtype=np.uint8)
    backend.interleave_rows(columns, size, out=wide[:, :size], threads=threads)
    assert np.array_equal(wide[:, :size], want), (shape, size)
    assert (wide[:, size:] == SENTINEL).all(), (shape, size)


RAGGED = [
    [8, 16], [8, 32], [16, 8], [32, 8, 8], [3, 5, 8], [8, 5, 3], [1, 2, 3, 4, 5, 6, 7, 8],
    [4, 4, 8], [12, 4], [24, 8, 16], [64, 1], [2, 9, 17, 33], [7, 7, 7, 6], [16, 0, 8],
]


@pytest.mark.parametrize("widths", RAGGED, ids=lambda w: "+".join(map(str, w)))
def test_ragged_every_segment_boundary(backend, widths):
    rng = random.Random(sum(widths))
    for nrows in (1, 3, 7, 64):
        columns = random_columns(rng, widths, nrows)
        for size in sizes_around_boundaries(widths):
            check_rows(backend, columns, size)


NARROW = [[1, 1], [2, 2], [4, 4], [4, 4, 4], [2, 2, 2], [3, 3, 3], [1] * 8, [5, 5], [6] * 4,
          [7] * 7, [3, 5, 8], [2, 4], [1, 3], [6, 2, 1]]


@pytest.mark.parametrize("widths", NARROW, ids=lambda w: "+".join(map(str, w)))
def test_narrow_widths(backend, widths):
    rng = random.Random(len(widths) * 100 + widths[0])
    total = sum(widths)
    # row counts whose total bytes per column leave every remainder mod 8 (the rows-of-8
    # rewrite and its short last row), and one past the driver's chunk of rows
    for nrows in (4, 5, 9, 13, 31, 100, 40_000 // total + 3):
        columns = random_columns(rng, widths, nrows)
        for size in {total, total - 1, (total + 1) // 2, 1}:
            check_rows(backend, columns, size)


# Column counts reaching every plan of csrc/segments.h under each backend's stage costs
# (simd, avx2, and the default of pdep and table): two stages of 2-8 columns (9 = 3 x 3,
# 10, 12, 14 = 7 x 2, 15, 16, 20, 21, 24, 25, 28, 32, 35, 40, 49 = 7 x 7, 56 = 8 x 7, 64),
# three or four (18, 30, 42 = 3 x 7 x 2, 48 = 4 x 4 x 3, 54 = 3 x 2 x 3 x 3, 60, 63 on avx2)
# zero-padded to a multiple of 8 then squeezed (11, 13, 17, 22, 26, 29, 31, 37, 44, 58,
# 61 and 30 / 60 / 63 on some tables; padded to 16, 24, 32, 40, 48 and 64), and 8-column
# planes whose bytes are merged (16, 24, 32, 64 on avx2, 16, 32, 64 on pdep and table, and
# inside 48 and the padded counts; 50 = 5 x 10 on avx2, whose 10 runs padded and squeezed
# from the planes as a stage of its own).
MANY = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 21, 22, 24, 25, 26, 28, 29, 30, 31, 32, 35,
        37, 40, 42, 44, 48, 49, 50, 54, 56, 58, 60, 61, 63, 64]


@pytest.mark.parametrize("ncols", MANY)
def test_many_columns_uniform(backend, ncols):
    rng = random.Random(ncols)
    for width in (1, 3, 8, 16):
        widths = [width] * ncols
        total = ncols * width
        for nrows in (1, 5, 70):
            columns = random_columns(rng, widths, nrows)
            # truncated at every group of the first 8-byte piece and in the later ones:
            # the last stage's output cut (scratch and copy), the squeeze's limit
            sizes = {total, total - 1, 1, ncols, ncols + 1, total // 2, rng.randint(1, total),
                     8 * ncols - 1, 8 * ncols + 3, 7 * ncols + 1}
            for size in sorted(s for s in sizes if 1 <= s <= total):
                check_rows(backend, columns, size)


# k with a prime factor above 7 run padded with zero columns to a multiple of 8, then
# squeezed: avx2 in steps of 16 output bytes, two rows at a time but for the last one or
# two, whose last steps read a copy of the row's end (csrc/avx2/squeeze.h,
# zorder_avx2_squeeze). Sizes around every step, row counts that leave 1 or 2 rows.
@pytest.mark.parametrize("ncols, width", [(11, 1), (11, 8), (11, 5), (13, 2), (13, 4), (13, 3),
                                         (17, 3), (29, 1), (61, 1)])
def test_padded_squeeze_every_step(backend, ncols, width):
    rng = random.Random(ncols * 10 + width)
    total = ncols * width
    sizes = {total, 1} | {s for m in range(1, total // 16 + 1) for s in (16 * m - 1, 16 * m, 16 * m + 1)}
    for nrows in (4, 5, 6, 9, 40):   # (fewer than 4 rows take the scalar kernels)
        columns = random_columns(rng, [width] * ncols, nrows)
        for size in sorted(s for s in sizes if 1 <= s <= total):
            check_rows(backend, columns, size)


# 9-14 columns squeezed from their two padded planes (csrc/avx2/squeeze.h,
# squeeze16_planes_rows) take the rows' groups as one stream, four a step across rows:
# rows of 1-3 groups and rows cut inside a group, row counts whose steps end inside a row.
@pytest.mark.parametrize("ncols", [9, 10, 11, 14])
@pytest.mark.parametrize("width", [1, 2, 3, 8])
def test_many_columns_cut_rows_as_one_stream(backend, ncols, width):
    rng = random.Random(ncols * 100 + width)
    total = ncols * width
    sizes = {1, ncols - 1, ncols, ncols + 1, 2 * ncols - 1, 2 * ncols + 3, total - ncols - 1,
             total - 1}
    for nrows in (4, 5, 6, 7, 33):
        columns = random_columns(rng, [width] * ncols, nrows)
        for size in sorted(s for s in sizes if 1 <= s < total):
            check_rows(backend, columns, size)


def test_many_columns_ragged(backend):
    rng = random.Random(99)
    for _ in range(40):
        ncols = rng.randint(9, 64)
        widths = [rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17]) for _ in range(ncols)]
        widths[0] = max(widths[0], 1)
        columns = random_columns(rng, widths, rng.choice([4, 9, 33]))
        sizes = sizes_around_boundaries(widths)
        for size in rng.sample(sizes, min(6, len(sizes))):
            check_rows(backend, columns, size)


def test_more_than_64_columns_still_exact(backend):
    rng = random.Random(65)
    widths = [8] * 65 + [3] * 5
    columns = random_columns(rng, widths, 6)
    for size in (1, 64, 65, 70, sum(widths)):
        check_rows(backend, columns, size)


def test_rows_spanning_several_chunks(backend):
    # The driver works in chunks of about 32 KiB of output (256 KiB with more than 8
    # columns): cross several, with ragged shapes, many-column ones (split, padded and
    # squeezed) and truncated ones.
    rng = random.Random(7)
    for widths, size in (([8, 16], 24), ([8, 16], 20), ([3, 5, 8], 16), ([8] * 12, 96),
                         ([8] * 12, 50), ([4] * 24, 96), ([8] * 11, 88), ([8] * 29, 232),
                         ([8] * 40, 100), ([8] * 64, 512)):
        columns = random_columns(rng, widths, 5000)
        check_rows(backend, columns, size)


def test_threads_on_new_shapes(backend):
    rng = random.Random(8)
    for widths, size in (([8, 16], 24), ([4, 4], 8), ([8] * 16, 64), ([3, 5, 8], 11)):
        columns = random_columns(rng, widths, 40_000)
        check_rows(backend, columns, size, threads=2)


def test_odd_strides_and_views(backend):
    """Columns that are views into wider arrays, reversed rows and a (N, n, w) block."""
    rng = random.Random(11)
    for widths in ([8, 16], [4, 4], [3, 5, 8], [8] * 12, [2, 2], [4] * 9):
        nrows = 37
        base = [np.frombuffer(rng.randbytes(nrows * 3 * (w + 5)), dtype=np.uint8)
                .reshape(nrows * 3, w + 5) for w in widths]
        views = [b[::3, 2:2 + w] for b, w in zip(base, widths)]        # row stride 3(w+5)
        reversed_rows = [b[::-3, 1:1 + w] for b, w in zip(base, widths)]  # negative stride
        for cols in (views, reversed_rows):
            for size in sizes_around_boundaries(widths)[-4:]:
                check_rows(backend, cols, size)
    for n, w in ((2, 4), (3, 4), (12, 8), (2, 2)):
        block = np.frombuffer(rng.randbytes(50 * n * w), dtype=np.uint8).reshape(50, n, w)
        check_rows(backend, block, n * w)
        check_rows(backend, block, n * w - 1)


def test_interleave_bits_new_shapes(backend):
    rng = random.Random(12)
    for widths in RAGGED + NARROW + [[8] * 12, [1] * 64, [5] * 13]:
        cols = [rng.randbytes(w) for w in widths]
        for size in sizes_around_boundaries(widths):
            assert backend.interleave_bits(cols, size) == BITLOOP.interleave_bits(cols, size)


def test_random_shapes_every_size(backend):
    rng = random.Random(13)
    for _ in range(150):
        n = rng.choice([1, 2, 3, 4, 5, 8, 9, 12, 16, 20, 33])
        if rng.random() < 0.4:
            widths = [rng.randint(1, 12)] * n
        else:
            widths = [rng.randint(0, 12) for _ in range(n)]
            widths[0] = max(widths[0], 1)
        columns = random_columns(rng, widths, rng.choice([4, 8, 19]))
        total = sum(widths)
        sizes = range(1, total + 1) if total <= 40 else rng.sample(range(1, total + 1), 40)
        for size in sizes:
            check_rows(backend, columns, size)


# Ragged shapes whose segments are narrow or odd (2-7 or 9-15 bytes per column): simd
# gathers each such segment into scratch rows back to back, and one-column segments are
# copies (csrc/segments.h, zorder_seg_gathered / zorder_seg_copy_rows).
NARROW_RAGGED = [[3, 5, 8], [2, 4, 8], [1, 2, 3, 4], [8, 5, 3], [1, 7], [7, 1, 1], [5, 13],
                 [12, 4], [3, 3, 11], [6, 6, 6, 1], [2, 2, 2, 2, 2, 2, 2, 9]]


@pytest.mark.parametrize("widths", NARROW_RAGGED, ids=lambda w: "+".join(map(str, w)))
def test_narrow_ragged_every_size(backend, widths):
    """Every output size (truncation inside each narrow segment), rows around the chunk."""
    rng = random.Random(sum(w * (i + 3) for i, w in enumerate(widths)))
    total = sum(widths)
    for size in range(1, total + 1):
        chunk = (32 << 10) // size
        for nrows in (1, 2, 5, 9, chunk - 1, chunk + 1):
            columns = random_columns(rng, widths, nrows)
            check_rows(backend, columns, size)


@pytest.mark.parametrize("widths, size", [([12, 2, 0, 12, 4], 27), ([8, 16, 3], 20),
                                           ([16, 16, 5], 29), ([8, 8, 8, 1], 13)])
def test_a_segment_cut_to_an_odd_width_has_its_scratch(backend, widths, size):
    """A segment truncated to a width that is not a multiple of 8 (12+2+0+12+4 -> 27: two
    columns of bytes 4-11 cut to 7) is gathered into scratch, which was sized on the
    segment's own width: past a chunk of rows (32 KiB of output) that wrote past the
    buffer. Under AddressSanitizer (tools/asan.sh, CI) this test catches it."""
    rng = random.Random(sum(widths) * size)
    for nrows in ((32 << 10) // size + 5, 3 * ((32 << 10) // size)):
        check_rows(backend, random_columns(rng, widths, nrows), size)


def test_narrow_ragged_two_chunks(backend):
    rng = random.Random(12)
    for widths, size in (([3, 5, 8], 16), ([3, 5, 8], 10), ([1, 2, 3, 4], 7), ([8, 16], 20)):
        chunk = (32 << 10) // size
        for nrows in (2 * chunk, 2 * chunk + 3):
            check_rows(backend, random_columns(rng, widths, nrows), size)


def test_narrow_ragged_strides(backend):
    """Columns cut from one block (row stride the block's width), every third row of a
    wider array, reversed rows, and one-byte columns with rows back to back."""
    rng = random.Random(13)
    for widths in ([3, 5, 8], [1, 2, 3, 4], [2, 4, 8], [1, 1, 2]):
        total = sum(widths)
        nrows = 41
        block = np.frombuffer(rng.randbytes(nrows * total), dtype=np.uint8).reshape(nrows, total)
        offsets = np.cumsum([0] + widths)
        cut = [block[:, a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        wide = np.frombuffer(rng.randbytes(3 * nrows * (total + 3)),
                             dtype=np.uint8).reshape(3 * nrows, total + 3)
        spaced = [wide[::3, a + 1:b + 1] for a, b in zip(offsets[:-1], offsets[1:])]
        backwards = [c[::-1] for c in cut]
        for cols in (cut, spaced, backwards):
            for size in (1, widths[0], total // 2, total - 1, total):
                check_rows(backend, cols, size)


# Narrow ragged shapes (2-8 columns of 1-8 bytes, not all one width) with output rows back
# to back run every segment of a chunk of 32 KiB // size rows (at least 64) into scratch,
# then put each row together with 8-byte moves (16-byte ones where a segment has more than
# 8 bytes), each move's spill overwritten by the next (csrc/segments.h, zorder_seg_narrow).
# The last ceil((move - 1) / size) rows, or more where a read at a segment's first byte (a
# move's, or a slice's 8) would run past a column's last row, go segment by segment, and
# so does all of a call with fewer than 64 rows before those. Rows around that threshold
# and the chunk, columns with rows back to back and spaced out (the reads the last rows
# must not make), every backend.
def narrow_tail(widths, strides, size):
    move, start, pos = 8, 0, 0
    for end in sorted(set(widths)):
        k = sum(1 for w in widths if w > start)
        if pos < size and min(size - pos, k * (end - start)) > 8:
            move = 16
        pos += k * (end - start)
        start = end
    tail = -(-(move - 1) // size)
    start = 0
    for end in sorted(set(widths)):
        k = sum(1 for w in widths if w > start)
        read = move if k == 1 else 8   # (one column: a move; more: slices of at most 8)
        for w, st in zip(widths, strides):
            if w > start and start + read - w > 0:
                tail = max(tail, -(-(start + read - w) // st))
        start = end
    return tail


@pytest.mark.parametrize("st", range(2, 9))
def test_narrow_slices_every_width_and_stride(backend, st):
    """A column of w bytes and one of width in (w, st] with rows st bytes apart (the
    right-hand part of st-byte rows): the first w bytes of the second one's rows are a slice
    (w, st) (avx2: vpshufb over 16-byte windows in blocks of 16 rows, reading nothing past
    a block's last slice; simd: vpermb). Every remainder of a block, rows around the narrow
    path's threshold and its chunk."""
    rng = random.Random(st)
    for w in range(1, st):
        for width in sorted({w + 1, st}):
            for nrows in (80, 95, 96, 97, (32 << 10) // (w + width) + 40):
                rows = np.frombuffer(rng.randbytes(nrows * st), dtype=np.uint8).reshape(nrows, st)
                columns = [random_columns(rng, [w], nrows)[0], rows[:, st - width:]]
                for size in sorted({w + width, 2 * w, 2 * w + 1, w + 1}):
                    check_rows(backend, columns, size)


@pytest.mark.parametrize("widths", [w for w in NARROW_RAGGED if max(w) <= 8 and len(w) <= 8],
                         ids=lambda w: "+".join(map(str, w)))
def test_narrow_rows_around_chunks_and_the_last_rows(backend, widths):
    rng = random.Random(sum(widths) * 31 + len(widths))
    total = sum(widths)
    for size in sorted({1, 2, 7, 8, 9, total // 2, total - 1, total} & set(range(1, total + 1))):
        for gap in (0, 3):
            strides = [w + gap for w in widths]
            # (the row stride is that of the wide rows when spaced out)
            tail = narrow_tail(widths, [sum(strides) if gap else w for w in widths], size)
            nrows_list = [63 + tail, 64 + tail, 65 + tail]
            if size >= 7:   # (smaller sizes make chunks of 4,096+ rows: checked at total)
                chunk = max(64, (32 << 10) // size)
                nrows_list += [chunk + tail, chunk + tail + 1, 2 * chunk + 17]
            for nrows in nrows_list:
                if gap:
                    # rows spaced out: each column a view of wider rows, so bytes past a
                    # row's width are another column's (an over-read would show nothing)
                    # but past the last row there are none
                    wide = np.frombuffer(rng.randbytes(nrows * sum(strides)),
                                         dtype=np.uint8).reshape(nrows, sum(strides))
                    offsets = np.cumsum([0] + strides)
                    columns = [wide[:, o:o + w] for o, w in zip(offsets[:-1], widths)]
                else:
                    columns = random_columns(rng, widths, nrows)
                check_rows(backend, columns, size)


# avx2: 4-7 columns (8 with 2- or 4-byte prefixes) cut inside the 1-, 2- or 4-byte prefixes
# of their columns, or with rows apart (the wider out= of check_rows), or 5 and 7 columns at
# any such prefix, run the prefix rows into scratch 1,024 rows at a time and copy each
# row's bytes out (csrc/avx2/prefix.h, prefix_staged); the rows short of a block (4 * 8 /
# prefix) go on to the other paths. Every size cut inside each prefix, rows around both.
@pytest.mark.parametrize("k", [4, 5, 6, 7, 8])
def test_prefix_rows_staged(backend, k):
    rng = random.Random(k * 7)
    for width, nrows_list in ((8, (33, 1025, 2085)), (16, (1025,))):
        for nrows in nrows_list:
            columns = random_columns(rng, [width] * k, nrows)
            for need in (1, 2, 4):
                for size in sorted({k * (need - 1) + 1, k * need - 1, k * need}):
                    check_rows(backend, columns, size)


# Narrow columns 8 bytes apart, the right-hand part of 8-byte rows (a[:, 8 - w:]), so that
# the call's last row ends where the array does: a kernel that loads whole 8-byte rows
# (avx2's prefix gathers did, for rows 8 bytes apart) reads past it (ASan, tools/asan.sh).
# Row counts that are whole blocks of those gathers, sizes at and inside each prefix.
@pytest.mark.parametrize("k", [2, 4, 5, 7])
@pytest.mark.parametrize("width", [1, 2, 4])
def test_narrow_columns_eight_bytes_apart(backend, k, width):
    rng = random.Random(k * 10 + width)
    for nrows in (32, 64, 1024, 1056):
        columns = [np.frombuffer(rng.randbytes(nrows * 8), dtype=np.uint8).reshape(nrows, 8)[:, 8 - width:]
                   for _ in range(k)]
        for size in sorted({k * width, k * width - 1, k * (width // 2 or 1), 1}):
            check_rows(backend, columns, size)


# simd: 1-3 uniform columns of 8 bytes cut short run whole rows of a 512-row chunk into
# scratch and copy each row's prefix out; 1-3 columns of 16+ bytes cut to a third of their
# bytes or less go to pdep (simd.pyx, short_of_wide). Every size, rows around the chunk.
@pytest.mark.parametrize("widths", [[8, 8], [8, 8, 8], [16, 16], [24, 24, 24], [32, 32]],
                         ids=lambda w: "+".join(map(str, w)))
def test_uniform_truncated_few_columns(backend, widths):
    rng = random.Random(len(widths) * 100 + widths[0])
    total = sum(widths)
    for nrows in (8, 9, 511, 512, 513, 1030):
        columns = random_columns(rng, widths, nrows)
        for size in range(1, total, max(1, total // 12)):
            check_rows(backend, columns, size)


# A ragged row cut inside its first segment runs in place, as one uniform call on the
# columns, once its output reaches the backend's streaming size (segments.h); below it,
# through scratch. Threshold 0 puts every such call on the in-place path: both paths,
# rows back to back, spaced out, strided and reversed, against bitloop.
@pytest.mark.parametrize("widths", [[8, 16], [16, 8], [8, 8, 16], [16, 32], [8, 24],
                                    [24, 8, 16], [2, 9, 17, 33], [12, 4], [8, 0, 16],
                                    [16, 0], [16, 8, 0, 32]],
                         ids=lambda w: "+".join(map(str, w)))
@pytest.mark.parametrize("name", ["avx2", "simd"])   # the backends with a streaming size
def test_ragged_cut_in_the_first_segment_in_place(name, widths):
    if name not in zorder.available_backends():
        pytest.skip(f"{name} does not run on this CPU or build")
    backend = zorder.get_backend(name)
    set_stream_min = importlib.import_module(f"zorder.interleave.{name}")._stream_min
    rng = random.Random(sum(widths) * 7 + len(widths))
    # the first segment: the columns with bytes, as wide as the narrowest of them
    first = sum(1 for w in widths if w) * min(w for w in widths if w)
    for threshold in (0, None):
        old = set_stream_min(threshold)
        try:
            for nrows in (4, 9, 300, 1030):
                columns = random_columns(rng, widths, nrows)
                base = [np.frombuffer(rng.randbytes(nrows * 2 * (w + 3)), dtype=np.uint8)
                        .reshape(nrows * 2, w + 3) for w in widths]
                strided = [b[::2, 1:1 + w] for b, w in zip(base, widths)]
                reversed_rows = [b[::-2, :w] for b, w in zip(base, widths)]
                for size in range(1, first + 1):
                    check_rows(backend, columns, size)
                # one column's rows all one row (0 bytes apart), and two threads
                broadcast = [np.broadcast_to(c[:1], c.shape) for c in columns[:1]] + columns[1:]
                for size in (1, first // 2 + 1, first):
                    check_rows(backend, strided, size)
                    check_rows(backend, reversed_rows, size)
                    check_rows(backend, broadcast, size)
                    check_rows(backend, columns, size, threads=2)
        finally:
            set_stream_min(old)
