"""The simd backend against Iceberg's vectors and the bitloop oracle.

Skipped, with the reason, where the CPU or the build cannot run AVX-512 VBMI + GFNI;
the selector tests cover simd there through made-up CPU descriptions. ``_vector_rows``
runs the AVX-512 kernel without the fallback, to show the covered shapes really take it.
"""

import numpy as np
import pytest

import zorder

try:
    simd = zorder.get_backend("simd")
except zorder.BackendError as exc:  # this CPU or build has no AVX-512 VBMI + GFNI
    pytestmark = pytest.mark.skip(reason=str(exc))
    simd = None

bitloop = zorder.get_backend("bitloop")


def rng(seed):
    return np.random.default_rng(seed)


def random_columns(r, nrows, widths):
    return [r.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]


def check(columns, size=None, **kwargs):
    want = bitloop.interleave_rows(columns, size)
    got = simd.interleave_rows(columns, size, **kwargs)
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


def test_reports_itself():
    assert simd.name == "simd"
    assert simd.SUPPORTED and simd.UNSUPPORTED_REASON == ""
    assert "simd" in zorder.available_backends()


def test_iceberg_vectors(interleave_vectors):
    for line in interleave_vectors:
        columns = [bytes.fromhex(c) for c in line["columns"]]
        if "out" in line:
            assert simd.interleave_bits(columns, line["size"]).hex() == line["out"], line
        else:
            with pytest.raises(ValueError):
                simd.interleave_bits(columns, line["size"])


def test_iceberg_vectors_rows_and_reuse(interleave_vectors, interleave_reuse_vectors):
    for line in interleave_vectors:
        if "out" in line:
            rows = [np.frombuffer(bytes.fromhex(c), np.uint8).reshape(1, -1) for c in line["columns"]]
            assert simd.interleave_rows(rows, line["size"]).tobytes().hex() == line["out"], line
    for line in interleave_reuse_vectors:
        if "out" not in line or not line["columns"]:
            continue  # errors and the no-column call are the generic tests' business
        buf = bytearray.fromhex(line["reuse"])
        columns = [bytes.fromhex(c) for c in line["columns"]]
        assert simd.interleave_bits(columns, line["size"], out=buf) is buf
        assert buf.hex() == line["out"], line


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("width", [8, 16, 24])
def test_covered_shapes_take_the_vector_kernel(n, width):
    r = rng(n * 100 + width)
    for layout in ("list", "3d"):
        for nrows in (1, 2, 3, 7, 8, 9, 64, 67):
            block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
            columns = block if layout == "3d" else [block[:, c].copy() for c in range(n)]
            want = bitloop.interleave_rows(columns)
            np.testing.assert_array_equal(simd._vector_rows(columns), want)


@pytest.mark.parametrize("n", [1, 2, 4, 5, 8])
def test_wide_columns(n):
    # 64-byte columns are the widest taken as rows of width 8; wider ones use the slabs.
    r = rng(500 + n)
    for width in (40, 56, 64, 72, 80, 136):
        for nrows in (1, 5, 19):
            block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
            for size in (n * width, n * width - 1, 8 * n + 1):
                check(block, size)
                check([block[:, c].copy() for c in range(n)], size)
            np.testing.assert_array_equal(simd._vector_rows(block), bitloop.interleave_rows(block))


@pytest.mark.parametrize("widths", [[7], [8, 8, 4], [12, 12], [8] * 9, [0, 8]])
def test_other_shapes_are_declined(widths):
    columns = random_columns(rng(1), 3, widths)
    if widths[0] == 0:
        columns = columns[::-1]
    with pytest.raises(LookupError):
        simd._vector_rows(columns)


@pytest.mark.parametrize("n", range(1, 9))
def test_every_size_and_row_tail(n):
    # The vector kernel works on blocks of 8 rows (1 or 2 for packed 8 and 4 columns):
    # every N up to 70 ends in every possible tail, and every size cuts every slab.
    # Widths 16, 24 and 32 read in full are taken as 2, 3 and 4 rows of width 8 each.
    r = rng(n)
    for width in (8, 16, 24, 32):
        for nrows in range(0, 71):
            block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
            if width > 16:
                sizes = [n * width]
            elif nrows in (0, 1, 9, 70):
                sizes = range(0, n * width + 1)
            else:
                sizes = [n * width, n * width - 3]
            for size in sizes:
                check(block, size)
                if nrows in (9, 70):
                    check([block[:, c].copy() for c in range(n)], size)


