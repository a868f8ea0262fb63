"""Differential fuzzing of every zorder backend against bitloop and an independent model.

One fuzz input (a byte string) decodes to one call: interleave_bits on one row, or
interleave_rows on a list of 2-D columns or one 3-D block, with random column counts
(1-20, past the 8-column fast paths and the 16-column stack arrays), widths 0-17,
uniform or ragged, every kind of interleaved_size (default, any valid one, too large),
row counts 0-40 (sometimes past the threading threshold), threads 1-4, columns with
padded, reversed, broadcast, Fortran-order or non-contiguous layouts, and `out` buffers
that are wider than needed and sit inside sentinel-filled memory.

For every available backend it checks that
- the bytes equal bitloop's and a vectorised numpy model of Iceberg's bit order;
- invalid calls raise the same exception, with the same message, as bitloop;
- the inputs are unchanged afterwards;
- only the first interleaved_size bytes of each row of `out` are written (nothing else
  in the surrounding memory changes, also when the call fails);
- a full-size result decodes back to the columns with zorder.deinterleave_*.

Usage:
    python tests/fuzz/fuzz_interleave.py --corpus 2000 [--seed 1]   # seeded, no atheris needed
    python tests/fuzz/fuzz_interleave.py --seconds 600 [-- libFuzzer flags]   # atheris
    python tests/fuzz/fuzz_interleave.py --replay crash-1234abcd    # re-check a saved input
    tools/fuzz.sh 600                     # corpus, then atheris for 600 s
    tools/asan.sh --fuzz-seconds 600      # the same under AddressSanitizer

tests/test_fuzz_harness.py runs `run_corpus` on every pytest run, so this logic is
exercised even where atheris is not installed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np

import zorder

MAX_COLUMNS = 20
MAX_WIDTH = 17
# interleave_rows splits rows across threads only above this many rows per thread
# (MIN_ROWS_PER_THREAD in zorder/interleave/_frontend.pyx).
THREAD_CHUNK = 16384


class Provider:
    """Reads choices from fuzz bytes. Past the end of them it goes on with a PRNG seeded
    by the bytes, so a short input still decodes to a varied (and repeatable) call."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0
        self.rest = None

    def byte(self) -> int:
        if self.pos < len(self.data):
            b = self.data[self.pos]
            self.pos += 1
            return b
        if self.rest is None:
            self.rest = random.Random(bytes(self.data))
        return self.rest.randrange(256)

    def int(self, lo: int, hi: int) -> int:
        span = hi - lo + 1
        v = self.byte()
        if span > 256:
            v = (v << 8) | self.byte()
        return lo + v % span

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def flag(self, one_in: int = 2) -> bool:
        return self.int(0, one_in - 1) == 0


# ---------------------------------------------------------------- the independent model


def model_rows(cols: list, size: int) -> np.ndarray:
    """Iceberg's interleave of (N, w_c) uint8 arrays, by gathering bits in Iceberg's order.

    Independent of every backend: source bit (column c, byte j, bit b) goes to the next
    output position in the order byte j, then bit 7..0, then column 0..n-1, skipping
    columns narrower than j + 1.
    """
    nrows = cols[0].shape[0]
    widths = [c.shape[1] for c in cols]
    bits = np.concatenate(
        [np.unpackbits(np.ascontiguousarray(c), axis=1) for c in cols], axis=1
    ) if sum(widths) else np.zeros((nrows, 0), np.uint8)
    offsets = np.cumsum([0] + [8 * w for w in widths])
    order = []
    for j in range(max(widths)):
        for b in range(8):   # unpackbits puts bit 7 first
            for c, w in enumerate(widths):
                if j < w:
                    order.append(offsets[c] + 8 * j + b)
    order = np.array(order[: 8 * size], dtype=np.intp)
    return np.packbits(bits[:, order], axis=1) if size else np.zeros((nrows, 0), np.uint8)


def expected_error(widths, size):
    """The ValueError the front end must raise for these widths and size, or None."""
    total = sum(widths)
    eff = total if size is None else size
    if eff > total:
        return "larger than"
    if eff >= 1 and widths[0] == 0:
        return "columns[0] is empty"
    return None


# ---------------------------------------------------------------- building one case


