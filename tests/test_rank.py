"""The rank encoding (encoding="rank", issue 16): rank order is value order for every
type, equal values share a rank, nulls come first, sampling is deterministic, boundaries
survive JSON, few distinct values spread over the whole rank field (issue 39), saved
boundaries of dense ranks keep their order, and columns of very different magnitudes or
cardinalities all reach the leading bits of the output."""

import json

import numpy as np
import pytest

import zorder
from zorder.values import rank as rank_mod
from zorder.values.rank import RankBoundaries, rank_boundaries, rank_columns
from zorder.values.ordering import Ordering

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


def as_ints(rank_bytes):
    """(N, k) big-endian rank bytes -> Python ints."""
    return [int.from_bytes(bytes(row), "big") for row in rank_bytes]


def ranks_of(values, sample=None, rank_bits=8, length=8):
    """Ranks of ``values`` against boundaries made from ``sample`` (default: values)."""
    ob = zorder.ordered_bytes(values, length)
    sob = ob if sample is None else zorder.ordered_bytes(sample, length)
    b = RankBoundaries.from_ordered([sob], rank_bits)
    return as_ints(rank_columns([ob], b)[0])


def check_monotone(keys, ranks):
    """a < b (by key) gives rank(a) <= rank(b); equal keys give equal ranks."""
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    for i, j in zip(order, order[1:]):
        if keys[i] == keys[j]:
            assert ranks[i] == ranks[j], (keys[i], ranks[i], ranks[j])
        else:
            assert ranks[i] <= ranks[j], (keys[i], keys[j], ranks[i], ranks[j])


def float_key(x):
    # Iceberg's bytes put -0.0 before 0.0: two values there, one in Python's order.
    return (x, not np.signbit(x))


TYPES = {
    "int8": (st.integers(-128, 127), lambda v: np.array(v, np.int8), None),
    "int16": (st.integers(-2**15, 2**15 - 1), lambda v: np.array(v, np.int16), None),
    "int32": (st.integers(-2**31, 2**31 - 1), lambda v: np.array(v, np.int32), None),
    "int64": (st.integers(-2**63, 2**63 - 1), lambda v: np.array(v, np.int64), None),
    "float32": (st.floats(allow_nan=False, width=32), lambda v: np.array(v, np.float32), float_key),
    "float64": (st.floats(allow_nan=False), lambda v: np.array(v, np.float64), float_key),
    "bool": (st.booleans(), lambda v: np.array(v, bool), None),
    "date": (st.integers(-100_000, 100_000), lambda v: np.array(v, "M8[D]"), None),
    "timestamp_ntz": (st.integers(-2**50, 2**50), lambda v: np.array(v, "M8[us]"), None),
    "string": (st.text(max_size=6), lambda v: np.array(v, object), None),
    "binary": (st.binary(max_size=10), lambda v: np.array(v, object), None),
}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_rank_order_is_value_order_for_every_type(kind):
    strategy, build, key = TYPES[kind]
    key = key or (lambda x: x)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(strategy, min_size=1, max_size=700), st.data())
    def check(values, data):
        # A sample of the values (possibly missing the extremes) makes the boundaries;
        # rank_bits=8 forces quantiles once there are more than 256 distinct values.
        picks = data.draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=400))
        arr = build(values)
        sample = build([values[i] for i in picks])
        length = 4 if kind in ("string", "binary") else 8
        ranks = ranks_of(arr, sample, rank_bits=8, length=length)
        if kind in ("string", "binary"):
            # Truncated to `length` bytes, values that differ later tie: still <=. Strings
            # drop a character that does not fit whole (Iceberg's quirk), so their rank
            # follows the ordered bytes, not Python's string order.
            keys = [bytes(r) for r in zorder.ordered_bytes(arr, length)]
            check_monotone(keys, ranks)
            if kind == "binary":
                check_monotone(list(values), ranks)
        else:
            check_monotone([key(v) for v in arr.tolist()], ranks)
        assert max(ranks) <= 255

    check()


def _reference(keys_matrix, boundaries):
    """The number of split points <= each key, by Python bytes comparison, spread over
    the whole rank range when the boundaries say so."""
    points = [bytes(p) for p in boundaries.splits[0]]
    ranks = [sum(p <= bytes(k) for p in points) for k in keys_matrix]
    if boundaries.codes[0] is not None:
        ranks = [int(boundaries.codes[0][r]) for r in ranks]
    return ranks


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.data())
def test_vectorized_search_matches_plain_comparison(width, data):
    # Keys near the ends of the byte range and crowded split points exercise the bucket
    # table (8 bytes and fewer) and the S-key search (wider).
    edge = st.sampled_from([0, 1, 0x7F, 0x80, 0xFE, 0xFF])
    byte = st.one_of(edge, st.integers(0, 255))
    row = st.lists(byte, min_size=width, max_size=width)
    keys = np.array(data.draw(st.lists(row, min_size=1, max_size=60)), np.uint8)
    sample = np.array(data.draw(st.lists(row, min_size=1, max_size=300)), np.uint8)
    bits = data.draw(st.sampled_from([8, 16]))
    b = RankBoundaries.from_ordered([sample], bits, complete=data.draw(st.booleans()))
    assert as_ints(rank_columns([keys], b)[0]) == _reference(keys, b)


def test_duplicates_and_nulls():
    pa = pytest.importorskip("pyarrow")
    values = [5, None, 3, 5, None, -7, 3, 5, 2**40]
    t = pa.table({"x": pa.array(values, pa.int64())})
    b = rank_boundaries(t)
    r = as_ints(rank_columns([zorder.ordered_bytes(t["x"])], b)[0])
    by_value = {}
    for v, k in zip(values, r):
        by_value.setdefault(v, set()).add(k)
    assert all(len(s) == 1 for s in by_value.values())      # equal values, equal ranks
    # Nulls first; each value's rank the share of rows below its middle (9 rows, 16 bits).
    got = [by_value[v].pop() for v in (None, -7, 3, 5, 2**40)]
    assert got == [(a + b) * 2**15 // 9 for a, b in ((0, 2), (2, 3), (3, 5), (5, 8), (8, 9))]


def test_heavy_value_never_straddles_ranks():
    rng = np.random.default_rng(1)
    values = np.concatenate([np.full(50_000, 42), rng.integers(0, 10**9, 50_000)])
    ranks = np.array(ranks_of(values, rank_bits=8))
    assert len(set(ranks[values == 42])) == 1
    check_monotone(values.tolist(), ranks.tolist())
    assert ranks.max() > 200                                # the quantile ranks are used


def test_sample_is_deterministic_for_a_seed():
    rng = np.random.default_rng(2)
    data = [rng.normal(size=300_000), rng.integers(0, 10**12, 300_000)]
    a = rank_boundaries(data, sample=50_000, seed=7)
    b = rank_boundaries(data, sample=50_000, seed=7)
    c = rank_boundaries(data, sample=50_000, seed=8)
    assert a == b and a.to_json() == b.to_json()
    assert a != c
    assert np.array_equal(rank_mod.sample_indices(10**6, 1000, 3),
                          rank_mod.sample_indices(10**6, 1000, 3))
    assert rank_mod.sample_indices(1000, 1000, 3) is None       # every row
    z1 = zorder.zorder_values(data, encoding="rank")
    z2 = zorder.zorder_values(data, encoding="rank")
    assert np.array_equal(z1, z2)


def test_boundaries_round_trip_through_json():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"name": [f"user{i % 997}" for i in range(5000)],
                       "score": rng.normal(size=5000)})
    b = rank_boundaries(df, ["name", "score"], var_length_contribution=12, rank_bits=8)
    text = b.to_json()
    back = RankBoundaries.from_json(text)
    assert back == b
    assert back.names == ("name", "score") and back.widths == (12, 8)
    assert json.loads(text)["columns"][1]["count"] == 255
    z1 = zorder.zorder_values(df, columns=["name", "score"], var_length_contribution=12,
                              encoding="rank", boundaries=b)
    z2 = zorder.zorder_values(df, columns=["name", "score"], var_length_contribution=12,
                              encoding="rank", boundaries=back)
    assert np.array_equal(z1, z2) and z1.shape == (5000, 2)


