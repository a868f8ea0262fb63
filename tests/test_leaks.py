"""No leaks: each public function called many times (for a bounded time) keeps memory
flat, by RSS (which sees the C mallocs of the front end and kernels) and by tracemalloc
(Python objects and numpy buffers); failing calls release what they took, so a
bytearray passed in can be resized afterwards and reference counts come back.

ZORDER_LEAK_SECONDS sets the time per measured loop (default 0.2 s).
"""

import ctypes
import gc
import os
import platform
import sys
import time
import tracemalloc

import numpy as np
import pytest

import zorder

U8 = np.uint8
SECONDS = float(os.environ.get("ZORDER_LEAK_SECONDS", "0.2"))
PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_SLACK = 3 << 19        # allocator noise; a 32-byte leak per call over >= 50k calls is more
HEAP_SLACK = 1 << 18       # the C heap's bytes in use are exact: a smaller leak shows there
TRACED_SLACK = 64 << 10
WINDOWS = 5                # measured windows, of which one must be flat (assert_flat)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _heap_reader():
    """Bytes the C heap has handed out and not taken back (glibc's mallinfo2, over every
    arena), or None where there is no such call. RSS alone misses a leak that reuses heap
    pages freed (and still resident) by earlier tests."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    fn.restype = _Mallinfo2
    fn.argtypes = []

    def in_use():
        info = fn()
        return info.uordblks + info.hblkhd
    return in_use


HEAP_IN_USE = _heap_reader()


def _emulator():
    """Why this process runs under a user-mode emulator (qemu-user), or None if it is native.

    ZORDER_EMULATED (set by tools/aarch64.sh) says so; without it, a non-x86 process that
    reads an x86 /proc/cpuinfo (qemu-user passes the host's through) is emulated too.
    """
    if os.environ.get("ZORDER_EMULATED"):
        return os.environ["ZORDER_EMULATED"]
    if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686"):
        return None
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    vendors = ("GenuineIntel", "AuthenticAMD", "HygonGenuine")
    return "x86 /proc/cpuinfo under a foreign arch" if any(v in text for v in vendors) else None


# qemu-user keeps about 143 KB of its own (host) memory per guest thread start, which RSS
# counts and the guest's C heap and tracemalloc do not; see the threaded test.
EMULATOR = _emulator()


def memory(with_rss=True):
    """(RSS or 0, C heap in use or 0): a leak grows at least one of them."""
    return (rss() if with_rss else 0), (HEAP_IN_USE() if HEAP_IN_USE is not None else 0)


def run_for(fn, seconds, min_calls=0):
    """Call fn for ``seconds``, and on until ``min_calls`` calls (a loaded machine gives
    fewer calls a window), but never past 10 times ``seconds``."""
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(64):
            fn()
        calls += 64
        spent = time.perf_counter() - start
        if spent >= seconds and (calls >= min_calls or spent >= 10 * seconds):
            return calls


def assert_flat(fn, seconds=SECONDS, min_calls=1000, with_rss=True):
    """Warm up, then run fn repeatedly: RSS and traced memory must not grow with calls.

    ``with_rss=False`` judges by the C heap and tracemalloc alone (for an emulator whose own
    memory RSS counts); it needs mallinfo2, so it is refused where there is none.
    """
    if not with_rss and HEAP_IN_USE is None:
        pytest.skip("without RSS, a leak check needs glibc's mallinfo2, absent here")
    run_for(fn, seconds / 8)
    # A leak grows RSS or the heap in every window. The allocator taking a new arena,
    # another thread's work, or the kernel collapsing a 2 MB region into a huge page
    # (khugepaged: RSS rises with nothing allocated; numpy advises huge pages for its
    # large arrays) are one-offs, so one flat window out of five is enough. (Of three, none
    # was flat once in CI, on the host: RSS +1.7, +1.7 and +7.1 MB in 0.2 s windows, 11-47
    # bytes a call, the C heap +0; alone the test was flat.)
    windows = []
    for _ in range(WINDOWS):
        gc.collect()
        rss0, heap0 = memory(with_rss)
        calls = run_for(fn, seconds, min_calls)
        gc.collect()
        rss1, heap1 = memory(with_rss)
        grown = max(rss1 - rss0, heap1 - heap0)
        detail = f"RSS {rss1 - rss0:+d}, heap {heap1 - heap0:+d}"
        assert calls >= min_calls, f"only {calls} calls in {10 * seconds} s"
        windows.append((grown, calls, detail))
        if rss1 - rss0 < RSS_SLACK and heap1 - heap0 < HEAP_SLACK:
            break
    else:
        raise AssertionError("RSS or the C heap grew in every window: " + ", ".join(
            f"{g} bytes over {c} calls ({g / c:.1f} B/call; {d})" for g, c, d in windows))

    tracemalloc.start()
    try:
        run_for(fn, seconds / 16)
        gc.collect()
        t0 = tracemalloc.get_traced_memory()[0]
        tcalls = run_for(fn, seconds / 4, min_calls // 4)
        gc.collect()
        tgrown = tracemalloc.get_traced_memory()[0] - t0
    finally:
        tracemalloc.stop()
    assert tgrown < TRACED_SLACK, f"traced memory grew {tgrown} bytes over {tcalls} calls"
    return calls


#: Calls each window of the check of the checker makes at least: enough for a 48-byte leak a
#: call (64 bytes of heap) to outgrow the slack it is judged by four times over. (A window is
#: a time, and a loaded, emulated machine once made too few calls in 0.6 s for the leak to
#: show; with twice the slack, one window of five under emulation once came out flat, the
#: leak hidden by memory freed elsewhere in the process meanwhile.)
LEAK_CALLS = 4 * (HEAP_SLACK if HEAP_IN_USE is not None else RSS_SLACK) // 48


def test_assert_flat_catches_leaks():
    """The measurement itself: a 48-byte C malloc or a small Python object kept per call
    is caught."""
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    with pytest.raises(AssertionError, match="RSS or the C heap grew"):
        assert_flat(lambda: libc.malloc(48), min_calls=LEAK_CALLS)
    if HEAP_IN_USE is not None:
        # The emulated threaded check (C heap and tracemalloc, no RSS) still sees it.
        with pytest.raises(AssertionError, match="RSS or the C heap grew"):
            assert_flat(lambda: libc.malloc(48), min_calls=LEAK_CALLS, with_rss=False)
    kept = []
    with pytest.raises(AssertionError, match="traced memory grew"):
        # Python objects: RSS may hide them in pymalloc's arenas, tracemalloc does not.
        # Leaks only while tracemalloc traces, so RSS (checked first) does not see it.
        assert_flat(lambda: kept.append(bytes(8))
                    if tracemalloc.is_tracing() and len(kept) < 1_000_000 else None,
                    min_calls=LEAK_CALLS)
    kept.clear()


def test_emulation_is_detected_only_when_emulated(monkeypatch):
    monkeypatch.delenv("ZORDER_EMULATED", raising=False)
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert _emulator() is None      # native runs keep the RSS check everywhere
    monkeypatch.setenv("ZORDER_EMULATED", "qemu-user")
    assert _emulator() == "qemu-user"


def raises(exc, fn, *args, **kwargs):
    def call():
        try:
            fn(*args, **kwargs)
        except exc:
            return
        raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")
    return call


# ------------------------------------------------------------------ interleave, every backend

def test_interleave_bits_flat(backend):
    cols = [b"\x01\x02\x03\x04\x05\x06\x07\x08", bytearray(8), np.arange(8, dtype=U8), memoryview(b"abcdefgh")]
    many = [bytes([i]) * 3 for i in range(20)]     # > 16 columns: the malloc'd path
    out = bytearray(40)

    def ok():
        backend.interleave_bits(cols)
        backend.interleave_bits(cols, 20, out)
        backend.interleave_bits(many)

    assert_flat(ok)


def test_interleave_bits_errors_flat(backend):
    many = [bytes([i]) * 3 for i in range(20)] + ["str"]
    cols = [b"ab", np.zeros(2, U8)]

    def bad():
        raises(ValueError, backend.interleave_bits, cols, 5)()
        raises(TypeError, backend.interleave_bits, many)()
        raises(ValueError, backend.interleave_bits, cols, 4, bytearray(2))()
        raises(TypeError, backend.interleave_bits, cols, 4, b"1234")()
        raises(TypeError, backend.interleave_bits, [b"a", np.zeros(2, np.uint16)])()

    assert_flat(bad)


def test_interleave_rows_flat(backend):
    cols = [np.arange(64, dtype=U8).reshape(16, 4)] * 3 + [np.zeros((16, 2), U8)]
    fortran = [np.asfortranarray(c) for c in cols]    # copied inside each call
    block = np.zeros((16, 3, 4), U8)
    out = np.zeros((16, 20), U8)

    def ok():
        backend.interleave_rows(cols)
        backend.interleave_rows(fortran, 9, out)
        backend.interleave_rows(block)

    assert_flat(ok)


def test_interleave_rows_errors_flat(backend):
    cols = [np.zeros((16, 4), U8), np.zeros((16, 4), U8)]
    fortran = [np.asfortranarray(c) for c in cols] + [np.zeros((15, 4), U8)]

    def bad():
        raises(ValueError, backend.interleave_rows, cols, 9)()
        raises(ValueError, backend.interleave_rows, fortran)()
        raises(ValueError, backend.interleave_rows, cols, 4, np.zeros((15, 4), U8))()
        raises(ValueError, backend.interleave_rows, cols, threads=0)()
        raises(TypeError, backend.interleave_rows, cols + [np.zeros((16, 4), np.int8)])()
        raises(ValueError, backend.interleave_rows, cols, 2, cols[1])()

    assert_flat(bad)


def test_interleave_rows_threaded_flat(backend):
    # Every call starts threads. Under qemu-user each thread start leaks ~143 KB of the
    # emulator's own memory into RSS, so there the guest's C heap and tracemalloc judge
    # (a kernel leak would grow the C heap); native runs keep RSS as well.
    cols = [np.zeros((2 * 16384 + 5, 2), U8) for _ in range(2)]
    assert_flat(lambda: backend.interleave_rows(cols, threads=2), SECONDS / 2, min_calls=10,
                with_rss=EMULATOR is None)


# ------------------------------------------------------------ exports released on errors

def test_failing_calls_release_column_exports(backend):
    ba = bytearray(b"\x01\x02\x03\x04")
    mv_base = bytearray(b"\x05\x06\x07\x08")
    mv = memoryview(mv_base)
    arr_base = bytearray(16)
    arr = np.frombuffer(arr_base, U8).reshape(4, 4)
    before = (sys.getrefcount(ba), sys.getrefcount(mv), sys.getrefcount(arr))
    for _ in range(200):
        with pytest.raises(ValueError):
            backend.interleave_bits([ba, mv], 9)                      # size too big
        with pytest.raises(TypeError):
            backend.interleave_bits([ba, mv, "x"])                    # a later column is bad
        with pytest.raises(ValueError):
            backend.interleave_bits([ba, mv], 8, bytearray(3))        # out too small
        with pytest.raises(ValueError):
            backend.interleave_bits([ba], 4, ba)                      # out overlaps
        with pytest.raises(ValueError):
            backend.interleave_rows([arr, np.zeros((3, 1), U8)])      # row counts differ
        with pytest.raises(ValueError):
            backend.interleave_rows([arr], 4, arr)                    # out overlaps
        with pytest.raises(ValueError):
            backend.interleave_rows(arr.reshape(4, 2, 2), 5)          # block, size too big
    assert (sys.getrefcount(ba), sys.getrefcount(mv), sys.getrefcount(arr)) == before
    ba.extend(b"\x09")                  # BufferError if an export were still held
    mv.release()                        # BufferError if the memoryview were still exported
    mv_base.extend(b"\x0a")
    del arr
    gc.collect()
    arr_base.extend(b"\x0b")


def test_successful_calls_release_exports(backend):
    ba = bytearray(b"\x01\x02")
    out = bytearray(4)
    backend.interleave_bits([ba, ba], 4, out)
    ba.extend(b"\x03")
    out.extend(b"\x00")
    base = bytearray(12)
    a = np.frombuffer(base, U8).reshape(3, 4)
    o = np.zeros((3, 4), U8)
    backend.interleave_rows([a], None, o)
    del a
    gc.collect()
    base.extend(b"\x00")


# --------------------------------------------------------------- the other public functions

def _get(name):
    fn = getattr(zorder, name, None)
    assert fn is not None, f"zorder.{name} is missing"
    return fn


OTHER_CALLS = {
    "ordered-scalars": lambda: (
        zorder.tinyint_to_ordered_bytes(-5), zorder.short_to_ordered_bytes(300),
        zorder.int_to_ordered_bytes(-70000), zorder.long_to_ordered_bytes(2**40),
        zorder.float_to_ordered_bytes(1.5), zorder.double_to_ordered_bytes(float("nan")),
        zorder.string_to_ordered_bytes("héllo \U0001F600", 9),
        zorder.byte_truncate_or_fill(b"abc", 8)),
    "ordered-scalar-errors": lambda: (
        raises(ValueError, zorder.tinyint_to_ordered_bytes, 300)(),
        raises(TypeError, zorder.int_to_ordered_bytes, 1.5)(),
        raises(ValueError, zorder.string_to_ordered_bytes, "a", -1)(),
        raises(ValueError, zorder.float_to_ordered_bytes, 1.0, iceberg="x")()),
    "ordered-bytes": lambda: (
        zorder.ordered_bytes(np.arange(50, dtype=np.int32)),
        zorder.ordered_bytes(np.linspace(-1, 1, 50)),
        zorder.ordered_bytes(np.array(["a", "bb", None] * 10, dtype=object), 4)),
    "ordered-bytes-errors": lambda: (
        raises(TypeError, zorder.ordered_bytes, np.array([1 + 1j]))(),
        raises(ValueError, zorder.ordered_bytes, np.array([1]), iceberg="x")()),
    "zorder-values": lambda: (
        zorder.zorder_values([np.arange(40, dtype=np.int64), np.linspace(0, 1, 40)]),
        zorder.sort_indices([np.arange(40, dtype=np.int64)[::-1], np.arange(40.0)]),
        zorder.zorder_widths([np.arange(4), np.array(["a", "b", "c", "d"], dtype=object)])),
    "zorder-values-errors": lambda: (
        raises(ValueError, zorder.zorder_values, [])(),
        raises(ValueError, zorder.zorder_values, [np.arange(3), np.arange(2)])(),
        raises(ValueError, zorder.sort_indices, [np.arange(3)], var_length_contribution=0)()),
    "deinterleave": lambda: (
        zorder.deinterleave_bits(b"\x88\x80\x00", [1, 1, 1]),
        zorder.deinterleave_rows(np.zeros((30, 12), U8), [4, 4, 4]),
        raises(ValueError, zorder.deinterleave_bits, b"ab", [-1, 3])()),
    "argsort-zvalues": lambda: (
        zorder.argsort_zvalues(np.arange(120, dtype=U8).reshape(40, 3)),
        raises(ValueError, zorder.argsort_zvalues, np.zeros(3, U8))()),
}
NEEDS = {
    "ordered-scalars": "string_to_ordered_bytes", "ordered-scalar-errors": "tinyint_to_ordered_bytes",
    "ordered-bytes": "ordered_bytes", "ordered-bytes-errors": "ordered_bytes",
    "zorder-values": "zorder_values", "zorder-values-errors": "zorder_values",
    "deinterleave": "deinterleave_rows", "argsort-zvalues": "argsort_zvalues",
}


@pytest.mark.parametrize("name", sorted(OTHER_CALLS))
def test_other_public_functions_flat(name):
    _get(NEEDS[name])
    assert_flat(OTHER_CALLS[name], min_calls=100)
