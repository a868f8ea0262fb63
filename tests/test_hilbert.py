"""Iceberg's Hilbert index: its own vectors, the C kernel against the Python model, decoding
and the curve's properties."""

import json
import os
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zorder
from zorder.hilbert import _transform as _hilbert
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import hilbert_model as ref  # noqa: E402  (the plain-Python oracle, tests/hilbert_model.py)

DATA = pathlib.Path(__file__).parent / "data"
with open(DATA / "hilbert.jsonl", encoding="ascii") as _f:
    VECTORS = [json.loads(line) for line in _f if line.strip()]
# Transform codes this CPU runs (plain always; avx2 and avx512 where CPUID allows).
TRANSFORMS = _hilbert.TRANSFORMS[: _hilbert.TRANSFORMS.index(_hilbert.TRANSFORM) + 1]

# Java's exception class -> what zorder raises for the same call.
PYTHON_ERROR = {
    "java.lang.IllegalArgumentException": ValueError,   # Iceberg's checks, capacity < 0
    "java.lang.NullPointerException": TypeError,        # a null column: not bytes-like
    "java.lang.ArrayIndexOutOfBoundsException": ValueError,   # reused buffer too small
    "java.nio.ReadOnlyBufferException": TypeError,       # out= must be writable
}


def columns_of(line):
    return [None if c is None else bytes.fromhex(c) for c in line["columns"]]


def successful(lines=VECTORS):
    return [line for line in lines if "out" in line]


def test_vectors_cover_every_group():
    groups = {line["case"].split("/")[0] for line in VECTORS}
    assert len(VECTORS) == 1520 and len(groups) == 28
    assert len(successful()) == 1450


def test_every_vector_on_hilbert_index():
    checked = raised = 0
    for line in VECTORS:
        columns, bits = columns_of(line), line["bits"]
        reuse = line.get("reuse")
        if reuse is not None and reuse["kind"] == "direct":
            continue   # a direct ByteBuffer has no Python counterpart
        out = None
        if reuse is not None:
            # A read-only buffer has no visible array: bytes of its capacity stand in.
            before = bytes.fromhex(reuse.get("array_before", "00" * reuse["capacity"]))
            out = before if reuse["read_only"] else bytearray(before)
        if "out" in line:
            got = zorder.hilbert_index(columns, bits, out)
            if out is None:
                assert isinstance(got, bytes) and got.hex() == line["out"], line["case"]
            else:
                # Iceberg returns the whole backing array: the index, then the old tail.
                assert got is out and out.hex() == line["array_after"], line["case"]
            checked += 1
        else:
            with pytest.raises(PYTHON_ERROR[line["error"]]):
                zorder.hilbert_index(columns, bits, out)
            if isinstance(out, bytearray):
                # Nothing written on an error, as in Java.
                assert out == before and out.hex() == line["array_after"], line["case"]
            raised += 1
    assert checked == 1450 and raised == 69   # all but the direct-buffer line


