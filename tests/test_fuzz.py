"""Differential tests: every backend against bitloop, and bitloop against a plain-Python
model of Iceberg's loop, over 1-12 columns, widths 0-16, uniform and ragged, every size."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zorder


def python_model(columns, size):
    """Iceberg's order of source bits, written as plainly as possible."""
    bits = []
    total = sum(len(c) for c in columns)
    byte_index = 0
    while len(bits) < size * 8 and byte_index < max(len(c) for c in columns):
        for bit in range(7, -1, -1):
            for col in columns:
                if byte_index < len(col):
                    bits.append((col[byte_index] >> bit) & 1)
        byte_index += 1
    assert size <= total
    bits = bits[: size * 8]
    return bytes(
        sum(b << (7 - i) for i, b in enumerate(bits[k : k + 8])) for k in range(0, len(bits), 8)
    )


def random_shape(rng):
    n = rng.randint(1, 12)
    if rng.random() < 0.5:
        width = rng.randint(1, 16)
        return [width] * n
    widths = [rng.randint(0, 16) for _ in range(n)]
    widths[0] = max(widths[0], 1)  # Iceberg requires a non-empty first column
    return widths


def test_bitloop_matches_python_model():
    rng = random.Random(1)
    bitloop = zorder.get_backend("bitloop")
    for _ in range(400):
        widths = random_shape(rng)
        columns = [rng.randbytes(w) for w in widths]
        for size in range(sum(widths) + 1):
            assert bitloop.interleave_bits(columns, size) == python_model(columns, size)


def test_every_backend_matches_bitloop_every_size(backend):
    rng = random.Random(2)
    bitloop = zorder.get_backend("bitloop")
    for _ in range(600):
        widths = random_shape(rng)
        columns = [rng.randbytes(w) for w in widths]
        for size in range(sum(widths) + 1):
            assert backend.interleave_bits(columns, size) == bitloop.interleave_bits(columns, size), (
                widths, size)


def test_rows_match_bits_row_by_row(backend):
    rng = random.Random(3)
    np_rng = np.random.default_rng(3)
    for _ in range(120):
        widths = random_shape(rng)
        nrows = rng.choice([0, 1, 2, 7, 31, 64, 65, 130])
        arrays = [np_rng.integers(0, 256, (nrows, w), dtype=np.uint8) for w in widths]
        size = rng.randint(0, sum(widths))
        got = backend.interleave_rows(arrays, size)
        assert got.shape == (nrows, size) and got.flags.c_contiguous
        for i in range(nrows):
            assert got[i].tobytes() == backend.interleave_bits([a[i] for a in arrays], size)


def test_rows_from_one_3d_block(backend):
    np_rng = np.random.default_rng(4)
    bitloop = zorder.get_backend("bitloop")
    for n in range(1, 13):
        for width in (1, 3, 8, 16):
            block = np_rng.integers(0, 256, (257, n, width), dtype=np.uint8)
            for size in {0, 1, n * width // 2, n * width}:
                expected = bitloop.interleave_rows([block[:, c, :] for c in range(n)], size)
                np.testing.assert_array_equal(backend.interleave_rows(block, size), expected)


def test_strided_and_reversed_rows_are_read_in_place(backend):
    np_rng = np.random.default_rng(5)
    big = np_rng.integers(0, 256, (400, 40), dtype=np.uint8)
    columns = [big[::3, 0:8], big[::-2, 8:16], big[1::2, 20:28][:134]]
    columns = [c[:134] for c in columns]
    bitloop = zorder.get_backend("bitloop")
    expected = bitloop.interleave_rows([np.ascontiguousarray(c) for c in columns])
    np.testing.assert_array_equal(backend.interleave_rows(columns), expected)


def test_bytes_within_a_row_not_contiguous_are_copied_correctly(backend):
    np_rng = np.random.default_rng(6)
    wide = np_rng.integers(0, 256, (50, 16), dtype=np.uint8)
    column = wide[:, ::2]           # stride 2 within each row
    other = np_rng.integers(0, 256, (50, 8), dtype=np.uint8)
    expected = zorder.get_backend("bitloop").interleave_rows([np.ascontiguousarray(column), other])
    np.testing.assert_array_equal(backend.interleave_rows([column, other]), expected)
    block = np_rng.integers(0, 256, (20, 3, 16), dtype=np.uint8)[:, :, ::2]
    np.testing.assert_array_equal(
        backend.interleave_rows(block), backend.interleave_rows(np.ascontiguousarray(block)))


def test_threads_give_the_same_rows(backend):
    np_rng = np.random.default_rng(7)
    block = np_rng.integers(0, 256, (100_003, 4, 8), dtype=np.uint8)
    single = backend.interleave_rows(block, 29)
    for threads in (2, 3, 4):
        np.testing.assert_array_equal(backend.interleave_rows(block, 29, threads=threads), single)


column_lists = st.lists(st.binary(min_size=0, max_size=16), min_size=1, max_size=12).filter(
    lambda cols: len(cols[0]) > 0)


@settings(max_examples=300, deadline=None)
@given(columns=column_lists, data=st.data())
def test_hypothesis_every_backend_agrees(columns, data):
    size = data.draw(st.integers(0, sum(len(c) for c in columns)))
    expected = python_model(columns, size)
    for name in zorder.available_backends():
        assert zorder.get_backend(name).interleave_bits(columns, size) == expected, name


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)])
def test_every_bytes_like_column_type(backend, kind):
    columns = [bytes(range(i, i + 8)) for i in (0, 50, 200)]
    expected = zorder.get_backend("bitloop").interleave_bits(columns)
    assert backend.interleave_bits([kind(c) for c in columns]) == expected


def test_rows_back_to_back_never_write_past_the_last_row(backend):
    # Kernels may let a row's last 8-byte store run into the next row when rows are back to
    # back; with rows shorter than 8 bytes that must still never reach past the array. The
    # output is a view into a larger buffer whose tail must come back untouched.
    np_rng = np.random.default_rng(8)
    bitloop = zorder.get_backend("bitloop")
    for n in range(1, 9):
        for width in (1, 2, 3, 9):
            for nrows in (1, 2, 3, 5, 9, 17):
                columns = [np_rng.integers(0, 256, (nrows, width), dtype=np.uint8)
                           for _ in range(n)]
                for size in range(1, n * width + 1):
                    flat = np.full(nrows * size + 64, 0xA5, np.uint8)
                    out = flat[: nrows * size].reshape(nrows, size)
                    backend.interleave_rows(columns, size, out=out)
                    assert (flat[nrows * size:] == 0xA5).all(), (n, width, nrows, size)
                    np.testing.assert_array_equal(out, bitloop.interleave_rows(columns, size))
