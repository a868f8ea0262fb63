"""The avx2 backend against Iceberg's vectors and the bitloop oracle, on the paths of its
own kernel (csrc/avx2/): every column count, slabs of 8 bytes, row tails, rows
truncated to 1, 2 or 4 bytes per column, strided inputs and outputs, streaming stores.

Skipped, with the reason, where the CPU or the build cannot run AVX2; the selector tests
cover avx2 there through made-up CPU descriptions. The shared suites (test_vectors,
test_shapes, test_fuzz_harness) run it too, through ``available_backends()``.
"""

import os
import sys

import numpy as np
import pytest

import zorder
from zorder.cpu import usable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guarded import Guarded  # noqa: E402

try:
    avx2 = zorder.get_backend("avx2")
except zorder.BackendError as exc:  # this CPU or build has no AVX2
    pytestmark = pytest.mark.skip(reason=str(exc))
    avx2 = None

bitloop = zorder.get_backend("bitloop")


def columns(seed, nrows, widths):
    r = np.random.default_rng(seed)
    return [r.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]


def check(cols, size, **kwargs):
    want = bitloop.interleave_rows(cols, size)
    got = avx2.interleave_rows(cols, size, **kwargs)
    np.testing.assert_array_equal(got, want)
    return got


def test_reports_itself():
    assert avx2.name == "avx2"
    assert avx2.SUPPORTED and avx2.UNSUPPORTED_REASON == ""
    # it loads only where the CPU floor says AVX2 and the YMM state are usable
    assert usable("avx2") and zorder.cpu_info()["os_avx"]


def test_iceberg_vectors(interleave_vectors):
    for line in interleave_vectors:
        cols = [bytes.fromhex(c) for c in line["columns"]]
        if "out" in line:
            assert avx2.interleave_bits(cols, line["size"]).hex() == line["out"], line
        else:
            with pytest.raises(ValueError):
                avx2.interleave_bits(cols, line["size"])


@pytest.mark.parametrize("k", range(1, 9))
@pytest.mark.parametrize("width", [8, 16, 24, 64, 12, 3])
def test_every_size_and_row_tail(k, width):
    # row counts around the blocks of 4 (and 4G for truncated prefixes) rows
    for nrows in (4, 5, 7, 31, 33, 67):
        cols = columns(100 * k + width + nrows, nrows, [width] * k)
        for size in sorted({k * width, k * width - 1, 1, k, 2 * k, 4 * k, 8 * k + 3} - {0}):
            if size <= k * width:
                check(cols, size)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8])
def test_strided_inputs_and_outputs_untouched_past_size(k):
    r = np.random.default_rng(k)
    block = r.integers(0, 256, (41, 2, 8 * k + 5), dtype=np.uint8)
    cols = [block[:, 0, 8 * c:8 * c + 8] for c in range(k)]       # strided rows
    for size in (8 * k, 4 * k, 8 * k - 3, 2 * k):
        out = np.full((41, 8 * k + 7), 0xEE, np.uint8)
        avx2.interleave_rows(cols, size, out=out[:, :size])
        np.testing.assert_array_equal(out[:, :size], bitloop.interleave_rows(cols, size))
        assert (out[:, size:] == 0xEE).all()


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("width", [8, 16])
def test_rows_ending_inside_a_slab_store_exactly_their_bytes(k, width):
    # every size ending inside the last slab computed: the slab's bytes are stored in
    # pieces straight from the registers (columns of 8-byte rows: 4 rows a load), and no
    # byte past a row's size is written, with rows back to back or spaced out
    nrows = 23
    packed = columns(k * width, nrows, [width] * k)
    block = np.random.default_rng(k).integers(0, 256, (nrows, k, width + 3), dtype=np.uint8)
    strided = [block[:, c, :width] for c in range(k)]
    for cols in (packed, strided):
        for size in range(8 * k * (width // 8 - 1) + 1, k * width):
            want = bitloop.interleave_rows(cols, size)
            for room in (0, 5, k * width - size):   # the last: rows a whole row apart
                out = np.full((nrows, size + room), 0xEE, np.uint8)
                avx2.interleave_rows(cols, size, out=out[:, :size])
                np.testing.assert_array_equal(out[:, :size], want)
                assert (out[:, size:] == 0xEE).all(), (k, width, size, room)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8])