def test_vectors_through_the_model():
    # The oracle of the differential tests below is itself right on Iceberg's vectors.
    for line in successful():
        if "reuse" in line:
            continue
        columns = columns_of(line)
        got = ref.hilbert_index(columns, line["bits"])
        assert got.hex() == line["out"], line["case"]
        nbytes = line["bits"] // 8
        assert ref.hilbert_decode(got, len(columns), line["bits"]) == [c[:nbytes] for c in columns]


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_every_vector_on_each_backend(backend, transform):
    for line in successful():
        columns = columns_of(line)
        expected = line["out"][: len(columns) * line["bits"] // 4]
        got = _hilbert._hilbert_index_with(backend.name, columns, line["bits"], transform=transform)
        assert got.hex() == expected, line["case"]
        # The same line as a one-row batch: a list of (1, L) arrays, ragged or not.
        rows = [np.frombuffer(c, np.uint8).reshape(1, -1) for c in columns]
        got_rows = _hilbert._hilbert_rows_with(backend.name, rows, line["bits"], transform=transform)
        assert got_rows.shape == (1, len(expected) // 2) and got_rows.dtype == np.uint8
        assert got_rows.tobytes().hex() == expected, line["case"]


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_uniform_vectors_batched_by_shape(backend, transform):
    # Uniform lines of one shape (n, width, bits) stacked as rows of one (N, n, L) block.
    groups = {}
    for line in successful():
        widths = {len(c) for c in line["columns"]}
        if len(widths) == 1 and "reuse" not in line:
            key = (len(line["columns"]), widths.pop() // 2, line["bits"])
            groups.setdefault(key, []).append(line)
    batched = 0
    for (n, width, bits), lines in groups.items():
        block = np.array([[list(bytes.fromhex(c)) for c in l["columns"]] for l in lines],
                         np.uint8).reshape(len(lines), n, width)
        got = _hilbert._hilbert_rows_with(backend.name, block, bits, transform=transform)
        assert [r.tobytes().hex() for r in got] == [l["out"] for l in lines]
        batched += len(lines)
    assert batched > 1200


# ---- the C kernel against the model, over shapes, layouts and strides ----------------

def model_rows(columns, bits):
    """The model on a list of (N, L_c) arrays."""
    nrows = columns[0].shape[0]
    return np.array(
        [list(ref.hilbert_index([c[r].tobytes() for c in columns], bits)) for r in range(nrows)],
        np.uint8,
    ).reshape(nrows, len(columns) * bits // 8)


@pytest.mark.parametrize("seed", range(12))
def test_kernel_matches_the_model(seed):
    rng = np.random.default_rng(seed)
    bits = int(rng.choice([8, 16, 24, 32, 40, 48, 56, 64]))
    n = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 12, 17]))
    nrows = int(rng.choice([0, 1, 3, 7, 8, 9, 33, 255, 256, 257, 300]))
    nbytes = bits // 8
    columns = []
    for _ in range(n):
        width = nbytes + int(rng.integers(0, 4))
        # Every column is a strided view into a wider (or reversed) array.
        pad = int(rng.integers(0, 5))
        base = rng.integers(0, 256, (nrows, width + pad), dtype=np.uint8)
        col = base[:, pad:]
        if rng.integers(0, 2):
            col = col[::-1]
        # Skewed data too: low values, where the curve's start is.
        if rng.integers(0, 3) == 0:
            col = col & np.uint8(rng.integers(0, 4))
        columns.append(col)
    expected = model_rows(columns, bits)
    for name in zorder.available_backends():
        for transform in TRANSFORMS:
            got = _hilbert._hilbert_rows_with(name, columns, bits, transform=transform)
            assert np.array_equal(got, expected), (name, transform, n, bits, nrows)


def test_block_layout_with_spare_bytes_and_columns():
    # A (N, n, L) view that skips columns and bytes: only the leading bits/8 bytes count.
    rng = np.random.default_rng(5)
    base = rng.integers(0, 256, (500, 7, 11), dtype=np.uint8)
    block = base[:, 1:6, 2:]
    for bits in (8, 32, 64):
        expected = model_rows([block[:, c, :] for c in range(block.shape[1])], bits)
        for transform in TRANSFORMS:
            got = _hilbert._hilbert_rows_with(zorder.interleave.default_name(), block, bits, transform=transform)
            assert np.array_equal(got, expected)


def test_transforms_agree_on_many_rows():
    rng = np.random.default_rng(11)
    for n in (2, 3, 4, 6, 8, 10, 20):
        data = rng.integers(0, 256, (3001, n, 8), dtype=np.uint8)
        results = [_hilbert._hilbert_rows_with("table", data, 64, transform=t) for t in TRANSFORMS]
        for other in results[1:]:
            assert np.array_equal(results[0], other), n
        some = rng.choice(3001, 20, replace=False)
        assert np.array_equal(results[0][some], model_rows(list(data[some].transpose(1, 0, 2)), 64))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_columns_read_in_place(n):
    """Columns of 8-byte rows back to back, which the state tables read without a copy in
    whole groups of 64 rows: full blocks, a last block of whole groups, and one cut inside
    a group, on every transform and width."""
    rng = np.random.default_rng(n)
    for nrows in (64, 320, 575):
        columns = [rng.integers(0, 256, (nrows, 8), dtype=np.uint8) for _ in range(n)]
        columns[0][: nrows // 2] &= np.uint8(3)   # near the curve's start too
        some = rng.choice(nrows, 12, replace=False)
        for bits in (8, 24, 64):
            results = [_hilbert._hilbert_rows_with("table", columns, bits, transform=t)
                       for t in TRANSFORMS]
            for other in results[1:]:
                assert np.array_equal(results[0], other), (nrows, bits)
            assert np.array_equal(results[-1][some], model_rows([c[some] for c in columns], bits))


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("bits", [8, 24, 48, 64])
def test_state_tables_write_the_rows_on_every_transform(n, bits):
    """2-4 columns, which the state tables write straight to the output: strided columns
    (read through the block's words), row counts around the 64-row groups and the 16 rows
    below which the AVX-512 steps run, and rows with spare bytes after the index."""
    rng = np.random.default_rng(bits + n)
    nbytes = bits // 8
    size = n * nbytes
    for nrows in (5, 16, 17, 63, 64, 129, 255, 256, 263):
        base = rng.integers(0, 256, (nrows, n, nbytes + 3), dtype=np.uint8)
        base[: nrows // 2, 1] &= np.uint8(1)   # near the curve's start too
        columns = [base[:, c, 1: 1 + nbytes] for c in range(n)]
        expected = model_rows(columns, bits)
        for transform in TRANSFORMS:
            out = np.full((nrows, size + 5), 0xEE, np.uint8)
            _hilbert._hilbert_rows_with("table", columns, bits, out, transform=transform)
            assert np.array_equal(out[:, :size], expected), (transform, nrows)
            assert (out[:, size:] == 0xEE).all(), (transform, nrows)


@pytest.mark.parametrize("n", range(2, 9))
def test_bit_slices_write_whole_blocks(n):
    """2-8 columns of 64 bits, which every transform from AVX2 up runs as bit slices on
    whole blocks of 256 rows (but the state tables' 2-4 columns): columns read in place
    and through the block's words (strided), rows with spare bytes on both sides of the
    index, extreme words (all zeros, all ones, one bit) and small coordinates near the
    curve's start, against plain C and the model."""
    rng = np.random.default_rng(100 + n)
    nrows = 3 * 256 + 37
    size = 8 * n
    special = np.array([[0] * 8, [0xFF] * 8, [0x80] + [0] * 7, [0] * 7 + [1], [0x7F] + [0xFF] * 7],
                       np.uint8)
    direct = [rng.integers(0, 256, (nrows, 8), dtype=np.uint8) for _ in range(n)]
    for c, col in enumerate(direct):
        col[: len(special) ** 2] = special[(np.arange(len(special) ** 2) // len(special) ** (c % 2))
                                           % len(special)]
        col[256: 512, :7] = 0   # coordinates below 256 for a whole block
    base = rng.integers(0, 256, (nrows, n, 11), dtype=np.uint8)
    strided = [base[:, c, 2:10] for c in range(n)]
    some = np.r_[0: 30, 250: 262, 300: 310, rng.choice(nrows, 20, replace=False)]
    for columns in (direct, strided):
        expected = _hilbert._hilbert_rows_with("table", columns, 64, transform="plain")
        assert np.array_equal(expected[some], model_rows([c[some] for c in columns], 64))
        for transform in TRANSFORMS:
            out = np.full((nrows, size + 7), 0xEE, np.uint8)
            _hilbert._hilbert_rows_with("table", columns, 64, out[:, 3: 3 + size],
                                        transform=transform)
            assert np.array_equal(out[:, 3: 3 + size], expected), transform
            assert (out[:, :3] == 0xEE).all() and (out[:, 3 + size:] == 0xEE).all(), transform


@pytest.mark.skipif(_hilbert.TRANSFORM == "plain",
                    reason="plain C does not stream its rows")
@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("offset", [0, 8, 16, 40])
def test_streamed_rows_at_any_alignment(n, offset):
    """From 4 MiB of output the fast paths store rows with non-temporal stores: the state
    tables (VBMI, 2-4 columns) whole 64-byte lines, rows starting anywhere in a line, the
    first and last lines partial; the bit slices (AVX2 and up, an even number of columns)
    16-byte pieces where the rows start 16-byte aligned (offsets 0 and 16), ordinary
    stores elsewhere; the last, partial block runs Skilling's steps after them. Two threads, each
    with 4 MiB, write neighbouring ranges that meet inside a line (rows of 24 bytes also
    meet inside a row's line). Neighbouring bytes stay untouched."""
    rng = np.random.default_rng(offset + n)
    size = 8 * n
    nrows = 2 * ((4 << 20) // size) + 77
    columns = [rng.integers(0, 256, (nrows, 8), dtype=np.uint8) for _ in range(n)]
    expected = _hilbert._hilbert_rows_with("table", columns, 64, transform="plain")
    for threads in (1, 2):
        buf = np.full(nrows * size + 192, 0xEE, np.uint8)
        start = (-buf.ctypes.data) % 64 + 64 + offset
        out = buf[start: start + nrows * size].reshape(nrows, size)
        assert zorder.hilbert_rows(columns, 64, out, threads=threads) is out
        assert np.array_equal(out, expected), threads
        assert (buf[:start] == 0xEE).all() and (buf[start + nrows * size:] == 0xEE).all()
    some = rng.choice(nrows, 12, replace=False)
    assert np.array_equal(expected[some], model_rows([c[some] for c in columns], 64))


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_give_the_same_rows(threads):
    rng = np.random.default_rng(threads)
    data = rng.integers(0, 256, (70_000, 3, 8), dtype=np.uint8)
    single = zorder.hilbert_rows(data)
    assert np.array_equal(zorder.hilbert_rows(data, threads=threads), single)
    some = rng.choice(len(data), 30, replace=False)
    assert np.array_equal(single[some], model_rows(list(data[some].transpose(1, 0, 2)), 64))


def test_out_is_filled_and_returned():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, (100, 2, 8), dtype=np.uint8)
    out = np.full((100, 20), 0xEE, np.uint8)
    assert zorder.hilbert_rows(data, 64, out) is out
    assert np.array_equal(out[:, :16], zorder.hilbert_rows(data))
    assert (out[:, 16:] == 0xEE).all()
    buf = bytearray(b"\xee" * 20)
    row = [data[0, 0].tobytes(), data[0, 1].tobytes()]
    assert zorder.hilbert_index(row, 64, buf) is buf
    assert bytes(buf[:16]) == ref.hilbert_index(row, 64) and buf[16:] == b"\xee" * 4


def test_one_column_is_the_identity():
    rng = np.random.default_rng(4)
    for bits in (8, 24, 64):
        col = rng.integers(0, 256, (50, 9), dtype=np.uint8)
        assert np.array_equal(zorder.hilbert_rows([col], bits), col[:, : bits // 8])


def test_many_columns_take_the_allocated_scratch():
    # More than 16 columns: the kernel allocates its block instead of using the stack.
    rng = np.random.default_rng(6)
    data = rng.integers(0, 256, (40, 33, 2), dtype=np.uint8)
    expected = model_rows(list(data.transpose(1, 0, 2)), 16)
    assert np.array_equal(zorder.hilbert_rows(data, 16), expected)


# ---- errors, in Iceberg's order, naming the argument -----------------------------------

@pytest.mark.parametrize("bits, error, match", [
    (0, ValueError, "bits_per_column must be a positive multiple of 8, got 0"),
    (7, ValueError, "positive multiple of 8, got 7"),
    (-8, ValueError, "positive multiple of 8, got -8"),
    (72, ValueError, "bits_per_column must be at most 64, got 72"),
    (True, TypeError, "bits_per_column must be an int, not bool"),
    (8.0, TypeError, "bits_per_column must be an int, not float"),
    ("64", TypeError, "bits_per_column must be an int, not str"),
])
def test_bad_bits(bits, error, match):
    with pytest.raises(error, match=match):
        zorder.hilbert_index([b"\x00" * 8], bits)
    with pytest.raises(error, match=match):
        zorder.hilbert_rows(np.zeros((2, 1, 8), np.uint8), bits)
    with pytest.raises(error, match=match):
        zorder.hilbert_decode_rows(np.zeros((2, 8), np.uint8), 1, bits)


def test_check_order():
    # bits before columns, columns before widths, then the first bad column.
    with pytest.raises(ValueError, match="positive multiple of 8"):
        zorder.hilbert_index([b"\x00" * 8, b""], 7)
    with pytest.raises(ValueError, match="at most 64"):
        zorder.hilbert_index([], 72)
    with pytest.raises(ValueError, match="columns is empty"):
        zorder.hilbert_index([], 64)
    with pytest.raises(ValueError, match="columns is empty"):
        zorder.hilbert_rows(np.zeros((3, 0, 8), np.uint8))
    with pytest.raises(ValueError, match=r"columns\[1\] has 7 bytes, fewer than the 8"):
        zorder.hilbert_index([b"\x00" * 8, b"\x00" * 7, None])
    with pytest.raises(TypeError, match=r"columns\[1\] must be a bytes-like object, not NoneType"):
        zorder.hilbert_index([b"\x00" * 8, None, b"\x00" * 7])
    with pytest.raises(ValueError, match=r"columns\[2\] has 1 bytes per row, fewer than the 2"):
        zorder.hilbert_rows([np.zeros((4, 2), np.uint8)] * 2 + [np.zeros((4, 1), np.uint8)], 16)
    with pytest.raises(ValueError, match=r"columns\[0\] has 3 bytes per row, fewer than the 4"):
        zorder.hilbert_rows(np.zeros((4, 2, 3), np.uint8), 32)


# An ndarray subclass whose .shape claims 8 bytes a row over a 1-byte buffer that ends at
# an inaccessible page: the kernel read 8 bytes there (SIGSEGV), since the width was checked
# from .shape and the buffer read. Run in a child, so a crash fails the test.
LYING_SHAPE = """
import sys
import numpy as np
import zorder
sys.path.insert(0, {tests!r})
from guarded import Guarded

class Liar(np.ndarray):
    @property
    def shape(self):
        return (1, 8) if self.ndim == 2 else (1, 2, 8)

narrow = Guarded(1, "after").array.reshape(1, 1)      # one byte, then the guard page
for columns in ([narrow.view(Liar), np.zeros((1, 15), np.uint8)],
                Guarded(2, "after").array.reshape(1, 2, 1).view(Liar)):
    try:
        zorder.hilbert_rows(columns, 64)
    except ValueError as exc:
        print(exc)
"""


def test_row_widths_come_from_the_buffer_read_not_shape(run_python):
    done = run_python("-c", LYING_SHAPE.format(tests=str(pathlib.Path(__file__).parent)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "columns[0] has 1 bytes per row, fewer than the 8 that bits_per_column=64 reads"] * 2


def test_layout_errors_come_from_the_front_end():
    with pytest.raises(TypeError, match="columns must be a sequence of columns, not one bytes"):
        zorder.hilbert_index(b"\x00" * 8)
    with pytest.raises(TypeError, match=r"columns\[0\] is str"):
        zorder.hilbert_index(["abcdefgh"])
    with pytest.raises(TypeError, match="ordered sequence"):
        zorder.hilbert_rows({np.zeros((1, 8), np.uint8).tobytes()})
    with pytest.raises(TypeError, match=r"columns\[0\] must hold uint8 bytes"):
        zorder.hilbert_rows([np.zeros((3, 8), np.uint16)])
    with pytest.raises(ValueError, match="rows"):
        zorder.hilbert_rows([np.zeros((3, 8), np.uint8), np.zeros((4, 8), np.uint8)])
    with pytest.raises(ValueError, match="threads must be >= 1"):
        zorder.hilbert_rows(np.zeros((3, 2, 8), np.uint8), threads=0)
    # (in the Hilbert functions' words: they have no interleaved_size argument)
    with pytest.raises(ValueError, match=r"out rows have 15 bytes, fewer than the 16 of a "
                                         r"Hilbert value \(columns x bits_per_column / 8\)"):
        zorder.hilbert_rows(np.zeros((3, 2, 8), np.uint8), out=np.zeros((3, 15), np.uint8))
    with pytest.raises(ValueError, match="out has 15 bytes, fewer than the 16 of the Hilbert"):
        zorder.hilbert_index([b"\x00" * 8] * 2, out=bytearray(15))
    with pytest.raises(TypeError, match="out must hold uint8 bytes"):
        zorder.hilbert_rows(np.zeros((3, 2, 8), np.uint8), out=np.zeros((3, 3), np.uint16))


def test_private_selectors_refuse_unknown_names():
    with pytest.raises(ValueError, match="transform must be one of"):
        _hilbert._hilbert_rows_with("table", np.zeros((1, 1, 8), np.uint8), transform="sse9")
    with pytest.raises(ValueError):
        _hilbert._hilbert_rows_with("nope", np.zeros((1, 1, 8), np.uint8))


# ---- decoding ----------------------------------------------------------------------------

@pytest.mark.parametrize("n, bits", [(1, 64), (2, 8), (2, 64), (3, 16), (4, 64), (8, 64), (9, 32), (20, 8)])
def test_decode_round_trip(n, bits):
    rng = np.random.default_rng(n * 100 + bits)
    nbytes = bits // 8
    data = rng.integers(0, 256, (400, n, nbytes), dtype=np.uint8)
    data[0] = 0
    data[1] = 0xFF
    data[2, :, 0] = 0x80
    values = zorder.hilbert_rows(data, bits)
    decoded = zorder.hilbert_decode_rows(values, n, bits)
    assert decoded.shape == (400, n, nbytes) and decoded.flags.c_contiguous
    assert np.array_equal(decoded, data)
    # And the other way: any bytes are some point's index (the curve is a bijection).
    noise = rng.integers(0, 256, (400, n * nbytes), dtype=np.uint8)
    assert np.array_equal(zorder.hilbert_rows(zorder.hilbert_decode_rows(noise, n, bits), bits), noise)
    for r in range(5):
        assert [bytes(c) for c in decoded[r]] == ref.hilbert_decode(values[r].tobytes(), n, bits)


def test_decode_accepts_strided_values_and_no_rows():
    data = np.random.default_rng(8).integers(0, 256, (50, 3, 8), dtype=np.uint8)
    values = zorder.hilbert_rows(data)
    wide = np.zeros((50, 40), np.uint8)
    wide[:, 5:29] = values
    assert np.array_equal(zorder.hilbert_decode_rows(wide[:, 5:29], 3), data)
    assert np.array_equal(zorder.hilbert_decode_rows(values[::-1], 3), data[::-1])
    assert zorder.hilbert_decode_rows(np.zeros((0, 24), np.uint8), 3).shape == (0, 3, 8)


def test_decode_errors():
    with pytest.raises(ValueError, match="values have 16 bytes per row; 3 columns"):
        zorder.hilbert_decode_rows(np.zeros((2, 16), np.uint8), 3)
    with pytest.raises(ValueError, match="n_columns must be >= 1"):
        zorder.hilbert_decode_rows(np.zeros((2, 0), np.uint8), 0)
    with pytest.raises(TypeError, match="n_columns must be an int, not bool"):
        zorder.hilbert_decode_rows(np.zeros((2, 8), np.uint8), True)
    with pytest.raises(TypeError, match="values must be a 2-D uint8 array"):
        zorder.hilbert_decode_rows(np.zeros((2, 8), np.int16), 1)


# ---- the curve's properties ----------------------------------------------------------------

def grid_points(n, side):
    axes = np.meshgrid(*[np.arange(side, dtype=np.uint8)] * n, indexing="ij")
    return np.stack([a.ravel() for a in axes], axis=1).reshape(-1, n, 1)


def as_numbers(values):
    return values.astype(np.uint64) @ (np.uint64(256) ** np.arange(values.shape[1])[::-1].astype(np.uint64))


def test_full_2d_grid_is_one_path():
    # Every 8-bit point of the plane: each index exactly once, and each step one unit long.
    points = grid_points(2, 256)
    index = as_numbers(zorder.hilbert_rows(points, 8))
    order = np.argsort(index)
    assert np.array_equal(index[order], np.arange(65536, dtype=np.uint64))
    path = points[order, :, 0].astype(np.int64)
    assert (np.abs(np.diff(path, axis=0)).sum(axis=1) == 1).all()


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([2, 3]), data=st.data())
def test_consecutive_indices_are_neighbours(n, data):
    # Index h and h + 1 decode to points one unit apart, and encode back to h and h + 1.
    h = data.draw(st.integers(0, 256 ** n - 2))
    values = np.array([list(h.to_bytes(n, "big")), list((h + 1).to_bytes(n, "big"))], np.uint8)
    points = zorder.hilbert_decode_rows(values, n, 8)
    assert np.abs(points[0, :, 0].astype(int) - points[1, :, 0].astype(int)).sum() == 1
    assert np.array_equal(zorder.hilbert_rows(points, 8), values)


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([2, 3]), level=st.integers(1, 4), data=st.data())
def test_aligned_subcube_fills_one_range(n, level, data):
    # An aligned cube of side 2^level (8-bit axes) is one stretch of the curve: its
    # 2^(level*n) points take every index of one range exactly once.
    side = 1 << level
    corner = [data.draw(st.integers(0, 256 // side - 1)) * side for _ in range(n)]
    points = grid_points(n, side) + np.array(corner, np.uint8).reshape(1, n, 1)
    index = np.sort(as_numbers(zorder.hilbert_rows(points, 8)))
    assert index[0] % (side ** n) == 0
    assert np.array_equal(index, index[0] + np.arange(side ** n, dtype=np.uint64))


@settings(max_examples=50, deadline=None)
@given(columns=st.lists(st.binary(min_size=8, max_size=10), min_size=1, max_size=9),
       bits=st.sampled_from([8, 16, 40, 64]))
def test_hilbert_index_matches_the_model(columns, bits):
    assert zorder.hilbert_index(columns, bits) == ref.hilbert_index(columns, bits)


def test_docstring_examples():
    import doctest

    result = doctest.testmod(_hilbert)
    assert result.attempted >= 3 and result.failed == 0


HILBERT_FAILURE_IN_ANOTHER_THREAD = """
import resource, threading, zlib
import numpy as np, zorder
# (rows enough that each small call spans many of the big ones: its kernel runs without
# the GIL while the main thread's calls fail)
cols = [np.random.default_rng(k).integers(0, 256, (100_000, 8), dtype=np.uint8) for k in (1, 2)]
want = zlib.crc32(zorder.hilbert_rows(cols))
# The small calls allocate nothing while the limit is on: their output is made here and
# checked by its CRC. A heap allocation of theirs could fail for real, under ASan above
# all, whose quarantine keeps freed memory mapped.
out = np.empty((100_000, 16), np.uint8)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
with open("/proc/self/statm") as f:
    used = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (200 << 20), hard))
big = np.broadcast_to(np.zeros(8, np.uint8), (1, 1 << 20, 8))   # 2**20 columns: 256 MiB of scratch
stop, wrong, spurious = False, [], []
def small_calls():
    while not stop:
        try:
            zorder.hilbert_rows(cols, out=out)
        except MemoryError as exc:
            spurious.append(exc)
            continue
        if zlib.crc32(out) != want:
            wrong.append(1)
t = threading.Thread(target=small_calls)
t.start()
own = 0
for _ in range(100):
    try:
        zorder.hilbert_rows(big)
    except MemoryError:
        own += 1
stop = True
t.join()
print(own, len(spurious), len(wrong))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
@pytest.mark.skipif(bool(os.environ.get("ZORDER_EMULATED")),
                    reason="qemu-user applies no RLIMIT_AS (its own allocations would fail), "
                           "so no call runs out of memory; the counter's logic is the same "
                           "Cython on every platform")
def test_a_failed_call_in_another_thread_is_not_this_calls(run_python):
    """The kernels count their failed scratch allocations in one process-wide counter: a
    call of 2 columns (stack scratch, it cannot fail) raised MemoryError whenever another
    thread's call of 2**20 columns ran out of memory meanwhile."""
    done = run_python("-c", HILBERT_FAILURE_IN_ANOTHER_THREAD, env={"OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-800:]
    own, spurious, wrong = map(int, done.stdout.split())
    assert own == 100 and spurious == 0 and wrong == 0, done.stdout


@pytest.mark.parametrize("call", ["hilbert_values", "sort_indices", "sort_indices_rank"])
@pytest.mark.parametrize("backend, match", [
    ("avx", "unknown zorder backend 'avx'"), ("auto", "'auto' is not one backend"),
    (5, "a backend name must be a str"),
])
def test_a_bad_backend_on_the_hilbert_paths_is_a_backend_error_before_any_work(
        monkeypatch, call, backend, match):
    """The Z-order paths' BackendError (it was "tuple.index(x): x not in tuple", after
    every column had been encoded)."""
    from zorder.values import table

    def no_work(*args, **kwargs):
        raise AssertionError("columns were encoded before the backend was checked")

    monkeypatch.setattr(table, "columns_bytes", no_work)
    data = [np.arange(3), np.arange(3)]
    with pytest.raises(zorder.BackendError, match=match):
        if call == "hilbert_values":
            zorder.hilbert_values(data, backend=backend)
        elif call == "sort_indices":
            zorder.sort_indices(data, curve="hilbert", backend=backend)
        else:
            zorder.sort_indices(data, curve="hilbert", encoding="rank", backend=backend)


def test_a_backend_name_is_normalized_on_the_hilbert_paths_too():
    data = [np.arange(5), np.arange(5)[::-1].copy()]
    assert np.array_equal(zorder.hilbert_values(data, backend=" Table "),
                          zorder.hilbert_values(data, backend="bitloop"))