@pytest.mark.parametrize("n", range(1, 13))
def test_uniform_widths_0_to_16(n):
    r = rng(1000 + n)
    for width in range(0, 17):
        for nrows in (1, 5, 8, 19):
            columns = random_columns(r, nrows, [width] * n)
            total = n * width
            for size in sorted({0, 1, total // 2, max(total - 1, 0), total}):
                if size and width == 0:
                    continue
                check(columns, size)


@pytest.mark.parametrize("n", range(1, 13))
def test_ragged_widths(n):
    r = rng(2000 + n)
    for trial in range(30):
        widths = [int(w) for w in r.integers(0, 17, n)]
        widths[0] = max(widths[0], 1)
        nrows = int(r.integers(1, 20))
        columns = random_columns(r, nrows, widths)
        total = sum(widths)
        for size in sorted({0, 1, total // 3, total - 1, total}):
            check(columns, size)


def test_ragged_all_sizes_small():
    r = rng(3)
    for widths in ([8, 16], [16, 8], [8, 8, 8, 4], [3, 8, 8], [24, 8, 16, 8]):
        columns = random_columns(r, 11, widths)
        for size in range(0, sum(widths) + 1):
            check(columns, size)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8])
def test_strided_and_non_contiguous_inputs(n):
    r = rng(4000 + n)
    for nrows in (1, 6, 8, 13, 40):
        big = r.integers(0, 256, (2 * nrows, n + 2, 24), dtype=np.uint8)
        views = {
            "every other row": big[::2, 1:n + 1, 8:16],
            "reversed rows": big[::-1, :n, :8],
            "reversed wide rows": big[::-1, :n, :24],
            "3-D strided block": big[::2, :n, :16],
            "column-major 3-D": np.asfortranarray(big[:nrows, :n, :8]),
        }
        for label, block in views.items():
            for size in (block.shape[1] * block.shape[2], 5):
                check(block, size)
                check([block[:, c] for c in range(n)], size)
        # each column a slice of a wider array (row stride 24, 40, ...) and in reverse order
        wide = [r.integers(0, 256, (nrows, 8 + 8 * c + 8), dtype=np.uint8)[:, 8:16] for c in range(n)]
        check(wide)
        check([w[::-1] for w in wide])
        # bytes within a row not adjacent: the front end copies such a column once
        check([r.integers(0, 256, (nrows, 16), dtype=np.uint8)[:, ::2] for _ in range(n)])


def test_columns_sharing_memory_in_any_order():
    r = rng(5)
    block = r.integers(0, 256, (33, 4, 8), dtype=np.uint8)
    check([block[:, 3], block[:, 1], block[:, 0], block[:, 2]])
    check([block[:, 0], block[:, 0], block[:, 1], block[:, 1]])


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_out_with_wider_rows_untouched_past_size(n):
    r = rng(6000 + n)
    for nrows in (1, 7, 8, 17):
        block = r.integers(0, 256, (nrows, n, 8), dtype=np.uint8)
        for size in (8 * n, 8 * n - 1, 3):
            out = np.full((nrows, 8 * n + 13), 0xA5, np.uint8)
            assert simd.interleave_rows(block, size, out=out) is out
            np.testing.assert_array_equal(out[:, :size], bitloop.interleave_rows(block, size))
            assert (out[:, size:] == 0xA5).all()
        # out as a view with a negative row stride, and a column slice of a wider array
        full = np.full((nrows, 8 * n + 16), 0x5A, np.uint8)
        out = full[::-1, 8:8 + 8 * n]
        simd.interleave_rows(block, out=out)
        np.testing.assert_array_equal(out, bitloop.interleave_rows(block))
        assert (full[:, :8] == 0x5A).all() and (full[:, 8 + 8 * n:] == 0x5A).all()


def test_interleave_bits():
    # One row goes to the scalar kernel (cheaper for so few rows); _vector_rows covers
    # the vector kernel on single rows.
    r = rng(7)
    for n in range(1, 9):
        columns = [bytes(r.integers(0, 256, 8, dtype=np.uint8)) for _ in range(n)]
        for size in range(0, 8 * n + 1):
            assert simd.interleave_bits(columns, size) == bitloop.interleave_bits(columns, size)
        buf = bytearray(b"\x77" * (8 * n + 5))
        assert simd.interleave_bits(columns, 8 * n - 2, out=buf) is buf
        assert bytes(buf[:8 * n - 2]) == bitloop.interleave_bits(columns, 8 * n - 2)
        assert bytes(buf[8 * n - 2:]) == b"\x77" * 7


@pytest.mark.parametrize("pattern", [0x00, 0xFF, 0xAA, 0x55, 0x80, 0x01])
def test_fixed_patterns(pattern):
    for n in range(1, 9):
        block = np.full((9, n, 16), pattern, np.uint8)
        check(block)
    # one bit set at a time, in each column and byte, so every bit's destination is checked
    for n in (2, 3, 4, 5, 8):
        rows = []
        for c in range(n):
            for j in range(8):
                for bit in range(8):
                    row = np.zeros((n, 8), np.uint8)
                    row[c, j] = 1 << bit
                    rows.append(row)
        check(np.stack(rows))


def test_threads_split_rows_identically():
    r = rng(8)
    block = r.integers(0, 256, (40_003, 4, 8), dtype=np.uint8)
    want = zorder.get_backend("table").interleave_rows(block)
    np.testing.assert_array_equal(simd.interleave_rows(block, threads=2), want)


def test_large_blocks_match_table():
    # Beyond the bitloop's comfortable range: compare with the table backend.
    table = zorder.get_backend("table")
    r = rng(9)
    for n in (2, 4, 6, 8):
        block = r.integers(0, 256, (5_001, n, 8), dtype=np.uint8)
        np.testing.assert_array_equal(simd.interleave_rows(block), table.interleave_rows(block))
        columns = [block[:, c].copy() for c in range(n)]
        np.testing.assert_array_equal(simd.interleave_rows(columns, 8 * n - 5),
                                      table.interleave_rows(columns, 8 * n - 5))


@pytest.fixture
def always_stream():
    old = simd._stream_min(0)
    yield
    simd._stream_min(old)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("layout", ["3d", "list"])
def test_streamed_outputs_at_any_alignment(n, layout, always_stream):
    # Large outputs are written as whole 64-byte lines with non-temporal stores, realigned
    # to the output's address (here forced for every size): every start offset within a
    # line, row counts ending mid-line, two threads meeting mid-line, bytes around kept.
    table = zorder.get_backend("table")
    r = rng(10_000 + n)
    width = 16 if n in (3, 4) else 8  # 16: each row taken as two rows of width 8
    w = n * width
    for nrows in (1, 2, 3, 8, 9, 17, 40_003):
        block = r.integers(0, 256, (nrows, n, width), dtype=np.uint8)
        columns = block if layout == "3d" else [block[:, c].copy() for c in range(n)]
        want = table.interleave_rows(block)
        raw = np.empty(nrows * w + 256, np.uint8)
        for offset in (0, 1, 16, 37, 63):
            start = offset - raw.ctypes.data % 64 + 64
            for threads in (1, 2):
                raw[:] = 0xC3
                out = raw[start:start + nrows * w].reshape(nrows, w)
                simd.interleave_rows(columns, out=out, threads=threads)
                np.testing.assert_array_equal(out, want)
                assert (raw[:start] == 0xC3).all() and (raw[start + nrows * w:] == 0xC3).all()


def test_default_streaming_threshold_on_a_large_output():
    table = zorder.get_backend("table")
    n = 8
    nrows = simd._stream_min() // 64 + 3
    block = rng(11).integers(0, 256, (nrows, n, 8), dtype=np.uint8)
    np.testing.assert_array_equal(simd.interleave_rows(block), table.interleave_rows(block))


@pytest.mark.parametrize("stream", [False, True])
def test_random_layouts(stream, request):
    # Columns cut from wider arrays at random offsets, steps and orders, blocks with
    # random row steps, outs at random alignments and row strides: whatever path the
    # layout selects (packed rows, contiguous columns, gathers, wide columns as rows),
    # with ordinary stores and with streaming forced.
    if stream:
        request.getfixturevalue("always_stream")
    r = rng(12 + stream)
    for trial in range(1500):
        n = int(r.integers(1, 9))
        width = int(r.choice([8, 8, 16, 24, 32, 64]))
        nrows = int(r.integers(1, 40))
        step = int(r.choice([1, 1, 2, -1, 3]))
        if r.random() < 0.5:
            pad = int(r.integers(0, 3))
            big = r.integers(0, 256, (nrows * abs(step) + 1, n + pad, width + 8), dtype=np.uint8)
            at = int(r.integers(0, 9))
            block = big[::step][:nrows, pad:pad + n, at:at + width]
            columns = block if r.random() < 0.5 else [block[:, c] for c in range(n)]
        else:
            columns = []
            for _ in range(n):
                extra = int(r.choice([0, 0, 8, 3]))
                a = r.integers(0, 256, (nrows * abs(step) + 1, width + extra), dtype=np.uint8)
                columns.append(a[::step][:nrows, extra:extra + width])
        total = n * width
        size = total if r.random() < 0.6 else int(r.integers(1, total + 1))
        want = bitloop.interleave_rows(columns, size)
        extra = int(r.choice([0, 0, 5, 64]))
        raw = np.full(nrows * (size + extra) + 128, 0x6B, np.uint8)
        start = int(r.integers(0, 64))
        out = raw[start:start + nrows * (size + extra)].reshape(nrows, size + extra)[:, :size]
        simd.interleave_rows(columns, size, out=out)
        np.testing.assert_array_equal(out, want, err_msg=f"trial {trial}")
        outside = np.ones(raw.shape, bool)
        view = raw[start:start + nrows * (size + extra)].reshape(nrows, size + extra)
        mask = np.zeros(view.shape, bool)
        mask[:, :size] = True
        outside[start:start + nrows * (size + extra)] = ~mask.ravel()
        assert (raw[outside] == 0x6B).all(), f"trial {trial}"
