"""zorder_values / sort_indices / sort against a row-by-row composition of the scalar
conversions and interleave_bits (Iceberg's SparkZOrderUDF, one row at a time)."""

import datetime
import functools
import math

import numpy as np
import pytest

import zorder
from zorder import (
    argsort_zvalues,
    byte_truncate_or_fill,
    double_to_ordered_bytes,
    long_to_ordered_bytes,
    sort,
    sort_indices,
    string_to_ordered_bytes,
    zorder_values,
    zorder_widths,
)

BITLOOP = zorder.get_backend("bitloop")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


# -- the oracle: one row at a time, the scalar functions, the reference interleave -------

DEFAULT = zorder.ICEBERG_DEFAULT  # what a call without iceberg= gives: the newest release


def cell_bytes(kind, value, length, iceberg=DEFAULT, spark="4"):
    """What SparkZOrderUDF makes of one value of a column of Spark type `kind` (a null
    boolean as main and 1.12 give it: zeros; 1.11 and earlier throw there)."""
    if kind in ("string", "binary"):
        if value is None:
            return bytes(length)
        if kind == "string":
            return string_to_ordered_bytes(value, length)
        return byte_truncate_or_fill(value, length)
    if value is None:
        return bytes(8)
    if kind == "long":
        return long_to_ordered_bytes(int(value))
    if kind == "double":
        return double_to_ordered_bytes(float(value), iceberg=iceberg)
    if kind == "boolean":
        return b"\x81" + bytes(7) if value else bytes(8)
    if kind == "date":  # a datetime.date
        if spark == "3.5":
            return bytes(8)
        return long_to_ordered_bytes((value - datetime.date(1970, 1, 1)).days)
    if kind == "timestamp_ntz":  # microseconds since the epoch (an int)
        return long_to_ordered_bytes(value)
    if kind == "timestamp_tz":  # microseconds; Spark's cast keeps floored seconds
        return long_to_ordered_bytes(value // 10**6)
    raise AssertionError(kind)


def oracle(kinds, rows, length=8, cap=None, iceberg=DEFAULT, spark="4"):
    widths = [length if k in ("string", "binary") else 8 for k in kinds]
    size = 0
    for w in widths:
        size += w
        if cap is not None:
            size = min(size, cap)
    out = []
    for row in rows:
        cols = [cell_bytes(k, v, length, iceberg, spark) for k, v in zip(kinds, row)]
        out.append(BITLOOP.interleave_bits(cols, size))
    return out


def as_rows(z):
    if isinstance(z, np.ndarray):
        return [bytes(r) for r in z]
    return z.to_pylist()


# -- data ---------------------------------------------------------------------------------

STRINGS = ["", "a", "abc", "zz top", "é", "xy\U0001F600", "日本語テキスト", "a\u0000b",
           "a somewhat longer string of text", "\U0001F600\U0001F600\U0001F600"]
DOUBLES = [0.0, -0.0, 1.5, -1.5, math.inf, -math.inf, math.nan, 5e-324, 1e300, -921614.125,
           -921614.0625]


def mixed_numpy(n, seed):
    rng = np.random.default_rng(seed)
    longs = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    longs[: min(n, 3)] = [0, -1, 2**63 - 1][: min(n, 3)]
    doubles = rng.choice(np.array(DOUBLES), n)
    strings = rng.choice(np.array(STRINGS), n)
    binary = np.array([rng.integers(0, 256, int(k), dtype=np.uint8).tobytes()
                       for k in rng.integers(0, 20, n)], dtype=object)
    bools = rng.integers(0, 2, n).astype(bool)
    micros = rng.integers(-(10**15), 10**15, n)
    ts = micros.astype("datetime64[us]")
    kinds = ["long", "double", "string", "binary", "boolean", "timestamp_ntz"]
    columns = [longs, doubles, strings, binary, bools, ts]
    rows = list(zip(longs.tolist(), doubles.tolist(), strings.tolist(), binary.tolist(),
                    bools.tolist(), micros.tolist()))
    return kinds, columns, rows


# -- zorder_values against the oracle ------------------------------------------------------

@pytest.mark.parametrize("length", [1, 3, 8, 16])
@pytest.mark.parametrize("cap", [None, 1, 5, 13, 40, 1000])
def test_numpy_columns_match_scalar_composition(length, cap):
    kinds, columns, rows = mixed_numpy(40, seed=length * 1000 + (cap or 0))
    z = zorder_values(columns, var_length_contribution=length, max_output_size=cap)
    assert isinstance(z, np.ndarray) and z.dtype == np.uint8 and z.flags.c_contiguous
    assert as_rows(z) == oracle(kinds, rows, length, cap)


def test_every_backend_gives_the_same_values(backend):
    kinds, columns, rows = mixed_numpy(60, seed=11)
    for length, cap in [(8, None), (16, None), (3, 17), (24, 9)]:
        z = zorder_values(columns, var_length_contribution=length, max_output_size=cap,
                          backend=backend.name)
        assert as_rows(z) == oracle(kinds, rows, length, cap)


def test_ragged_bigint_and_string_at_16():
    # The shape Spark makes with var-length-contribution=16: widths 8 and 16.
    longs = np.array([1, -5, 2**40, 0])
    strings = np.array(["short", "a much longer one", "", "é"])
    z = zorder_values([longs, strings], var_length_contribution=16)
    assert z.shape == (4, 24)
    assert as_rows(z) == oracle(["long", "string"], list(zip(longs.tolist(), strings.tolist())),
                                16)
    assert zorder_widths([longs, strings], var_length_contribution=16) == [8, 16]


def test_legacy_floats_and_spark_35_dates():
    doubles = np.array(DOUBLES)
    dates = np.array(["1970-01-01", "2024-02-29", "1900-01-01", "2200-12-31", "1969-12-31",
                      "2000-01-01", "1999-09-09", "2038-01-19", "1600-03-01", "3000-01-01",
                      "1970-01-02"], dtype="datetime64[D]")
    rows = list(zip(doubles.tolist(), dates.astype(object).tolist()))
    for iceberg in ("main", "1.11"):
        for spark in ("4", "3.5"):
            z = zorder_values([doubles, dates], iceberg=iceberg, spark=spark)
            assert as_rows(z) == oracle(["double", "date"], rows, iceberg=iceberg, spark=spark)
    assert as_rows(zorder_values([doubles], iceberg="legacy")) != \
        as_rows(zorder_values([doubles], iceberg="main"))


def test_mapping_input_and_column_selection():
    kinds, columns, rows = mixed_numpy(10, seed=3)
    data = dict(zip("abcdef", columns))
    z = zorder_values(data, columns=["c", "a"], var_length_contribution=5)
    expected = oracle(["string", "long"], [(r[2], r[0]) for r in rows], 5)
    assert as_rows(z) == expected
    assert as_rows(zorder_values(data, columns="a")) == oracle(["long"], [(r[0],) for r in rows])


def test_icezvalue_column_name_is_accepted():
    # Iceberg's rewrite rejects it only because it adds its own ICEZVALUE column.
    data = {"ICEZVALUE": np.array([2, 1])}
    assert as_rows(zorder_values(data)) == oracle(["long"], [(2,), (1,)])


def test_zero_rows():
    z = zorder_values([np.zeros(0, np.int64), np.array([], dtype=str)],
                      var_length_contribution=4)
    assert z.shape == (0, 12)
    assert sort_indices([np.zeros(0, np.int64)]).shape == (0,)


# -- pyarrow -----------------------------------------------------------------------------

def arrow_table_with_nulls():
    pa = pytest.importorskip("pyarrow")
    longs = [5, None, -(2**63), 0, 2**62, None, -1]
    ints = [1, 2, None, -(2**31), 2**31 - 1, 0, None]
    doubles = [1.5, None, math.nan, -0.0, math.inf, 2.25, None]
    strings = ["b", None, "", "日本", "xy\U0001F600z", "long string value", None]
    binary = [b"\x00\xff", None, b"", b"\x01" * 30, b"\x80", None, b"z"]
    bools = [True, None, False, True, None, False, True]
    dates = [datetime.date(2024, 1, 1), None, datetime.date(1969, 12, 31),
             datetime.date(1970, 1, 1), datetime.date(2100, 6, 1), None,
             datetime.date(1000, 1, 1)]
    micros = [-1, None, 1_700_000_000_123_456, 0, -(10**15) - 1, 999_999, None]
    table = pa.table({
        "l": pa.array(longs, pa.int64()),
        "i": pa.array(ints, pa.int32()),
        "d": pa.array(doubles, pa.float64()),
        "s": pa.array(strings, pa.string()),
        "b": pa.array(binary, pa.binary()),
        "o": pa.array(bools, pa.bool_()),
        "dt": pa.array(dates, pa.date32()),
        "tz": pa.array(micros, pa.timestamp("us", tz="UTC")),
        "ntz": pa.array(micros, pa.timestamp("us")),
    })
    kinds = ["long", "long", "double", "string", "binary", "boolean", "date",
             "timestamp_tz", "timestamp_ntz"]
    rows = list(zip(longs, ints, doubles, strings, binary, bools, dates, micros, micros))
    return table, kinds, rows


@pytest.mark.parametrize("length, cap", [(8, None), (16, None), (3, 50), (8, 7)])
def test_arrow_table_with_nulls(length, cap):
    pa = pytest.importorskip("pyarrow")
    table, kinds, rows = arrow_table_with_nulls()
    # the null booleans in column "o" are zeros on Iceberg main only
    z = zorder_values(table, var_length_contribution=length, max_output_size=cap, iceberg="main")
    assert isinstance(z, pa.FixedSizeBinaryArray)
    size = min(sum(length if k in ("string", "binary") else 8 for k in kinds), cap or 10**9)
    assert z.type == pa.binary(size)
    assert as_rows(z) == oracle(kinds, rows, length, cap, iceberg="main")
    batch = table.to_batches()[0]
    assert as_rows(zorder_values(batch, var_length_contribution=length,
                                 max_output_size=cap, iceberg="main")) == as_rows(z)
    # the default, 1.12, gives them zeros too; 1.11 throws on them, as its UDF does;
    # without them the default gives its bytes
    assert as_rows(zorder_values(table, var_length_contribution=length,
                                 max_output_size=cap)) == as_rows(z)
    with pytest.raises(ValueError, match="column 'o': a null BOOLEAN"):
        zorder_values(table, var_length_contribution=length, max_output_size=cap, iceberg="1.11")
    o = table.column_names.index("o")
    z = zorder_values(table.drop(["o"]), var_length_contribution=length, max_output_size=cap)
    assert as_rows(z) == oracle(kinds[:o] + kinds[o + 1:], [r[:o] + r[o + 1:] for r in rows],
                                length, cap)


def test_arrow_chunked_columns_and_selection():
    pa = pytest.importorskip("pyarrow")
    table, kinds, rows = arrow_table_with_nulls()
    chunked = pa.concat_tables([table.slice(0, 3), table.slice(3)])
    assert chunked.column("s").num_chunks == 2
    z = zorder_values(chunked, columns=["tz", "s"], var_length_contribution=4)
    assert as_rows(z) == oracle(["timestamp_tz", "string"], [(r[7], r[3]) for r in rows], 4)
    # A list of Arrow arrays is Arrow input too.
    z2 = zorder_values([table.column("tz"), table.column("s")], var_length_contribution=4)
    assert isinstance(z2, pa.FixedSizeBinaryArray) and as_rows(z2) == as_rows(z)


def test_arrow_unsupported_type_names_the_column():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"ok": [1, 2], "bad": pa.array([[1], [2]], pa.list_(pa.int64()))})
    with pytest.raises(TypeError, match=r"column 'bad'.*list"):
        zorder_values(table)