def fill(p: Provider, rng: random.Random, shape) -> np.ndarray:
    kind = p.int(0, 7)
    if kind == 0:
        return np.zeros(shape, np.uint8)
    if kind == 1:
        return np.full(shape, 0xFF, np.uint8)
    if kind == 2:
        a = np.zeros(shape, np.uint8)
        if a.size:
            a.flat[rng.randrange(a.size)] = 1 << rng.randrange(8)
        return a
    n = int(np.prod(shape))
    return np.frombuffer(rng.randbytes(n), np.uint8).reshape(shape).copy()


class Case:
    """One decoded call: the arguments, plus what is needed to check the aftermath."""

    def __init__(self):
        self.mode = "rows"
        self.widths = []
        self.nrows = 1
        self.size = None
        self.threads = 1
        self.values = []          # (N, w_c) contiguous copies of what each column holds
        self.args = None          # the `columns` argument
        self.bases = []           # (object, snapshot) of every input buffer, to check after
        self.out = None
        self.out_base = None      # the memory around `out`
        self.out_region = None    # mask of out_base that may be written (first size bytes of rows)
        self.out_sentinel = 0

    def __repr__(self):
        return (f"Case(mode={self.mode}, widths={self.widths}, nrows={self.nrows}, "
                f"size={self.size}, threads={self.threads}, "
                f"out={None if self.out is None else type(self.out).__name__})")


def column_2d(p: Provider, value: np.ndarray):
    """A 2-D column holding `value`, in some layout; returns (column, base to snapshot)."""
    n, w = value.shape
    layout = p.int(0, 7)
    if layout == 1:      # rows padded: row stride > width
        pad_l, pad_r = p.int(0, 3), p.int(0, 3)
        base = np.full((n, w + pad_l + pad_r), 0x3C, np.uint8)
        base[:, pad_l:pad_l + w] = value
        return base[:, pad_l:pad_l + w], base
    if layout == 2:      # reversed rows: negative row stride
        base = np.ascontiguousarray(value[::-1])
        return base[::-1], base
    if layout == 3:      # Fortran order: bytes of a row are not adjacent (copied by zorder)
        base = np.asfortranarray(value)
        return base, base
    if layout == 4:      # every other byte of a wider array
        base = np.zeros((n, 2 * w), np.uint8)
        base[:, ::2] = value
        return base[:, ::2], base
    if layout == 5 and n >= 1:   # one row broadcast to all rows: row stride 0
        row = np.ascontiguousarray(value[:1])
        value[:] = row
        return np.broadcast_to(row, value.shape), row
    if layout == 6:      # a memoryview instead of an ndarray
        base = np.ascontiguousarray(value)
        return memoryview(base), base
    base = np.ascontiguousarray(value)
    return base, base


def column_1d(p: Provider, value: bytes):
    kind = p.int(0, 5)
    if kind == 1:
        b = bytearray(value)
        return b, b
    if kind == 2:
        b = bytearray(b"\x77" * 3 + value + b"\x77" * 2)
        return memoryview(b)[3:3 + len(value)], b
    if kind == 3:
        a = np.frombuffer(value, np.uint8).copy()
        return a, a
    if kind == 4:
        b = bytearray(value)
        return memoryview(b), b
    return value, None   # bytes: immutable


def make_out(p: Provider, case: Case, size: int):
    """Maybe an out buffer inside sentinel memory, with the mask of what may change."""
    kind = p.int(0, 4)
    if kind == 0:
        return
    sentinel = p.int(0, 255)
    extra = p.int(0, 4)
    width = size + extra
    case.out_sentinel = sentinel
    if case.mode == "bits":
        if kind == 1:     # a numpy array
            base = out = np.full(width, sentinel, np.uint8)
            pre = 0
        elif kind == 2:   # a whole bytearray
            base = out = bytearray([sentinel]) * width
            pre = 0
        else:             # a window into a larger bytearray
            pre, post = p.int(0, 5), p.int(0, 5)
            base = bytearray([sentinel]) * (pre + width + post)
            out = memoryview(base)[pre:pre + width]
        region = np.zeros(len(base), bool)
        region[pre:pre + size] = True
    elif kind in (1, 3):
        # A window of a larger 2-D array: margins around it, rows wider than needed;
        # kind 3 reverses the rows (negative row stride).
        n = case.nrows
        top, left = p.int(0, 2), p.int(0, 3)
        base = np.full((n + top + p.int(0, 2), width + left + p.int(0, 3)), sentinel, np.uint8)
        out = base[top:top + n, left:left + width]
        region = np.zeros(base.shape, bool)
        region[top:top + n, left:left + size] = True
        if kind == 3:
            out = out[::-1]
    else:
        # Rows back to back in a flat buffer with a sentinel tail: the layout where a
        # kernel may let a row's last store run into the next row, and must not run
        # past the last one. Usually with no spare bytes at all (row stride == size).
        n = case.nrows
        if p.flag():
            width = size
        pre, post = p.int(0, 3), p.int(1, 16)
        base = np.full(pre + n * width + post, sentinel, np.uint8)
        out = base[pre:pre + n * width].reshape(n, width)
        region = np.zeros(base.shape, bool)
        for r in range(n):
            region[pre + r * width:pre + r * width + size] = True
        if kind == 4:
            out = out[::-1]
    case.out = out
    case.out_base = base
    case.out_region = region


