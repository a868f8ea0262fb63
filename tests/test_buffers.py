"""Buffers: inputs are never modified, and `out` is written only within the first
interleaved_size bytes of each row, on every backend, for every fast-path shape.

`out` sits inside a larger sentinel-filled array (rows wider than needed, rows back to
back, rows reversed, margins before and after), so a kernel that stores whole 8- or
64-byte words past the end of a row, or past the end of `out`, is caught without
needing AddressSanitizer (tools/asan.sh catches the same for out=None).
"""

import itertools

import numpy as np
import pytest

import zorder

U8 = np.uint8
SENTINELS = (0x00, 0xA5, 0xFF)


def random_columns(rng, nrows, widths):
    return [rng.integers(0, 256, size=(nrows, w), dtype=U8) for w in widths]


SHAPES = (
    [[w] * k for k in range(1, 10) for w in (1, 2, 3, 5, 8, 9, 16)]   # uniform, 1..9 columns
    + [[3, 1], [8, 2, 5], [1, 9, 4, 4], [16, 8, 4, 2, 1], [2] * 12 + [7], [5, 0, 5, 0, 3]]
)


def interesting_sizes(total):
    return sorted({0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, total - 1, total} & set(range(total + 1)))


@pytest.mark.parametrize("widths", SHAPES, ids=lambda w: "x".join(map(str, w)))
def test_rows_write_only_their_bytes(backend, widths):
    rng = np.random.default_rng(sum(widths) * 31 + len(widths))
    nrows = 13
    cols = random_columns(rng, nrows, widths)
    snapshots = [c.copy() for c in cols]
    want_full = zorder.get_backend("bitloop").interleave_rows(cols)
    for size, extra, sentinel in itertools.product(
            interesting_sizes(sum(widths)), (0, 1, 7, 9), SENTINELS):
        big = np.full((nrows + 2, size + extra + 11), sentinel, U8)
        out = big[1:nrows + 1, 3:3 + size + extra]
        assert backend.interleave_rows(cols, size, out) is out
        assert np.array_equal(out[:, :size], want_full[:, :size]), (size, extra)
        out[:, :size] = sentinel
        assert (big == sentinel).all(), (
            f"wrote outside the first {size} bytes of out's rows (extra={extra})")
    for c, s in zip(cols, snapshots):
        assert np.array_equal(c, s), "an input column was modified"


@pytest.mark.parametrize("widths", SHAPES, ids=lambda w: "x".join(map(str, w)))
def test_rows_back_to_back_write_nothing_after_out(backend, widths):
    """Rows packed back to back (row stride == interleaved_size) in a flat buffer with a
    sentinel tail: a kernel that lets a row's last word spill into the next row must
    never spill past the last row, nor more than one row ahead."""
    rng = np.random.default_rng(len(widths) * 7 + widths[0])
    cols_all = random_columns(rng, 21, widths)
    ref = zorder.get_backend("bitloop")
    for nrows in (1, 2, 3, 5, 21):
        cols = [c[:nrows] for c in cols_all]
        for size in interesting_sizes(sum(widths)):
            for sentinel in (0x00, 0xC3):
                flat = np.full(nrows * size + 64, sentinel, U8)
                out = flat[: nrows * size].reshape(nrows, size)
                backend.interleave_rows(cols, size, out)
                assert (flat[nrows * size:] == sentinel).all(), (
                    f"wrote past the end of out (nrows={nrows}, interleaved_size={size})")
                assert np.array_equal(out, ref.interleave_rows(cols, size)), (nrows, size)


@pytest.mark.parametrize("widths", [[8] * 8, [1] * 5, [2] * 7, [3] * 3, [4, 4], [9] * 9])
def test_rows_reversed_out_and_threads(backend, widths):
    """A reversed out (negative row stride) with threads splitting the rows."""
    nrows = 2 * 16384 + 3
    rng = np.random.default_rng(5)
    cols = random_columns(rng, nrows, widths)
    ref = zorder.get_backend("bitloop").interleave_rows(cols)
    size = ref.shape[1]
    for cut in {size, max(size - 3, 1), 1}:
        big = np.full((nrows, cut + 2), 0x77, U8)
        out = big[::-1, 1:1 + cut]
        backend.interleave_rows(cols, cut, out, threads=2)
        assert np.array_equal(out, ref[:, :cut]), cut
        assert (big[:, 0] == 0x77).all() and (big[:, cut + 1] == 0x77).all()


