"""deinterleave_bits / deinterleave_rows invert interleave_bits on every backend."""

import numpy as np
import pytest

import zorder
from zorder.values.decode import deinterleave_bits, deinterleave_rows


def random_shapes(rng, count, ragged):
    for _ in range(count):
        n = int(rng.integers(1, 13))  # above 8 columns: the per-target path
        if ragged:
            widths = [int(w) for w in rng.integers(0, 13, n)]
            widths[0] = max(widths[0], 1)
        else:
            widths = [int(rng.integers(1, 13))] * n
        yield widths


@pytest.mark.parametrize("ragged", [False, True], ids=["uniform", "ragged"])
def test_round_trip_rows(backend, ragged):
    rng = np.random.default_rng(4 + ragged)
    for widths in random_shapes(rng, 200, ragged):
        cols = [rng.integers(0, 256, (7, w), dtype=np.uint8) for w in widths]
        z = backend.interleave_rows(cols)
        back = deinterleave_rows(z, widths)
        assert [b.shape for b in back] == [c.shape for c in cols]
        for b, c in zip(back, cols):
            np.testing.assert_array_equal(b, c)


@pytest.mark.parametrize("ragged", [False, True], ids=["uniform", "ragged"])
def test_truncated_values_decode_with_zero_bits(backend, ragged):
    rng = np.random.default_rng(40 + ragged)
    for widths in random_shapes(rng, 100, ragged):
        cols = [rng.integers(0, 256, (3, w), dtype=np.uint8) for w in widths]
        size = int(rng.integers(0, sum(widths) + 1))
        z = backend.interleave_rows(cols, size)
        back = deinterleave_rows(z, widths)
        # Re-interleaving the decoded columns gives the same prefix ...
        again = backend.interleave_rows([np.ascontiguousarray(b) for b in back], size)
        np.testing.assert_array_equal(again, z)
        # ... and the bits past the prefix are 0: the full interleave of the decoded
        # columns is the prefix followed by zeros.
        full = backend.interleave_rows([np.ascontiguousarray(b) for b in back])
        np.testing.assert_array_equal(full[:, :size], z)
        assert not full[:, size:].any()


def test_scalar_round_trip(backend):
    rng = np.random.default_rng(7)
    for widths in random_shapes(rng, 200, True):
        cols = [rng.integers(0, 256, w, dtype=np.uint8).tobytes() for w in widths]
        z = backend.interleave_bits(cols)
        assert deinterleave_bits(z, widths) == cols
        assert deinterleave_bits(bytearray(z), widths) == cols
        assert deinterleave_bits(np.frombuffer(z, np.uint8), widths) == cols


def test_worked_example_and_vectors(interleave_vectors):
    assert deinterleave_bits(bytes.fromhex("888000"), [1, 1, 1]) == [b"\x80", b"\x40", b"\x20"]
    for line in interleave_vectors:
        if "out" not in line:
            continue
        cols = [bytes.fromhex(c) for c in line["columns"]]
        widths = [len(c) for c in cols]
        out = bytes.fromhex(line["out"])
        back = deinterleave_bits(out, widths)
        if line["size"] == sum(widths):
            assert back == cols
        assert zorder.get_backend("bitloop").interleave_bits(back, line["size"]) == out


def test_non_contiguous_and_arrow_input():
    rng = np.random.default_rng(3)
    cols = [rng.integers(0, 256, (50, 8), dtype=np.uint8) for _ in range(3)]
    z = zorder.interleave_rows(cols)
    wide = np.zeros((50, 48), np.uint8)
    wide[:, ::2] = z
    for b, c in zip(deinterleave_rows(wide[:, ::2], [8, 8, 8]), cols):
        np.testing.assert_array_equal(b, c)
    pa = pytest.importorskip("pyarrow")
    arr = pa.array([bytes(r) for r in z], pa.binary(24))
    for b, c in zip(deinterleave_rows(arr.slice(5), [8, 8, 8]), cols):
        np.testing.assert_array_equal(b, c[5:])


def test_empty_rows_and_size_zero():
    back = deinterleave_rows(np.zeros((0, 4), np.uint8), [2, 2])
    assert [b.shape for b in back] == [(0, 2), (0, 2)]
    back = deinterleave_rows(np.zeros((3, 0), np.uint8), [2, 0])
    assert [b.shape for b in back] == [(3, 2), (3, 0)] and not back[0].any()


@pytest.mark.parametrize(
    "value, widths, exc, match",
    [
        (b"\x00\x00\x00", [1, 1], ValueError, "more than sum"),
        (b"\x00", [], ValueError, "widths is empty"),
        (b"\x00", [-1, 2], ValueError, r"widths\[0\] must be >= 0"),
        (b"\x00", [0, 2], ValueError, r"widths\[0\] must be >= 1"),
        (b"\x00", [1.0], TypeError, r"widths\[0\] must be an int"),
        (b"\x00", 8, TypeError, "widths must be a sequence"),
        ("ab", [1, 1], TypeError, "value must be bytes-like"),
        (np.zeros(2, np.uint16), [2, 2], TypeError, "value must hold uint8 bytes"),
        (np.zeros(2, np.int8), [1, 1], TypeError, "value must hold uint8 bytes, not item format 'b'"),
        (b"\x00", {1, 2}, TypeError, "widths must be a sequence in the columns' order, not set"),
        (b"\x00", {"a": 1}, TypeError, "widths must be a sequence in the columns' order, not dict"),
        (b"\x00", np.array([[1, 1]]), ValueError, r"widths must be 1-D \(bytes per column\), got shape \(1, 2\)"),
    ],
)
def test_bad_input(value, widths, exc, match):
    with pytest.raises(exc, match=match):
        deinterleave_bits(value, widths)


def test_bad_rows_input():
    with pytest.raises(TypeError, match="uint8"):
        deinterleave_rows(np.zeros((2, 2), np.int16), [1, 1])
    with pytest.raises(ValueError, match="2-D"):
        deinterleave_rows(np.zeros(2, np.uint8), [1, 1])


def test_the_decoder_takes_the_byte_buffers_the_encoder_takes():
    """ctypes' unsigned bytes (item format '<B') were refused by the decoder alone."""
    import ctypes

    value = zorder.interleave_bits([(ctypes.c_ubyte * 1)(0x80), b"\x40", b"\x20"])
    buffer = (ctypes.c_ubyte * 3).from_buffer_copy(value)
    assert deinterleave_bits(buffer, [1, 1, 1]) == [b"\x80", b"\x40", b"\x20"]
