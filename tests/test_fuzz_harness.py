"""The atheris harness (tests/fuzz/fuzz_interleave.py) on a fixed seeded corpus.

Runs the harness's own decode-and-check logic on every test run, atheris or not, and
checks that the checks themselves catch a backend that is wrong, writes past
interleaved_size, or modifies its input.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

import zorder

HARNESS = pathlib.Path(__file__).parent / "fuzz" / "fuzz_interleave.py"


def load_harness():
    spec = importlib.util.spec_from_file_location("fuzz_interleave", HARNESS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz = load_harness()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_seeded_corpus_every_backend(seed):
    stats = fuzz.run_corpus(400, seed=seed)
    # The corpus must exercise both sides: valid calls compared byte for byte, and
    # invalid ones compared exception for exception.
    assert stats["valid"] > 150 and stats["invalid"] > 20, stats


@pytest.mark.parametrize("name", [n for n in zorder.BACKEND_NAMES
                                  if zorder.cpu.backend_applies(n, zorder.cpu.facts())])
def test_seeded_corpus_one_backend(name):
    """Each backend alone, so a failure names it (others are covered above)."""
    if name not in zorder.available_backends():
        pytest.skip(f"{name} not available here")
    fuzz.run_corpus(150, seed=10, backends={name: zorder.get_backend(name)})


def test_corpus_covers_the_shapes():
    """The decoder reaches every mode, >8 and >16 columns, ragged widths, empty first
    columns, every size kind, out buffers, and the threaded row counts."""
    seen = set()
    for data in fuzz.corpus(3000, seed=0):
        case = fuzz.decode(data)
        seen.add(case.mode)
        if len(case.widths) > 8:
            seen.add(">8 columns")
        if len(case.widths) > 16:
            seen.add(">16 columns")
        if len(set(case.widths)) > 1:
            seen.add("ragged")
        if case.widths[0] == 0:
            seen.add("empty first")
        seen.add("size None" if case.size is None else
                 "size too big" if case.size > sum(case.widths) else "size given")
        if case.out is not None:
            seen.add("out")
            if case.mode != "bits" and case.out.strides[0] < 0:
                seen.add("out reversed")
            if (case.mode != "bits" and case.nrows > 1 and case.out_base.ndim == 1
                    and case.size and case.out.strides[0] == case.size):
                seen.add("out rows back to back")
        if case.nrows > 2 * fuzz.THREAD_CHUNK and case.threads > 1:
            seen.add("threaded")
    assert seen >= {"bits", "rows", "block", ">8 columns", ">16 columns", "ragged",
                    "empty first", "size None", "size too big", "size given", "out",
                    "out reversed", "out rows back to back", "threaded"}, seen


def test_model_matches_worked_example():
    cols = [np.array([[0x80]], np.uint8), np.array([[0x40]], np.uint8),
            np.array([[0x20]], np.uint8)]
    assert fuzz.model_rows(cols, 3).tobytes() == b"\x88\x80\x00"
    assert fuzz.model_rows(cols, 1).tobytes() == b"\x88"


def test_provider_is_deterministic_and_total():
    p = fuzz.Provider(b"\x05")
    assert p.int(0, 9) == 5
    tail = [p.int(0, 255) for _ in range(20)]          # past the end: a seeded PRNG
    q = fuzz.Provider(b"\x05")
    q.int(0, 9)
    assert tail == [q.int(0, 255) for _ in range(20)]
    assert len(set(tail)) > 5
    assert repr(fuzz.decode(b"")) == repr(fuzz.decode(b""))   # empty input: a valid, fixed call


# ---- the checks catch broken backends ----------------------------------------------


class Broken:
    """Wraps bitloop and breaks one thing."""

    def __init__(self, how):
        self.how = how
        self.bitloop = zorder.get_backend("bitloop")

    def interleave_bits(self, columns, interleaved_size=None, out=None):
        result = self.bitloop.interleave_bits(columns, interleaved_size, out)
        return self._break(columns, result, out, interleaved_size)

    def interleave_rows(self, columns, interleaved_size=None, out=None, *, threads=1):
        result = self.bitloop.interleave_rows(columns, interleaved_size, out, threads=threads)
        return self._break(columns, result, out, interleaved_size)

    def _size(self, columns, size):
        if size is not None:
            return size
        if isinstance(columns, np.ndarray):
            return columns.shape[1] * columns.shape[2]
        return sum(np.asarray(memoryview(c)).shape[-1] for c in columns)

    def _break(self, columns, result, out, size):
        if self.how == "wrong" and len(result):
            if isinstance(result, bytes):
                return bytes([result[0] ^ 1]) + result[1:]
            view = np.asarray(result)
            if view.size and view.shape[-1]:
                view.reshape(-1, view.shape[-1])[0, 0] ^= 1
        if self.how == "past-size" and out is not None:
            arr = out if isinstance(out, np.ndarray) else np.frombuffer(out, np.uint8)
            arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
            used = self._size(columns, size)
            if arr.shape[1] > used:
                arr[:, used] ^= 0xFF
        if self.how == "modify-input":
            for c in (columns if isinstance(columns, (list, tuple)) else [columns]):
                try:
                    m = memoryview(c)
                except TypeError:
                    continue
                if not m.readonly and m.nbytes:
                    np.asarray(c).reshape(-1)[:1] ^= 1
                    break
        return result


@pytest.mark.parametrize("how", ["wrong", "past-size", "modify-input"])
def test_checks_catch_a_broken_backend(how):
    caught = 0
    for data in fuzz.corpus(300, seed=3):
        case = fuzz.decode(data)
        try:
            fuzz.check_case(case, {"broken": Broken(how)})
        except AssertionError:
            caught += 1
    assert caught > 10, f"the harness missed a backend that does {how!r}"