def decode(data: bytes) -> Case:
    p = Provider(data)
    rng = random.Random(p.int(0, 65535))
    case = Case()
    case.mode = p.choice(("bits", "bits", "rows", "rows", "block"))
    max_cols, max_width = 64, MAX_WIDTH   # (MAX_COLUMNS bounds the ordinary draw)
    if case.mode == "bits":
        case.nrows = 1
    elif p.int(0, 80) == 0:
        # Past the threading threshold: rows split across threads at chunk boundaries.
        # Few narrow columns, so that the check stays fast.
        case.nrows = THREAD_CHUNK * p.int(1, 3) + p.int(-2, 2)
        case.threads = p.int(2, 4)
        max_cols, max_width = 5, 9
    elif p.int(0, 12) == 0:
        # Around the 64 rows (plus a few last ones) from which narrow ragged shapes put
        # all their segments in place together (csrc/segments.h, zorder_seg_narrow).
        case.nrows = p.int(60, 140)
        case.threads = 1
        max_cols, max_width = 8, 8
    else:
        case.nrows = p.int(0, 40)
        case.threads = p.int(1, 4)
    ncols = p.choice((1, 2, 3, 4, 5, 8, 9)) if p.flag() else p.int(1, MAX_COLUMNS)
    if ncols == 9 and p.flag():
        # many columns: each plan of csrc/segments.h (two or three stages of 2-8 columns,
        # or padded to a multiple of 8 and squeezed)
        ncols = p.choice((11, 13, 20, 28, 29, 37, 40, 48, 54, 61, 63, 64))
    ncols = min(ncols, max_cols)
    if case.mode == "block" or p.flag():
        case.widths = [p.int(0, max_width)] * ncols
    else:
        case.widths = [p.int(0, max_width) for _ in range(ncols)]
        if p.int(0, 3):          # usually a valid first column
            case.widths[0] = max(case.widths[0], 1)
    total = sum(case.widths)
    size_kind = p.int(0, 5)
    case.size = (None if size_kind == 0 else total if size_kind == 1
                 else total + p.int(1, 3) if size_kind == 2
                 else p.int(0, min(total, 9)) if size_kind == 3   # short: partial words
                 else p.int(0, total))
    case.values = [fill(p, rng, (case.nrows, w)) for w in case.widths]

    if case.mode == "bits":
        cols = []
        for v in case.values:
            col, base = column_1d(p, v[0].tobytes())
            cols.append(col)
            if base is not None:
                case.bases.append((base, snapshot(base)))
        case.args = cols
    elif case.mode == "rows":
        cols = []
        for i, v in enumerate(case.values):
            col, base = column_2d(p, v)
            case.values[i] = v     # column_2d may have broadcast one row into v
            cols.append(col)
            case.bases.append((base, snapshot(base)))
        case.args = cols if p.int(0, 3) else tuple(cols)
    else:
        w = case.widths[0]
        block = np.stack(case.values, axis=1) if ncols else None
        layout = p.int(0, 2)
        if layout == 1:   # bytes of a column not adjacent: strides[2] != 1
            base = np.ascontiguousarray(block.transpose(0, 2, 1))
            arg = base.transpose(0, 2, 1)
        elif layout == 2:
            base = np.zeros((case.nrows, ncols + 1, w + 2), np.uint8)
            base[:, 1:, 1:w + 1] = block
            arg = base[:, 1:, 1:w + 1]
        else:
            base = arg = np.ascontiguousarray(block)
        case.args = arg
        case.bases.append((base, snapshot(base)))

    eff = total if case.size is None else case.size
    if eff <= total:
        make_out(p, case, eff)
    elif p.flag():
        make_out(p, case, total)   # an out for a call that must fail: it must stay untouched
    return case