def test_a_boundaries_file_that_is_not_text_names_the_option(tmp_path):
    from zorder.cli.args import load_boundaries

    (tmp_path / "data.parquet").write_bytes(b"PAR1\x15\x80\x04\xff")
    with pytest.raises(ValueError, match="--boundaries: cannot read .* as JSON"):
        load_boundaries(str(tmp_path / "data.parquet"))


def test_a_deeply_nested_boundaries_file_names_the_option(tmp_path):
    from zorder.cli.args import load_boundaries

    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(ValueError, match="--boundaries: cannot read .* as JSON .nested too deeply"):
        load_boundaries(str(tmp_path / "deep.json"))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="other"), "not a zorder.rank-boundaries"),
    (lambda d: d.update(version=99), "unknown version"),
    (lambda d: d["columns"][0].update(splits="zz"), "malformed"),
    (lambda d: d["columns"][0].update(count=3), "not count 3 x width 8"),
    (lambda d: d["columns"][0].update(splits="8000000000000002" + "8000000000000001",
                                       count=2), "strictly increasing"),
    (lambda d: d.update(rank_bits=12), "multiple of 8"),
    (lambda d: d["columns"][0].update(codes="00"), "codes"),
    (lambda d: d["columns"][0].update(codes="0000000000000002" * 3), "strictly increasing"),
    (lambda d: d.pop("rank_bits"), "'rank_bits' is missing"),        # was a bare KeyError
    (lambda d: d["columns"][0].update(width=10**30, count=0, splits=""),  # numpy's own error
     r"boundaries: column 0 has width 10{30}, not 1 to 2\*\*31 - 1 bytes"),
    (lambda d: d["columns"][0].update(width=8.7), r"width and count must be integers, got 8.7"),
    (lambda d: d["columns"][0].update(width="8"), r"width and count must be integers, got '8'"),
    (lambda d: d["columns"][1].update(name=None), r"names must all be strings or all null"),
])
def test_bad_json_is_refused(edit, message):
    d = rank_boundaries({"a": np.array([1, 2, 3]), "b": np.array([4, 5, 6])}).to_dict()
    edit(d)
    with pytest.raises(ValueError, match=message):
        RankBoundaries.from_dict(d)
    with pytest.raises(ValueError, match="not JSON"):
        RankBoundaries.from_json("{")


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a": ' * 100_000, '{"columns": ' + "[" * 100_000])
def test_deeply_nested_json_is_a_value_error(text):
    """json's decoder recurses once per level: its RecursionError escaped from_json."""
    with pytest.raises(ValueError, match="boundaries: not JSON this zorder reads"):
        RankBoundaries.from_json(text)


@pytest.mark.parametrize("names, kind", [("ts", "one str"), ({"t", "s"}, "set"),
                                         ({"t": 1, "s": 2}, "dict"), (iter(["t", "s"]), "list_iterator")])
def test_names_not_given_as_a_list_are_refused(names, kind):
    """A str named two columns "t" and "s"; a set's order (the hash seed's) matched one
    column's split points to the other's name."""
    with pytest.raises(TypeError, match=f"names must be a list of str \\(or None\\), not {kind}"):
        RankBoundaries.from_ordered([np.zeros((3, 8), np.uint8)] * 2, 16, names=names)


def test_names_that_are_not_strings_are_refused_before_any_work(monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("split points were computed before names were checked")

    monkeypatch.setattr(rank_mod, "_split_points", no_work)
    with pytest.raises(TypeError, match=r"names must be a list of str \(or None\)$"):
        RankBoundaries.from_ordered([np.zeros((3, 8), np.uint8)] * 2, 16, names=["a", 1])
    with pytest.raises(ValueError, match="names has 1 entries for 2 columns"):
        RankBoundaries.from_ordered([np.zeros((3, 8), np.uint8)] * 2, 16, names=["a"])


def test_boundaries_keep_their_own_copy_of_the_split_points():
    """The caller's array stays writable (it was made read-only in place), and changing it
    afterwards changes nothing in the boundaries."""
    mine = np.array([[1], [2]], np.uint8)
    b = RankBoundaries(8, [mine])
    mine[0, 0] = 5
    assert b.splits[0].tolist() == [[1], [2]] and not b.splits[0].flags.writeable
    ranks = rank_columns([np.array([[0], [1], [2], [3]], np.uint8)], b)[0]
    assert ranks.ravel().tolist() == [0, 1, 2, 2]


def test_few_distinct_values_spread_over_the_whole_field():
    values = np.array([30, 10, 20, 10, 50, 40, 30] * 100)
    for bits in (8, 16, 32):
        b = rank_boundaries([values], rank_bits=bits)
        assert b.counts == (4,)                       # a bucket per value
        z = zorder.zorder_values([values], encoding="rank", boundaries=b)
        assert z.shape == (700, bits // 8)
        got = as_ints(z)
        # 10, 20, 30, 40, 50 hold 2, 1, 2, 1, 1 of every 7 rows: each rank the share of
        # rows below the middle of its value, so the top 3 bits tell the 5 values apart.
        rank = {v: (a + c) * 2**(bits - 1) // 7
                for v, (a, c) in zip((10, 20, 30, 40, 50), ((0, 2), (2, 3), (3, 5), (5, 6), (6, 7)))}
        assert got[:7] == [rank[v] for v in (30, 10, 20, 10, 50, 40, 30)]
        assert len({r >> (bits - 3) for r in rank.values()}) == 5


@pytest.mark.parametrize("k", [2, 3, 8, 200, 4096])
def test_a_column_of_k_values_varies_in_its_leading_bits(k):
    """Issue 39: dense ranks 0 .. k-1 of a 16-bit field varied only in the low bits,
    which the curve reaches last. k equally common values now differ in their first
    ceil(log2 k) bits, and the first bit splits the rows in half."""
    values = np.repeat(np.arange(k) * 1000 - 7, 8)
    ranks = as_ints(zorder.zorder_values([values], encoding="rank", rank_bits=16))
    lead = (k - 1).bit_length()
    assert len({r >> (16 - lead) for r in ranks}) == k
    assert abs(np.mean(np.array(ranks) >= 2**15) - 0.5) <= 0.5 / k
    check_monotone(values.tolist(), ranks)


def test_saved_boundaries_without_codes_keep_their_dense_ranks():
    """Boundaries as zorder wrote them before the spread (a column of few values has no
    codes) load and give the order they gave: ranks 0, 1, 2, ..."""
    saved = ('{"format": "zorder.rank-boundaries", "version": 1, "rank_bits": 8, "columns": ['
             '{"name": "flag", "width": 8, "count": 2, "splits": '
             '"80000000000000028000000000000003", "codes": null}, '
             '{"name": "x", "width": 8, "count": 5, "splits": "800000000000000a80000000000000'
             '14800000000000001e80000000000000288000000000000032", "codes": null}]}')
    b = RankBoundaries.from_json(saved)
    assert b.codes == (None, None)
    data = {"flag": np.array([1, 2, 3, 0, 4]), "x": np.array([0, 25, 50, 7, 99])}
    z = zorder.zorder_values(data, encoding="rank", boundaries=b)
    assert z.tolist() == [[0, 0], [0, 6], [0, 25], [0, 0], [0, 25]]   # as the old release
    assert json.loads(b.to_json())["columns"][0]["codes"] is None
    # Learned again, the same columns spread over the field.
    again = rank_boundaries({"flag": np.array([3, 1, 2, 2, 1, 3]), "x": np.arange(6) * 10},
                            rank_bits=8)
    assert all(c is not None for c in again.codes)
    assert np.asarray(zorder.zorder_values(data, encoding="rank", boundaries=again))[:, 0].max() >= 0x80


@pytest.mark.parametrize("rank_bits", [8, 64])
def test_a_sample_of_one_row_gives_boundaries_at_every_rank_width(rank_bits):
    """A one-row sample (of a tiny partition, say) at 64 bits: an OverflowError."""
    b = rank_boundaries([np.arange(10)], rank_bits=rank_bits, sample=1)
    codes = np.asarray(zorder.zorder_values([np.arange(10)], encoding="rank", boundaries=b))
    assert codes.shape == (10, rank_bits // 8)
    one = zorder.RankBoundaries.from_ordered([np.zeros((1, 8), np.uint8)], rank_bits)
    assert np.asarray(zorder.zorder_values([np.arange(3)], encoding="rank", boundaries=one)).shape == (3, rank_bits // 8)


def test_dense_only_when_the_sample_saw_every_value():
    rng = np.random.default_rng(6)
    few = rng.integers(0, 100, 500_000)                 # every value seen ~2,600 times
    many = rng.integers(0, 2**40, 500_000)              # nearly every value seen once
    b = rank_boundaries([few, many], sample=100_000)    # a sample, not every row
    assert b.counts[0] == 99                            # a bucket per value
    assert b.counts[1] > 60_000                         # quantiles
    # Every row (no sampling) with few enough distinct values: a bucket per value,
    # whatever their counts.
    assert rank_boundaries([np.arange(1000)], rank_bits=16).counts[0] == 999


def test_quantile_ranks_split_the_rows_evenly():
    # Zipf-skewed ids (heavy hitters at random ids): the leading rank bit splits the rows,
    # not the distinct values, in half; so does every other leading bit pattern.
    rng = np.random.default_rng(7)
    ids = rng.permutation(2_000_000)[np.minimum(rng.zipf(1.2, 1_000_000), 2_000_000) - 1]
    z = zorder.zorder_values([ids], encoding="rank")
    ranks = z.view(">u2").ravel()
    b = rank_boundaries([ids])
    assert b.codes[0] is not None
    assert b.codes[0][-1] <= 2**16 - 1 and np.all(np.diff(b.codes[0].astype(np.int64)) > 0)
    assert 0.45 < np.mean(ranks >= 2**15) < 0.55
    quarters = np.bincount(ranks >> 14, minlength=4) / len(ranks)
    assert np.all(np.abs(quarters - 0.25) < 0.06), quarters
    check_monotone(ids[:20_000].tolist(), ranks[:20_000].tolist())


@pytest.mark.parametrize("rank_bits", [8, 16])
@pytest.mark.parametrize("heavy, share, upper", [
    ("null", 0.3, 0.5),      # nulls rank first: the light rows fill the rest of the halves
    ("top", 0.3, 0.5),       # a sentinel (or NaN) above every value
    ("top", 0.7, 0.7),       # too heavy to split: alone in the upper half
])
def test_a_heavy_value_at_either_end_leaves_the_leading_bit_balanced(rank_bits, heavy, share,
                                                                     upper):
    """Ranks spent on the light values past their share of the codes were squeezed to
    0, 1, 2, ...: 30% nulls put 35% of the rows in the upper half, a 30% top value 65%,
    and a 70% one, whose rank was the share below it, none."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(3)
    n = 400_000
    values = rng.integers(-10**9, 10**9, n)
    marked = rng.random(n) < share
    column = (pa.array(values, mask=marked) if heavy == "null"
              else np.where(marked, 2**62, values))
    from zorder.values.codec import as_matrix   # (an Arrow column gives an Arrow array)

    z = as_matrix(zorder.zorder_values([column], encoding="rank", rank_bits=rank_bits))
    ranks = z.view(">u2").ravel() if rank_bits == 16 else z.ravel()
    assert abs(np.mean(ranks >> (rank_bits - 1)) - upper) < 0.01
    keys = np.where(marked, 2**62 if heavy == "top" else -2**63, values)   # (nulls first)
    check_monotone(keys[:5_000].tolist(), ranks[:5_000].tolist())


def test_rank_widths_and_big_endian_output():
    values = np.arange(1000)
    for bits in (8, 24, 40, 64):
        z = zorder.zorder_values([values], encoding="rank", rank_bits=bits)
        assert z.shape == (1000, bits // 8)
        if bits > 8:   # a bucket per value: the middle of each value's share of rows
            assert as_ints(z) == [(2 * i + 1) * 2**(bits - 1) // 1000 for i in range(1000)]
    z = zorder.zorder_values([values, values], encoding="rank", rank_bits=16, max_output_size=3)
    assert z.shape == (1000, 3)


def first_varying_output_bits(z, widths):
    """For equal-width columns: the output bit position of each column's first bit that
    is not the same in every row (Z-order puts column c's bit p at p * n + c)."""
    n = len(widths)
    out = []
    for c, col in enumerate(zorder.deinterleave_rows(z, widths)):
        bits = np.unpackbits(col, axis=1)
        varying = np.flatnonzero((bits != bits[:1]).any(axis=0))
        out.append(int(varying[0]) * n + c)
    return out


def test_columns_of_very_different_magnitudes_share_the_leading_bits():
    rng = np.random.default_rng(4)
    n = 200_000
    ts = np.datetime64("2025-01-01", "us") + rng.integers(0, 365 * 86400 * 10**6, n).astype("m8[us]")
    user_id = np.minimum(rng.zipf(1.3, n), 2_000_000).astype(np.int64)
    iceberg = zorder.zorder_values([ts, user_id])
    ts_first, user_first = first_varying_output_bits(iceberg, [8, 8])
    # Iceberg's bytes: the timestamp owns every early bit; user_id starts far behind.
    assert ts_first < 40 and user_first > 80
    assert user_first - ts_first > 40
    ranked = zorder.zorder_values([ts, user_id], encoding="rank")
    assert ranked.shape == (n, 4)
    ts_first, user_first = first_varying_output_bits(ranked, [2, 2])
    # The timestamp's 65,536 quantile ranks vary from the first bit; user_id has fewer
    # distinct values than that, a bucket each, spread over the field: from its first bit
    # too, not after ~90 bits.
    assert len(np.unique(user_id)) < 2**16
    assert (ts_first, user_first) == (0, 1)


def test_sort_and_sort_indices_take_the_encoding():
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")   # sort() of a DataFrame below
    rng = np.random.default_rng(5)
    t = pa.table({"a": rng.integers(0, 100, 5000), "b": rng.normal(size=5000)})
    z = zorder.zorder_values(t, columns=["a", "b"], encoding="rank")
    assert isinstance(z, pa.FixedSizeBinaryArray) and z.type.byte_width == 4
    p = zorder.sort_indices(t, columns=["a", "b"], encoding="rank")
    assert np.array_equal(p, zorder.argsort_zvalues(z))
    assert not np.array_equal(p, zorder.sort_indices(t, columns=["a", "b"]))
    assert zorder.sort(t, ["a", "b"], encoding="rank").equals(t.take(p))
    df = t.to_pandas()
    assert zorder.sort(df, ["a", "b"], encoding="rank").index.tolist() == p.tolist()
    # Boundaries from one increment rank the next consistently.
    b = rank_boundaries(t.slice(0, 2500), ["a", "b"])
    later = zorder.zorder_values(t.slice(2500), columns=["a", "b"], encoding="rank",
                                 boundaries=b)
    assert later.type.byte_width == 4


def test_hilbert_of_ranks():
    values = [np.arange(300), np.arange(300)[::-1].copy()]
    parts = [zorder.ordered_bytes(v) for v in values]
    b = RankBoundaries.from_ordered(parts, 16)
    h = Ordering(curve="hilbert", encoding="rank", boundaries=b).values(parts)
    assert np.array_equal(h, zorder.hilbert_rows(rank_columns(parts, b), 16))
    with pytest.raises(ValueError, match="curve"):
        Ordering(curve="peano", encoding="rank", boundaries=b)


def test_bad_arguments_name_the_argument():
    data = [np.array([1, 2, 3])]
    with pytest.raises(ValueError, match="encoding must be 'iceberg'"):
        zorder.zorder_values(data, encoding="ranks")
    with pytest.raises(TypeError, match="encoding must be a str"):
        zorder.sort_indices(data, encoding=None)
    for bits in (0, 12, 72):
        with pytest.raises(ValueError, match="rank_bits must be a multiple of 8"):
            zorder.zorder_values(data, encoding="rank", rank_bits=bits)
    with pytest.raises(TypeError, match="rank_bits must be an int"):
        zorder.zorder_values(data, encoding="rank", rank_bits="16")
    with pytest.raises(TypeError, match="sample must be an int"):
        rank_boundaries(data, sample=1.5)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        rank_boundaries(data, seed=-1)
    b = rank_boundaries(data)
    # (rank_bits with Iceberg's bytes was ignored; both are refused, in every entry point)
    for keywords in ({"boundaries": b}, {"rank_bits": 16}):
        with pytest.raises(ValueError, match=f"{next(iter(keywords))} is for encoding='rank'"):
            zorder.zorder_values(data, **keywords)
        with pytest.raises(ValueError, match="is for encoding='rank'"):
            zorder.hilbert_values(data, **keywords)
        with pytest.raises(ValueError, match="is for encoding='rank'"):
            zorder.sort_indices(data, **keywords)
    with pytest.raises(TypeError, match="boundaries must be a RankBoundaries"):
        zorder.zorder_values(data, encoding="rank", boundaries={"x": 1})
    with pytest.raises(ValueError, match="made for 1 columns, got 2"):
        zorder.zorder_values(data * 2, encoding="rank", boundaries=b)
    with pytest.raises(ValueError, match="rank_bits=8 but the boundaries"):
        zorder.zorder_values(data, encoding="rank", rank_bits=8, boundaries=b)
    s = rank_boundaries([np.array(["a", "b"], object)], var_length_contribution=16)
    with pytest.raises(ValueError, match="16-byte split points but 8-byte"):
        zorder.zorder_values([np.array(["a"], object)], encoding="rank", boundaries=s)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": [1, 2], "y": [3, 4]})
    named = rank_boundaries(df, ["x"])
    with pytest.raises(ValueError, match=r"made for columns \['x'\], not \['y'\]"):
        zorder.zorder_values(df, columns=["y"], encoding="rank", boundaries=named)
    with pytest.raises(ValueError, match="at most 255"):
        RankBoundaries(8, (np.arange(256 * 8, dtype=np.uint8).reshape(256, 8),))


@pytest.mark.parametrize("width", [0, 1, 2, 3, 4])
def test_short_zvalues_sort_stably_like_the_radix_sort(width):
    from zorder.values._radix import argsort_rows

    rng = np.random.default_rng(width)
    z = rng.integers(0, 4, (50_000, width)).astype(np.uint8)   # many ties
    got = zorder.argsort_zvalues(z)
    assert got.dtype == np.int64
    assert np.array_equal(got, argsort_rows(np.ascontiguousarray(z)) if width else np.arange(50_000))
    rows = [bytes(r) for r in z]
    assert np.array_equal(got, sorted(range(len(rows)), key=lambda i: rows[i]))


def test_the_radix_sort_in_scratch_memory_gives_the_same_order():
    # the Iceberg rewrite hands the sort memory touched ahead on another thread
    from zorder.values._radix import argsort_rows, rows_scratch

    rng = np.random.default_rng(5)
    z = rng.integers(0, 3, (20_000, 16)).astype(np.uint8)   # ties at every depth
    scratch = rows_scratch(25_000)
    got = argsort_rows(z, scratch)
    assert np.array_equal(got, argsort_rows(z))
    assert np.shares_memory(got, scratch[0])
    with pytest.raises(ValueError, match="scratch: four writable"):
        argsort_rows(z, rows_scratch(19_999))
    with pytest.raises(ValueError, match="scratch: four writable"):
        argsort_rows(z, scratch[:3])
    # made only where the radix sort of rows will take it (not for short Z-values)
    from zorder.values.sort import _argsort_zvalues, sort_scratch
    assert sort_scratch(100, 4) is None and len(sort_scratch(100, 5)) == 4
    short = rng.integers(0, 3, (1000, 4)).astype(np.uint8)
    assert np.array_equal(_argsort_zvalues(short, None), zorder.argsort_zvalues(short))


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 4), n=st.integers(0, 3000), low=st.integers(0, 31),
       span=st.integers(0, 32), distinct=st.sampled_from([1, 2, 7, 1 << 20]),
       seed=st.integers(0, 2**32 - 1), step=st.sampled_from([1, 3]))
def test_lsd_argsort_of_short_rows_is_the_stable_byte_order(width, n, low, span, distinct,
                                                             seed, step):
    # Varying bits anywhere (one pass, or three digits of 11 bits) and strided rows.
    from zorder.values._radix import argsort_short

    rng = np.random.default_rng(seed)
    bits = width * 8
    low, span = min(low, bits - 1), min(span, bits - min(low, bits - 1))
    pool = rng.integers(0, 1 << span, distinct, dtype=np.uint64) << np.uint64(low)
    base = int(rng.integers(0, 1 << bits, dtype=np.uint64)) & ~(((1 << span) - 1) << low)
    keys = np.uint64(base) | pool[rng.integers(0, distinct, n * step)]
    z = keys.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - width:][::step]
    got = argsort_short(z)
    rows = [bytes(r) for r in z]
    assert got.dtype == np.int64
    assert got.tolist() == sorted(range(len(rows)), key=lambda i: rows[i])


def test_lsd_argsort_refuses_long_rows():
    from zorder.values._radix import argsort_short

    with pytest.raises(ValueError, match="at most 4 bytes, not 5"):
        argsort_short(np.zeros((3, 5), np.uint8))


def test_an_ordering_made_again_stays_valid():
    """An engine's Ordering is copied with dataclasses.replace; Iceberg's bytes carry no
    rank bits (a default of 16 there would now be refused as rank_bits with 'iceberg')."""
    from dataclasses import replace

    from zorder.values.ordering import Ordering

    plain = Ordering()
    assert plain.rank_bits is None
    assert replace(plain, curve="hilbert").rank_bits is None
    ranked = Ordering(encoding="rank")
    assert ranked.rank_bits == 16 and replace(ranked, curve="hilbert").rank_bits == 16
    with pytest.raises(ValueError, match="rank_bits is for encoding='rank'"):
        Ordering(rank_bits=8)


def test_a_sample_past_the_split_points_arithmetic_is_refused_before_any_work():
    """From 2**31 rows the heavy-value test and the codes' 64-bit products could wrap."""
    huge = np.broadcast_to(np.zeros((1, 1), np.uint8), (2**31, 1))   # (no memory)
    with pytest.raises(ValueError, match="at most 2,147,483,647 sampled rows, got 2,147,483,648"):
        RankBoundaries.from_ordered([huge], 16)


def _parquet_footers(table, files):
    """``table`` cut into ``files`` Parquet files of equal row counts, written to memory:
    their footers, as ``skipping_report`` reads them."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    n = table.num_rows
    cuts = [n * i // files for i in range(files + 1)]
    footers = []
    for a, b in zip(cuts, cuts[1:]):
        sink = pa.BufferOutputStream()
        pq.write_table(table.slice(a, b - a), sink)
        footers.append(pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata)
    return footers


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_columns_of_2_and_200_values_and_a_double_all_skip_files(curve):
    """Issue 39's test: with dense ranks the 2- and 200-value columns varied only in their
    low rank bits and no file could be skipped on them; spread, each column skips at least
    30% of 16 files (1% range predicates, the report's default)."""
    pa = pytest.importorskip("pyarrow")
    from zorder.parquet.skipping import skipping_report

    rng = np.random.default_rng(11)
    n = 64_000
    table = pa.table({"flag": rng.integers(0, 2, n), "city": rng.integers(0, 200, n) * 7,
                      "x": rng.normal(size=n)})
    columns = table.column_names
    order = zorder.sort_indices(table, columns=columns, encoding="rank", curve=curve)
    report = skipping_report(_parquet_footers(table, 16), _parquet_footers(table.take(order), 16),
                             columns, values={c: table.column(c) for c in columns})
    skipped = {c: report["columns"][c]["after"]["files_skipped"] for c in columns}
    assert all(share >= 0.30 for share in skipped.values()), skipped


def _numpy_rank_bytes(matrix, boundaries, column=0):
    """The rank bytes by numpy alone: ``searchsorted`` over the split points as ``S``
    keys, then the codes, as big-endian bytes."""
    width = matrix.shape[1]
    points = np.ascontiguousarray(boundaries.splits[column]).view(f"S{width}").ravel()
    keys = np.ascontiguousarray(matrix).view(f"S{width}").ravel()
    ranks = np.searchsorted(points, keys, side="right").astype(np.uint64)
    codes = boundaries.codes[column]
    if codes is not None:
        ranks = codes[ranks]
    nbytes = boundaries.rank_bits // 8
    return ranks.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - nbytes:]


@pytest.mark.parametrize("width", [1, 3, 8])
@pytest.mark.parametrize("rank_bits", [8, 16, 24, 64])
@pytest.mark.parametrize("codes", [True, False])
def test_the_c_search_gives_the_numpy_ranks(width, rank_bits, codes):
    """Issue 39: rank_rows (the bucket table, four comparisons, a search in crowded
    buckets) gives, byte for byte, the ranks of numpy's binary search, including keys
    below the first point, at or past the last (all 0xFF), and in crowded buckets."""
    rng = np.random.default_rng(width * 100 + rank_bits)
    n = 20_000
    spread = rng.integers(0, 256, (n, width), dtype=np.uint8)
    # A cluster of close values: many split points in one bucket of the table.
    cluster = np.tile(spread[:1], (n, 1))
    cluster[:, -1] = rng.integers(0, 256, n, dtype=np.uint8)
    heavy = np.tile(spread[1:2], (n, 1))                 # a heavy value
    sample = np.where(rng.random((n, 1)) < 0.3, cluster,
                      np.where(rng.random((n, 1)) < 0.2, heavy, spread))
    b = RankBoundaries.from_ordered([sample], rank_bits)
    if not codes:
        b = RankBoundaries(rank_bits, b.splits)
    points = b._keys[0][0]
    table = rank_mod._build_table(points, b.codes[0], rank_bits // 8, layout="wide")
    if width > 1 and b.counts[0] > 64:
        assert np.any(table.entries[:-1] >= 2**31)      # a crowded bucket is searched
    keys = np.concatenate([sample[:5000], rng.integers(0, 256, (5000, width), dtype=np.uint8),
                           np.zeros((1, width), np.uint8), np.full((1, width), 255, np.uint8),
                           b.splits[0][:1], b.splits[0][-1:]])
    got = rank_columns([keys], b)[0]     # (the table the boundaries chose)
    assert np.array_equal(got, _numpy_rank_bytes(keys, b))
    from zorder.values._rank import rank_rows
    wide = np.empty_like(got)
    rank_rows(keys, table.pairs, table.entries, table.lo, table.shift, wide)
    assert np.array_equal(wide, got)
    # Any row stride: a column taken from a wider block.
    block = np.zeros((len(keys), width + 5), np.uint8)
    block[:, 2:2 + width] = keys
    assert np.array_equal(rank_columns([block[:, 2:2 + width]], b)[0], got)


def test_rank_rows_refuses_a_table_that_does_not_fit_and_never_reads_past_it():
    from zorder.values._rank import rank_rows

    b = RankBoundaries.from_ordered([np.arange(64, dtype=np.uint8).reshape(-1, 1)], 8)
    table = rank_mod._build_table(b._keys[0][0], b.codes[0], 1, layout="wide")
    keys = np.arange(256, dtype=np.uint8).reshape(-1, 1)
    out = np.empty((256, 1), np.uint8)
    rank_rows(keys, table.pairs, table.entries, table.lo, table.shift, out)
    assert np.array_equal(out, _numpy_rank_bytes(keys, b))
    unpadded = np.ascontiguousarray(table.pairs[:-1])
    for args, message in [
        ((keys, unpadded, table.entries, table.lo, table.shift, out), "then 4 points"),
        ((keys, table.pairs, table.entries[:1], table.lo, table.shift, out), "does not fit"),
        ((keys, table.pairs, table.entries, table.lo, 64, out), "does not fit"),
        ((keys, table.pairs, table.entries, table.lo, table.shift, out[:5]), "out has 5 rows"),
        ((np.zeros((3, 9), np.uint8), table.pairs, table.entries, 0, 0, np.empty((3, 1), np.uint8)),
         "widths 1 to 8"),
        ((np.zeros((3, 2), np.uint8)[:, ::-1], table.pairs, table.entries, 0, 0,
          np.empty((3, 1), np.uint8)), "adjacent"),
    ]:
        with pytest.raises(ValueError, match=message):
            rank_rows(*args)
    # Nonsense bucket entries (past the points, decreasing, crowded everywhere) give
    # codes of the table, never a read outside it.
    rng = np.random.default_rng(5)
    for _ in range(20):
        junk = rng.integers(0, 2**32, len(table.entries), dtype=np.uint64).astype(np.uint32)
        rank_rows(keys, table.pairs, junk, table.lo, int(rng.integers(0, 64)), out)
        assert set(out.ravel().tolist()) <= set(table.pairs[:, 1].tolist())


@pytest.mark.parametrize("width", [1, 2, 5, 8])
def test_sorted_keys_is_numpy_sort_of_the_search_keys(width):
    from zorder.values._rank import sorted_keys

    rng = np.random.default_rng(width)
    rows = rng.integers(0, 256, (3000, width), dtype=np.uint8)
    rows[:, 0] = 7        # a byte every key shares: its pass is skipped
    expected = np.sort(rank_mod._search_keys(rows))
    assert np.array_equal(sorted_keys(rows), expected)
    assert np.array_equal(sorted_keys(np.asfortranarray(rows)[:0]), expected[:0])
    wide = np.zeros((3000, width + 3), np.uint8)
    wide[:, 1:1 + width] = rows
    assert np.array_equal(sorted_keys(wide[:, 1:1 + width]), expected)


def test_a_table_too_large_for_the_cache_gives_the_same_ranks():
    """Past 256 KB of split points the search fetches the points of rows ahead first."""
    rng = np.random.default_rng(12)
    values = rng.permutation(np.arange(40_000) * 1_000_003)
    b = rank_boundaries([values], rank_bits=16)
    assert b.counts == (39_999,) and 16 * (b.counts[0] + 4) > 2**18
    keys = zorder.ordered_bytes(np.concatenate([values[:30_000], rng.integers(-2**63, 2**63 - 1, 5_000)]))
    assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))


def _edge_keys(points):
    """0, 2**64 - 1, every split point and its neighbours, as uint64 search keys."""
    near = np.concatenate([points - np.uint64(1), points, points + np.uint64(1)])
    return np.concatenate([np.array([0, 2**64 - 1], np.uint64), near])   # (wrapping at the ends)


def _as_rows(keys, width=8):
    return np.ascontiguousarray(keys.astype(">u8").view(np.uint8).reshape(-1, 8)[:, :width])


@pytest.mark.parametrize("rank_bits", [8, 16, 24, 64])
@pytest.mark.parametrize("codes", [True, False])
@pytest.mark.parametrize("layout", ["spread", "crowded", "from zero", "one point", "dense"])
def test_the_compact_table_gives_the_numpy_ranks_on_edge_keys(rank_bits, codes, layout):
    """rank_rows_near (each point as its offset in a bucket of at most 2**30 keys) gives,
    byte for byte, numpy's binary search, and so does rank_rows on the same points: keys
    0 and 2**64 - 1, every point, and each point +- 1, in every kind of bucket."""
    rng = np.random.default_rng(rank_bits + len(layout))
    base = np.uint64(2**63 + 12_345)
    if layout == "spread":
        sample = base + rng.integers(0, 2**34, 5000).astype(np.uint64)
    elif layout == "crowded":   # a cluster of close values among spread ones
        sample = base + np.concatenate([rng.integers(0, 2**34, 3000),
                                        2**33 + rng.integers(0, 200, 2000)]).astype(np.uint64)
    elif layout == "from zero":   # the first point is key 0: no key lies below it
        sample = np.concatenate([np.zeros(2000, np.uint64), rng.integers(0, 2**20, 3000).astype(np.uint64)])
    elif layout == "one point":
        sample = np.full(50, base, np.uint64)
        sample[:10] = base - np.uint64(7)
    else:                         # few values, a bucket each (shift 0)
        sample = base + rng.integers(0, 40, 5000).astype(np.uint64)
    b = RankBoundaries.from_ordered([_as_rows(sample)], rank_bits)
    if not codes:
        b = RankBoundaries(rank_bits, b.splits)
    keys_u64, chosen = b._keys[0]
    # (a cluster holding many rows gets the two-level table; the compact one is forced)
    assert isinstance(chosen, rank_mod._TwoLevelTable if layout == "crowded"
                      else rank_mod._NearTable)
    table = rank_mod._build_table(keys_u64, b.codes[0], rank_bits // 8, layout="near")
    assert isinstance(table, rank_mod._NearTable)
    if layout == "crowded" and rank_bits >= 16:
        assert table.crowded and np.any(table.entries[:-1] >= 2**31)
    keys = _as_rows(np.resize(_edge_keys(keys_u64), max(200, 3 * len(keys_u64) + 2)))
    expected = _numpy_rank_bytes(keys, b)
    assert np.array_equal(rank_columns([keys], b)[0], expected)
    # The plain loop, where AVX2 takes blocks of 64 rows (the last rows alone).
    from zorder.values._rank import rank_rows, rank_rows_near
    out = np.empty_like(expected)
    rank_rows_near(keys, table.entries, table.offsets, table.codes, table.origin, table.shift,
                   table.crowded, out, vector=False)
    assert np.array_equal(out, expected)
    # The same split points in the table of 64-bit points give the same bytes.
    wide = rank_mod._build_table(keys_u64, b.codes[0], rank_bits // 8, layout="wide")
    assert isinstance(wide, rank_mod._Table)
    out = np.empty_like(expected)
    rank_rows(keys, wide.pairs, wide.entries, wide.lo, wide.shift, out)
    assert np.array_equal(out, expected)
    # Rows apart in a wider block, and rows of 5 bytes (the generic loop).
    block = np.zeros((len(keys), 11), np.uint8)
    block[:, 1:9] = keys
    assert np.array_equal(rank_columns([block[:, 1:9]], b)[0], expected)


def test_the_compact_table_serves_short_keys_and_spans_up_to_2_to_the_30_a_bucket():
    rng = np.random.default_rng(30)
    # 5-byte keys varying in their last byte: buckets of 2**24 keys.
    short = np.zeros((3000, 5), np.uint8)
    short[:, :4] = (1, 2, 3, 4)
    short[:, 4] = rng.integers(0, 256, 3000)
    b = RankBoundaries.from_ordered([short], 16)
    assert isinstance(b._keys[0][1], rank_mod._NearTable)
    keys = np.concatenate([short[:500], rng.integers(0, 256, (500, 5), dtype=np.uint8),
                           np.zeros((1, 5), np.uint8), np.full((1, 5), 255, np.uint8)])
    assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))
    # A bucket as wide as the compact table allows, and one wider: the two-level table.
    for step, kind in [(30, rank_mod._NearTable), (31, rank_mod._TwoLevelTable)]:
        points = np.uint64(2**63) + (np.arange(255, dtype=np.uint64) << np.uint64(step))
        b = RankBoundaries(8, [_as_rows(points)])
        keys_u64, table = b._keys[0]
        assert isinstance(table, kind) and table.shift == step
        keys = _as_rows(_edge_keys(keys_u64))
        assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))


