"""out= may share an array with the columns only where no written byte is read: spare
columns of one array are fine; any real overlap is refused before anything is written."""

import numpy as np
import pytest

import zorder


def test_spare_columns_of_one_array(backend):
    big = np.arange(240, dtype=np.uint8).reshape(10, 24)
    expected = zorder.get_backend("bitloop").interleave_rows([big[:, 8:16].copy(), big[:, 16:24].copy()])
    backend.interleave_rows([big[:, 8:16], big[:, 16:24]], 8, out=big[:, 0:8])
    np.testing.assert_array_equal(big[:, 0:8], expected[:, :8])


def test_same_stride_regions_match_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(1500):
        width, nrows = int(rng.integers(4, 40)), int(rng.integers(1, 6))
        # Random bytes, so that a write before the refusal would change them (a copy of a
        # shifted region of random bytes is not the region itself).
        big = rng.integers(0, 256, (nrows, width), dtype=np.uint8)
        before = big.copy()
        wa, wb = int(rng.integers(1, width)), int(rng.integers(1, width))
        oa, ob = int(rng.integers(0, width - wa + 1)), int(rng.integers(0, width - wb + 1))
        view = big[::-1] if rng.random() < 0.3 else big
        size = min(wa, wb)
        overlap = not (oa + size <= ob or ob + wb <= oa)   # out writes its first `size` bytes
        if overlap:
            with pytest.raises(ValueError, match="out overlaps columns"):
                zorder.interleave_rows([view[:, ob:ob + wb]], size, out=view[:, oa:oa + wa])
            np.testing.assert_array_equal(big, before)   # refused before writing
        else:
            expected = view[:, ob:ob + size].copy()   # one column: the interleave is a copy
            zorder.interleave_rows([view[:, ob:ob + wb]], size, out=view[:, oa:oa + wa])
            np.testing.assert_array_equal(view[:, oa:oa + size], expected)


def test_other_strides_never_accept_an_overlap():
    rng = np.random.default_rng(1)
    for _ in range(1500):
        flat = rng.integers(0, 256, 400, dtype=np.uint8)
        before = flat.copy()
        s1, s2 = int(rng.integers(8, 30)), int(rng.integers(8, 30))
        o1, o2 = int(rng.integers(0, 60)), int(rng.integers(0, 60))
        out = np.lib.stride_tricks.as_strided(flat[o1:], (5, 8), (s1, 1))
        col = np.lib.stride_tricks.as_strided(flat[o2:], (5, 8), (s2, 1))
        written = {o1 + i * s1 + k for i in range(5) for k in range(8)}
        read = {o2 + i * s2 + k for i in range(5) for k in range(8)}
        if written & read:
            with pytest.raises(ValueError, match="out overlaps columns"):
                zorder.interleave_rows([col], 8, out=out)
            np.testing.assert_array_equal(flat, before)   # refused before writing


def test_bytearray_out_checked_like_any_buffer(backend):
    buf = bytearray(b"\x80\x40" + bytes(6))
    with pytest.raises(ValueError, match="out overlaps columns"):
        backend.interleave_bits([memoryview(buf)[0:1], memoryview(buf)[1:2]], 2, out=buf)
    assert buf == bytearray(b"\x80\x40" + bytes(6))
    with pytest.raises(ValueError, match="out has 1 bytes, fewer than interleaved_size=2"):
        backend.interleave_bits([b"\x80", b"\x40"], 2, out=bytearray(1))
    spare = bytearray(b"\x80\x40" + b"\xee" * 6)
    assert backend.interleave_bits([bytes(spare[0:1]), bytes(spare[1:2])], 2, out=spare) is spare
    assert spare == bytearray(b"\x90\x00" + b"\xee" * 6)