# ---------------------------------------------------------------- running and checking


def call(module, case: Case):
    if case.mode == "bits":
        return module.interleave_bits(case.args, case.size, case.out)
    return module.interleave_rows(case.args, case.size, case.out, threads=case.threads)


def as_rows(case: Case, result) -> np.ndarray:
    if case.mode == "bits":
        return np.frombuffer(bytes(result), np.uint8)[None, :]
    return np.asarray(result)


def reset_out(case: Case):
    if case.out_base is not None:
        if isinstance(case.out_base, bytearray):
            case.out_base[:] = bytes([case.out_sentinel]) * len(case.out_base)
        else:
            case.out_base[...] = case.out_sentinel


def snapshot(base):
    return bytes(base) if isinstance(base, bytearray) else np.array(base, copy=True)


def unchanged(base, before) -> bool:
    if isinstance(base, bytearray):
        return bytes(base) == before
    return base.shape == before.shape and np.array_equal(base, before)


def check_aftermath(case: Case, name: str):
    for base, before in case.bases:
        assert unchanged(base, before), f"{name} modified an input: {case!r}"
    if case.out_base is not None:
        base = np.frombuffer(case.out_base, np.uint8) if isinstance(case.out_base, bytearray) \
            else case.out_base
        outside = base[~case.out_region]
        assert (outside == case.out_sentinel).all(), (
            f"{name} wrote outside the first interleaved_size bytes of out's rows: {case!r}")


def check_case(case: Case, backends=None):
    """Runs `case` on every backend (name -> module) and checks everything; raises AssertionError."""
    if backends is None:
        backends = {n: zorder.get_backend(n) for n in zorder.available_backends()}
    oracle = zorder.get_backend("bitloop")
    want_error = expected_error(case.widths, case.size)
    size = sum(case.widths) if case.size is None else case.size

    reset_out(case)
    try:
        ref = call(oracle, case)
        ref_error = None
    except (TypeError, ValueError) as exc:
        ref, ref_error = None, exc
    check_aftermath(case, "bitloop")
    if want_error:
        assert ref_error is not None and type(ref_error) is ValueError, (
            f"bitloop did not raise ValueError ({want_error}): {case!r}")
        assert want_error in str(ref_error), (ref_error, case)
    else:
        assert ref_error is None, f"bitloop raised {ref_error!r} on a valid call: {case!r}"
        model = model_rows(case.values, size)
        got = as_rows(case, ref)
        if case.out is not None:
            assert ref is case.out, f"bitloop did not return out: {case!r}"
            got = got[:, :size]
        assert got.shape == model.shape, (got.shape, model.shape, case)
        assert np.array_equal(got, model), f"bitloop differs from the model: {case!r}"
        ref_bytes = got.copy()

    for name, module in backends.items():
        reset_out(case)
        try:
            result = call(module, case)
            error = None
        except (TypeError, ValueError) as exc:
            result, error = None, exc
        check_aftermath(case, name)
        if ref_error is not None:
            assert error is not None, f"{name} returned where bitloop raised {ref_error!r}: {case!r}"
            assert type(error) is type(ref_error) and str(error) == str(ref_error), (
                name, error, ref_error, case)
            continue
        assert error is None, f"{name} raised {error!r}: {case!r}"
        if case.out is not None:
            assert result is case.out, f"{name} did not return out: {case!r}"
        elif case.mode == "bits":
            assert type(result) is bytes, (name, type(result))
        else:
            assert isinstance(result, np.ndarray) and result.dtype == np.uint8
            assert result.flags.c_contiguous and result.shape == (case.nrows, size)
        got = as_rows(case, result)
        if case.out is not None:
            got = got[:, :size]
        assert np.array_equal(got, ref_bytes), f"{name} differs from bitloop: {case!r}"
    if ref_error is None and size == sum(case.widths) and case.widths[0] >= 1:
        check_roundtrip(case, ref_bytes)
    return ref_error is None