def assert_refused(function, good, change, message):
    """``function(*good)`` with the arguments at ``change``'s positions replaced raises a
    ValueError matching ``message``."""
    args = list(good)
    for at, value in change.items():
        args[at] = value
    with pytest.raises(ValueError, match=message):
        function(*args)


def test_rank_rows_near_refuses_a_table_that_does_not_fit_and_never_reads_past_it():
    from zorder.values._rank import rank_rows_near

    rng = np.random.default_rng(7)
    values = np.uint64(2**63) + rng.integers(0, 2**30, 2000).astype(np.uint64)
    b = RankBoundaries.from_ordered([_as_rows(values)], 16)
    t = b._keys[0][1]
    assert isinstance(t, rank_mod._NearTable)
    keys = _as_rows(np.concatenate([_edge_keys(b._keys[0][0]), rng.integers(0, 2**64 - 1, 500,
                                                                          dtype=np.uint64)]))
    out = np.empty((len(keys), 2), np.uint8)
    good = (keys, t.entries, t.offsets, t.codes, t.origin, t.shift, t.crowded, out)
    rank_rows_near(*good)
    assert np.array_equal(out, _numpy_rank_bytes(keys, b))
    for change, message in [
        ({1: t.entries[:1]}, "does not fit"),
        ({5: 31}, "does not fit"),
        ({2: t.offsets[:-1], 3: t.codes[:-1]}, "2\\*\\*p \\+ 4"),
        ({2: np.zeros(5 + 4, np.int32), 3: np.zeros((9, 2), np.uint8)}, "2\\*\\*p \\+ 4"),
        ({3: t.codes[:-1]}, "codes must be"),
        ({3: np.zeros((len(t.offsets), 4), np.uint8)}, "codes must be"),
        ({7: out[:5]}, "out has 5 rows"),
        ({0: np.zeros((len(keys), 9), np.uint8)}, "widths 1 to 8"),
        ({0: np.zeros((len(keys), 8), np.uint8)[:, ::-1]}, "adjacent"),
    ]:
        assert_refused(rank_rows_near, good, change, message)
    # Nonsense entries (past the points, decreasing, crowded or not), any origin, any
    # shift, either loop: codes of the table, never a read outside it.
    allowed = set(t.codes.view(">u2").ravel().tolist())
    for i in range(40):
        junk = rng.integers(0, 2**32, len(t.entries), dtype=np.uint64).astype(np.uint32)
        offsets = rng.integers(-2**31, 2**31, len(t.offsets), dtype=np.int64).astype(np.int32)
        rank_rows_near(keys, junk, offsets, t.codes, int(rng.integers(0, 2**64, dtype=np.uint64)),
                       int(rng.integers(0, 31)), bool(i % 2), out, vector=bool(i % 4 < 2))
        assert set(out.view(">u2").ravel().tolist()) <= allowed


