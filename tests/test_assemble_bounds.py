"""The assembly of narrow ragged rows (csrc/segments.h's zorder_assemble_fn, avx2 and simd)
touches no byte outside what its contract gives it, with every buffer against a guard page.

Inside a real call the hook writes a chunk of a larger output and reads scratch rows with
room after them, so a store past its chunk, or a load past a piece's last row, lands on
bytes that are written again later or never used: no test of whole calls can see it. Here
each buffer is exactly what the contract lets the hook touch, with a page it may not
access right after it (or right before it), so such a load or store faults and the test
process dies, failing the run. The rows the hook says it assembled must be exact.
"""

import os
import sys

import numpy as np
import pytest

import zorder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guarded import Guarded  # noqa: E402

def assembled(sources, pieces, size, rows):
    """The rows as the contract defines them: piece p's row i (n bytes at i * stride of its
    source) at byte `at` of output row i."""
    out = np.zeros((rows, size), np.uint8)
    for src, (stride, n, at) in zip(sources, pieces):
        for i in range(rows):
            out[i, at:at + n] = src[i * stride:i * stride + n]
    return out.reshape(-1)


def random_case(rng):
    """A row of 1-16 bytes cut into 1-8 pieces in order, each from rows of its own stride
    (its n, or a few bytes more, as the staged rows of a group of columns are)."""
    size = int(rng.integers(1, 17))
    npieces = int(rng.integers(1, min(size, 8) + 1))
    cuts = sorted(rng.choice(np.arange(1, size), npieces - 1, replace=False).tolist())
    bounds = [0, *cuts, size]
    pieces = []
    for at, end in zip(bounds, bounds[1:]):
        n = end - at
        gap = int(rng.choice([0, 0, 0, 1, 2, 3, 5, int(rng.integers(0, 14))]))
        pieces.append((n + gap, n, at))
    rows = int(rng.choice([1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 64, 100, 257,
                           int(rng.integers(1, 700))]))
    return size, pieces, rows


@pytest.fixture(params=["avx2", "simd"])
def assemble(request):
    """A backend's assembly hook; skipped, saying why, where it cannot run."""
    try:
        return zorder.get_backend(request.param)._assemble
    except zorder.BackendError as exc:   # not built here (aarch64), or not this CPU's
        pytest.skip(str(exc))


@pytest.mark.parametrize("guard", ["after", "before"])
def test_random_shapes_touch_nothing_outside_their_buffers(assemble, guard):
    rng = np.random.default_rng(20261204)
    cases = done = 0
    for _ in range(1500):
        size, pieces, rows = random_case(rng)
        sources = []
        for stride, n, _at in pieces:
            src = Guarded((rows - 1) * stride + n, guard)
            src.array[:] = rng.integers(0, 256, src.array.size, dtype=np.uint8)
            sources.append(src)
        out = Guarded(rows * size, guard)
        out.array[:] = 0xA5
        r = assemble([(s.array, *p) for s, p in zip(sources, pieces)], size, rows, out.array)
        assert 0 <= r <= rows, (size, pieces, rows, r)
        want = assembled([s.array for s in sources], pieces, size, rows)
        got = out.array[:r * size]
        assert np.array_equal(got, want[:r * size]), (size, pieces, rows, r)
        cases += 1
        done += r > 0
    # the hook really ran: it takes most of these shapes once there are enough rows
    assert done > cases // 3, f"the hook assembled rows in only {done} of {cases} cases"


def test_the_hook_refuses_buffers_that_do_not_fit_its_contract(assemble):
    src = np.zeros(40, np.uint8)
    with pytest.raises(ValueError, match="out: must be exactly"):
        assemble([(src[:32], 4, 4, 0), (src[:29], 4, 1, 4)], 5, 8, np.zeros(39, np.uint8))
    with pytest.raises(ValueError, match=r"pieces\[1\]: src must be exactly"):
        assemble([(src[:32], 4, 4, 0), (src[:30], 4, 1, 4)], 5, 8, np.zeros(40, np.uint8))
    with pytest.raises(ValueError, match=r"pieces\[0\]: stride 4, n 4, at 2 do not fit"):
        assemble([(src[:32], 4, 4, 2)], 5, 8, np.zeros(40, np.uint8))
    with pytest.raises(ValueError, match="pieces: 1 to 8 pieces"):
        assemble([], 5, 8, np.zeros(40, np.uint8))