def check_roundtrip(case: Case, zvalues: np.ndarray):
    """A full-size Z-value decodes back to the columns (zorder.deinterleave_*)."""
    if not hasattr(zorder, "deinterleave_rows"):
        return
    if case.mode == "bits":
        back = zorder.deinterleave_bits(zvalues[0].tobytes(), case.widths)
        assert [bytes(b) for b in back] == [v[0].tobytes() for v in case.values], (
            f"deinterleave_bits did not give the columns back: {case!r}")
    else:
        back = zorder.deinterleave_rows(zvalues, case.widths)
        assert all(np.array_equal(b, v) for b, v in zip(back, case.values)), (
            f"deinterleave_rows did not give the columns back: {case!r}")


def check_input(data: bytes, backends=None) -> bool:
    """Decodes one fuzz input and checks it; True if the call was a valid one."""
    return check_case(decode(data), backends)


def corpus(n: int, seed: int = 0):
    """n deterministic fuzz inputs (random byte strings of varied length)."""
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.randbytes(rng.choice((4, 16, 32, 64, 128)))


def run_corpus(n: int, seed: int = 0, backends=None) -> dict:
    valid = 0
    for data in corpus(n, seed):
        valid += check_input(data, backends)
    return {"cases": n, "valid": valid, "invalid": n - valid}


INSTRUMENTED = ("decode", "fill", "column_1d", "column_2d", "make_out", "expected_error",
                "check_case", "check_aftermath", "as_rows", "call")


def run_atheris(seconds: float, extra_args, corpus_dir=None):
    """Coverage-guided fuzzing with atheris (pip install 'zorder[fuzz]').

    The harness's own functions are instrumented, so libFuzzer steers towards every
    mode, layout and size choice; the kernels themselves are checked, not instrumented.
    The run starts from a directory seeded with inputs from `corpus`.
    """
    import tempfile

    import atheris

    module = sys.modules[__name__]
    for name in INSTRUMENTED:
        setattr(module, name, atheris.instrument_func(getattr(module, name)))

    if corpus_dir is None:
        corpus_dir = tempfile.mkdtemp(prefix="zorder-fuzz-corpus-")
        for i, data in enumerate(corpus(64, seed=12345)):
            with open(os.path.join(corpus_dir, f"seed{i:03d}"), "wb") as f:
                f.write(data)

    def one_input(data: bytes):
        check_input(data)

    argv = [sys.argv[0], f"-max_total_time={max(int(seconds), 1)}", "-rss_limit_mb=4096",
            "-max_len=256", "-print_final_stats=1"]
    if not any(a.startswith("-artifact_prefix=") for a in extra_args):
        # A failing input is written here; replay it with --replay FILE.
        argv.append(f"-artifact_prefix={tempfile.mkdtemp(prefix='zorder-fuzz-crash-')}/")
    argv += list(extra_args) + [corpus_dir]
    print(f"fuzz_interleave: atheris for {seconds:g} s, corpus {corpus_dir}", flush=True)
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=int, metavar="N", help="check N seeded inputs and exit")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ZORDER_FUZZ_SEED", "0")))
    ap.add_argument("--seconds", type=float, help="run atheris for this long")
    ap.add_argument("--corpus-dir", help="atheris corpus directory (default: a fresh seeded one)")
    ap.add_argument("--replay", metavar="FILE", nargs="+", help="check these saved inputs")
    ap.add_argument("libfuzzer_args", nargs="*", help="passed to libFuzzer (after --)")
    args = ap.parse_args(argv)
    print(f"fuzz_interleave: backends {zorder.available_backends()}", flush=True)
    if args.corpus is not None:
        t0 = time.perf_counter()
        stats = run_corpus(args.corpus, args.seed)
        print(f"fuzz_interleave: {stats['cases']} cases (seed {args.seed}, "
              f"{stats['valid']} valid, {stats['invalid']} invalid) in "
              f"{time.perf_counter() - t0:.1f} s: all backends agree", flush=True)
    for path in args.replay or ():
        with open(path, "rb") as f:
            data = f.read()
        print(f"fuzz_interleave: {path}: {decode(data)!r}", flush=True)
        check_input(data)
        print("fuzz_interleave: passes", flush=True)
    if args.seconds is not None:
        run_atheris(args.seconds, args.libfuzzer_args, args.corpus_dir)
    if args.corpus is None and args.seconds is None and not args.replay:
        ap.error("give --corpus N, --seconds S or --replay FILE")


if __name__ == "__main__":
    main()