def _clustered_doubles(rng, n):
    """Doubles around a few centres of either sign, and the values whose ordered bytes
    sit at the ends: -inf, -0.0, 0.0, inf, NaN."""
    centres = np.array([-170.0, -41.5, -0.75, 3e-300, 0.5, 40.25, 1e12])
    values = centres[rng.integers(0, len(centres), n)] * (1 + rng.normal(0, 1e-3, n))
    values[:5] = [-np.inf, -0.0, 0.0, np.inf, np.nan]
    return values


def _two_level_cases(rng):
    """(name, sorted-by-nothing uint64 keys of a column) whose one-level table crowds."""
    doubles = _clustered_doubles(rng, 6000)
    ints = np.concatenate([rng.integers(0, 3000, 5000), rng.integers(0, 10**7, 1000)])
    equalish = np.uint64(2**62) + np.concatenate([    # runs of neighbours in a wide span
        rng.integers(0, 40, 3000), 2**50 + rng.integers(0, 40, 2000),
        rng.integers(0, 2**61, 1000)]).astype(np.uint64)
    return [("clustered doubles", rank_mod._search_keys(zorder.ordered_bytes(doubles))),
            ("dense ints, sparse tail", rank_mod._search_keys(zorder.ordered_bytes(ints))),
            ("equal-ish points", equalish)]