# -- pandas --------------------------------------------------------------------------------

def test_pandas_frame_with_nulls():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({
        "n": pd.array([3, None, -7, 0], dtype="Int64"),
        "f": [1.5, float("nan"), -2.0, None],          # float NaN from pandas: a null
        "s": ["x", None, "é-long-string", ""],
        "o": pd.array([True, None, False, True], dtype="boolean"),
        "unused": [object(), None, 1, "mixed"],
    })
    rows = [(3, 1.5, "x", True), (None, None, None, None),
            (-7, -2.0, "é-long-string", False), (0, None, "", True)]
    kinds = ["long", "double", "string", "boolean"]
    # the null boolean is zeros on Iceberg main and 1.12 (the default); 1.11 throws
    z = zorder_values(frame, columns=["n", "f", "s", "o"], var_length_contribution=6,
                      iceberg="main")
    assert isinstance(z, np.ndarray)
    assert as_rows(z) == oracle(kinds, rows, 6, iceberg="main")
    # Series in a list work the same way.
    z2 = zorder_values([frame["n"], frame["f"], frame["s"], frame["o"]],
                       var_length_contribution=6, iceberg="main")
    assert as_rows(z2) == as_rows(z)
    assert as_rows(zorder_values(frame, columns=["n", "f", "s", "o"],
                                 var_length_contribution=6)) == as_rows(z)
    with pytest.raises(ValueError, match="column 'o': a null BOOLEAN"):
        zorder_values(frame, columns=["n", "f", "s", "o"], var_length_contribution=6,
                      iceberg="1.11")
    z3 = zorder_values(frame, columns=["n", "f", "s"], var_length_contribution=6)
    assert as_rows(z3) == oracle(kinds[:3], [r[:3] for r in rows], 6)