def test_rows_back_to_back_cut_inside_the_slab_stay_in_the_output(k):
    # rows back to back whose size ends inside their slab store each row's whole
    # registers over the next rows' starts, in row order; the rows near the output's end
    # store exactly, so nothing past the last row is written, whatever the row count
    for nrows in (4, 5, 8, 9, 12, 13, 16, 17, 29, 64):
        cols = columns(10 * k + nrows, nrows, [8] * k)
        for size in range(1, 8 * k):
            flat = np.full(nrows * size + 96, 0xEE, np.uint8)
            out = flat[:nrows * size].reshape(nrows, size)
            avx2.interleave_rows(cols, size, out=out)
            np.testing.assert_array_equal(out, bitloop.interleave_rows(cols, size))
            assert (flat[nrows * size:] == 0xEE).all(), (k, nrows, size)


@pytest.mark.parametrize("widths", [[8, 16], [8, 32], [3, 5, 8], [1, 2, 3, 4], [8] * 12,
                                    [8] * 16, [8] * 64, [4] * 9, [16, 8, 24]])
def test_ragged_and_many_columns(widths):
    cols = columns(sum(widths), 53, widths)
    total = sum(widths)
    for size in sorted({total, total - 1, total // 2, 12, 20, 1} - {0}):
        if size <= total:
            check(cols, size)


@pytest.mark.parametrize("k", [2, 3, 4, 8])
@pytest.mark.parametrize("offset", [0, 8, 16])
def test_streamed_outputs(k, offset):
    # non-temporal stores from the first byte (threshold 0), at 16-byte aligned and
    # unaligned output starts: the same bytes, and none outside the rows
    old = avx2._stream_min(0)
    try:
        cols = columns(k + offset, 1003, [8] * k)
        buf = np.full(1003 * 8 * k + 64, 0xEE, np.uint8)
        out = buf[offset:offset + 1003 * 8 * k].reshape(1003, 8 * k)
        avx2.interleave_rows(cols, 8 * k, out=out)
        np.testing.assert_array_equal(out, bitloop.interleave_rows(cols, 8 * k))
        assert (buf[:offset] == 0xEE).all() and (buf[offset + out.size:] == 0xEE).all()
    finally:
        avx2._stream_min(old)


@pytest.mark.parametrize("gap", [0, 1, 6])
@pytest.mark.parametrize("widths", [[1, 2, 3, 4], [3, 5, 8], [1, 1, 2], [2, 5], [1, 2, 4]],
                         ids=lambda w: "+".join(map(str, w)))
def test_narrow_rows_at_every_output_offset(widths, gap):
    # Narrow ragged rows put together two blocks a step, each lane's 16 bytes stored whole
    # over the next rows: every output size (blocks of 1-16 rows), output starts at every
    # offset from a 32-byte boundary, rows for one and for several chunks, one thread and
    # two. The same bytes, none outside them. Columns spaced out by `gap` bytes (views of
    # wider rows) give the last column's piece other strides, on both sides of where one
    # load serves both blocks.
    for nrows in (200, 3001, 40_000):
        cols = [c[:, :w] for c, w in zip(
            columns(nrows + len(widths), nrows, [w + gap for w in widths]), widths)]
        for size in range(1, sum(widths) + 1):
            want = bitloop.interleave_rows(cols, size)
            for offset in (0, 1, 16, 31) if size in (3, sum(widths)) else (5,):
                buf = np.full(nrows * size + 96, 0xEE, np.uint8)
                start = (-buf.ctypes.data) % 32 + offset
                out = buf[start:start + nrows * size].reshape(nrows, size)
                avx2.interleave_rows(cols, size, out=out, threads=1 + (nrows > 3001))
                np.testing.assert_array_equal(out, want, err_msg=f"{size} {offset} {nrows}")
                assert (buf[:start] == 0xEE).all() and (buf[start + out.size:] == 0xEE).all()


def test_threads_split_rows_identically():
    cols = columns(7, 10_001, [8, 8, 8])
    np.testing.assert_array_equal(avx2.interleave_rows(cols, 24, threads=2),
                                  avx2.interleave_rows(cols, 24))


@pytest.fixture
def planes_everywhere():
    # the byte-plane path (zorder_avx2_planar) on every shape it can take, from 32 rows
    old = avx2._planar(2, 32)
    yield
    avx2._planar(*old)


def strided_columns(rng, nrows, widths, strides):
    """Columns of the given widths whose rows are `strides` bytes apart (views of wider
    rows where the stride is larger)."""
    return [rng.integers(0, 256, (nrows, st), dtype=np.uint8)[:, :w]
            for w, st in zip(widths, strides)]


def test_byte_planes_on_every_shape_they_take(planes_everywhere):
    # 1-32 columns of 0-24 bytes, rows 1-8 bytes apart or further (where a block reads 8
    # bytes of each row), rows of 1-16 bytes: the blocks of 32 rows, the rows left to the
    # other paths (a column narrower than what a block reads of a row leaves the last row,
    # a row's 16-byte store its spill), fresh outputs, rows back to back with sentinels
    # after them (the last store must stop there), and rows apart (not taken: the stores
    # would run into the bytes between rows).
    rng = np.random.default_rng(17)
    for _ in range(600):
        k = int(rng.integers(1, 33))
        widths = [int(w) for w in rng.choice([0, 1, 2, 3, 4, 5, 8, 12, 16, 24], k,
                                             p=[.1, .1, .1, .1, .1, .1, .26, .04, .06, .04])]
        widths[0] = max(widths[0], 1)
        strides = [max(w, 1) if rng.random() < 0.5
                   else int(rng.integers(max(w, 1), 9 if w < 8 and rng.random() < 0.7 else 41))
                   for w in widths]
        nrows = int(rng.choice([32, 33, 34, 63, 64, 65, 97, 300]))
        cols = strided_columns(rng, nrows, widths, strides)
        size = int(rng.integers(1, min(sum(widths), 16) + 1))
        want = bitloop.interleave_rows(cols, size)
        shape = (widths, strides, size, nrows)
        np.testing.assert_array_equal(avx2.interleave_rows(cols, size), want, err_msg=str(shape))
        flat = np.full(nrows * size + 32, 0xEE, np.uint8)
        avx2.interleave_rows(cols, size, out=flat[:nrows * size].reshape(nrows, size))
        np.testing.assert_array_equal(flat[:nrows * size].reshape(nrows, size), want,
                                      err_msg=str(shape))
        assert (flat[nrows * size:] == 0xEE).all(), shape
        wide = np.full((nrows, size + 3), 0xEE, np.uint8)
        avx2.interleave_rows(cols, size, out=wide[:, :size])
        np.testing.assert_array_equal(wide[:, :size], want, err_msg=str(shape))
        assert (wide[:, size:] == 0xEE).all(), shape


def uniform(shape):
    """"7x8->10" -> ([8] * 7, 10)."""
    text, size = shape.split("->")
    k, w = map(int, text.split("x"))
    return [w] * k, int(size)


@pytest.mark.parametrize("shape", ["7x8->10", "10x8->10", "12x8->16", "7x4->7", "9x4->16",
                                   "20x8->8", "18x2->9", "32x4->16", "14x8->14", "5x8->15"])
def test_byte_planes_where_they_are_chosen(shape):
    # the shapes the path is chosen for by default, over many blocks and two threads
    widths, size = uniform(shape)
    cols = columns(len(widths) * 100 + widths[0], 5003, widths)
    want = bitloop.interleave_rows(cols, size)
    np.testing.assert_array_equal(avx2.interleave_rows(cols, size), want)
    np.testing.assert_array_equal(avx2.interleave_rows(cols, size, threads=2), want)


def test_byte_planes_touch_nothing_outside_their_buffers(planes_everywhere):
    # Each column's data ends right before a page it may not read, its last row narrower
    # than its stride (a block reads its rows' whole strides, so it must leave that row),
    # and the output rows end right before one it may not write (the last block's rows
    # store 16 bytes each). A load or store past them kills the process.
    rng = np.random.default_rng(23)
    for widths, strides, size in (([1] * 10, [8] * 10, 10), ([2] * 7, [8] * 7, 10),
                                  ([1, 2, 3, 4], [5, 6, 7, 8], 10), ([3] * 5, [3] * 5, 15),
                                  ([8] * 9, [8] * 9, 9), ([1] * 16, [1] * 16, 16),
                                  # rows of 16 bytes spill nothing: only the narrow
                                  # columns keep the last row out of the blocks
                                  ([2] * 8, [8] * 8, 16), ([1, 2, 3, 4, 5, 1], [8] * 6, 16),
                                  ([2] * 20, [8] * 20, 16), ([1] * 32, [3] * 32, 9),
                                  # rows further apart: a block reads 8 bytes of each row
                                  ([8] * 10, [16] * 10, 10), ([16] * 9, [16] * 9, 9),
                                  ([2] * 12, [24] * 12, 12), ([3, 9] * 5, [40, 9] * 5, 16),
                                  ([12] * 5 + [8] * 5, [12] * 5 + [80] * 5, 16)):
        for nrows in (32, 33, 64, 95, 256):
            keep = []
            cols = []
            for w, st in zip(widths, strides):
                g = Guarded((nrows - 1) * st + w, "after")
                g.array[:] = rng.integers(0, 256, g.array.size, dtype=np.uint8)
                cols.append(np.lib.stride_tricks.as_strided(g.array, (nrows, w), (st, 1)))
                keep.append(g)
            out = Guarded(nrows * size, "after")
            avx2.interleave_rows(cols, size, out=out.array.reshape(nrows, size))
            np.testing.assert_array_equal(out.array.reshape(nrows, size),
                                          bitloop.interleave_rows(cols, size))


@pytest.mark.parametrize("shape, taken", [
    # taken (planar_chosen): 9-32 columns, 3-byte cuts of 8-byte columns, 5 or 7 columns
    # cut inside 2-byte prefixes or narrower than 8 bytes
    ("10x8->10", True), ("12x8->16", True), ("15x8->8", True), ("20x8->8", True),
    ("10x16->10", True), ("16x16->16", True), ("32x16->16", True), ("9x24->9", True),
    ("32x4->16", True), ("5x8->15", True), ("6x8->16", True), ("7x8->10", True),
    ("7x4->7", True), ("5x4->10", True), ("32x8->16", True), ("16x2->16", True),
    # left to the other paths: whole 1-, 2- and 4-byte prefixes of 8-byte columns and 6 or
    # 8 cut inside them, 6 or 8 narrower columns, 16 columns of 8 bytes, 2-4
    # columns, columns read whole, more than 32 columns, rows over 16 bytes
    ("7x8->7", False), ("5x8->10", False), ("6x8->10", False), ("8x8->12", False),
    ("8x4->12", False), ("16x8->16", False), ("4x8->6", False),
    ("5x8->5", False), ("10x1->10", False), ("33x8->16", False), ("10x8->17", False),
])
def test_byte_planes_are_chosen_where_they_were_faster(shape, taken):
    widths, size = uniform(shape)
    assert (avx2._planar_rows(widths, size, 1024) > 0) == taken


def test_byte_planes_take_16_columns_unless_all_are_8_bytes_wide_and_8_apart():
    # 16 columns of 8 bytes run on avx2's 8-column planes; narrower ones 8 bytes apart, or
    # ones further apart, run here (16x2/8 -> 16 7.5 ns against 13.0, Intel)
    assert avx2._planar_rows([8] * 16, 16, 1024) == 0
    assert avx2._planar_rows([2] * 16, 16, 1024, [8] * 16) == 992
    assert avx2._planar_rows([8] * 16, 16, 1024, [16] * 16) == 1024


def test_byte_planes_and_auto_agree_where_some_columns_get_no_bits():
    # 16 or 32 columns, narrow ones among them, or ones whose rows are more than 8 bytes
    # apart, that rows of 1-3 bytes never reach: auto sees their widths and strides, and so
    # must the planes (both found by review)
    from zorder.interleave import auto

    for widths, size, strides in (([8] * 8 + [1] * 8, 1, None), ([8] * 16 + [2] * 16, 2, None),
                                  ([8] * 16, 1, [8] * 15 + [16]), ([8] * 32, 3, [8] * 31 + [16])):
        assert auto.shape_class_of(widths, size, strides) == "many-columns-short"
        assert avx2._planar_rows(widths, size, 1024, strides) > 0


def test_byte_planes_leave_the_rows_they_may_not_reach():
    # 1,024 rows of 16 bytes from columns as wide as their strides: all of them in blocks
    assert avx2._planar_rows([8] * 12, 16, 1024) == 1024
    # a column narrower than its stride: the last row stays out (its stride's end may be
    # past the data), and with it the whole last block
    assert avx2._planar_rows([2] * 12, 16, 1024, [8] * 12) == 992
    # rows of 10 bytes: the last row's 16-byte store would pass the output's end
    assert avx2._planar_rows([8] * 10, 10, 1024) == 992
    assert avx2._planar_rows([8] * 10, 10, 1025) == 1024
    # rows further apart than 8 bytes: a block reads 8 bytes of each, all in the data
    # where the column is that wide
    assert avx2._planar_rows([8] * 10, 16, 1024, [16] * 10) == 1024
    assert avx2._planar_rows([2] * 10, 16, 1024, [16] * 10) == 992
    # and such columns read whole too (the other paths read their rows' whole strides)
    assert avx2._planar_rows([1] * 10, 10, 1024, [16] * 10) == 992
    # too few rows, output rows apart: not taken
    assert avx2._planar_rows([8] * 10, 10, 255) == 0
    assert avx2._planar_rows([8] * 10, 10, 1024, out_stride=12) == 0


def test_byte_planes_refuse_far_rows_they_use_more_than_8_bytes_of(planes_everywhere):
    # a block reads 8 bytes of each row more than 8 apart: a column whose rows give 9 or
    # more bytes is not taken, and the call is still right
    assert avx2._planar_rows([16], 8, 1024) == 992   # (the last row's store spills)
    assert avx2._planar_rows([16], 9, 1024) == 0
    assert avx2._planar_rows([16, 2], 16, 1024) == 0   # 14 bytes of the first
    assert avx2._planar_rows([9, 9], 16, 1024) == 1024   # 8 of each
    cols = columns(3, 1000, [16])
    np.testing.assert_array_equal(avx2.interleave_rows(cols, 12), bitloop.interleave_rows(cols, 12))


def test_auto_sends_the_planes_only_calls_they_take():
    # auto's many-columns-short (avx2 first) must stay within what the planes take: a call
    # they refuse runs avx2's older paths, slower there than simd's. The exception is 16
    # and 32 columns of 8 bytes, where avx2's 8-column planes run (and lead simd too).
    from zorder.interleave import auto

    rng = np.random.default_rng(41)
    short = 0
    for _ in range(3000):
        k = int(rng.integers(9, 35))
        widths = [int(w) if rng.random() < 0.9 else int(rng.choice([12, 16, 24]))
                  for w in rng.integers(0, 9, k)]
        widths[0] = max(widths[0], 1)
        # rows apart as wide as the column, up to 8 bytes, or further
        strides = [int(rng.choice([max(w, 1), int(rng.integers(max(w, 1), max(w + 1, 9))),
                                   int(rng.integers(max(w, 9), 81))], p=[0.7, 0.2, 0.1]))
                   for w in widths]
        size = int(rng.integers(1, min(sum(widths), 17) + 1))
        if auto.shape_class_of(widths, size, strides) != "many-columns-short":
            continue
        short += 1
        # (16 columns, every one with bytes 8 wide and 8 apart: avx2's 8-column planes run)
        if k == 16 and all(w == st == 8 for w, st in zip(widths, strides) if w):
            continue
        assert avx2._planar_rows(widths, size, 1024, strides) > 0, (widths, strides, size)
    assert short > 300   # the random shapes reach the class


def test_byte_planes_hook_refuses_a_mode_it_does_not_have():
    with pytest.raises(ValueError, match="mode must be 0, 1 or 2"):
        avx2._planar(3)