@pytest.mark.parametrize("rank_bits", [8, 16, 24])
@pytest.mark.parametrize("codes", [True, False])
@pytest.mark.parametrize("case", [0, 1, 2])
def test_the_two_level_table_gives_the_numpy_ranks_on_edge_keys(rank_bits, codes, case):
    """rank_rows_two_level (a crowded bucket cut again on its own bits; points as the top
    30 bits of their offset, told apart in full where a key has those bits) gives, byte
    for byte, numpy's binary search: keys 0 and 2**64 - 1, every point and its neighbours,
    the data (clustered doubles of both signs, infinities, NaN), random keys."""
    from zorder.values._rank import rank_rows_two_level

    rng = np.random.default_rng(rank_bits * 10 + case)
    name, sample = _two_level_cases(rng)[case]
    b = RankBoundaries.from_ordered([_as_rows(sample)], rank_bits)
    if not codes:
        b = RankBoundaries(rank_bits, b.splits)
    points = b._keys[0][0]
    table = rank_mod._two_level_table(points, b.codes[0] if codes else
                                      np.arange(len(points) + 1, dtype=np.uint64), rank_bits // 8)
    if rank_bits >= 16:
        assert isinstance(b._keys[0][1], rank_mod._TwoLevelTable), name
        # doubles and wide spans keep only the top bits of each point in the int32
        assert (table.points is not None) == (name != "dense ints, sparse tail")
    keys = np.concatenate([_edge_keys(points), sample,
                           rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True)])
    rows = _as_rows(keys)
    expected = _numpy_rank_bytes(rows, b)
    assert np.array_equal(rank_columns([rows], b)[0], expected)
    out = np.empty_like(expected)
    for vector in (True, False):
        rank_rows_two_level(rows, table.first, table.second, table.offsets, table.points,
                            table.codes, table.origin, table.shift, table.crowded, out,
                            vector=vector)
        assert np.array_equal(out, expected)
    block = np.zeros((len(rows), 11), np.uint8)     # rows apart in a wider block
    block[:, 2:10] = rows
    assert np.array_equal(rank_columns([block[:, 2:10]], b)[0], expected)


