"""Threads: every backend from several Python threads at once on shared read-only input,
every result checked; interleave_rows(threads=N) around the chunk boundaries; the GIL
really released; no state carried from one call to the next.

The kernels keep no mutable global state: their tables (table's SPREAD and pre-shifted
copies, nibble's, pdep's MASK, simd's index tables) are written once at import, and a
call's plan and column descriptions live on its own stack or in its own job object.
"""

import sys
import threading
import time

import numpy as np
import pytest

import zorder

U8 = np.uint8
# Rows per thread below which interleave_rows stays on one thread
# (MIN_ROWS_PER_THREAD in zorder/interleave/_frontend.pyx).
CHUNK = 16384


def backends():
    return [zorder.get_backend(n) for n in zorder.available_backends()]


def make_readonly(a):
    a.flags.writeable = False
    return a


SHAPES = [[8, 8, 8, 8], [4, 4], [1] * 8, [3, 7, 2], [2] * 9, [16, 1, 5, 5, 0, 9], [5] * 5]


@pytest.fixture(scope="module")
def shared_cases():
    """Read-only inputs and the expected bytes, computed once by bitloop on one thread."""
    rng = np.random.default_rng(2024)
    ref = zorder.get_backend("bitloop")
    cases = []
    for widths in SHAPES:
        nrows = int(rng.integers(1, 3000))
        cols = [make_readonly(rng.integers(0, 256, (nrows, w), dtype=U8)) for w in widths]
        total = sum(widths)
        for size in sorted({total, max(total - 3, 1), 1}):
            cases.append((cols, size, make_readonly(ref.interleave_rows(cols, size))))
    return cases


def test_all_backends_from_many_threads_at_once(shared_cases):
    mods = backends()
    nthreads = 8
    rounds = 6
    barrier = threading.Barrier(nthreads)
    failures = []
    checked = [0] * nthreads

    def worker(t):
        try:
            barrier.wait()
            for r in range(rounds):
                for i, (cols, size, want) in enumerate(shared_cases):
                    mod = mods[(t + r + i) % len(mods)]
                    got = mod.interleave_rows(cols, size, threads=1 + (t + i) % 3)
                    if not np.array_equal(got, want):
                        failures.append((mod.name, i, "rows"))
                    row = (t * 7 + r) % cols[0].shape[0]
                    one = mod.interleave_bits([c[row] for c in cols], size)
                    if one != want[row].tobytes():
                        failures.append((mod.name, i, "bits"))
                    checked[t] += 2
        except Exception as exc:   # pragma: no cover - reported below
            failures.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, failures[:10]
    assert sum(checked) == nthreads * rounds * len(shared_cases) * 2
    for cols, _, _ in shared_cases:
        assert all(not c.flags.writeable for c in cols)


def test_shared_out_rows_from_threads(backend):
    """Threads filling disjoint row ranges of one shared out array."""
    rng = np.random.default_rng(7)
    cols = [rng.integers(0, 256, (4000, 6), dtype=U8) for _ in range(3)]
    want = zorder.get_backend("bitloop").interleave_rows(cols)
    out = np.zeros_like(want)
    bounds = [0, 1, 999, 1000, 2345, 3999, 4000]

    def fill(a, b):
        backend.interleave_rows([c[a:b] for c in cols], None, out[a:b])

    ths = [threading.Thread(target=fill, args=ab) for ab in zip(bounds, bounds[1:])]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert np.array_equal(out, want)


def row_counts(n):
    """Row counts around the points where n threads start to be used and chunks change."""
    # chunk = ceil(rows / n) reaches CHUNK at rows = CHUNK * (n - 1) + 1 .. CHUNK * n.
    edges = {CHUNK * n, CHUNK * (n - 1) + 1} if n > 1 else {2, CHUNK}
    return sorted({max(e + d, 1) for e in edges for d in (-1, 0, 1)} | {CHUNK * n + 7 * n})


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("widths, size", [([4, 4, 4, 4], None), ([3, 3, 3], 7), ([2, 5, 1], 7),
                                          ([1] * 10, None), ([1] * 6, 3)],
                         ids=["4x4", "3x3-cut", "ragged", "10x1", "6x1-cut"])