@pytest.mark.parametrize("widths", SHAPES, ids=lambda w: "x".join(map(str, w)))
def test_bits_write_only_their_bytes(backend, widths):
    rng = np.random.default_rng(sum(widths) + 1000)
    cols = [rng.integers(0, 256, size=w, dtype=U8).tobytes() for w in widths]
    want = zorder.get_backend("bitloop").interleave_bits(cols)
    for size, sentinel in itertools.product(interesting_sizes(sum(widths)), SENTINELS):
        buf = bytearray([sentinel]) * (size + 80)
        out = memoryview(buf)[8:8 + size + 9]
        assert backend.interleave_bits(cols, size, out) is out
        assert bytes(buf[8:8 + size]) == want[:size]
        assert buf[:8] == bytearray([sentinel]) * 8
        assert buf[8 + size:] == bytearray([sentinel]) * 72, (
            f"wrote past interleaved_size={size}")
        exact = bytearray([sentinel]) * size
        backend.interleave_bits(cols, size, exact)
        assert bytes(exact) == want[:size]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "numpy", "numpy-view"])
def test_bits_inputs_unchanged(backend, kind):
    rng = np.random.default_rng(3)
    raw = [rng.integers(0, 256, size=w, dtype=U8) for w in (8, 8, 3, 11, 1)]
    make = {
        "bytes": lambda a: a.tobytes(),
        "bytearray": lambda a: bytearray(a.tobytes()),
        "memoryview": lambda a: memoryview(bytearray(a.tobytes())),
        "numpy": lambda a: a.copy(),
        "numpy-view": lambda a: np.concatenate([a, a])[: len(a)],
    }[kind]
    cols = [make(a) for a in raw]
    backend.interleave_bits(cols)
    backend.interleave_bits(cols, 5, bytearray(5))
    for c, a in zip(cols, raw):
        assert bytes(c) == a.tobytes()


@pytest.mark.parametrize("layout", ["list", "block", "strided", "fortran", "reversed"])
def test_rows_inputs_unchanged(backend, layout):
    rng = np.random.default_rng(4)
    base = rng.integers(0, 256, size=(40, 6, 5), dtype=U8)
    before = base.copy()
    if layout == "block":
        arg = base
    elif layout == "list":
        arg = [base[:, i, :] for i in range(6)]
    elif layout == "strided":
        arg = [base[:, i, ::2] for i in range(6)]
    elif layout == "fortran":
        arg = [np.asfortranarray(base[:, i, :]) for i in range(6)]
    else:
        arg = [base[::-1, i, :] for i in range(6)]
    backend.interleave_rows(arg)
    backend.interleave_rows(arg, 7, np.zeros((40, 9), U8), threads=3)
    assert np.array_equal(base, before)
    if layout == "fortran":
        assert all(np.array_equal(a, base[:, i, :]) for i, a in enumerate(arg))


def test_inputs_are_read_only_safe(backend):
    """Read-only inputs (bytes, read-only arrays, broadcast views) are accepted."""
    a = np.arange(12, dtype=U8).reshape(4, 3)
    a.flags.writeable = False
    b = np.broadcast_to(np.array([[7, 9]], U8), (4, 2))
    got = backend.interleave_rows([a, b])
    want = zorder.get_backend("bitloop").interleave_rows([a.copy(), np.ascontiguousarray(b)])
    assert np.array_equal(got, want)
    assert backend.interleave_bits([memoryview(b"ab").toreadonly(), a[0]]) == \
        zorder.get_backend("bitloop").interleave_bits([b"ab", a[0].tobytes()])