def test_the_two_level_table_serves_short_keys_and_crowded_sub_buckets():
    """5-byte keys (the generic loop), and points closer than the finest sub-bucket a
    bucket may have (searched)."""
    rng = np.random.default_rng(39)
    short = np.zeros((4000, 5), np.uint8)
    short[:, 0] = rng.choice([3, 200], 4000)
    short[:, 1:] = rng.integers(0, 256, (4000, 4))
    short[:2000, 1:4] = 7                           # 256 neighbours in a 2**40 span
    b = RankBoundaries.from_ordered([short], 16)
    assert isinstance(b._keys[0][1], rank_mod._TwoLevelTable)
    keys = np.concatenate([short, rng.integers(0, 256, (500, 5), dtype=np.uint8),
                           np.zeros((1, 5), np.uint8), np.full((1, 5), 255, np.uint8)])
    assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))
    # A bucket of 64 consecutive points in a span of 2**60: the sub-table stops at its
    # cap (2**8 sub-buckets) and its bucket stays crowded.
    points = np.concatenate([np.arange(64, dtype=np.uint64),
                             np.uint64(2**60) + (np.arange(64, dtype=np.uint64) << np.uint64(54))])
    b = RankBoundaries(16, [_as_rows(points)])
    table = b._keys[0][1]
    assert isinstance(table, rank_mod._TwoLevelTable) and table.crowded
    keys = _as_rows(_edge_keys(points))
    assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))