def test_threads_match_one_thread(backend, n, widths, size):
    rng = np.random.default_rng(n * 100 + len(widths))
    biggest = max(row_counts(n))
    cols_all = [rng.integers(0, 256, (biggest, w), dtype=U8) for w in widths]
    ref = zorder.get_backend("bitloop")
    want_all = ref.interleave_rows(cols_all, size)
    for nrows in row_counts(n):
        cols = [c[:nrows] for c in cols_all]
        got = backend.interleave_rows(cols, size, threads=n)
        assert got.shape == (nrows, want_all.shape[1])
        assert np.array_equal(got, want_all[:nrows]), (n, nrows)
        # And into a wider, sentinel-filled out: rows of other threads untouched.
        wide = np.full((nrows, want_all.shape[1] + 3), 0x69, U8)
        backend.interleave_rows(cols, size, wide, threads=n)
        assert np.array_equal(wide[:, :-3], want_all[:nrows])
        assert (wide[:, -3:] == 0x69).all()


def test_threaded_call_uses_more_than_one_thread(backend):
    """With enough rows, interleave_rows(threads=3) runs kernels on other threads."""
    seen = []
    original = threading.Thread.run

    def spy(self):
        seen.append(self.name)
        return original(self)

    cols = [np.zeros((3 * CHUNK, 4), U8) for _ in range(2)]
    threading.Thread.run = spy
    try:
        backend.interleave_rows(cols, threads=3)
    finally:
        threading.Thread.run = original
    assert len(seen) >= 1, "no worker threads were started for 3 chunks of CHUNK rows"
    seen.clear()
    threading.Thread.run = spy
    try:
        backend.interleave_rows([c[: CHUNK + 1] for c in cols], threads=3)   # chunks too small
    finally:
        threading.Thread.run = original
    assert not seen, "threads were started although each would get < CHUNK rows"


def test_gil_released_during_the_kernel(backend):
    """While one thread runs a long interleave_rows, another runs Python code.

    The switch interval is set far beyond the test's length, so the only way the other
    thread can run during the call is the kernel dropping the GIL."""
    cols = [np.full((400_000, 8), 0x5A, U8) for _ in range(4)]
    counter = [0]
    stop = threading.Event()
    started = threading.Event()

    def spin():
        started.set()
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)

    old = sys.getswitchinterval()
    th = threading.Thread(target=spin)
    th.start()
    started.wait()
    sys.setswitchinterval(1000.0)
    try:
        moved = False
        for _ in range(20):
            before = counter[0]
            backend.interleave_rows(cols)
            if counter[0] != before:
                moved = True
                break
    finally:
        sys.setswitchinterval(old)
        stop.set()
        th.join()
    assert moved, "no other Python thread ran during interleave_rows: the GIL was held"


def test_no_state_carried_between_calls(backend):
    """A call's result does not depend on what ran before (plans, scratch, tables)."""
    rng = np.random.default_rng(11)
    shapes = [[8] * 8, [1], [3, 5], [2] * 12, [7, 7, 7], [16, 16]]
    cases = []
    for widths in shapes:
        cols = [rng.integers(0, 256, (50, w), dtype=U8) for w in widths]
        cases.append((cols, backend.interleave_rows(cols)))
    for cols, want in reversed(cases * 3):
        assert np.array_equal(backend.interleave_rows(cols), want)


def test_tables_unchanged_after_concurrent_use(shared_cases):
    table = zorder.get_backend("table")
    before = table.spread_table()
    for k in range(1, 9):
        for b in (0, 1, 0x80, 0xFF):
            want = sum(1 << (8 * k - 1 - i * k) for i in range(8) if b & (0x80 >> i))
            assert before[k][b] == want
    test_all_backends_from_many_threads_at_once(shared_cases)
    assert table.spread_table() == before


def test_deinterleave_from_threads_with_table_cache_churn():
    """deinterleave's per-widths table cache is cleared when full: threads using many
    different widths at once must still each get their own columns back."""
    if not hasattr(zorder, "deinterleave_rows"):
        pytest.skip("deinterleave has not landed")
    rng = np.random.default_rng(3)
    shapes = [[a, b, c] for a in range(1, 6) for b in range(0, 5) for c in range(1, 5)]   # > 64
    data = []
    for widths in shapes:
        cols = [rng.integers(0, 256, (40, w), dtype=U8) for w in widths]
        data.append((widths, cols, zorder.get_backend("bitloop").interleave_rows(cols)))
    failures = []
    barrier = threading.Barrier(6)

    def worker(t):
        barrier.wait()
        for i in range(len(data)):
            widths, cols, z = data[(i * 7 + t * 13) % len(data)]
            back = zorder.deinterleave_rows(z, widths)
            if not all(np.array_equal(a, b) for a, b in zip(back, cols)):
                failures.append(widths)

    ths = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert not failures, failures[:5]
