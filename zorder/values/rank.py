"""The rank encoding: every column gets its share of the curve (``encoding="rank"``).

Iceberg's Z-order interleaves each column's raw ordered bytes, so a column whose leading
bytes hardly vary (a timestamp over one year, a small id widened to 8 bytes) gets its
bits late and barely clusters. The rank encoding replaces each column's ordered bytes by
its position among quantile split points of that column, a ``rank_bits``-bit unsigned
big-endian number, and interleaves those (as Delta Lake interleaves range-partition ids):
every column then varies from its first bit.

- ``RankBoundaries``: per column, the sorted split points over the column's Iceberg ordered
  bytes (so every type works and nulls, zero bytes, sort first), at most
  ``2**rank_bits - 1`` of them, taken from a deterministic sample (``sample`` rows drawn
  with replacement by ``numpy.random.default_rng(seed)``). A column with at most
  ``2**rank_bits`` distinct values gets those values as split points (each value a
  bucket of its own) when every row was sampled or the sample has almost surely seen
  every value (Good-Turing: few values seen once). Otherwise the split points are
  quantiles of the sample (a heavy value gets a bucket of its own). Either way each
  bucket's rank is the share of the sample below its middle, scaled to the rank range,
  so the leading rank bits split the rows evenly: a column of k equally common values
  varies in its first ceil(log2 k) rank bits, not its last. Serializable to and from
  JSON (hex); boundaries without codes (written by zorder before the spread) keep their
  dense ranks 0, 1, 2, ..., so they give the order they gave.
- ``rank_columns``: ordered bytes to rank bytes, one search per column: for keys of up
  to 8 bytes in C (a bucket table on the key and four comparisons, written as the bytes
  the interleave reads: ``_rank.rank_rows_near`` with each point as its 32-bit offset in
  a bucket at most 2**30 keys wide; ``_rank.rank_rows_two_level`` where points cluster
  or buckets are wider, a crowded bucket cut again on its own bits), numpy
  ``searchsorted`` for wider keys (``S`` dtype); the bucket of a value is the number of
  split points ``<=`` it, so equal values always get equal ranks and rank order is
  byte order.
- ``rank_boundaries``: the split points of a table's columns; ``Ordering``
  (``zorder.values.ordering``) gives their ranks to a curve.

This is not Iceberg's byte layout: Spark's rewrite will not reproduce it.

>>> import numpy as np
>>> b = rank_boundaries([np.array([10, 20, 20, 30])], rank_bits=8)
>>> [r.ravel().tolist() for r in rank_columns([ordered_bytes(np.array([5, 20, 31]))], b)]
[[32, 128, 224]]
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy

from zorder.ordered import IcebergOptions, ordered_bytes  # noqa: F401  (the doctest)
from zorder.ordered.options import ICEBERG_DEFAULT, TimestampOption
from zorder.values._rank import rank_rows, rank_rows_near, rank_rows_two_level, sorted_keys
from zorder.values.table import ColumnSelection, columns_bytes
from zorder.values.stages import RANKS, stage

__all__ = ["ENCODINGS", "RankBoundaries", "rank_boundaries", "rank_columns", "sample_indices"]

#: The encodings of column values before the curve: Iceberg's ordered bytes, or ranks.
ENCODINGS = ("iceberg", "rank")
#: Bits per column rank by default: 65,536 buckets per column.
DEFAULT_RANK_BITS = 16
#: Rows sampled (with replacement) for the split points by default: four per bucket at
#: 16 bits, enough for quantiles, and cheap to sort.
DEFAULT_SAMPLE = 262_144
DEFAULT_SEED = 0
#: The ``format`` field of the JSON form.
FORMAT = "zorder.rank-boundaries"
FORMAT_VERSION = 1

#: The bucket table of the 8-byte search: about a bucket per split point, at most
#: 2**_TABLE_BITS_MAX (finer tables measured slower: they leave the cache).
_TABLE_BITS_MAX = 20
#: Split points ``rank_rows`` compares every key with (a bucket with more is searched).
_PEEK = 4
#: The compact table (``rank_rows_near``): buckets at most 2**_NEAR_SHIFT_MAX keys wide,
#: so a point's offset in its bucket fits an int32; at most 2**_NEAR_START_BITS - 1 points.
_NEAR_SHIFT_MAX = 30
_NEAR_START_BITS = 27
#: The compact table serves a column while at most this share of its rows falls in
#: crowded buckets (searched, tens of ns a row); past it the two-level table does (two
#: table reads a row, every row).
_CROWDED_ROWS_MAX = 1 / 32


def check_encoding(encoding: Any) -> str:
    """``encoding`` checked: "iceberg" or "rank" (ValueError/TypeError naming it)."""
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be a str, 'iceberg' or 'rank', not {type(encoding).__name__}")
    if encoding not in ENCODINGS:
        raise ValueError(
            f"encoding must be 'iceberg' (the default: Iceberg's ordered bytes, as Spark's "
            f"rewrite writes them) or 'rank' (each column's quantile rank, balanced; not "
            f"Iceberg's layout); got {encoding!r}"
        )
    return encoding


def _check_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, numpy.bool_)):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None


def check_rank_bits(rank_bits: Any) -> int:
    """``rank_bits`` checked: a multiple of 8 from 8 to 64."""
    bits = _check_int(rank_bits, "rank_bits")
    if bits < 8 or bits > 64 or bits % 8:
        raise ValueError(f"rank_bits must be a multiple of 8 from 8 to 64, got {bits}")
    return bits


def check_sample(sample: Any) -> int:
    """``sample`` (rows sampled for the split points) checked: an int >= 1."""
    rows = _check_int(sample, "sample")
    if rows < 1:
        raise ValueError(f"sample must be at least 1 row, got {rows}")
    return rows


def check_seed(seed: Any) -> int:
    """``seed`` checked: an int >= 0."""
    value = _check_int(seed, "seed")
    if value < 0:
        raise ValueError(f"seed must be >= 0, got {value}")
    return value


def sample_indices(nrows: int, sample: int = DEFAULT_SAMPLE,
                   seed: int = DEFAULT_SEED) -> Optional[numpy.ndarray]:
    """The rows to sample: None (every row) when ``sample >= nrows``, else ``sample``
    row numbers drawn with replacement by ``numpy.random.default_rng(seed)``, so the same
    ``(nrows, sample, seed)`` always picks the same rows."""
    sample, seed = check_sample(sample), check_seed(seed)
    if sample >= nrows:
        return None
    return numpy.random.default_rng(seed).integers(0, nrows, sample)


# ---- keys: ordered bytes as something numpy compares in byte order ----------------------

def _search_keys(matrix: numpy.ndarray) -> numpy.ndarray:
    """``(N, w)`` ordered bytes as N keys whose numpy order is the unsigned byte order:
    native uint64 (zero-padded on the right) for ``w <= 8``, ``S{w}`` beyond (all keys
    the same width, so numpy's trailing-NUL rule never merges two of them)."""
    n, width = matrix.shape
    if width == 8:
        return numpy.ascontiguousarray(matrix).view(">u8").reshape(n).astype(numpy.uint64)
    if width < 8:
        padded = numpy.zeros((n, 8), numpy.uint8)
        padded[:, :width] = matrix
        return padded.view(">u8").reshape(n).astype(numpy.uint64)
    return numpy.ascontiguousarray(matrix).view(f"S{width}").reshape(n)


def _key_matrix(keys: numpy.ndarray, width: int) -> numpy.ndarray:
    """The inverse of ``_search_keys``: ``(K, width)`` uint8."""
    if keys.dtype == numpy.uint64:
        return numpy.ascontiguousarray(
            keys.astype(">u8").view(numpy.uint8).reshape(len(keys), 8)[:, :width])
    return numpy.frombuffer(keys.tobytes(), numpy.uint8).reshape(len(keys), width).copy()


#: The most rows split points are taken from (a sample: the default is 262,144).
MAX_SAMPLE_ROWS = 2**31 - 1


def _checked_names(names: Any, ncols: int) -> Optional[Tuple[str, ...]]:
    """``names`` as a tuple of str, one per column, or None. A list or tuple only:
    tuple("ts") would name two columns "t" and "s", and a set's order is not the
    columns'."""
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        raise TypeError(f"names must be a list of str (or None), not "
                        f"{'one str' if isinstance(names, str) else type(names).__name__}")
    if not all(isinstance(n, str) for n in names):
        raise TypeError("names must be a list of str (or None)")
    if len(names) != ncols:
        raise ValueError(f"names has {len(names)} entries for {ncols} columns")
    return tuple(names)


def _distinct_sorted(keys: numpy.ndarray) -> numpy.ndarray:
    if len(keys) < 2:
        return keys
    keep = numpy.empty(len(keys), bool)
    keep[0] = True
    numpy.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def _sorted_keys(sample: numpy.ndarray) -> numpy.ndarray:
    """A column's sampled ``(S, width)`` ordered bytes as sorted keys (``_search_keys``)."""
    if sample.shape[1] <= 8:
        if sample.shape[1] > 1 and sample.strides[1] != 1:
            sample = numpy.ascontiguousarray(sample)
        return sorted_keys(sample)
    return numpy.sort(_search_keys(sample))


def _sorted_union(*arrays: numpy.ndarray) -> numpy.ndarray:
    """The distinct values of sorted int arrays, sorted (a stable sort merges the runs)."""
    return _distinct_sorted(numpy.sort(numpy.concatenate(arrays), kind="stable"))


def _split_points(ordered: numpy.ndarray, rank_bits: int,
                  complete: bool = False) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    """(split points: sorted distinct keys, of one column's sorted sampled keys; the rank
    of each bucket, None only for an empty sample). ``complete``: the sample is every
    row."""
    if len(ordered) == 0:
        return ordered, None
    distinct = _distinct_sorted(ordered)
    buckets = 1 << rank_bits
    if len(distinct) <= buckets and (complete or _saw_every_value(ordered, buckets)):
        points = distinct[1:]      # every distinct value a bucket of its own
    else:
        points = _quantile_points(ordered, distinct, min(buckets, len(ordered)))
    # Either way the buckets' ranks spread over the whole field by their share of rows:
    # ranks 0, 1, 2, ... of a few values would vary only in the lowest bits, which the
    # curve reaches last.
    return points, _bucket_codes(ordered, points, rank_bits)


def _saw_every_value(ordered: numpy.ndarray, buckets: int) -> bool:
    """Whether a sample has (almost surely) seen every value of its column: the mass of
    the values it has not seen, estimated by Good and Turing as the share of values seen
    once, is below one bucket. Otherwise the column has more values than the sample
    shows, and a bucket per sampled value would give the unseen ones' rows to their
    sampled neighbours: quantile split points weigh them."""
    n = len(ordered)
    starts = numpy.flatnonzero(numpy.concatenate(([True], ordered[1:] != ordered[:-1])))
    once = int(numpy.count_nonzero(numpy.diff(numpy.append(starts, n)) == 1))
    return once * buckets <= n


def _quantile_points(ordered: numpy.ndarray, distinct: numpy.ndarray,
                     slots: int) -> numpy.ndarray:
    """Split points at the quantiles of a sorted sample's mass, about ``slots - 1``.

    A heavy value (more than 1/slots of the sample) cannot be split, since equal values
    share a rank: it gets a bucket of its own (split points at it and at the next value)
    and the rest of the split points are spread evenly over the mass of the other values,
    so a heavy hitter does not waste the ranks it spans."""
    n = len(ordered)
    starts = numpy.flatnonzero(numpy.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = numpy.diff(numpy.append(starts, n))
    heavy = numpy.flatnonzero(counts * slots > n)
    own = _sorted_union(heavy, heavy + 1)
    own = own[own < len(distinct)]
    # The light values' ranks span their share of the codes (_bucket_codes: the share of
    # rows below), so no more of them than that share of the slots: more would be squeezed
    # into distinct codes past their share, and a heavy value at either end (nulls, NaN, a
    # sentinel) then took a leading-bit half of 35 or 65% of the rows, not 50.
    room = (n - int(counts[heavy].sum())) * slots // n
    budget = min(slots - 1 - len(own), room - 1)
    if budget < (slots - 1) // 2:  # very many heavy values: plain quantiles
        positions = (numpy.arange(1, slots, dtype=numpy.int64) * n) // slots
        points = _distinct_sorted(ordered[positions])
    else:
        light = counts.copy()
        light[heavy] = 0
        mass = numpy.cumsum(light)
        targets = (numpy.arange(1, budget + 1, dtype=numpy.int64) * int(mass[-1])) // (budget + 1)
        chosen = numpy.searchsorted(mass, targets, side="right")
        chosen = chosen[chosen < len(distinct)]
        points = distinct[_sorted_union(own, chosen)]
    return points[points > ordered[0]]


def _bucket_codes(ordered: numpy.ndarray, points: numpy.ndarray, rank_bits: int) -> numpy.ndarray:
    """The rank of each of the ``K + 1`` buckets of ``points``: the share of the sorted
    sample below the middle of the bucket (its mid-rank), scaled to
    ``0 .. 2**rank_bits - 1``, so the leading rank bits split the rows evenly (the
    empirical distribution function), made strictly increasing so distinct buckets keep
    distinct ranks. (The middle, not the start: a heavy value at the top, 70% of the rows,
    started at 0.3 and put every row in the lower half.)"""
    k = len(points)
    if k == 0:   # one bucket (a sample of one value)
        return numpy.zeros(1, numpy.uint64)
    top = (1 << rank_bits) - 1
    n_rows = len(ordered)
    n = numpy.uint64(n_rows)
    edges = numpy.empty(k + 2, numpy.uint64)   # each bucket's first and last + 1 row
    edges[0] = 0
    edges[1:-1] = numpy.searchsorted(ordered, points, side="left")
    edges[-1] = n_rows
    # floor((start + end) * 2**(rank_bits - 1) / n) without overflowing 64 bits: each
    # edge's quotient and remainder (edge * (half % n) < n * n <= 2**64, n < 2**32)
    quotient, remainder = divmod(1 << (rank_bits - 1), n_rows)
    low = edges * numpy.uint64(remainder)
    whole = edges * numpy.uint64(quotient) + low // n
    part = low % n
    codes = whole[:-1] + whole[1:] + (part[:-1] + part[1:]) // n
    steps = numpy.arange(k + 1, dtype=numpy.uint64)
    codes = numpy.maximum.accumulate(codes - numpy.minimum(codes, steps)) + steps
    return numpy.minimum(codes, numpy.uint64(top - k) + steps)


# ---- the search ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Table:
    """What ``rank_rows`` searches sorted uint64 split points with: bucket ``h`` holds
    the keys ``lo + (h << shift)`` up to the next bucket (``lo`` the first point), and
    ``entries[h]`` is the number of points below it, plus ``2**31`` when it holds more
    than ``_PEEK`` (``entries[-1]``: all of them); ``pairs`` holds each point beside the
    code of its rank (the last code after the points), then ``_PEEK`` words
    ``2**64 - 1``, so a search reads the code it finds from the same cache lines."""

    lo: int
    shift: int
    entries: numpy.ndarray
    pairs: numpy.ndarray


@dataclass(frozen=True)
class _NearTable:
    """What ``rank_rows_near`` searches with when every bucket is at most ``2**30`` keys
    wide: bucket ``h`` holds the keys whose offset from ``origin`` (the first point - 1)
    is ``h << shift`` up to the next bucket's; ``entries[h]`` is the number of points
    below it, plus a mask of the next ``_PEEK`` points that lie in it (``<< 27``), or
    ``2**31`` when it holds more; ``offsets`` each point's offset in its bucket (int32),
    ``codes`` the big-endian code of each rank: 6 bytes a point at 16 rank bits, not 16,
    so a table of 65,536 points stays in a 1 MB cache."""

    origin: int
    shift: int
    crowded: bool
    entries: numpy.ndarray
    offsets: numpy.ndarray
    codes: numpy.ndarray


@dataclass(frozen=True)
class _TwoLevelTable:
    """What ``rank_rows_two_level`` searches with when points cluster or buckets are wider
    than ``2**30`` keys: the first level (``first``) buckets a key's offset from
    ``origin`` by ``shift`` bits as ``_NearTable`` does. A bucket of at most ``_PEEK``
    points has its entry there, in ``_NearTable``'s form; a crowded one is cut again on
    the bits where its points vary: its entry (bit 31 set) names where its sub-table
    starts in ``second`` (low 25 bits) and the sub-table's bucket width (the next 6), and
    ``second`` holds entries of ``_NearTable``'s form. So a lookup reads one or two
    entries, then four points. ``offsets``: each point's offset in its bucket as an int32
    (its top 30 bits in a bucket wider than ``2**30`` keys); ``points``: the points
    themselves where some bucket is (a key with a point's top bits is compared in full),
    else None."""

    origin: int
    shift: int
    crowded: bool
    first: numpy.ndarray
    second: numpy.ndarray
    offsets: numpy.ndarray
    points: Optional[numpy.ndarray]
    codes: numpy.ndarray


def _bucket_shift(points: numpy.ndarray, origin: int) -> Tuple[int, numpy.ndarray]:
    """(bucket width in bits, points per bucket) of the table of sorted points: a bucket
    per point; up to four per point while some bucket holds more than ``_PEEK`` (points
    packed close together, as around heavy values, are searched otherwise)."""
    k = len(points)
    span = int(points[-1]) - origin
    table_bits = min(_TABLE_BITS_MAX, k.bit_length())
    while True:
        shift = max(0, span.bit_length() - table_bits)
        buckets = ((points - numpy.uint64(origin)) >> numpy.uint64(shift)).astype(numpy.intp)
        count = numpy.bincount(buckets, minlength=(span >> shift) + 1)
        if (shift == 0 or table_bits >= min(_TABLE_BITS_MAX, k.bit_length() + 2)
                or not bool(numpy.any(count > _PEEK))):
            return shift, count
        table_bits += 1


def _crowded_rows(count: numpy.ndarray, codes: numpy.ndarray) -> float:
    """The share of rows whose keys fall in crowded buckets (searched), by the codes: a
    bucket's rows are about the codes its ranks span (the codes are row shares; dense
    codes, point shares)."""
    crowded = numpy.flatnonzero(count > _PEEK)
    if len(crowded) == 0:
        return 0.0
    starts = numpy.concatenate(([0], numpy.cumsum(count)))
    spanned = codes[starts[crowded + 1]].astype(numpy.float64) - codes[starts[crowded]]
    return float(spanned.sum()) / max(1.0, float(codes[-1]) - float(codes[0]))


def _build_table(points: numpy.ndarray, codes: Optional[numpy.ndarray], nbytes: int,
                 layout: Optional[str] = None) -> Union[_Table, _NearTable, _TwoLevelTable, None]:
    """The search table of a column's sorted uint64 split points (None without points):
    a ``_NearTable`` if its buckets fit and few rows fall in crowded ones, else a
    ``_TwoLevelTable``, past whose limits a ``_Table``. ``layout`` ("near", "two-level",
    "wide") forces one where it fits (the tests compare them)."""
    k = len(points)
    if k == 0:
        return None
    if codes is None:
        codes = numpy.arange(k + 1, dtype=numpy.uint64)
    lo = int(points[0])
    origin = lo - 1 if lo else 0
    shift, count = _bucket_shift(points, origin)
    if layout != "wide" and k < 1 << _NEAR_START_BITS:
        fits = shift <= _NEAR_SHIFT_MAX
        if layout == "near" and fits or (
                layout is None and fits and _crowded_rows(count, codes) <= _CROWDED_ROWS_MAX):
            return _near_table(points, codes, nbytes, origin, shift, count)
        two = _two_level_table(points, codes, nbytes, (shift, count))
        if two is not None:
            return two
    shift, count = _bucket_shift(points, lo)
    entries = numpy.zeros(len(count) + 1, numpy.uint32)
    numpy.cumsum(count, out=entries[1:])
    entries[:-1] |= (count > _PEEK).astype(numpy.uint32) << numpy.uint32(31)
    pairs = numpy.full((k + _PEEK, 2), 2**64 - 1, numpy.uint64)
    pairs[:k, 0] = points
    pairs[:k + 1, 1] = codes
    for array in (entries, pairs):
        array.setflags(write=False)
    return _Table(lo, shift, entries, pairs)


def _near_table(points: numpy.ndarray, codes: numpy.ndarray, nbytes: int, origin: int,
                shift: int, count: numpy.ndarray) -> _NearTable:
    k = len(points)
    crowded = count > _PEEK
    entries = numpy.zeros(len(count) + 1, numpy.uint32)
    numpy.cumsum(count, out=entries[1:])
    lanes = (numpy.uint32(1) << numpy.minimum(count, _PEEK).astype(numpy.uint32)) - numpy.uint32(1)
    entries[:-1] |= numpy.where(crowded, numpy.uint32(1 << 31),
                                lanes << numpy.uint32(_NEAR_START_BITS)).astype(numpy.uint32)
    size = (1 << k.bit_length()) + _PEEK        # 2**p > k, and the peek past the last
    offsets = numpy.full(size, 2**31 - 1, numpy.int32)
    offsets[:k] = (points - numpy.uint64(origin)) & numpy.uint64((1 << shift) - 1)
    ranked = numpy.full(size, codes[k], numpy.uint64)
    ranked[:k + 1] = codes
    code_bytes = numpy.ascontiguousarray(
        ranked.astype(">u8").view(numpy.uint8).reshape(size, 8)[:, 8 - nbytes:])
    for array in (entries, offsets, code_bytes):
        array.setflags(write=False)
    return _NearTable(origin, shift, bool(numpy.any(crowded)), entries, offsets, code_bytes)


#: A crowded first-level bucket of c points is cut into at most 2**(bit length of c +
#: _SUB_BITS_MORE) sub-buckets (points closer than that are searched).
_SUB_BITS_MORE = 1
_TWO_BASE_BITS = 25


def _bit_length(values: numpy.ndarray) -> numpy.ndarray:
    """The bit length of each uint64: the float's exponent, less one where the value
    rounded up to the next power of two."""
    _, length = numpy.frexp(values.astype(numpy.float64))
    length = length.astype(numpy.int64)
    shifted = values >> numpy.maximum(length - 1, 0).astype(numpy.uint64)
    return length - (shifted == 0) * (length > 0)


def _sub_bits(relative: numpy.ndarray, bucket: numpy.ndarray, count: numpy.ndarray,
              shift: int) -> numpy.ndarray:
    """Per first-level bucket, the bits of its sub-table: 0 for a bucket of at most
    ``_PEEK`` points; else the fewest that leave no sub-bucket with more than ``_PEEK``,
    at most the bit length of its count + ``_SUB_BITS_MORE`` (and ``shift``).

    A sub-bucket holds more than ``_PEEK`` points when some ``_PEEK + 1`` consecutive
    points share it, that is the bits above it of the first and the last of them: so
    the bits needed are the most, over such runs in the bucket, that the run's ends
    share below the bucket's own bits, plus one."""
    bits = numpy.zeros(len(count), numpy.int64)
    if len(relative) <= _PEEK:
        return bits
    first, last = relative[:-_PEEK], relative[_PEEK:]
    together = bucket[:-_PEEK] == bucket[_PEEK:]
    if not bool(numpy.any(together)):
        return bits
    shared = shift - _bit_length(first[together] ^ last[together]) + 1
    owner = bucket[:-_PEEK][together]              # sorted: the most of each run of owners
    runs = numpy.flatnonzero(numpy.concatenate(([True], owner[1:] != owner[:-1])))
    bits[owner[runs]] = numpy.maximum.reduceat(shared, runs)
    crowded = numpy.flatnonzero(bits)
    cap = numpy.minimum(_bit_length(count[crowded].astype(numpy.uint64)) + _SUB_BITS_MORE, shift)
    bits[crowded] = numpy.minimum(bits[crowded], cap)
    return bits


def _two_level_table(points: numpy.ndarray, codes: numpy.ndarray, nbytes: int,
                     buckets: Optional[Tuple[int, numpy.ndarray]] = None) -> Optional[_TwoLevelTable]:
    """The two-level table of sorted uint64 split points (None past its limits);
    ``buckets``: ``_bucket_shift`` of them, if known."""
    k = len(points)
    lo = int(points[0])
    origin = lo - 1 if lo else 0
    # the first level as the one-level table's (finer where points crowd: fewer sub-tables)
    shift, count = _bucket_shift(points, origin) if buckets is None else buckets
    relative = points - numpy.uint64(origin)
    bucket = (relative >> numpy.uint64(shift)).astype(numpy.intp)
    bits = _sub_bits(relative, bucket, count, shift)
    # Any bucket of at most _PEEK points has its entry in the first level; a crowded one
    # gets a sub-table of 2**bits entries and one after them (its end, for the search of
    # a crowded sub-bucket).
    split = numpy.flatnonzero(bits)
    size = (numpy.int64(1) << bits[split]) + 1
    base = numpy.cumsum(size) - size
    total = int(size.sum())
    if total + 1 > 1 << _TWO_BASE_BITS:
        return None
    sub_shift = shift - bits[split]
    starts = numpy.zeros(len(count) + 1, numpy.int64)
    numpy.cumsum(count, out=starts[1:])
    first = starts[:-1].astype(numpy.uint32)
    first |= ((numpy.uint32(1) << numpy.minimum(count, _PEEK).astype(numpy.uint32))
              - numpy.uint32(1)) << numpy.uint32(_NEAR_START_BITS)
    first[split] = (numpy.uint32(1 << 31) | base.astype(numpy.uint32)
                    | (sub_shift.astype(numpy.uint32) << numpy.uint32(_TWO_BASE_BITS)))
    inside = bits[bucket] > 0
    table = numpy.searchsorted(split, bucket[inside])      # each such point's sub-table
    width = numpy.full(k, shift, numpy.uint64)            # each point's bucket width in bits
    width[inside] = sub_shift[table]
    slot = base[table] + ((relative[inside] & numpy.uint64((1 << shift) - 1))
                          >> width[inside]).astype(numpy.int64)
    in_slot = numpy.bincount(slot, minlength=total)
    owner = numpy.repeat(numpy.arange(len(split)), size)
    before = numpy.cumsum(in_slot) - in_slot          # points in the slots before, all tables
    second = numpy.full(max(2, 1 << total.bit_length()), k, numpy.uint32)
    second[:total] = starts[split][owner] + before - before[base[owner]]
    crowded = in_slot > _PEEK
    lanes = (numpy.uint32(1) << numpy.minimum(in_slot, _PEEK).astype(numpy.uint32)) - numpy.uint32(1)
    second[:total] |= numpy.where(crowded, numpy.uint32(1 << 31),
                                  lanes << numpy.uint32(_NEAR_START_BITS)).astype(numpy.uint32)
    size_points = (1 << k.bit_length()) + _PEEK
    cut = numpy.maximum(width, numpy.uint64(_NEAR_SHIFT_MAX)) - numpy.uint64(_NEAR_SHIFT_MAX)
    offsets = numpy.full(size_points, 2**31 - 1, numpy.int32)
    offsets[:k] = (relative & ((numpy.uint64(1) << width) - numpy.uint64(1))) >> cut
    exact: Optional[numpy.ndarray] = None
    if bool(numpy.any(cut)):
        exact = numpy.full(size_points, 2**64 - 1, numpy.uint64)
        exact[:k] = points
    ranked = numpy.full(size_points, codes[k], numpy.uint64)
    ranked[:k + 1] = codes
    code_bytes = numpy.ascontiguousarray(
        ranked.astype(">u8").view(numpy.uint8).reshape(size_points, 8)[:, 8 - nbytes:])
    for array in (first, second, offsets, exact, code_bytes):
        if array is not None:
            array.setflags(write=False)
    return _TwoLevelTable(origin, shift, bool(numpy.any(crowded)), first, second, offsets,
                          exact, code_bytes)


def _ranks(keys: numpy.ndarray, points: numpy.ndarray) -> numpy.ndarray:
    """For each key (wider than 8 bytes: ``S`` dtype), the number of split points ``<=``
    it (int64), by numpy's binary search."""
    if len(points) == 0:
        return numpy.zeros(len(keys), numpy.int64)
    return numpy.searchsorted(points, keys, side="right").astype(numpy.int64, copy=False)


def _rank_bytes(ranks: numpy.ndarray, nbytes: int) -> numpy.ndarray:
    """Ranks as ``(N, nbytes)`` big-endian unsigned bytes (a view for 3, 5, 6, 7)."""
    if nbytes in (1, 2, 4, 8):
        return ranks.astype(f">u{nbytes}").view(numpy.uint8).reshape(len(ranks), nbytes)
    return ranks.astype(">u8").view(numpy.uint8).reshape(len(ranks), 8)[:, 8 - nbytes:]


# ---- boundaries ------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RankBoundaries:
    """Per column, the sorted split points of the rank encoding, over Iceberg's ordered
    bytes.

    A value's rank is the number of its column's split points ``<=`` its ordered bytes:
    ``0 .. len(splits)``, at most ``2**rank_bits - 1``. Build one with
    ``rank_boundaries`` (from a table) or ``RankBoundaries.from_ordered`` (from sampled
    ordered bytes, e.g. a distributed sample); store it with ``to_json`` and reuse it
    (``from_json``) so later data gets ranks consistent with earlier data.

    Attributes:
        rank_bits: bits per rank, a multiple of 8 from 8 to 64.
        splits: one ``(K, width)`` uint8 array per column, rows strictly increasing as
            unsigned bytes, ``K <= 2**rank_bits - 1``; ``width`` is the column's ordered
            byte width (8, or ``var_length_contribution`` for strings and binary).
        names: the column names, or None (columns given as a list).
        codes: per column, a strictly increasing ``(K + 1,)`` uint64 array, the rank
            of each bucket (the share of the sample below the middle of the bucket,
            scaled to ``0 .. 2**rank_bits - 1``, so the leading rank bits split the
            rows evenly), or None: dense ranks, a value's rank the number of split
            points ``<=`` it, as zorder wrote every column of few values before the
            spread (kept so saved boundaries give the order they gave); None for the
            whole means all dense.
    """

    rank_bits: int
    splits: Tuple[numpy.ndarray, ...]
    names: Optional[Tuple[str, ...]] = None
    codes: Optional[Tuple[Optional[numpy.ndarray], ...]] = None
    _keys: List[Any] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        bits = check_rank_bits(self.rank_bits)
        object.__setattr__(self, "rank_bits", bits)
        if isinstance(self.splits, numpy.ndarray) or not isinstance(self.splits, (list, tuple)):
            raise TypeError("splits must be a list of (K, width) uint8 arrays, one per column")
        if not self.splits:
            raise ValueError("splits must hold at least one column")
        checked = []
        for i, m in enumerate(self.splits):
            # A copy of its own, made read-only: the caller's array stays writable, and
            # changing it later cannot change these split points or their search keys.
            m = numpy.array(m, order="C", copy=True)
            if m.dtype != numpy.uint8 or m.ndim != 2 or m.shape[1] < 1:
                raise ValueError(f"splits[{i}] must be a (K, width) uint8 array with width "
                                 f">= 1, got dtype {m.dtype} shape {m.shape}")
            if m.shape[0] > (1 << bits) - 1:
                raise ValueError(f"splits[{i}] has {m.shape[0]} split points; rank_bits={bits} "
                                 f"allows at most {(1 << bits) - 1}")
            keys = _search_keys(m)
            if len(keys) > 1 and not bool(numpy.all(keys[1:] > keys[:-1])):
                raise ValueError(f"splits[{i}] must be strictly increasing as unsigned bytes")
            m.setflags(write=False)
            checked.append(m)
            self._keys.append(keys)
        object.__setattr__(self, "splits", tuple(checked))
        object.__setattr__(self, "names", _checked_names(self.names, len(checked)))
        codes = (None,) * len(checked) if self.codes is None else self.codes
        if not isinstance(codes, (list, tuple)) or len(codes) != len(checked):
            raise ValueError(f"codes must be a list of one entry per column ({len(checked)})")
        checked_codes: List[Optional[numpy.ndarray]] = []
        for i, c in enumerate(codes):
            if c is not None:
                c = numpy.asarray(c)
                k = checked[i].shape[0]
                if c.dtype != numpy.uint64 or c.shape != (k + 1,):
                    raise ValueError(f"codes[{i}] must be a ({k + 1},) uint64 array, got "
                                     f"dtype {c.dtype} shape {c.shape}")
                if bool(numpy.any(c[1:] <= c[:-1])) or int(c[-1]) > (1 << bits) - 1:
                    raise ValueError(f"codes[{i}] must be strictly increasing and below "
                                     f"2**rank_bits")
                c = c.copy()
                c.setflags(write=False)
            checked_codes.append(c)
        object.__setattr__(self, "codes", tuple(checked_codes))
        self._keys[:] = [(keys, _build_table(keys, c, bits // 8)
                          if keys.dtype == numpy.uint64 else None)
                         for keys, c in zip(self._keys, checked_codes)]

    @property
    def widths(self) -> Tuple[int, ...]:
        """Each column's ordered byte width."""
        return tuple(m.shape[1] for m in self.splits)

    @property
    def counts(self) -> Tuple[int, ...]:
        """Each column's number of split points (its largest rank)."""
        return tuple(m.shape[0] for m in self.splits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RankBoundaries):
            return NotImplemented
        return (self.rank_bits == other.rank_bits and self.names == other.names
                and all((a is None and b is None) or (a is not None and b is not None
                                                    and bool(numpy.array_equal(a, b)))
                        for a, b in zip(self.codes or (), other.codes or ()))
                and len(self.splits) == len(other.splits)
                and all(a.shape == b.shape and bool(numpy.array_equal(a, b))
                        for a, b in zip(self.splits, other.splits)))

    def __repr__(self) -> str:
        return (f"RankBoundaries(rank_bits={self.rank_bits}, names={self.names}, "
                f"widths={self.widths}, counts={self.counts}, "
                f"quantile={tuple(c is not None for c in self.codes or ())})")

    @classmethod
    def from_ordered(cls, ordered_columns: Sequence[Any], rank_bits: int = DEFAULT_RANK_BITS,
                     names: Optional[Sequence[str]] = None, *,
                     complete: bool = False) -> "RankBoundaries":
        """Boundaries from sampled ordered bytes: one ``(S, width)`` uint8 array per
        column (the rows of a sample, e.g. gathered from every partition of a
        distributed table). All sampled rows count; nulls are zero bytes.

        A column's distinct values are its split points (a bucket per value) when it
        has at most ``2**rank_bits`` of them and ``complete`` (the rows are the whole
        data) or the sample has almost surely seen every value (few values seen only
        once); otherwise quantile split points. Either way the buckets' ranks fill the
        whole rank range by their share of the rows."""
        bits = check_rank_bits(rank_bits)
        parts = _check_ordered(ordered_columns)
        if parts[0].shape[0] > MAX_SAMPLE_ROWS:
            # (the split points' 64-bit arithmetic holds for fewer than 2**31 rows)
            raise ValueError(f"ordered_columns: at most {MAX_SAMPLE_ROWS:,} sampled rows, got "
                             f"{parts[0].shape[0]:,}; sample them first (rank_boundaries' "
                             f"sample=)")
        names = _checked_names(names, len(parts))   # (before the work, not after it)
        with stage(RANKS):
            found = [_split_points(_sorted_keys(p), bits, bool(complete)) for p in parts]
        splits = [_key_matrix(points, p.shape[1]) for (points, _), p in zip(found, parts)]
        return cls(bits, tuple(splits), names, tuple(codes for _, codes in found))

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict: split points as one hex string per column."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "rank_bits": self.rank_bits,
            "columns": [
                {"name": None if self.names is None else self.names[i], "width": m.shape[1],
                 "count": m.shape[0], "splits": m.tobytes().hex(),
                 "codes": None if c is None else c.astype(">u8").tobytes().hex()}
                for i, (m, c) in enumerate(zip(self.splits, self.codes or (None,) * len(self.splits)))
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RankBoundaries":
        """The inverse of ``to_dict``; ValueError for anything it would not have written."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(f"boundaries: not a {FORMAT} object")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"boundaries: unknown version {data.get('version')!r}, "
                             f"this zorder reads version {FORMAT_VERSION}")
        columns = data.get("columns")
        if not isinstance(columns, list) or not columns:
            raise ValueError("boundaries: 'columns' must be a non-empty list")
        splits, names, codes = [], [], []
        for i, col in enumerate(columns):
            try:
                width, count, text = col["width"], col["count"], col["splits"]
                if not all(isinstance(v, int) and not isinstance(v, bool) for v in (width, count)):
                    raise TypeError(f"width and count must be integers, got {width!r}, {count!r}")
                if not isinstance(text, str):
                    raise TypeError(f"splits must be a hex string, not {type(text).__name__}")
                raw = bytes.fromhex(text)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"boundaries: column {i} is malformed ({exc})") from None
            if width < 1 or width >= 1 << 31:
                # (numpy refuses a dimension past its index range in words naming nothing)
                raise ValueError(f"boundaries: column {i} has width {width}, not 1 to "
                                 f"2**31 - 1 bytes")
            if count < 0 or len(raw) != width * count:
                raise ValueError(f"boundaries: column {i} has {len(raw)} bytes of split "
                                 f"points, not count {count} x width {width}")
            splits.append(numpy.frombuffer(raw, numpy.uint8).reshape(count, width).copy())
            names.append(col.get("name"))
            text = col.get("codes")
            try:
                codes.append(None if text is None else numpy.frombuffer(
                    bytes.fromhex(str(text)), ">u8").astype(numpy.uint64))
            except ValueError as exc:
                raise ValueError(f"boundaries: column {i} has malformed codes ({exc})") from None
        named = all(isinstance(n, str) for n in names)
        if not named and any(n is not None for n in names):
            raise ValueError(f"boundaries: the columns' names must all be strings or all "
                             f"null, got {names!r}")
        if "rank_bits" not in data:
            raise ValueError("boundaries: 'rank_bits' is missing")
        try:
            return cls(data["rank_bits"], tuple(splits), tuple(names) if named else None,
                       tuple(codes))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"boundaries: {exc}") from None

    def to_json(self, indent: Optional[int] = None) -> str:
        """``to_dict`` as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "RankBoundaries":
        """The inverse of ``to_json``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"boundaries: not JSON ({exc})") from None
        except RecursionError:   # (json's decoder recurses once per level of nesting)
            raise ValueError("boundaries: not JSON this zorder reads (nested too deeply)") from None
        return cls.from_dict(data)


def _check_ordered(ordered_columns: Any) -> List[numpy.ndarray]:
    if isinstance(ordered_columns, numpy.ndarray) or not isinstance(ordered_columns, (list, tuple)):
        raise TypeError("ordered_columns must be a list of (N, width) uint8 arrays, one per column")
    if not ordered_columns:
        raise ValueError("ordered_columns is empty: at least one column is needed")
    parts: List[numpy.ndarray] = []
    for i, p in enumerate(ordered_columns):
        p = numpy.asarray(p)
        if p.dtype != numpy.uint8 or p.ndim != 2:
            raise TypeError(f"ordered_columns[{i}] must be a 2-D uint8 array (ordered bytes), "
                            f"got dtype {p.dtype} with {p.ndim} dimensions")
        if parts and p.shape[0] != parts[0].shape[0]:
            raise ValueError(f"ordered_columns[{i}] has {p.shape[0]} rows, the first has "
                             f"{parts[0].shape[0]}")
        parts.append(p)
    return parts


def rank_columns(ordered_columns: Sequence[Any], boundaries: RankBoundaries,
                 rank_bits: Optional[int] = None) -> List[numpy.ndarray]:
    """Each column's ordered bytes as ranks: ``(N, rank_bits // 8)`` uint8, big-endian.

    The rank of a value is the number of its column's split points ``<=`` its ordered
    bytes, so rank order is Iceberg's byte order (nulls, zero bytes, first) and equal
    values get equal ranks. One vectorized search per column, no loop per row.

    Args:
        ordered_columns: one ``(N, width)`` uint8 array per column (``ordered_bytes``),
            widths as in ``boundaries``.
        boundaries: a ``RankBoundaries`` for these columns.
        rank_bits: must equal ``boundaries.rank_bits`` if given.
    """
    if not isinstance(boundaries, RankBoundaries):
        raise TypeError(f"boundaries must be a RankBoundaries, not {type(boundaries).__name__}")
    if rank_bits is not None and check_rank_bits(rank_bits) != boundaries.rank_bits:
        raise ValueError(f"rank_bits={rank_bits} but the boundaries were made for "
                         f"rank_bits={boundaries.rank_bits}")
    parts = _check_ordered(ordered_columns)
    check_shapes(parts, boundaries, None)
    with stage(RANKS):
        return _ranked(parts, boundaries)


def _ranked(parts: List[numpy.ndarray], boundaries: RankBoundaries) -> List[numpy.ndarray]:
    nbytes = boundaries.rank_bits // 8
    out = []
    for i, (part, (points, table)) in enumerate(zip(parts, boundaries._keys)):
        if table is not None:   # 8 bytes or fewer: the C search writes the rank bytes
            if part.shape[1] > 1 and part.strides[1] != 1:
                part = numpy.ascontiguousarray(part)
            ranked = numpy.empty((part.shape[0], nbytes), numpy.uint8)
            if isinstance(table, _NearTable):
                rank_rows_near(part, table.entries, table.offsets, table.codes, table.origin,
                               table.shift, table.crowded, ranked)
            elif isinstance(table, _TwoLevelTable):
                rank_rows_two_level(part, table.first, table.second, table.offsets,
                                    table.points, table.codes, table.origin, table.shift,
                                    table.crowded, ranked)
            else:
                rank_rows(part, table.pairs, table.entries, table.lo, table.shift, ranked)
            out.append(ranked)
            continue
        ranks = _ranks(_search_keys(part), points)
        codes = boundaries.codes[i] if boundaries.codes else None
        if codes is not None:
            ranks = codes[ranks]
        out.append(_rank_bytes(ranks, nbytes))
    return out


def check_shapes(parts: Sequence[numpy.ndarray], boundaries: RankBoundaries,
                  names: Optional[List[str]]) -> None:
    if len(parts) != len(boundaries.splits):
        raise ValueError(f"boundaries: made for {len(boundaries.splits)} columns, "
                         f"got {len(parts)}")
    if names is not None and boundaries.names is not None and list(boundaries.names) != names:
        raise ValueError(f"boundaries: made for columns {list(boundaries.names)}, not {names}")
    for i, (part, width) in enumerate(zip(parts, boundaries.widths)):
        if part.shape[1] != width:
            label = names[i] if names is not None else f"column {i}"
            raise ValueError(f"boundaries: {label} has {width}-byte split points but "
                             f"{part.shape[1]}-byte ordered bytes here (was "
                             f"var_length_contribution different?)")


# ---- tables ----------------------------------------------------------------------------------

def column_names(data: Any, columns: ColumnSelection) -> Optional[List[str]]:
    """The selected column names as str, when the data has names; else None."""
    if isinstance(data, (list, tuple)):
        return None
    if columns is None:
        if hasattr(data, "column_names"):
            found = list(data.column_names)
        elif hasattr(data, "columns"):
            found = list(data.columns)
        elif isinstance(data, Mapping):
            found = list(data.keys())
        else:
            return None
    else:
        found = [columns] if isinstance(columns, str) else list(columns)
    return found if all(isinstance(n, str) for n in found) else None


def boundaries_of(parts: List[numpy.ndarray], rank_bits: int, names: Optional[List[str]],
                  sample: int = DEFAULT_SAMPLE, seed: int = DEFAULT_SEED) -> RankBoundaries:
    """The boundaries of these ordered bytes: from ``sample`` rows drawn with ``seed``."""
    rows = sample_indices(parts[0].shape[0], sample, seed)
    if rows is None:
        return RankBoundaries.from_ordered(parts, rank_bits, names, complete=True)
    return RankBoundaries.from_ordered([numpy.take(p, rows, axis=0) for p in parts],
                                       rank_bits, names)


def rank_boundaries(data: Any, columns: ColumnSelection = None, *,
                    rank_bits: int = DEFAULT_RANK_BITS, sample: int = DEFAULT_SAMPLE,
                    seed: int = DEFAULT_SEED, var_length_contribution: int = 8,
                    iceberg: str = ICEBERG_DEFAULT, spark: str = "4", timestamp: TimestampOption = None,
                    options: Optional[IcebergOptions] = None) -> RankBoundaries:
    """The split points of ``encoding="rank"`` for ``data``'s ``columns``.

    Every column becomes Iceberg's ordered bytes (as in ``zorder_values``), ``sample``
    rows are drawn with replacement by ``numpy.random.default_rng(seed)`` (every row
    when there are no more than ``sample``), and each column gets ``2**rank_bits - 1``
    quantile split points of its sampled bytes, or, with fewer distinct sampled values
    than ``2**rank_bits``, those values; the buckets' ranks spread over the whole rank
    range by their share of the rows (two equally common values: ranks 1/4 and 3/4 of
    it).

    Pass the result as ``boundaries=`` to ``zorder_values``, ``sort_indices`` or
    ``sort`` (with ``encoding="rank"``), here or in a later run (``to_json``), so new
    data is ranked consistently with the old.

    Args:
        data, columns: as for ``zorder_values``.
        rank_bits: bits per rank, a multiple of 8 from 8 to 64.
        sample: rows to sample, >= 1.
        seed: the sample's seed, >= 0.
        var_length_contribution, iceberg, spark, timestamp, options: the Iceberg options
            of the ordered bytes, as for ``zorder_values``.

    >>> import numpy as np
    >>> rank_boundaries([np.array([3, 1, 2, 2])]).counts
    (2,)
    """
    bits = check_rank_bits(rank_bits)
    sample, seed = check_sample(sample), check_seed(seed)
    opts = IcebergOptions.of(options, var_length_contribution=var_length_contribution,
                             iceberg=iceberg, spark=spark, timestamp=timestamp)
    parts, _ = columns_bytes(data, columns, opts)
    return boundaries_of(parts, bits, column_names(data, columns), sample, seed)


def check_encoding_arguments(encoding: Any, rank_bits: Any, boundaries: Any) -> Optional[int]:
    """``encoding``, ``rank_bits`` and ``boundaries`` checked together; the rank bits to
    use (``rank_bits``, else the boundaries', else ``DEFAULT_RANK_BITS``; None for
    ``"iceberg"``, so an ``Ordering`` made again with ``replace`` stays valid).

    ``rank_bits`` and ``boundaries`` belong to ``encoding="rank"``: with Iceberg's bytes
    they are refused, not ignored, so a call never silently differs from what it says."""
    check_encoding(encoding)
    if boundaries is not None and not isinstance(boundaries, RankBoundaries):
        raise TypeError(f"boundaries must be a RankBoundaries (see rank_boundaries), not "
                        f"{type(boundaries).__name__}")
    if encoding == "iceberg":
        for name, value in (("boundaries", boundaries), ("rank_bits", rank_bits)):
            if value is not None:
                raise ValueError(f"{name} is for encoding='rank'; encoding='iceberg' uses "
                                 f"Iceberg's bytes as they are")
        return None
    if rank_bits is None:
        return DEFAULT_RANK_BITS if boundaries is None else boundaries.rank_bits
    bits = check_rank_bits(rank_bits)
    if boundaries is not None and boundaries.rank_bits != bits:
        raise ValueError(f"rank_bits={bits} but the boundaries were made for "
                         f"rank_bits={boundaries.rank_bits}")
    return bits
