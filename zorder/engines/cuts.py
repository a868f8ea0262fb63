"""Where to cut curve-sorted rows: the files of a range or a file group, cut where the
curve enters a new cell at about a target size (``aligned_cuts``, ``file_cuts``; and
``cut_files``, the same rule on sorted rows as they stream, holding only the window
around the next cut), and the split keys of ranges (``choose_splits``). Engine-neutral
numpy (pyarrow for the streamed tables): ``zorder cluster`` (Dask) and the Iceberg rewrite
both cut with these."""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

import numpy as np


_CLZ8 = np.array([8] + [8 - int(v).bit_length() for v in range(1, 256)], dtype=np.int64)


def first_differing_bits(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Per row of two ``(m, size)`` uint8 curve-value matrices, the index of the first bit
    (from the most significant) where they differ; ``8 * size`` where they are equal."""
    diff = np.bitwise_xor(before, after)
    nonzero = diff != 0
    first = np.argmax(nonzero, axis=1)
    rows = np.arange(len(diff))
    bits = first * 8 + _CLZ8[diff[rows, first]]
    return np.where(nonzero.any(axis=1), bits, 8 * diff.shape[1])


def _byte_profile(rows: int, row_bytes: Any) -> Optional[Tuple[Any, Any]]:
    """(row grid, estimated bytes before each grid row) of ``row_bytes`` (as for
    ``aligned_cuts``) over ``rows`` rows; None where a density is not positive."""
    if isinstance(row_bytes, tuple):
        at, density = (np.asarray(v, dtype=np.float64) for v in row_bytes)
    else:
        at, density = np.array([0.0]), np.array([float(row_bytes)])
    if not np.all(density > 0):
        return None
    grid = np.linspace(0, rows, min(rows, 1024) + 1)
    mid = (grid[1:] + grid[:-1]) / 2
    return grid, np.concatenate(([0.0], np.cumsum(np.interp(mid, at, density) * np.diff(grid))))


def estimated_bytes(rows: int, row_bytes: Any, start: int, stop: int) -> float:
    """The estimated bytes of rows ``[start, stop)`` of ``rows``, with ``row_bytes`` as
    for ``aligned_cuts``."""
    profile = _byte_profile(rows, row_bytes)
    if profile is None:
        return 0.0
    grid, cumulative = profile
    return float(np.interp(stop, grid, cumulative) - np.interp(start, grid, cumulative))


def file_count(total: float, target: int) -> int:
    """The file count ``aligned_cuts`` plans ``total`` bytes around: one below 1.5
    targets, where it never cuts (with its default tolerance: two files would each be
    more than 25% under the target)."""
    return max(1, round(total / target))


def aligned_cuts(rows: int, row_bytes: Any, target: int, values_at,
                 tolerance: float = 0.25, margin: float = 0.0) -> List[int]:
    """Row offsets ``[0, ..., rows]`` cutting curve-sorted rows into files of about
    ``target`` bytes, each cut placed where the curve value changes at the most
    significant bit nearby.

    A file's min/max statistics skip best when its rows fill one cell of the curve (a
    quadrant, an octant...): a cut in the middle of a cell makes two files that each
    span the cell. So for each file count whose files would be within ``tolerance`` of
    the target, every cut moves, within an eighth of a file either way, to the row where
    the curve value changes at its most significant bit (the smallest first differing
    bit between a row and the one before it); and the count whose files sit in the
    smallest cells wins: the largest mean, over its files, of the first bit where the
    file's first and last curve values differ (ties: the count nearest the plain
    estimate). ``values_at(rows)``: the ``(m, size)`` uint8 curve values of those sorted
    rows. A cut never makes the file before it, or leaves the files after it unable to,
    leave the tolerance where the window allows, and files stay within ``tolerance`` of
    the target where any count allows it.

    ``row_bytes``: bytes per row, one number, or ``(positions, bytes_per_row)`` measured
    at some rows (sorted positions), interpolated in between: parts of the curve
    compress differently. ``margin``: a cut keeps the file before it within
    ``tolerance - margin`` where it can (where this count's equal files are), for the
    estimate's error.
    """
    if rows <= 1:
        return [0, rows]
    profile = _byte_profile(rows, row_bytes)
    if profile is None:
        return [0, rows]
    grid, cumulative = profile

    def size(r: Any) -> Any:
        return np.interp(r, grid, cumulative)

    def row_at(b: float) -> int:
        return int(round(float(np.interp(b, cumulative, grid))))

    total = float(cumulative[-1])
    estimate = file_count(total, target)
    counts = [k for k in range(max(1, estimate - 1), estimate + 2)
              if k <= rows and abs(total / k - target) <= tolerance * target]
    if not counts:
        counts = [min(estimate, rows)]
    best: Tuple[float, int, List[int]] = (float("inf"), 0, [])
    for k in counts:
        slack = max(0, int(rows / k / 8))
        # the margin, where this count's equal files leave room for it
        inner = tolerance - margin
        if inner < 0 or abs(total / k - target) > inner * target:
            inner = tolerance
        cuts = [0]
        for i in range(1, k):
            ideal = row_at(i * total / k)
            lo, hi = max(cuts[-1] + 1, ideal - slack), min(rows - 1, ideal + slack) + 1
            # rows the file before the cut may hold and stay within the tolerance, leaving
            # the files after it room to as well
            start, left = float(size(cuts[-1])), k - i
            sized = (max(lo, row_at(start + (1 - inner) * target),
                         row_at(total - left * (1 + inner) * target)),
                     min(hi, row_at(start + (1 + inner) * target) + 1,
                         row_at(total - left * (1 - inner) * target) + 1))
            if sized[0] < sized[1]:
                lo, hi = sized
            if lo >= hi:
                continue
            window = values_at(np.arange(lo - 1, hi))   # one gather: rows and those before
            found = first_differing_bits(window[:-1], window[1:])
            # the coarsest boundary; among equals, the one nearest the ideal cut
            coarsest = np.flatnonzero(found == found.min())
            at_cut = lo + int(coarsest[np.argmin(np.abs(coarsest + lo - ideal))])
            cuts.append(at_cut)
        cuts.append(rows)
        sizes = np.diff(size(np.array(cuts, dtype=np.float64)))
        fits = bool(np.all(np.abs(sizes - target) <= tolerance * target))
        ends = np.array(cuts)
        spans = first_differing_bits(values_at(ends[:-1]), values_at(ends[1:] - 1))
        score = -float(np.mean(spans)) + (0 if fits else 1e6)
        key = (score, abs(k - estimate))
        if key < (best[0], best[1]):
            best = (score, abs(k - estimate), cuts)
    return best[2]


def file_cuts(keys: np.ndarray, rows_per_file: int) -> List[int]:
    """Row offsets [0, ..., n] splitting sorted keys (curve values as ``S{size}``) into
    files of about rows_per_file rows, cut where the curve enters a new cell
    (``aligned_cuts``, in rows, with its size tolerance), each cut then moved forward to
    where the key changes, so equal keys share a file."""
    n = len(keys)
    if n <= 1:
        return [0, n]
    values = np.ascontiguousarray(keys).view(np.uint8).reshape(n, keys.dtype.itemsize)
    aligned = aligned_cuts(n, 1.0, max(1, rows_per_file), lambda rows: values[rows])
    cuts = [0]
    for at in aligned[1:-1]:
        at = int(np.searchsorted(keys, keys[at - 1], side="right"))
        if cuts[-1] < at < n:
            cuts.append(at)
    cuts.append(n)
    return cuts



def choose_splits(counts: Sequence[int], samples: Sequence[np.ndarray], nranges: int) -> np.ndarray:
    """At most ``nranges - 1`` distinct split keys near the weighted quantiles of the
    samples, each on the edge of a curve cell.

    Each sampled key stands for ``rows / sample size`` rows of its partition, so small and
    large partitions count in proportion (Dask weighs its per-partition percentiles alike).
    A range is about one file, and a file skips best when it fills a cell of the curve (a
    quadrant, an octant...): so each split moves, within an eighth of a range either way,
    to the coarsest cell edge between two neighbouring sampled keys (the smallest first
    differing bit; among equals the one nearest the quantile), and becomes that edge itself
    (the later key's bits up to the first differing one, zeros after), as ``aligned_cuts``
    cuts files.
    """
    pairs = [(s, c / len(s)) for s, c in zip(samples, counts) if len(s)]
    if nranges <= 1 or not pairs:
        return np.array([], dtype=samples[0].dtype if samples else "S1")
    keys = np.concatenate([s for s, _ in pairs])
    weights = np.concatenate([np.full(len(s), w) for s, w in pairs])
    order = np.argsort(keys, kind="stable")
    keys, cum = keys[order], np.cumsum(weights[order])
    if len(keys) < 2:
        return np.array([], dtype=keys.dtype)
    width = keys.dtype.itemsize
    matrix = np.ascontiguousarray(keys).view(np.uint8).reshape(len(keys), width)
    # edge_bit[i - 1]: the first bit where keys[i - 1] and keys[i] differ (8 * width: equal)
    edge_bit = first_differing_bits(matrix[:-1], matrix[1:])
    slack = cum[-1] / nranges / 8
    splits = []
    for target in cum[-1] * np.arange(1, nranges) / nranges:
        pos = min(int(np.searchsorted(cum, target, side="left")), len(keys) - 1)
        lo = max(1, int(np.searchsorted(cum, target - slack, side="left")))
        hi = min(len(keys) - 1, int(np.searchsorted(cum, target + slack, side="right")))
        if lo > hi:
            lo = hi = max(1, pos)
        window = edge_bit[lo - 1:hi]
        coarsest = np.flatnonzero(window == window.min()) + lo
        at = int(coarsest[np.argmin(np.abs(coarsest - pos))])
        bit = int(edge_bit[at - 1])
        if bit >= 8 * width:
            continue  # equal keys all through the window: no edge to split on
        edge = matrix[at].copy()
        edge[bit // 8] &= np.uint8((0xFF00 >> (bit % 8 + 1)) & 0xFF)
        edge[bit // 8 + 1:] = 0
        splits.append(edge.tobytes())
    # A split at or below the smallest key would only make an empty first range.
    out = np.array(splits, dtype=keys.dtype)
    return np.unique(out[out > keys[0]])


def cut_files(tables: Iterable[Any], nrows: int, files: int,
              write: Callable[[Any, bool], None], *, whole_keys: bool = False) -> None:
    """Cut curve-sorted ``tables`` (pyarrow, their curve value column last) into ``files``
    files of about equal rows out of ``nrows``: ``write(rows, last)`` appends rows (or
    None) to the current file, which ``last`` ends. Each cut moves, within an eighth of a
    file either way, to the row where the curve value changes at its most significant bit
    (nearest the even cut among equals), as ``aligned_cuts`` places them. ``whole_keys``:
    a cut never falls between two equal values; one that would moves forward to where the
    value changes, as ``file_cuts`` moves it (the rows stream on into the file meanwhile;
    an even cut it passes is dropped). Rows are handed on as soon as no cut can fall
    before them, and the rows kept for the next cut are copied out of the table they came
    in: only the window around the next cut is held, never a whole table."""
    import pyarrow as pa

    from zorder.values.codec import as_matrix

    files = max(1, min(files, nrows))
    ends = [round(i * nrows / files) for i in range(1, files)]
    slack = nrows // files // 8
    held: List[Any] = []
    start = buffered = 0   # (the first held row, and how many are held)
    copied = 0             # (how many of the first held rows are copies already)
    following = 0          # (the next even cut)
    moving: Optional[bytes] = None   # (whole_keys: the value the open file takes all of)

    def whole() -> Any:
        return pa.concat_tables(held) if len(held) > 1 else held[0]

    def values(lo: int, hi: int) -> np.ndarray:
        rows = whole()
        return as_matrix(rows.column(rows.num_columns - 1).slice(lo - start, hi - lo)
                         .combine_chunks())

    def emit(upto: int, last: bool) -> None:
        nonlocal held, start, buffered, copied
        if upto == start and not last:
            return
        copied = max(0, copied - (upto - start))
        rows = whole() if held else None
        held = []
        if rows is not None and upto - start < rows.num_rows:
            rest = rows.slice(upto - start)
            held = [rest]
            rows = rows.slice(0, upto - start)
        write(rows, last)
        buffered -= upto - start
        start = upto

    def choose(ideal: int) -> int:
        lo = max(start + 1, ideal - slack)
        hi = min(start + buffered, ideal + slack + 1)
        if hi <= lo:
            return min(max(ideal, start + 1), start + buffered)
        found = first_differing_bits(*_pairs(values(lo - 1, hi)))
        coarsest = np.flatnonzero(found == found.min())
        return lo + int(coarsest[np.argmin(np.abs(coarsest + lo - ideal))])

    def change(at: int, value: bytes) -> Optional[int]:
        """The first held row from ``at`` whose value is not ``value``."""
        if at >= start + buffered:
            return None
        keys = values(at, start + buffered)
        differs = np.flatnonzero(np.any(keys != np.frombuffer(value, np.uint8), axis=1))
        return at + int(differs[0]) if len(differs) else None

    def cut(at: int) -> None:
        nonlocal moving
        if whole_keys:
            value = values(at - 1, at)[0].tobytes()
            moved = change(at, value)
            if moved is None:
                moving = value
                emit(start + buffered, False)
                return
            at = moved
        close(at)

    def close(at: int) -> None:
        nonlocal following
        emit(at, True)
        while following < len(ends) and ends[following] <= start:
            following += 1

    for table in tables:
        if not table.num_rows:
            continue
        held.append(table)
        buffered += table.num_rows
        if moving is not None:
            at = change(start, moving)
            if at is None:
                emit(start + buffered, False)
                continue
            moving = None
            close(at)
        while moving is None and following < len(ends) \
                and start + buffered > min(nrows - 1, ends[following] + slack):
            following += 1   # (cut() moves past the even cuts it leaves behind)
            cut(choose(ends[following - 1]))
        if moving is not None:
            continue
        if following < len(ends):
            # (the row before the window stays: the first cut compares with it)
            emit(max(start, min(start + buffered, ends[following] - slack - 1)), False)
        else:
            emit(start + buffered, False)
        if buffered > copied:
            # (the rows of this table kept, copied: a slice would keep the whole table
            # alive; each row is copied once)
            rows = whole()
            fresh = rows.slice(copied)
            held = [rows.slice(0, copied), fresh.take(np.arange(fresh.num_rows))]
            copied = buffered
    while moving is None and following < len(ends) and buffered and start < ends[following]:
        following += 1
        cut(choose(ends[following - 1]))
    emit(start + buffered, True)


def _pairs(matrix: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each row of ``matrix`` but the last, and the row after it."""
    return matrix[:-1], matrix[1:]