def test_pandas_timestamps():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    stamps = pd.to_datetime(["1970-01-01 00:00:01.5", "1969-12-31 23:59:59.25", None])
    frame = pd.DataFrame({"ntz": stamps, "tz": stamps.tz_localize("UTC")})
    micros = [1_500_000, -750_000, None]
    z = zorder_values(frame)
    assert as_rows(z) == oracle(["timestamp_ntz", "timestamp_tz"],
                                list(zip(micros, micros)))
    # timestamp="tz" for every column, or per column by name.
    assert as_rows(zorder_values(frame, timestamp="tz")) == oracle(
        ["timestamp_tz", "timestamp_tz"], list(zip(micros, micros)))
    assert as_rows(zorder_values(frame, timestamp={"ntz": "tz"})) == oracle(
        ["timestamp_tz", "timestamp_tz"], list(zip(micros, micros)))


def test_pandas_unsupported_column_is_named():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1, 2], "c": np.array([1j, 2j])})
    with pytest.raises(TypeError, match=r"column 'c'.*complex"):
        zorder_values(frame)


# -- sorting -------------------------------------------------------------------------------

def reference_order(values):
    rows = as_rows(values) if not isinstance(values, list) else values
    return sorted(range(len(rows)), key=lambda i: (rows[i], i))


