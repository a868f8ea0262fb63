"""Bad input, table-driven, on every backend: each call raises the right exception type
with a message that names the argument at fault; inputs that look odd but are valid
(non-contiguous rows, many columns, zero-width columns) are handled and give the right
bytes.

The conversion and Z-value functions (zorder.ordered, zorder.values,
zorder.values.decode) have a table of their own at the end.
"""

import array
import re
import sys

import numpy as np
import pytest

import zorder

U8 = np.uint8


def rows(n, w, start=0):
    return (np.arange(n * w, dtype=np.int64).reshape(n, w) * 37 + start).astype(U8)


def model(columns, size=None):
    """Iceberg's interleave of one row, written plainly (independent of every backend)."""
    columns = [bytes(c) for c in columns]
    total = sum(len(c) for c in columns)
    size = total if size is None else size
    bits = []
    for j in range(max(len(c) for c in columns)):
        for b in range(7, -1, -1):
            for c in columns:
                if j < len(c):
                    bits.append((c[j] >> b) & 1)
    bits = bits[: 8 * size]
    return bytes(sum(bit << (7 - i) for i, bit in enumerate(bits[k:k + 8]))
                 for k in range(0, len(bits), 8))


def model_rows(columns, size=None):
    columns = [np.asarray(c) for c in columns]
    return np.array([np.frombuffer(model([c[r] for c in columns], size), U8)
                     for r in range(columns[0].shape[0])], dtype=U8).reshape(
        columns[0].shape[0], -1)


# --------------------------------------------------------------------- interleave_bits

_ba = bytearray(b"abcd")
_nc_writable = np.zeros(8, U8)[::2]
_ro_array = np.zeros(4, U8)
_ro_array.flags.writeable = False

