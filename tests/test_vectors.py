"""Iceberg's own outputs (tests/data/, produced by its Java code) on every backend."""

import numpy as np
import pytest

import zorder


def columns_of(line):
    return [bytes.fromhex(c) for c in line["columns"]]


def test_worked_example(backend):
    assert backend.interleave_bits([b"\x80", b"\x40", b"\x20"]) == b"\x88\x80\x00"


def test_worked_example_public_api():
    assert zorder.interleave_bits([b"\x80", b"\x40", b"\x20"]) == bytes.fromhex("888000")


def test_every_interleave_vector(backend, interleave_vectors):
    checked = errors = 0
    for line in interleave_vectors:
        columns = columns_of(line)
        if "out" in line:
            assert backend.interleave_bits(columns, line["size"]).hex() == line["out"], line
            checked += 1
        else:
            # Iceberg throws here (or spins, then throws): zorder raises at once.
            with pytest.raises(ValueError):
                backend.interleave_bits(columns, line["size"])
            errors += 1
    assert checked > 2900 and errors > 0


def test_every_interleave_vector_as_one_row(backend, interleave_vectors):
    for line in interleave_vectors:
        if "out" not in line:
            continue
        rows = [np.frombuffer(c, np.uint8).reshape(1, -1) for c in columns_of(line)]
        got = backend.interleave_rows(rows, line["size"])
        assert got.shape == (1, line["size"]) and got.dtype == np.uint8
        assert got.tobytes().hex() == line["out"], line


def test_interleave_vectors_batched_by_shape(backend, interleave_vectors):
    # Lines of one shape (widths, size) stacked as rows of one interleave_rows call.
    groups = {}
    for line in interleave_vectors:
        if "out" in line:
            key = (tuple(len(c) // 2 for c in line["columns"]), line["size"])
            groups.setdefault(key, []).append(line)
    batched = 0
    for (widths, size), lines in groups.items():
        if len(lines) < 2:
            continue
        rows = [
            np.array([list(bytes.fromhex(l["columns"][c])) for l in lines], np.uint8).reshape(len(lines), w)
            for c, w in enumerate(widths)
        ]
        got = backend.interleave_rows(rows, size)
        assert [r.tobytes().hex() for r in got] == [l["out"] for l in lines]
        batched += len(lines)
    assert batched > 100


def test_every_reuse_vector(backend, interleave_reuse_vectors):
    # Java's reuse overload returns the whole backing array: the first `size` bytes are the
    # result, the rest is untouched. zorder's out= does the same to the caller's buffer.
    for line in interleave_reuse_vectors:
        columns = columns_of(line)
        buf = bytearray.fromhex(line["reuse"])
        if not columns:
            # Java returns the buffer untouched for no columns at size 0; zorder treats an
            # empty column list as a caller error (README of the vectors), and writes nothing.
            with pytest.raises(ValueError, match="columns is empty"):
                backend.interleave_bits(columns, line["size"], out=buf)
            assert buf.hex() == line["reuse"]
        elif "out" in line:
            assert backend.interleave_bits(columns, line["size"], out=buf) is buf
            assert buf.hex() == line["out"], line
        else:
            with pytest.raises(ValueError):
                backend.interleave_bits(columns, line["size"], out=buf)
            assert buf.hex() == line["reuse"]   # nothing written on error


def test_size_zero_reads_no_column(backend):
    assert backend.interleave_bits([b"", b"\x01"], 0) == b""
    assert backend.interleave_bits([b"\xff"], 0, out=bytearray(b"ab")) == bytearray(b"ab")