@pytest.mark.parametrize("shape, high", [((500, 1), 256), ((2000, 3), 2), ((3000, 32), 256),
                                         ((3000, 17), 3), ((200, 100), 2), ((50, 9), 1)])
def test_argsort_zvalues_is_stable_bytewise(shape, high):
    rng = np.random.default_rng(shape[0] + shape[1])
    z = rng.integers(0, high, shape, dtype=np.uint8)
    assert argsort_zvalues(z).tolist() == reference_order([bytes(r) for r in z])
    flipped = z[::-1]  # a negative row stride
    assert argsort_zvalues(flipped).tolist() == reference_order([bytes(r) for r in flipped])
    sliced = np.asfortranarray(z)  # bytes of a row not contiguous
    assert argsort_zvalues(sliced).tolist() == reference_order([bytes(r) for r in z])


def test_argsort_zvalues_constant_leading_bytes():
    rng = np.random.default_rng(9)
    z = np.zeros((5000, 24), np.uint8)
    z[:, 10:] = rng.integers(0, 4, (5000, 14))  # ties through the first 8-byte word
    assert argsort_zvalues(z).tolist() == reference_order([bytes(r) for r in z])


def _lexsorted(z):
    # numpy's stable sort on each byte, last byte first: the bytewise stable order
    return np.lexsort(z.T[::-1]) if z.shape[1] else np.arange(len(z))