# (id, args, kwargs, exception, pattern the message must match: it names the argument)
BITS_ERRORS = [
    ("column-int", ([1, b"a"],), {}, TypeError, r"columns\[0\] must be a bytes-like object, not int"),
    ("column-none", ([b"a", None],), {}, TypeError, r"columns\[1\] must be a bytes-like object, not NoneType"),
    ("column-str", ([b"a", "b"],), {}, TypeError, r"columns\[1\] is str, not bytes"),
    ("column-list", ([[1, 2]],), {}, TypeError, r"columns\[0\] must be a bytes-like object, not list"),
    ("columns-str", ("ab",), {}, TypeError, r"columns must be a sequence of columns, not one str"),
    ("columns-bytes", (b"ab",), {}, TypeError, r"columns must be a sequence of columns, not one bytes"),
    ("columns-bytearray", (bytearray(b"ab"),), {}, TypeError, r"columns .*not one bytearray"),
    ("columns-memoryview", (memoryview(b"ab"),), {}, TypeError, r"columns .*not one memoryview"),
    ("columns-int", (5,), {}, TypeError, r"columns must be a sequence of columns, not int"),
    ("columns-none", (None,), {}, TypeError, r"columns must be a sequence of columns, not NoneType"),
    ("columns-empty-list", ([],), {}, ValueError, r"columns is empty"),
    ("columns-empty-tuple", ((),), {}, ValueError, r"columns is empty"),
    ("columns-empty-iter", (iter([]),), {}, ValueError, r"columns is empty"),
    ("size-negative", ([b"ab"], -1), {}, ValueError, r"interleaved_size must be >= 0, got -1"),
    ("size-huge", ([b"ab"], 2**70), {}, ValueError, r"interleaved_size=\d+ is larger than any input"),
    ("size-int64-max", ([b"ab"], 2**63 - 1), {}, ValueError, r"interleaved_size=\d+ is larger than any input"),
    ("size-float", ([b"ab"], 1.0), {}, TypeError, r"interleaved_size must be an int or None, not float"),
    ("size-str", ([b"ab"], "1"), {}, TypeError, r"interleaved_size must be an int or None, not str"),
    ("size-bool", ([b"ab"], True), {}, TypeError, r"interleaved_size must be an int or None, not bool"),
    ("size-np-float", ([b"ab"], np.float64(1)), {}, TypeError, r"interleaved_size must be an int or None, not float64"),
    ("size-over-input", ([b"ab", b"c"], 4), {}, ValueError, r"interleaved_size=4 is larger than the 3 bytes of input"),
    ("first-column-empty", ([b"", b"ab"], 1), {}, ValueError, r"columns\[0\] is empty"),
    ("first-column-empty-default-size", ([b"", b"ab"],), {}, ValueError, r"columns\[0\] is empty"),
    ("all-columns-empty", ([b"", b""], 1), {}, ValueError, r"interleaved_size=1 is larger than the 0 bytes"),
    ("column-noncontiguous", ([np.arange(8, dtype=U8)[::2]],), {}, ValueError, r"columns\[0\] must be a C-contiguous buffer"),
    ("column-uint16", ([b"a", np.zeros(2, np.uint16)],), {}, TypeError, r"columns\[1\] must hold uint8 bytes, not dtype uint16"),
    ("column-int8", ([np.zeros(2, np.int8)],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype int8"),
    ("column-bool", ([np.zeros(2, bool)],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype bool"),
    ("column-float", ([np.zeros(2)],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype float64"),
    ("column-array-b", ([array.array("b", [1])],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not item format 'b'"),
    ("column-array-H", ([array.array("H", [1])],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not item format 'H'"),
    ("column-2d", ([np.zeros((2, 2), U8)],), {}, ValueError, r"columns\[0\] must be 1-D, got 2-D"),
    ("column-0d", ([np.uint8(3)],), {}, ValueError, r"columns\[0\] must be 1-D, got 0-D"),
    ("out-too-small", ([b"ab"], 2, bytearray(1)), {}, ValueError, r"out has 1 bytes, fewer than interleaved_size=2"),
    ("out-too-small-default", ([b"ab", b"c"], None, bytearray(2)), {}, ValueError, r"out has 2 bytes, fewer than interleaved_size=3"),
    ("out-bytes", ([b"ab"], 2, bytes(2)), {}, TypeError, r"out must be a writable, C-contiguous buffer, not bytes \(read-only\)"),
    ("out-readonly-array", ([b"ab"], 2, _ro_array), {}, TypeError, r"out must be .*not ndarray \(read-only\)"),
    ("out-readonly-memoryview", ([b"ab"], 2, memoryview(bytearray(2)).toreadonly()), {}, TypeError, r"out .*\(read-only\)"),
    ("out-noncontiguous", ([b"ab"], 2, _nc_writable), {}, TypeError, r"out must be .*not ndarray \(not C-contiguous\)"),
    ("out-int", ([b"ab"], 2, 5), {}, TypeError, r"out must be a writable, C-contiguous buffer, not int$"),
    ("out-str", ([b"ab"], 2, "ab"), {}, TypeError, r"out must be a writable, C-contiguous buffer, not str$"),
    ("out-uint16", ([b"ab"], 2, np.zeros(2, np.uint16)), {}, TypeError, r"out must hold uint8 bytes, not dtype uint16"),
    ("out-int8", ([b"ab"], 2, np.zeros(2, np.int8)), {}, TypeError, r"out must hold uint8 bytes, not dtype int8"),
    ("out-array-I", ([b"ab"], 2, array.array("I", [0])), {}, TypeError, r"out must hold uint8 bytes, not item format 'I'"),
    ("out-is-column", ([_ba], 4, _ba), {}, ValueError, r"out overlaps columns\[0\]"),
    ("out-overlaps-second", ([b"x", memoryview(_ba)[1:3]], 2, memoryview(_ba)[2:]), {}, ValueError, r"out overlaps columns\[1\]"),
    ("out-keyword-too-small", ([b"ab"],), {"out": bytearray(1)}, ValueError, r"out has 1 bytes"),
]


@pytest.mark.parametrize("args, kwargs, exc, pattern",
                         [c[1:] for c in BITS_ERRORS], ids=[c[0] for c in BITS_ERRORS])
def test_interleave_bits_errors(backend, args, kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        backend.interleave_bits(*args, **kwargs)


def test_interleave_bits_error_leaves_out_untouched(backend):
    out = bytearray(b"\xaa" * 8)
    with pytest.raises(ValueError, match="interleaved_size=9"):
        backend.interleave_bits([b"abcd", b"efgh"], 9, out)
    with pytest.raises(ValueError, match=r"columns\[0\] is empty"):
        backend.interleave_bits([b"", b"efgh"], 2, out)
    with pytest.raises(TypeError, match=r"columns\[1\]"):
        backend.interleave_bits([b"abcd", "efgh"], 2, out)
    assert out == bytearray(b"\xaa" * 8)


# Valid but unusual: every one must give Iceberg's bytes.
BITS_ACCEPTED = [
    ("tuple", lambda: ((b"\x80", b"\x40", b"\x20"),), [b"\x80", b"\x40", b"\x20"], None),
    ("generator", lambda: ((c for c in [b"\x80", b"\x40"]),), [b"\x80", b"\x40"], None),
    ("bytearray", lambda: ([bytearray(b"\x12\x34"), b"\x56"],), [b"\x12\x34", b"\x56"], None),
    ("memoryview-slice", lambda: ([memoryview(b"xx\x12\x34yy")[2:4]],), [b"\x12\x34"], None),
    ("numpy-1d", lambda: ([np.array([1, 2, 3], U8), b"\xff"],), [b"\x01\x02\x03", b"\xff"], None),
    ("numpy-view", lambda: ([np.arange(10, dtype=U8)[3:7]],), [bytes([3, 4, 5, 6])], None),
    ("array-B", lambda: ([array.array("B", [9, 8])],), [b"\x09\x08"], None),
    ("char-format", lambda: ([memoryview(b"ab").cast("c")],), [b"ab"], None),
    ("size-numpy-int", lambda: ([b"abc", b"de"], np.int64(4)), [b"abc", b"de"], 4),
    ("size-zero-empty-first", lambda: ([b"", b"ab"], 0), [b"", b"ab"], 0),
    ("zero-width-middle", lambda: ([b"ab", b"", b"cd"],), [b"ab", b"", b"cd"], None),
    ("zero-width-last", lambda: ([b"ab", b""], 2), [b"ab", b""], 2),
    ("9-columns", lambda: ([bytes([i, 255 - i]) for i in range(9)],),
     [bytes([i, 255 - i]) for i in range(9)], None),
    ("17-columns", lambda: ([bytes([i] * 3) for i in range(17)],), [bytes([i] * 3) for i in range(17)], None),
    ("40-columns-ragged", lambda: ([bytes(range(i % 5 + 1)) for i in range(40)], 50),
     [bytes(range(i % 5 + 1)) for i in range(40)], 50),
    ("one-wide-column", lambda: ([bytes(range(256)) * 4],), [bytes(range(256)) * 4], None),
]


@pytest.mark.parametrize("make, columns, size", [c[1:] for c in BITS_ACCEPTED],
                         ids=[c[0] for c in BITS_ACCEPTED])
def test_interleave_bits_accepts(backend, make, columns, size):
    got = backend.interleave_bits(*make())
    assert type(got) is bytes
    assert got == model(columns, size)


@pytest.mark.parametrize("make_out", [
    lambda n: bytearray(n), lambda n: np.zeros(n, U8), lambda n: memoryview(bytearray(n)),
    lambda n: array.array("B", bytes(n)), lambda n: np.zeros((1, n), U8),
], ids=["bytearray", "numpy", "memoryview", "array-B", "numpy-2d-contiguous"])
def test_interleave_bits_out_kinds(backend, make_out):
    cols = [b"\x0f\xf0", b"\x33", b"\xcc\x55\xaa"]
    out = make_out(8)
    assert backend.interleave_bits(cols, 5, out) is out
    assert bytes(memoryview(out).cast("B"))[:5] == model(cols, 5)
    assert bytes(memoryview(out).cast("B"))[5:] == bytes(3)


# --------------------------------------------------------------------- interleave_rows

_a = rows(3, 2)
_ro_out = np.zeros((3, 2), U8)
_ro_out.flags.writeable = False
_block = np.zeros((3, 2, 2), U8)
_overlapping_rows_out = np.lib.stride_tricks.as_strided(np.zeros(16, U8), (3, 4), (1, 1))

ROWS_ERRORS = [
    ("column-1d", ([np.zeros(3, U8)],), {}, ValueError, r"columns\[0\] must be 2-D \(rows, bytes\), got 1-D"),
    ("column-3d-in-list", ([_a, np.zeros((3, 2, 1), U8)],), {}, ValueError, r"columns\[1\] must be 2-D \(rows, bytes\), got 3-D"),
    ("column-bytes", ([b"ab"],), {}, TypeError, r"columns\[0\] must be a 2-D uint8 array \(rows, bytes\), not bytes"),
    ("column-str", ([_a, "ab"],), {}, TypeError, r"columns\[1\] must be a 2-D uint8 array \(rows, bytes\), not str"),
    ("column-int", ([1],), {}, TypeError, r"columns\[0\] must be a 2-D uint8 array .*not int"),
    ("column-none", ([_a, None],), {}, TypeError, r"columns\[1\] .*not NoneType"),
    ("column-list-of-lists", ([[[1, 2]]],), {}, TypeError, r"columns\[0\] .*not list"),
    ("column-uint16", ([np.zeros((3, 2), np.uint16)],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype uint16"),
    ("column-int8", ([_a, np.zeros((3, 2), np.int8)],), {}, TypeError, r"columns\[1\] must hold uint8 bytes, not dtype int8"),
    ("column-bool", ([np.zeros((3, 2), bool)],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype bool"),
    ("column-float", ([np.zeros((3, 2))],), {}, TypeError, r"columns\[0\] must hold uint8 bytes, not dtype float64"),
    ("columns-empty", ([],), {}, ValueError, r"columns is empty"),
    ("columns-str", ("ab",), {}, TypeError, r"columns must be a sequence of columns, not one str"),
    ("columns-int", (5,), {}, TypeError, r"columns must be a sequence of columns, not int"),
    ("columns-one-2d-array", (_a,), {}, ValueError, r"columns must be .* got a 2-D array \(wrap a single column in a list\)"),
    ("columns-1d-array", (np.zeros(3, U8),), {}, ValueError, r"columns must be .* got a 1-D array"),
    ("columns-4d-array", (np.zeros((2, 2, 2, 2), U8),), {}, ValueError, r"columns must be .* got a 4-D array"),
    ("block-uint16", (np.zeros((2, 2, 2), np.uint16),), {}, TypeError, r"columns must hold uint8 bytes, not dtype uint16"),
    ("block-no-columns", (np.zeros((3, 0, 2), U8),), {}, ValueError, r"columns is empty"),
    ("rows-mismatch", ([_a, rows(4, 2)],), {}, ValueError, r"columns\[1\] has 4 rows, columns\[0\] has 3"),
    ("rows-mismatch-third", ([_a, _a, rows(2, 1)],), {}, ValueError, r"columns\[2\] has 2 rows, columns\[0\] has 3"),
    ("size-negative", ([_a], -1), {}, ValueError, r"interleaved_size must be >= 0, got -1"),
    ("size-huge", ([_a], 2**64), {}, ValueError, r"interleaved_size=\d+ is larger than any input"),
    ("size-float", ([_a], 2.0), {}, TypeError, r"interleaved_size must be an int or None, not float"),
    ("size-bool", ([_a], False), {}, TypeError, r"interleaved_size must be an int or None, not bool"),
    ("size-over-input", ([_a, _a], 5), {}, ValueError, r"interleaved_size=5 is larger than the 4 bytes of input"),
    ("first-column-empty", ([np.zeros((3, 0), U8), _a], 1), {}, ValueError, r"columns\[0\] is empty"),
    ("first-column-empty-default", ([np.zeros((3, 0), U8), _a],), {}, ValueError, r"columns\[0\] is empty"),
    ("block-zero-width-size", (np.zeros((3, 2, 0), U8), 1), {}, ValueError, r"interleaved_size=1 is larger than the 0 bytes"),
    ("out-too-narrow", ([_a], 2, np.zeros((3, 1), U8)), {}, ValueError, r"out rows have 1 bytes, fewer than interleaved_size=2"),
    ("out-too-many-rows", ([_a], 2, np.zeros((4, 2), U8)), {}, ValueError, r"out has 4 rows, columns have 3"),
    ("out-too-few-rows", ([_a], 2, np.zeros((2, 2), U8)), {}, ValueError, r"out has 2 rows, columns have 3"),
    ("out-readonly", ([_a], 2, _ro_out), {}, TypeError, r"out must be a writable 2-D uint8 array, not ndarray \(read-only\)"),
    ("out-bytes", ([_a], 2, bytes(6)), {}, TypeError, r"out must be a writable 2-D uint8 array, not bytes \(read-only\)"),
    ("out-int", ([_a], 2, 7), {}, TypeError, r"out must be a writable 2-D uint8 array, not int$"),
    ("out-1d", ([_a], 2, np.zeros(6, U8)), {}, ValueError, r"out must be 2-D \(rows, bytes\), got 1-D"),
    ("out-bytearray", ([_a], 2, bytearray(6)), {}, ValueError, r"out must be 2-D \(rows, bytes\), got 1-D"),
    ("out-3d", ([_a], 2, np.zeros((3, 2, 1), U8)), {}, ValueError, r"out must be 2-D \(rows, bytes\), got 3-D"),
    ("out-uint16", ([_a], 2, np.zeros((3, 2), np.uint16)), {}, TypeError, r"out must hold uint8 bytes, not dtype uint16"),
    ("out-fortran", ([_a], 2, np.zeros((3, 2), U8, order="F")), {}, ValueError, r"out must have contiguous bytes within each row"),
    ("out-every-other-byte", ([_a], 2, np.zeros((3, 4), U8)[:, ::2]), {}, ValueError, r"out must have contiguous bytes"),
    ("out-rows-overlap", ([rows(3, 4)], 4, _overlapping_rows_out), {}, ValueError, r"out rows overlap each other"),
    ("out-is-column", ([_a.copy()], 2, None), {"_out_is": 0}, ValueError, r"out overlaps columns\[0\]"),
    ("out-is-second-column", ([_a, _a.copy()], 2, None), {"_out_is": 1}, ValueError, r"out overlaps columns\[1\]"),
    ("out-inside-block", (_block,), {"_out_block": True}, ValueError, r"out overlaps columns\[\d\]"),
    ("threads-zero", ([_a],), {"threads": 0}, ValueError, r"threads must be >= 1, got 0"),
    ("threads-negative", ([_a],), {"threads": -1}, ValueError, r"threads must be >= 1, got -1"),
    ("threads-huge-negative", ([_a],), {"threads": -2**70}, ValueError, r"threads must be >= 1"),
    ("threads-bool", ([_a],), {"threads": True}, TypeError, r"threads must be an int, not bool"),
    ("threads-false", ([_a],), {"threads": False}, TypeError, r"threads must be an int, not bool"),
    ("threads-float", ([_a],), {"threads": 2.0}, TypeError, r"threads must be an int, not float"),
    ("threads-none", ([_a],), {"threads": None}, TypeError, r"threads must be an int, not NoneType"),
    ("threads-str", ([_a],), {"threads": "2"}, TypeError, r"threads must be an int, not str"),
]


@pytest.mark.parametrize("args, kwargs, exc, pattern",
                         [c[1:] for c in ROWS_ERRORS], ids=[c[0] for c in ROWS_ERRORS])
def test_interleave_rows_errors(backend, args, kwargs, exc, pattern):
    kwargs = dict(kwargs)
    if "_out_is" in kwargs:
        columns, size, _ = args
        args = (columns, size, columns[kwargs.pop("_out_is")])
    if kwargs.pop("_out_block", False):
        block = np.zeros((3, 2, 2), U8)
        args = (block, 2, block[:, 0, :])
    with pytest.raises(exc, match=pattern):
        backend.interleave_rows(*args, **kwargs)


def test_interleave_rows_error_leaves_out_untouched(backend):
    out = np.full((3, 4), 0xAA, U8)
    a = rows(3, 2)
    with pytest.raises(ValueError, match="interleaved_size=5"):
        backend.interleave_rows([a, a], 5, out)
    with pytest.raises(ValueError, match=r"columns\[1\] has 2 rows"):
        backend.interleave_rows([a, rows(2, 2)], 2, out)
    with pytest.raises(ValueError, match="threads"):
        backend.interleave_rows([a, a], 2, out, threads=0)
    assert (out == 0xAA).all()


def _strided(n, w, pad):
    base = np.full((n, w + pad), 0xEE, U8)
    base[:, :w] = rows(n, w, 5)
    return base[:, :w]


# Layouts that are handled, not rejected: the bytes must equal those of a contiguous copy.
ROWS_ACCEPTED = [
    ("row-padding", lambda: [_strided(5, 3, 4), rows(5, 2)]),
    ("reversed-rows", lambda: [rows(6, 3)[::-1], rows(6, 3, 9)]),
    ("every-other-row", lambda: [rows(10, 2)[::2], rows(5, 2, 3)]),
    ("fortran-order", lambda: [np.asfortranarray(rows(4, 3)), rows(4, 3, 1)]),
    ("every-other-byte", lambda: [rows(4, 6)[:, ::2], rows(4, 3, 7)]),
    ("reversed-bytes", lambda: [rows(4, 3)[:, ::-1], rows(4, 2, 2)]),
    ("broadcast-row", lambda: [np.broadcast_to(rows(1, 3), (7, 3)), rows(7, 3, 4)]),
    ("memoryview", lambda: [memoryview(rows(3, 2)), rows(3, 2, 1)]),
    ("tuple", lambda: (rows(3, 2), rows(3, 2, 1))),
    ("generator", lambda: (c for c in [rows(3, 2), rows(3, 1, 1)])),
    ("9-columns", lambda: [rows(4, 2, i) for i in range(9)]),
    ("17-columns", lambda: [rows(4, 3, i) for i in range(17)]),
    ("33-columns-ragged", lambda: [rows(3, 1 + i % 4, i) for i in range(33)]),
    ("zero-width-middle", lambda: [rows(4, 2), np.zeros((4, 0), U8), rows(4, 3, 1)]),
    ("zero-rows", lambda: [np.zeros((0, 2), U8), np.zeros((0, 3), U8)]),
    ("ragged", lambda: [rows(5, 4), rows(5, 1, 2), rows(5, 7, 3)]),
]


@pytest.mark.parametrize("make", [c[1] for c in ROWS_ACCEPTED], ids=[c[0] for c in ROWS_ACCEPTED])
def test_interleave_rows_accepts(backend, make):
    columns = make()
    copies = [np.ascontiguousarray(c) for c in (make() if not isinstance(columns, (list, tuple))
                                                else columns)]
    got = backend.interleave_rows(columns)
    assert got.dtype == U8 and got.flags.c_contiguous
    want = model_rows(copies) if copies[0].shape[0] else np.zeros((0, sum(
        c.shape[1] for c in copies)), U8)
    assert got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("make_block", [
    lambda b: b,
    lambda b: np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1),   # bytes strided
    lambda b: np.ascontiguousarray(b[::-1])[::-1],                              # rows reversed
    lambda b: np.ascontiguousarray(b.transpose(1, 0, 2)).transpose(1, 0, 2),   # column-major
    lambda b: np.pad(b, ((0, 0), (1, 1), (2, 0)))[:, 1:-1, 2:],                # padded
], ids=["contiguous", "bytes-strided", "rows-reversed", "columns-outer", "padded"])
@pytest.mark.parametrize("ncols", [3, 9])
def test_interleave_rows_block_layouts(backend, make_block, ncols):
    block = np.stack([rows(6, 3, 11 * i) for i in range(ncols)], axis=1)
    arg = make_block(block.copy())
    assert np.array_equal(arg, block)
    got = backend.interleave_rows(arg, 7)
    assert np.array_equal(got, model_rows([block[:, i, :] for i in range(ncols)], 7))


def test_interleave_rows_out_layouts(backend):
    """out with padded, reversed or exact rows inside a larger array: the first 4 bytes of
    each row get the result, and nothing else of the larger array changes."""
    cols = [rows(5, 3), rows(5, 2, 1)]
    want = model_rows(cols, 4)
    big = np.full((7, 9), 0x5A, U8)
    for out in (big[1:6, 2:7], big[5:0:-1, 1:5], big[1:6, :4], big[0:5, 5:9]):
        big[...] = 0x5A
        assert backend.interleave_rows(cols, 4, out) is out
        assert np.array_equal(out[:, :4], want)
        out[:, :4] = 0x5A
        assert (big == 0x5A).all()


def test_interleave_rows_threads_huge_is_capped(backend):
    """A huge thread count is not an error (nor an OverflowError): at most one per chunk."""
    cols = [rows(50, 2), rows(50, 3, 1)]
    assert np.array_equal(backend.interleave_rows(cols, threads=2**70), model_rows(cols))
    assert np.array_equal(backend.interleave_rows(cols, threads=np.int64(3)), model_rows(cols))


def test_huge_broadcast_block_is_a_memory_error_not_a_crash(backend):
    """2**62 columns of a broadcast (N, n, L) block: n * sizeof(column) overflowed before."""
    block = np.broadcast_to(np.zeros((1, 1, 1), U8), (1, 2**62, 1))
    with pytest.raises(MemoryError):
        backend.interleave_rows(block, 0)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python classes export buffers from 3.12")
def test_column_list_emptied_during_the_call(backend):
    """A column whose __buffer__ (PEP 688) empties the caller's list: the bytes columns
    already taken by pointer must stay alive (zorder keeps its own list of references)."""
    calls = []
    lst = []

    class Sneaky:
        def __buffer__(self, flags):
            calls.append(1)
            lst.clear()
            [bytes(4096) for _ in range(50)]
            return memoryview(b"\x0f" * 4096)

    first = bytes(range(256)) * 16
    lst += [bytes(first), Sneaky()]
    want = model([first, b"\x0f" * 4096], 64)
    got = backend.interleave_bits(lst, 64)
    assert calls, "the hazard did not run"
    assert got == want


def test_columns_list_is_not_modified(backend):
    cols = [b"ab", bytearray(b"cd"), np.array([1, 2], U8)]
    before = list(cols)
    backend.interleave_bits(cols)
    assert len(cols) == 3 and all(a is b for a, b in zip(cols, before))


def test_private_rows_job_cannot_be_run_from_python():
    """zorder.interleave._frontend._RowsJob is reachable by import; an empty one must not call a
    NULL kernel (it segfaulted before)."""
    from zorder.interleave._frontend import _RowsJob
    for job in (_RowsJob(), _RowsJob.__new__(_RowsJob)):
        with pytest.raises(RuntimeError, match="no checked call"):
            job.run(0, 10)


# --------------------------------------------------------- get_backend / choose_backend

@pytest.mark.parametrize("name, exc, pattern", [
    ("nope", zorder.BackendError, r"unknown zorder backend 'nope'; valid names: bitloop, table"),
    ("", zorder.BackendError, r"unknown zorder backend ''"),
    ("TAB LE", zorder.BackendError, r"unknown zorder backend 'tab le'"),
    (3, zorder.BackendError, r"a backend name must be a str such as 'table', not int 3"),
    # (ZORDER_BACKEND=auto is the default's choice; as one backend it was just 'unknown')
    ("auto", zorder.BackendError, r"'auto' is not one backend but the default's per-call"),
    (" Auto", zorder.BackendError, r"'auto' is not one backend"),
])
def test_get_backend_errors(name, exc, pattern):
    with pytest.raises(exc, match=pattern):
        zorder.get_backend(name)
    assert issubclass(zorder.BackendError, ImportError) and issubclass(zorder.BackendError, ValueError)


@pytest.mark.parametrize("cpu", [None, "x86_64", ["bmi2"], 5])
def test_choose_backend_rejects_non_mappings(cpu):
    with pytest.raises(TypeError, match="cpu_info must be a dict"):
        zorder.choose_backend(cpu)


# ------------------------------------------- conversions, Z-values, deinterleave

def _find(name):
    fn = getattr(zorder, name, None)
    assert fn is not None, f"zorder.{name} is missing"
    return fn



# (id, function name, args, kwargs, exception, pattern naming the argument)
OTHER_ERRORS = [
    ("tinyint-too-big", "tinyint_to_ordered_bytes", (128,), {}, ValueError, r"value 128 is out of range for tinyint"),
    ("tinyint-too-small", "tinyint_to_ordered_bytes", (-129,), {}, ValueError, r"value -129 is out of range"),
    ("short-too-big", "short_to_ordered_bytes", (2**15,), {}, ValueError, r"value 32768 is out of range for short"),
    ("int-too-big", "int_to_ordered_bytes", (2**31,), {}, ValueError, r"value 2147483648 is out of range for int"),
    ("long-too-big", "long_to_ordered_bytes", (2**63,), {}, ValueError, r"value \d+ is out of range for long"),
    ("long-too-small", "long_to_ordered_bytes", (-2**63 - 1,), {}, ValueError, r"out of range for long"),
    ("whole-too-big", "whole_number_ordered_bytes", (2**64,), {}, ValueError, r"out of range"),
    ("int-float", "int_to_ordered_bytes", (1.5,), {}, TypeError, r"value must be an integer, not float"),
    ("int-nan", "int_to_ordered_bytes", (float("nan"),), {}, TypeError, r"value must be an integer, not float"),
    ("int-bool", "int_to_ordered_bytes", (True,), {}, TypeError, r"value must be an integer, not bool"),
    ("int-str", "int_to_ordered_bytes", ("1",), {}, TypeError, r"value must be an integer, not str"),
    ("long-none", "long_to_ordered_bytes", (None,), {}, TypeError, r"value must be an integer, not NoneType"),
    ("float-str", "float_to_ordered_bytes", ("1",), {}, TypeError, r"value must be a real number, not str"),
    ("float-bool", "float_to_ordered_bytes", (True,), {}, TypeError, r"value must be a real number, not bool"),
    ("double-none", "double_to_ordered_bytes", (None,), {}, TypeError, r"value must be a real number, not NoneType"),
    ("double-huge-int", "double_to_ordered_bytes", (2**2000,), {}, ValueError, r"value \d+"),
    ("float-unknown-iceberg", "float_to_ordered_bytes", (1.0,), {"iceberg": "nope"}, ValueError, r"iceberg must be a release, '1.12'.*or 'main'"),
    ("double-unknown-iceberg", "double_to_ordered_bytes", (1.0,), {"iceberg": "2.0"}, ValueError, r"iceberg must be"),
    ("floating-iceberg-none", "floating_point_ordered_bytes", (1.0,), {"iceberg": None}, ValueError, r"iceberg must be"),
    ("string-negative-length", "string_to_ordered_bytes", ("a", -1), {}, ValueError, r"length must be >= 0, got -1"),
    ("string-float-length", "string_to_ordered_bytes", ("a", 1.5), {}, TypeError, r"length must be an integer, not float"),
    ("string-bool-length", "string_to_ordered_bytes", ("a", True), {}, TypeError, r"length must be an integer, not bool"),
    ("string-none-length", "string_to_ordered_bytes", ("a", None), {}, TypeError, r"length must be an integer, not NoneType"),
    ("string-bytes-value", "string_to_ordered_bytes", (b"a", 4), {}, TypeError, r"value must be str or None, not bytes"),
    ("string-huge-length", "string_to_ordered_bytes", ("a", 2**70), {}, ValueError, r"length"),
    ("truncate-negative-length", "byte_truncate_or_fill", (b"a", -1), {}, ValueError, r"length must be >= 0, got -1"),
    ("truncate-float-length", "byte_truncate_or_fill", (b"a", 2.0), {}, TypeError, r"length must be an integer, not float"),
    ("truncate-str-value", "byte_truncate_or_fill", ("a", 4), {}, TypeError, r"value must be bytes-like or None, not str"),
    ("truncate-int-value", "byte_truncate_or_fill", (5, 4), {}, TypeError, r"value must be bytes-like or None, not int"),
    ("truncate-wide-items", "byte_truncate_or_fill", (np.zeros(2, np.uint16), 4), {}, TypeError, r"item size"),
    ("truncate-huge-length", "byte_truncate_or_fill", (b"a", 2**70), {}, ValueError, r"length"),
    ("truncate-2d-value", "byte_truncate_or_fill", (np.zeros((2, 3), np.uint8), 4), {}, ValueError, r"value must be one bytes-like value \(1-D\), not of shape \(2, 3\)"),
    ("ordered-unknown-iceberg", "ordered_bytes", (np.array([1, 2]),), {"iceberg": "x"}, ValueError, r"iceberg must be"),
    ("ordered-unknown-spark", "ordered_bytes", (np.array([1, 2]),), {"spark": "x"}, ValueError, r"spark must be"),
    ("ordered-unknown-timestamp", "ordered_bytes", (np.array([1]),), {"timestamp": "x"}, ValueError, r"timestamp must be"),
    ("ordered-negative-length", "ordered_bytes", (np.array(["a"]), -1), {}, ValueError, r"length must be >= 0"),
    ("ordered-float-length", "ordered_bytes", (np.array(["a"]), 1.5), {}, TypeError, r"length must be an integer"),
    ("ordered-mixed-list", "ordered_bytes", ([1, "a"],), {}, TypeError, r"values"),
    ("ordered-huge-length", "ordered_bytes", (np.array(["a"]), 2**70), {}, ValueError, r"length"),
    ("ordered-complex", "ordered_bytes", (np.array([1 + 2j]),), {}, TypeError, r"values: unsupported dtype complex128"),
    ("ordered-2d", "ordered_bytes", (np.zeros((2, 2)),), {}, TypeError, r"values must be 1-D"),
    ("ordered-mask-shape", "ordered_bytes", (np.array([1, 2]),), {"mask": [True]}, ValueError, r"mask must have shape \(2,\)"),
    ("ordered-object-ints", "ordered_bytes", (np.array([1, 2], dtype=object),), {}, TypeError, r"values: an object array must hold str"),
    ("values-empty", "zorder_values", ([],), {}, ValueError, r"data is empty"),
    ("values-int", "zorder_values", (5,), {}, TypeError, r"data must be a list of columns"),
    ("values-str", "zorder_values", ("abc",), {}, TypeError, r"data must be a list of columns"),
    ("values-rows-mismatch", "zorder_values", ([np.array([1, 2]), np.array([1])],), {}, ValueError, r"columns\[1\] has 1 rows"),
    ("values-zero-contribution", "zorder_values", ([np.array([1.0])],), {"var_length_contribution": 0}, ValueError, r"var_length_contribution must be > 0"),
    ("values-bool-contribution", "zorder_values", ([np.array([1.0])],), {"var_length_contribution": True}, TypeError, r"var_length_contribution must be an int, not bool"),
    ("values-huge-contribution", "zorder_values", ([np.array(["a", "b"])],), {"var_length_contribution": 2**70}, ValueError, r"var_length_contribution"),
    ("values-negative-max-size", "zorder_values", ([np.array([1.0])],), {"max_output_size": -1}, ValueError, r"max_output_size must be > 0"),
    ("values-unknown-iceberg", "zorder_values", ([np.array([1.0])],), {"iceberg": "x"}, ValueError, r"iceberg must be"),
    ("values-unknown-backend", "zorder_values", ([np.array([1.0])],), {"backend": "nope"}, zorder.BackendError, r"unknown zorder backend 'nope'"),
    ("values-columns-on-list", "zorder_values", ([np.array([1.0])],), {"columns": ["x"]}, TypeError, r"columns= selects by name"),
    ("sort-indices-empty", "sort_indices", ([],), {}, ValueError, r"data is empty"),
    ("sort-indices-zero-contribution", "sort_indices", ([np.array([1.0])],), {"var_length_contribution": -1}, ValueError, r"var_length_contribution must be > 0"),
    ("sort-list", "sort", ([np.array([1, 2])],), {}, TypeError, r"table must be a pyarrow Table"),
    ("widths-empty", "zorder_widths", ([],), {}, ValueError, r"data is empty"),
    # One Z-value codec for every function that takes Z-values: a wrong dtype is a
    # TypeError, a wrong number of dimensions a ValueError.
    ("argsort-1d", "argsort_zvalues", (np.zeros(2, U8),), {}, ValueError, r"values must be a 2-D uint8 array"),
    ("argsort-uint16", "argsort_zvalues", (np.zeros((2, 2), np.uint16),), {}, TypeError, r"values must be a 2-D uint8 array.*not dtype uint16"),
    ("deinterleave-str", "deinterleave_bits", ("ab", [1, 1]), {}, TypeError, r"value must be bytes-like, not str"),
    ("deinterleave-uint16", "deinterleave_bits", (np.zeros(2, np.uint16), [1, 1]), {}, TypeError, r"value must hold uint8 bytes"),
    ("deinterleave-negative-width", "deinterleave_bits", (b"ab", [-1, 3]), {}, ValueError, r"widths\[0\] must be >= 0, got -1"),
    ("deinterleave-float-width", "deinterleave_bits", (b"ab", [1.0, 1]), {}, TypeError, r"widths\[0\] must be an int, not float"),
    ("deinterleave-bool-width", "deinterleave_bits", (b"ab", [1, True]), {}, TypeError, r"widths\[1\] must be an int, not bool"),
    ("deinterleave-widths-empty", "deinterleave_bits", (b"ab", []), {}, ValueError, r"widths is empty"),
    ("deinterleave-widths-str", "deinterleave_bits", (b"ab", "11"), {}, TypeError, r"widths must be a sequence of ints"),
    ("deinterleave-widths-too-small", "deinterleave_bits", (b"ab", [0, 0]), {}, ValueError, r"sum\(widths\)=0"),
    ("deinterleave-first-width-0", "deinterleave_bits", (b"ab", [0, 2]), {}, ValueError, r"widths\[0\] must be >= 1"),
    ("deinterleave-huge-width", "deinterleave_bits", (b"ab", [2**70]), {}, ValueError, r"widths"),
    ("deinterleave-rows-1d", "deinterleave_rows", (np.zeros(4, U8), [1, 1]), {}, ValueError, r"values must be a 2-D uint8 array"),
    ("deinterleave-rows-uint16", "deinterleave_rows", (np.zeros((2, 2), np.uint16), [1, 1]), {}, TypeError, r"values must be a 2-D uint8 array.*not dtype uint16"),
    ("deinterleave-rows-negative", "deinterleave_rows", (np.zeros((2, 2), U8), [-1, 3]), {}, ValueError, r"widths\[0\] must be >= 0"),
    ("deinterleave-rows-huge-width", "deinterleave_rows", (np.zeros((2, 2), U8), [2**70]), {}, ValueError, r"widths"),
    # Hilbert: Iceberg's check order (more in test_hilbert.py).
    ("hilbert-index-bits", "hilbert_index", ([b"\x00" * 8], 12), {}, ValueError, r"bits_per_column must be a positive multiple of 8"),
    ("hilbert-index-short", "hilbert_index", ([b"\x00" * 8, b"\x00"],), {}, ValueError, r"columns\[1\] has 1 bytes"),
    ("hilbert-rows-bits", "hilbert_rows", (np.zeros((2, 1, 8), U8), 72), {}, ValueError, r"bits_per_column must be at most 64"),
    ("hilbert-rows-empty", "hilbert_rows", ([],), {}, ValueError, r"columns is empty"),
    ("hilbert-decode-width", "hilbert_decode_rows", (np.zeros((2, 8), U8), 2), {}, ValueError, r"values have 8 bytes per row"),
    ("hilbert-decode-n", "hilbert_decode_rows", (np.zeros((2, 8), U8), 0), {}, ValueError, r"n_columns must be >= 1"),
    ("hilbert-values-contribution", "hilbert_values", ([np.arange(3)],), {"options": zorder.IcebergOptions(var_length_contribution=16)}, ValueError, r"Z-order options"),
    ("hilbert-values-type", "hilbert_values", ([np.array([1j])],), {}, TypeError, r"column columns\[0\].*complex"),
    ("hilbert-values-set", "hilbert_values", ({"a": np.arange(2)},), {"columns": {"a"}}, TypeError, r"columns must be an ordered sequence"),
    # The rank encoding (more in test_rank.py).
    ("values-unknown-encoding", "zorder_values", ([np.array([1.0])],), {"encoding": "ranked"}, ValueError, r"encoding must be 'iceberg'"),
    ("sort-indices-rank-bits", "sort_indices", ([np.array([1.0])],), {"encoding": "rank", "rank_bits": 12}, ValueError, r"rank_bits must be a multiple of 8"),
    ("rank-boundaries-bits", "rank_boundaries", ([np.array([1.0])],), {"rank_bits": 72}, ValueError, r"rank_bits must be a multiple of 8 from 8 to 64"),
    ("rank-boundaries-sample", "rank_boundaries", ([np.array([1.0])],), {"sample": 0}, ValueError, r"sample must be at least 1"),
    ("rank-boundaries-data", "rank_boundaries", (5,), {}, TypeError, r"data must be a list of columns"),
    ("rank-columns-boundaries", "rank_columns", ([np.zeros((2, 8), U8)], {}), {}, TypeError, r"boundaries must be a RankBoundaries"),
    ("rank-columns-dtype", "rank_columns", ([np.zeros((2, 8), np.uint16)], zorder.rank_boundaries([np.array([1])])), {}, TypeError, r"ordered_columns\[0\] must be a 2-D uint8 array"),
]


def _other_params():
    for case_id, name, args, kwargs, exc, pattern in OTHER_ERRORS:
        yield pytest.param(name, args, kwargs, exc, pattern, id=case_id)


@pytest.mark.parametrize("name, args, kwargs, exc, pattern", list(_other_params()))
def test_other_public_function_errors(name, args, kwargs, exc, pattern):
    fn = _find(name)
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert re.search(pattern, str(info.value)), f"{type(info.value).__name__}: {info.value}"


def test_every_public_function_has_an_error_row():
    """A public function added later must get rows here (or in BITS/ROWS_ERRORS)."""
    covered = {row[1] for row in OTHER_ERRORS} | {
        "interleave_bits", "interleave_rows", "get_backend", "choose_backend"}
    not_taking_input = {"available_backends", "cpu_info", "explain_choice", "dispatch"}
    public = {n for n in zorder.__all__ if callable(getattr(zorder, n))
              and not isinstance(getattr(zorder, n), type)}
    missing = public - covered - not_taking_input
    assert not missing, f"no error rows for {sorted(missing)}"


@pytest.mark.parametrize("columns", [{b"\xff", b"\x00", b"\x0f"}, frozenset({b"a"}), {b"a": b"b"}],
                         ids=["set", "frozenset", "dict"])
def test_unordered_columns_are_refused(backend, columns):
    # A set's order changes with string hashing from run to run; a dict would give its keys.
    with pytest.raises(TypeError, match="columns must be an ordered sequence"):
        backend.interleave_bits(columns)
    with pytest.raises(TypeError, match="columns must be an ordered sequence"):
        backend.interleave_rows(columns)