def test_few_crowded_rows_keep_the_compact_table():
    """One crowded bucket among many: its rows are searched in the compact table."""
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(0, 2**40, 60_000), 2**39 + np.arange(30)])
    b = rank_boundaries([values], rank_bits=16)
    table = b._keys[0][1]
    assert isinstance(table, rank_mod._NearTable) and table.crowded
    keys = zorder.ordered_bytes(np.concatenate([values[:5000], 2**39 + np.arange(-3, 33)]))
    assert np.array_equal(rank_columns([keys], b)[0], _numpy_rank_bytes(keys, b))


def test_rank_rows_two_level_refuses_a_table_that_does_not_fit_and_never_reads_past_it():
    from zorder.values._rank import rank_rows_two_level

    rng = np.random.default_rng(11)
    b = RankBoundaries.from_ordered([zorder.ordered_bytes(_clustered_doubles(rng, 3000))], 16)
    t = b._keys[0][1]
    assert isinstance(t, rank_mod._TwoLevelTable) and t.points is not None
    keys = _as_rows(np.concatenate([_edge_keys(b._keys[0][0]),
                                    rng.integers(0, 2**64 - 1, 500, dtype=np.uint64)]))
    out = np.empty((len(keys), 2), np.uint8)
    good = (keys, t.first, t.second, t.offsets, t.points, t.codes, t.origin, t.shift,
            t.crowded, out)
    rank_rows_two_level(*good)
    assert np.array_equal(out, _numpy_rank_bytes(keys, b))
    for change, message in [
        ({1: t.first[:0]}, "do not fit"),
        ({2: t.second[:3]}, "do not fit"),
        ({2: t.second[:1]}, "do not fit"),
        ({7: 64}, "do not fit"),
        ({3: t.offsets[:-1], 4: None, 5: t.codes[:-1]}, "2\\*\\*p \\+ 4"),
        ({4: t.points[:-1]}, "as long as offsets"),
        ({5: t.codes[:-1]}, "codes must be"),
        ({9: out[:5]}, "out has 5 rows"),
        ({0: np.zeros((len(keys), 9), np.uint8)}, "widths 1 to 8"),
        ({0: np.zeros((len(keys), 8), np.uint8)[:, ::-1]}, "adjacent"),
    ]:
        assert_refused(rank_rows_two_level, good, change, message)
    with pytest.raises((TypeError, ValueError)):
        rank_rows_two_level(*good[:4], t.points.astype(np.int64), *good[5:])
    # Nonsense entries at both levels, offsets and points, any origin and shift, with and
    # without the full points, either loop: codes of the table, never a read outside it.
    allowed = set(t.codes.view(">u2").ravel().tolist())
    for i in range(40):
        first = rng.integers(0, 2**32, len(t.first), dtype=np.uint64).astype(np.uint32)
        second = rng.integers(0, 2**32, len(t.second), dtype=np.uint64).astype(np.uint32)
        offsets = rng.integers(-2**31, 2**31, len(t.offsets), dtype=np.int64).astype(np.int32)
        points = rng.integers(0, 2**64 - 1, len(t.offsets), dtype=np.uint64, endpoint=True)
        rank_rows_two_level(keys, first, second, offsets, points if i % 3 else None, t.codes,
                            int(rng.integers(0, 2**64, dtype=np.uint64)), int(rng.integers(0, 64)),
                            bool(i % 2), out, vector=bool(i % 4 < 2))
        assert set(out.view(">u2").ravel().tolist()) <= allowed