@functools.lru_cache(maxsize=2)
def _radix_cases(n):
    rng = np.random.default_rng(17)
    cases = {}
    z = np.zeros((n, 16), np.uint8)
    z[:, 5:] = rng.integers(0, 256, (n, 11))   # first split inside the first word
    cases["from byte 5"] = z
    z = np.zeros((n, 16), np.uint8)
    z[:, 6:] = rng.integers(0, 3, (n, 10))     # a 16-bit split on the window's last two
    cases["from byte 6"] = z
    z = np.zeros((n, 16), np.uint8)
    z[:, 7:] = rng.integers(0, 3, (n, 9))      # the window's last byte: an 8-bit split
    cases["from byte 7"] = z
    z = np.full((n, 13), 200, np.uint8)
    z[:, 10:] = rng.integers(0, 2, (n, 3))     # a second word of 5 bytes, zero-padded
    cases["short second word"] = z
    z = np.full((n, 19), 9, np.uint8)
    z[:, 12:] = rng.integers(0, 2, (n, 7))     # the first word shared: loaded again at 8
    cases["second word"] = z
    cases["every row equal"] = np.full((n, 11), 4, np.uint8)
    z = np.zeros((n, 12), np.uint8)
    z[: n // 50, 0] = 1                        # one bucket holds 98% of the rows
    z[:, 6:] = rng.integers(0, 256, (n, 6))
    cases["one bucket"] = z[rng.permutation(n)]
    cases["one byte"] = rng.integers(0, 2, (n, 1)).astype(np.uint8)   # 2 buckets
    wide = rng.integers(0, 4, (n, 40)).astype(np.uint8)
    cases["strided"] = wide[:, 3:13]           # rows 40 bytes apart
    cases["negative stride"] = wide[::-1, :10]
    return cases


@pytest.mark.parametrize("name", list(_radix_cases(8)))
def test_radix_sort_on_threads_is_the_stable_byte_order(name):
    """From PARALLEL_ROWS rows the first split is made on every thread's own range of
    rows and its buckets sorted in runs: the same permutation on any number of threads
    (more threads than buckets too), the bytewise stable order, in scratch memory too."""
    from zorder.values._radix import PARALLEL_ROWS, argsort_rows, rows_scratch

    z = _radix_cases(PARALLEL_ROWS + 4099)[name]
    expected = _lexsorted(z)
    for threads in (1, 2, 3, 5):
        assert np.array_equal(argsort_rows(z, None, threads), expected), threads
    got = argsort_rows(z, rows_scratch(len(z) + 10), 2)
    assert np.array_equal(got, expected)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        argsort_rows(z, None, 0)
    assert np.array_equal(argsort_rows(z, None, 10**6), expected)   # (at most 64 used)


def test_radix_sort_on_threads_cuts_at_the_nearer_bucket_edge(monkeypatch):
    """Two buckets of 60% and 40% of the rows: two runs, not one (a cut always before
    the bucket that holds the half-way row would leave all the work to one thread)."""
    import concurrent.futures

    from zorder.values._radix import PARALLEL_ROWS, argsort_rows

    submitted = []

    class Recording(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            # (each call goes through the wrapper that times it: the call is its argument)
            call = args[0][0] if getattr(fn, "__name__", "") == "_with_cpu" else fn
            submitted.append(getattr(call, "__name__", ""))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Recording)
    n = 2 * PARALLEL_ROWS
    rng = np.random.default_rng(8)
    z = np.zeros((n, 8), np.uint8)
    z[rng.permutation(n)[: 2 * n // 5], 0] = 1
    z[:, 3:] = rng.integers(0, 256, (n, 5))
    assert np.array_equal(argsort_rows(z, None, 2), _lexsorted(z))
    assert submitted.count("run") == 1


def test_a_large_sort_at_interpreter_shutdown(run_python):
    """No thread can start while the interpreter shuts down (an atexit handler): the
    sort runs on the calling thread, as before."""
    code = ("import atexit, numpy as np\n"
            "from zorder.values._radix import PARALLEL_ROWS, argsort_rows\n"
            "def last():\n"
            "    z = np.random.default_rng(1).integers(0, 256, (PARALLEL_ROWS, 9))\n"
            "    z = z.astype(np.uint8)\n"
            "    assert (argsort_rows(z, None, 2) == np.lexsort(z.T[::-1])).all()\n"
            "    print('sorted')\n"
            "atexit.register(last)\n")
    done = run_python("-c", code)
    assert done.returncode == 0 and "sorted" in done.stdout, done.stderr


def test_argsort_zvalues_sorts_large_inputs_on_the_usable_cores(monkeypatch):
    import importlib

    from zorder.values._radix import PARALLEL_ROWS

    # (the module: the package's `sort` is the function)
    sort_module = importlib.import_module("zorder.values.sort")

    seen = []

    def recording(values, scratch, threads):
        seen.append(threads)
        return real(values, scratch, threads)

    real = sort_module.argsort_rows
    monkeypatch.setattr(sort_module, "argsort_rows", recording)
    monkeypatch.setattr(sort_module, "usable_cores", lambda: 3)
    z = np.random.default_rng(3).integers(0, 256, (PARALLEL_ROWS, 6)).astype(np.uint8)
    assert np.array_equal(argsort_zvalues(z), _lexsorted(z))
    assert np.array_equal(argsort_zvalues(z[:1000]), _lexsorted(z[:1000]))
    monkeypatch.setattr(sort_module, "usable_cores", lambda: 64)
    argsort_zvalues(z)
    assert seen == [3, 1, 8]   # small inputs on one thread; at most 8


def test_sort_indices_sorts_by_zvalue():
    kinds, columns, rows = mixed_numpy(300, seed=21)
    perm = sort_indices(columns, var_length_contribution=4, max_output_size=20)
    z = zorder_values(columns, var_length_contribution=4, max_output_size=20)
    assert perm.dtype == np.int64
    assert perm.tolist() == reference_order([bytes(r) for r in z])
    # duplicates keep their input order
    dup = [np.array([2, 1, 2, 1, 2])]
    assert sort_indices(dup).tolist() == [1, 3, 0, 2, 4]


def test_sort_arrow_and_pandas():
    pa = pytest.importorskip("pyarrow")
    table, kinds, rows = arrow_table_with_nulls()
    z = zorder_values(table, columns=["l", "s"])
    order = reference_order(z)
    table = table.append_column("rid", pa.array(range(len(table))))
    out = sort(table, ["l", "s"])
    assert out.column("rid").to_pylist() == order  # (NaN in "d": no Table.equals)
    assert out.schema == table.schema
    assert out.drop_columns(["d"]).equals(table.drop_columns(["d"]).take(order))
    batch = table.to_batches()[0]
    assert sort(batch, ["l", "s"]).column("rid").to_pylist() == order
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [3, 0, 1, 0], "y": [0, 5, 2, 5]}, index=list("abcd"))
    out = sort(frame, ["x", "y"])
    assert out.index.tolist() == ["c", "a", "b", "d"]
    assert frame.index.tolist() == list("abcd")  # a copy, the input untouched
    assert sort(frame, "y").index.tolist() == ["a", "c", "b", "d"]


def test_argsort_arrow_fixed_size_binary():
    pa = pytest.importorskip("pyarrow")
    values = [b"\x02\x00", b"\x01\x09", b"\x01\x03", b"\x01\x03"]
    arr = pa.array(values, pa.binary(2))
    assert argsort_zvalues(arr).tolist() == [2, 3, 1, 0]
    assert argsort_zvalues(arr.slice(1)).tolist() == [1, 2, 0]


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    ({"var_length_contribution": 0}, ValueError, "var_length_contribution must be > 0"),
    ({"var_length_contribution": -3}, ValueError, "var_length_contribution must be > 0"),
    ({"var_length_contribution": True}, TypeError, "var_length_contribution must be an int"),
    ({"var_length_contribution": 2.0}, TypeError, "var_length_contribution must be an int"),
    ({"max_output_size": 0}, ValueError, "max_output_size must be > 0"),
    ({"max_output_size": "8"}, TypeError, "max_output_size must be an int"),
    ({"iceberg": "2.0"}, ValueError, "iceberg must be"),
    ({"spark": "3.4"}, ValueError, "spark must be"),
    ({"timestamp": "local"}, ValueError, "timestamp must be"),
    ({"backend": "nope"}, ValueError, "unknown zorder backend"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        zorder_values([np.array([1, 2])], **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="data is empty"):
        zorder_values([])
    with pytest.raises(TypeError, match="data is a numpy array"):
        zorder_values(np.zeros((3, 2)))
    with pytest.raises(TypeError, match="data must be"):
        zorder_values(42)
    with pytest.raises(TypeError, match="columns= selects by name"):
        zorder_values([np.array([1])], columns=["a"])
    with pytest.raises(ValueError, match=r"columns: the mapping has no column 'z'"):
        zorder_values({"a": np.array([1])}, columns=["z"])
    with pytest.raises(ValueError, match="columns is empty"):
        zorder_values({"a": np.array([1])}, columns=[])
    with pytest.raises(ValueError, match=r"column columns\[1\] has 3 rows"):
        zorder_values([np.array([1, 2]), np.array([1, 2, 3])])
    with pytest.raises(TypeError, match=r"column columns\[0\].*complex"):
        zorder_values([np.array([1j])])
    with pytest.raises(TypeError, match="table must be"):
        sort([np.array([1])])
    with pytest.raises(TypeError, match="values must be a 2-D uint8"):
        argsort_zvalues(np.zeros((2, 2), np.int32))


def test_timestamp_kinds_by_position_and_widths_of_lists():
    seconds = np.array([1, -1], dtype="datetime64[s]")
    # A list of columns names its timestamp kinds by position.
    assert as_rows(zorder_values([seconds], timestamp={0: "tz"})) == oracle(
        ["timestamp_tz"], [(1_000_000,), (-1_000_000,)])
    assert as_rows(zorder_values([seconds])) == oracle(
        ["timestamp_ntz"], [(1_000_000,), (-1_000_000,)])
    with pytest.raises(ValueError, match="timestamp: no selected column"):
        zorder_values([seconds], timestamp={3: "tz"})
    assert zorder_widths([["a", "b"], [1, 2], [b"x", None]], var_length_contribution=5) == [5, 8, 5]


def test_widths_of_object_columns_are_those_the_values_get():
    """An object column's type comes from its values: its width too, or deinterleave_rows
    decodes garbage (an object column of ints was given the string width)."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({
        "ints": pd.Series([1, 2], dtype=object),
        "floats": pd.Series([0.5, None], dtype=object),
        "bools": pd.Series([True, False], dtype=object),
        "dates": pd.Series([datetime.date(2020, 1, 2), None], dtype=object),
        "text": pd.Series(["abcdefghijklmnop", "qrstuvwxyz012345"], dtype=object),
        "typed": [10, 20],
    })
    widths = zorder_widths(df, var_length_contribution=16)
    assert widths == [8, 8, 8, 8, 16, 8]
    z = zorder_values(df, var_length_contribution=16)
    assert z.shape[1] == sum(widths)
    text = zorder.deinterleave_rows(z, widths)[4]
    assert [bytes(r) for r in text] == [b"abcdefghijklmnop", b"qrstuvwxyz012345"]
    assert zorder_widths([np.array(["x", "y"], dtype=object), [1, 2]],
                         var_length_contribution=3) == [3, 8]
    # what zorder_values refuses, zorder_widths refuses too (a numpy object array holds
    # strings or bytes; numbers with nulls come typed, with a mask)
    objects = np.array([1, 2], dtype=object)
    with pytest.raises(TypeError, match="an object array must hold str"):
        zorder_values([objects])
    with pytest.raises(TypeError, match="an object array must hold str"):
        zorder_widths([objects])
    with pytest.raises(TypeError):
        zorder_values([[datetime.date(2020, 1, 2), "x"]])
    with pytest.raises(TypeError):
        zorder_widths([[datetime.date(2020, 1, 2), "x"]])


def test_very_long_zvalues_sort_stably():
    rng = np.random.default_rng(2)
    z = np.zeros((300, 5000), np.uint8)
    z[:, -6:] = rng.integers(0, 2, (300, 6))
    assert argsort_zvalues(z).tolist() == reference_order([bytes(r) for r in z])


def test_decode_zorder_values_back_to_ordered_bytes():
    kinds, columns, rows = mixed_numpy(80, seed=33)
    for length, cap in [(8, None), (5, None), (16, 30)]:
        z = zorder_values(columns, var_length_contribution=length, max_output_size=cap)
        widths = zorder_widths(columns, var_length_contribution=length)
        decoded = zorder.deinterleave_rows(z, widths)
        full = [zorder.ordered_bytes(c, length) for c in columns]
        again = BITLOOP.interleave_rows([np.ascontiguousarray(d) for d in decoded], z.shape[1])
        np.testing.assert_array_equal(again, z)
        if cap is None:
            for d, f in zip(decoded, full):
                np.testing.assert_array_equal(d, f)


try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # the test extra has it; without it only this property is skipped
    st = None


if st is not None:
    CELLS = {
        "long": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        "double": st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
        "string": st.one_of(st.none(), st.text(max_size=12)),
        "binary": st.one_of(st.none(), st.binary(max_size=12)),
        "boolean": st.one_of(st.none(), st.booleans()),
    }


    @st.composite
    def tables(draw):
        kinds = draw(st.lists(st.sampled_from(sorted(CELLS)), min_size=1, max_size=5))
        n = draw(st.integers(0, 12))
        rows = [tuple(draw(CELLS[k]) for k in kinds) for _ in range(n)]
        return kinds, rows


    ARROW_TYPES = {"long": "int64", "double": "float64", "string": "string", "binary": "binary",
                   "boolean": "bool_"}


    @settings(max_examples=60, deadline=None)
    @given(tables(), st.integers(1, 20), st.one_of(st.none(), st.integers(1, 60)))
    def test_arrow_tables_match_scalar_composition(table, length, cap):
        pa = pytest.importorskip("pyarrow")
        kinds, rows = table
        cols = {f"c{i}": pa.array([r[i] for r in rows], getattr(pa, ARROW_TYPES[k])())
                for i, k in enumerate(kinds)}
        null_boolean = any(r[i] is None for r in rows for i, k in enumerate(kinds) if k == "boolean")
        for iceberg in ("main", DEFAULT, "1.11"):
            if null_boolean and iceberg == "1.11":  # 1.11 and earlier throw there
                with pytest.raises(ValueError, match="a null BOOLEAN"):
                    zorder_values(pa.table(cols), var_length_contribution=length, iceberg=iceberg)
                continue
            z = zorder_values(pa.table(cols), var_length_contribution=length, max_output_size=cap,
                              iceberg=iceberg)
            assert as_rows(z) == oracle(kinds, rows, length, cap, iceberg=iceberg)
            perm = sort_indices(pa.table(cols), var_length_contribution=length, max_output_size=cap,
                                iceberg=iceberg)
            assert perm.tolist() == reference_order(as_rows(z))
else:
    def test_arrow_tables_match_scalar_composition():
        pytest.skip("hypothesis is not installed")


@pytest.mark.parametrize("high, width", [(256, 8), (3, 12), (1, 5)])
def test_argsort_zvalues_two_byte_splits(high, width):
    # Buckets of 131,072+ rows split on two bytes at once; check against numpy.
    rng = np.random.default_rng(high)
    z = rng.integers(0, high, (200_000, width), dtype=np.uint8)
    z[:, 0] = 7  # a constant first byte, then two-byte splits from byte 1
    expected = np.argsort(z.view(f"V{width}").ravel(), kind="stable")
    np.testing.assert_array_equal(argsort_zvalues(z), expected)


DEEP_SORT_IN_A_SMALL_STACK = """
import threading, numpy as np, zorder
size = 2048
z = np.zeros((size + 1, size), np.uint8)
z[np.arange(size), np.arange(size)] = 1   # row k leaves the others' bucket at byte k
z = z[::-1].copy()
z[:, ::2] |= 0x80                          # (not one value in a whole bucket)
z = np.concatenate([z, z[:100]])          # ties too
out = {}
threading.stack_size(256 * 1024)           # musl's default is 128 KiB
t = threading.Thread(target=lambda: out.setdefault("p", zorder.argsort_zvalues(z)))
t.start(); t.join()
expected = np.argsort(z.view(f"V{size}").ravel(), kind="stable")
print(np.array_equal(out["p"], expected))
"""


def test_argsort_of_values_that_split_at_every_byte_fits_a_small_thread_stack(run_python):
    """Values of 2,048 bytes whose buckets split at every byte: the radix sort's calls
    nested once a byte, a frame each, and overflowed a 256 KiB thread stack (SIGSEGV);
    they now nest at most log2(rows) deep."""
    proc = run_python("-c", DEEP_SORT_IN_A_SMALL_STACK, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout.strip() == "True"


def test_docstring_examples():
    import doctest

    import importlib

    names = ["zorder.values.table", "zorder.values.ordering", "zorder.values.sort", "zorder.values.codec",
             "zorder.values.decode", "zorder.parquet.skipping", "zorder.parquet.sizes",
             "zorder.ordered.options", "zorder.ordered.column", "zorder.ordered.scalar",
             "zorder.interleave", "zorder.cpu.select", "zorder.cli.progress"]
    modules = [importlib.import_module(n) for n in names]
    pytest.importorskip("pandas")  # sort's example uses a DataFrame
    for module in modules:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
