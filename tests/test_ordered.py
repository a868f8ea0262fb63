"""Iceberg's ordered bytes: scalar conversions and ordered_bytes against Iceberg's vectors,
order properties, the Spark UDF's per-type rules, both compatibility modes, and errors."""

import collections
import contextlib
import datetime
import json
import math
import pathlib
import struct
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import zorder
from zorder.ordered import ordered_bytes

DATA = pathlib.Path(__file__).parent / "data"


def load_jsonl(name):
    with open(DATA / name, encoding="ascii") as f:
        return [json.loads(line) for line in f if line.strip()]


ORDERED = load_jsonl("ordered.jsonl")
EXTRA = load_jsonl("ordered_extra.jsonl")

SCALAR_INT = {
    "tinyintToOrderedBytes": (zorder.tinyint_to_ordered_bytes, np.int8),
    "shortToOrderedBytes": (zorder.short_to_ordered_bytes, np.int16),
    "intToOrderedBytes": (zorder.int_to_ordered_bytes, np.int32),
    "longToOrderedBytes": (zorder.long_to_ordered_bytes, np.int64),
    "wholeNumberOrderedBytes": (zorder.whole_number_ordered_bytes, np.int64),
}
SCALAR_FLOAT = {
    "floatToOrderedBytes": zorder.float_to_ordered_bytes,
    "doubleToOrderedBytes": zorder.double_to_ordered_bytes,
    "floatingPointOrderedBytes": zorder.floating_point_ordered_bytes,
}
LEGACY_NAMES = ["1.11", "legacy", "1.11.0", "1.10", "1.9.2", "LEGACY"]


def from_bits(line):
    """The Python float of a vector line, built from its exact bits (the authority)."""
    raw = bytes.fromhex(line["bits"])
    return struct.unpack(">f" if len(raw) == 4 else ">d", raw)[0]


def float_dtype(line):
    return np.float32 if len(line["bits"]) == 8 else np.float64


def hexrows(arr):
    return [bytes(row).hex() for row in arr]


def vector_id(line):
    return f"{line['fn']}({line.get('value')!r:.40}, {line.get('length')})"


def lines_with_out(lines, fns):
    return [line for line in lines if line["fn"] in fns and "out" in line]


def groups(lines, key):
    """Vector lines grouped by key -> list, for one vectorized call per group."""
    grouped = defaultdict(list)
    for line in lines:
        grouped[key(line)].append(line)
    return [pytest.param(k, v, id=f"{k}-{len(v)}lines")
            for k, v in sorted(grouped.items(), key=lambda kv: str(kv[0]))]


def expected(lines, field="out"):
    return [line[field] for line in lines]


try:
    import pyarrow as pa
except ImportError:  # the test extra installs it; skip only if it is missing
    pa = None
try:
    import pandas as pd
except ImportError:
    pd = None

@contextlib.contextmanager
def string_path(name):
    """Run with the Cython string kernels ("kernels") or the plain-Python path ("python")."""
    from zorder.ordered import strings as _ordered

    saved = _ordered._kernels
    if name == "kernels":
        assert saved is not None, "zorder.ordered._strings is not built"
    else:
        _ordered._kernels = None
    try:
        yield
    finally:
        _ordered._kernels = saved


STRING_PATHS = ["kernels", "python"]

needs_arrow = pytest.mark.skipif(pa is None, reason="pyarrow is not installed")
needs_pandas = pytest.mark.skipif(pd is None or pa is None, reason="pandas/pyarrow not installed")


# --------------------------------------------------------------------------------------
# Scalar functions: every line of ordered.jsonl, and the public helpers of ordered_extra
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", lines_with_out(ORDERED + EXTRA, SCALAR_INT), ids=vector_id)
def test_integer_vectors(line):
    fn, _ = SCALAR_INT[line["fn"]]
    assert fn(line["value"]).hex() == line["out"]


@pytest.mark.parametrize("line", lines_with_out(ORDERED + EXTRA, SCALAR_FLOAT), ids=vector_id)
def test_float_vectors_both_modes(line):
    fn = SCALAR_FLOAT[line["fn"]]
    value = from_bits(line)
    assert fn(value).hex() == line["out"]   # the default: the newest release, 1.12
    assert fn(value, iceberg="main").hex() == line["out"]
    for name in ("1.12", "1.12.0", "1.12.1"):
        assert fn(value, iceberg=name).hex() == line["out"]
    for name in LEGACY_NAMES:
        assert fn(value, iceberg=name).hex() == line["out_legacy"]


@pytest.mark.parametrize("line", lines_with_out(ORDERED, {"stringToOrderedBytes"}), ids=vector_id)
def test_string_vectors(line):
    out = zorder.string_to_ordered_bytes(line["value"], line["length"])
    assert out.hex() == line["out"]
    if line["value"] is not None:
        # the JSON text is Python's str of the UTF-16 units (lone surrogates kept)
        units = line["utf16"]
        as_units = struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")
        assert zorder.string_to_ordered_bytes(as_units, line["length"]).hex() == line["out"]
    # Iceberg's position counts the bytes encoded; everything after it is the zero fill
    assert len(out) == line["length"]
    assert out[line["position"]:] == bytes(line["length"] - line["position"])


@pytest.mark.parametrize("line", lines_with_out(ORDERED, {"byteTruncateOrFill"}), ids=vector_id)
def test_bytes_vectors(line):
    value = None if line["value"] is None else bytes.fromhex(line["value"])
    assert zorder.byte_truncate_or_fill(value, line["length"]).hex() == line["out"]
    if value is not None:
        for like in (bytearray(value), memoryview(value), np.frombuffer(value, np.uint8)):
            assert zorder.byte_truncate_or_fill(like, line["length"]).hex() == line["out"]


def test_every_vector_line_is_used():
    used = set(SCALAR_INT) | set(SCALAR_FLOAT) | {"stringToOrderedBytes", "byteTruncateOrFill"}
    assert {line["fn"] for line in ORDERED} <= used
    # ordered_extra: the lines without `out` need a Java reuse buffer or encoder, which the
    # Python API does not have, except a negative length (tested below).
    for line in EXTRA:
        if "out" not in line:
            assert "reuse_capacity" in line or "encoder" in line
        else:
            assert line["fn"] in used


def test_extra_negative_length_is_an_error():
    (line,) = [x for x in EXTRA if x.get("length", 0) < 0]
    with pytest.raises(ValueError, match="length must be >= 0"):
        zorder.string_to_ordered_bytes(line["value"], line["length"])


# --------------------------------------------------------------------------------------
# ordered_bytes: the same vectors, a column at a time
# --------------------------------------------------------------------------------------

INT_LINES = lines_with_out(ORDERED, SCALAR_INT)
FLOAT_LINES = lines_with_out(ORDERED, SCALAR_FLOAT)
STRING_LINES = lines_with_out(ORDERED, {"stringToOrderedBytes"})
BYTES_LINES = lines_with_out(ORDERED, {"byteTruncateOrFill"})


@pytest.mark.parametrize("fn,lines", groups(INT_LINES, lambda x: x["fn"]))
def test_vectorized_integers(fn, lines):
    dtype = SCALAR_INT[fn][1]
    values = np.array([x["value"] for x in lines], dtype=dtype)
    assert hexrows(ordered_bytes(values)) == expected(lines)
    # byte order of the input does not matter; length is ignored for numbers
    assert hexrows(ordered_bytes(values.astype(values.dtype.newbyteorder()), 3)) == expected(lines)
    assert hexrows(ordered_bytes(values[::-1])) == expected(lines)[::-1]
    if pa is not None:
        assert hexrows(ordered_bytes(pa.array(values))) == expected(lines)
        assert hexrows(ordered_bytes(pa.array(values)[1:])) == expected(lines)[1:]


@pytest.mark.parametrize("fn,lines", groups(FLOAT_LINES, lambda x: x["fn"]))
@pytest.mark.parametrize("iceberg,field", [("main", "out"), ("1.12", "out"), ("1.11", "out_legacy"),
                                           ("legacy", "out_legacy")])
def test_vectorized_floats(fn, lines, iceberg, field):
    values = np.array([from_bits(x) for x in lines], dtype=float_dtype(lines[0]))
    # NaNs with payloads keep them through numpy: rebuild from the bits to be sure
    bits = [int(x["bits"], 16) for x in lines]
    values = np.array(bits, dtype=np.uint32 if values.dtype == np.float32 else np.uint64) \
        .view(values.dtype)
    assert hexrows(ordered_bytes(values, iceberg=iceberg)) == expected(lines, field)
    if pa is not None:
        assert hexrows(ordered_bytes(pa.array(values), iceberg=iceberg)) == expected(lines, field)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.integers(0, 2**64 - 1) | st.sampled_from(
           [0, 2**63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF0000000000001,
            0xFFF8000000000123, 1, 2**63 + 1, 2**64 - 1]), max_size=60),
       step=st.sampled_from([1, 2, -1]), iceberg=st.sampled_from(["main", "1.11"]))
def test_one_pass_kernels_match_the_scalar_functions(words, step, iceberg):
    # Any 64-bit pattern as a double (NaN payloads, -0.0, subnormals) and as a long, from
    # strided and reversed views: the one-pass kernels of zorder.ordered._numbers.
    from zorder.ordered.scalar import _float_bits, long_to_ordered_bytes

    bits = np.array(words + words, dtype=np.uint64)[::step]
    got = ordered_bytes(bits.view(np.float64), iceberg=iceberg)
    assert [bytes(r) for r in got] == [_float_bits(int(b), iceberg) for b in bits]
    longs = bits.view(np.int64)
    assert [bytes(r) for r in ordered_bytes(longs)] == [long_to_ordered_bytes(int(v)) for v in longs]


def test_one_pass_kernels_refuse_a_wrong_out():
    from zorder.ordered._numbers import ordered_doubles, ordered_longs

    with pytest.raises(ValueError, match=r"out must be \(3, 8\), not \(3, 7\)"):
        ordered_longs(np.zeros(3, np.int64), np.zeros((3, 7), np.uint8))
    with pytest.raises(ValueError, match="shift must be 0..63, not 64"):
        ordered_doubles(np.zeros(3), np.zeros((3, 8), np.uint8), 64)


@pytest.mark.parametrize("path", STRING_PATHS)
@pytest.mark.parametrize("length,lines", groups(STRING_LINES, lambda x: x["length"]))
def test_vectorized_strings(length, lines, path):
    with string_path(path):
        check_vectorized_strings(length, lines)


def check_vectorized_strings(length, lines):
    values = [x["value"] for x in lines]
    want = expected(lines)
    assert hexrows(ordered_bytes(np.array(values, dtype=object), length)) == want
    present = [i for i, v in enumerate(values) if v is not None]
    assert hexrows(ordered_bytes(np.array([values[i] for i in present]), length)) == \
        [want[i] for i in present]
    if length == 8:
        assert hexrows(ordered_bytes(np.array(values, dtype=object))) == want
    if pa is not None:
        # Arrow strings are UTF-8, so they cannot hold the lone-surrogate lines
        ok = [i for i, v in enumerate(values)
              if v is None or not any(0xD800 <= ord(c) <= 0xDFFF for c in v)]
        arr = pa.array([values[i] for i in ok], type=pa.string())
        sub = [want[i] for i in ok]
        view = arr.cast(pa.string_view())
        for variant in (arr, arr.cast(pa.large_string()), arr.dictionary_encode(),
                        pa.chunked_array([arr[:2], arr[2:]]), view, view.dictionary_encode()):
            assert hexrows(ordered_bytes(variant, length)) == sub
        assert hexrows(ordered_bytes(arr[3:], length)) == sub[3:]


@pytest.mark.parametrize("path", STRING_PATHS)
@pytest.mark.parametrize("length,lines", groups(BYTES_LINES, lambda x: x["length"]))
def test_vectorized_bytes(length, lines, path):
    with string_path(path):
        check_vectorized_bytes(length, lines)


def check_vectorized_bytes(length, lines):
    values = [None if x["value"] is None else bytes.fromhex(x["value"]) for x in lines]
    want = expected(lines)
    assert hexrows(ordered_bytes(np.array(values, dtype=object), length)) == want
    if pa is not None:
        arr = pa.array(values, type=pa.binary())
        view = arr.cast(pa.binary_view())
        for variant in (arr, arr.cast(pa.large_binary()), view, view.dictionary_encode()):
            assert hexrows(ordered_bytes(variant, length)) == want
        assert hexrows(ordered_bytes(arr[2:], length)) == want[2:]


def test_numpy_unicode_any_byte_order():
    values = np.array(["ab\U0001F600", "\ud83d\ude00x", "a\udc00b", "é"])
    want = [zorder.string_to_ordered_bytes(str(v), 5).hex() for v in values]
    assert want == ["6162000000", "f09f988078", "6100000000", "c3a9000000"]
    for path in STRING_PATHS:
        with string_path(path):
            assert hexrows(ordered_bytes(values, 5)) == want
            swapped = values.astype(values.dtype.newbyteorder())
            assert hexrows(ordered_bytes(swapped, 5)) == want


@pytest.mark.skipif(not hasattr(np, "dtypes") or not hasattr(np.dtypes, "StringDType"),
                    reason="numpy < 2 has no StringDType")
def test_numpy_string_dtype():
    values = np.array(["ab", None, "\u00e9\u00e9"], dtype=np.dtypes.StringDType(na_object=None))
    assert hexrows(ordered_bytes(values, 3)) == ["616200", "000000", "c3a900"]


def test_numpy_bytes_dtype_is_binary():
    values = np.array([b"\x01\x02", b"", b"abcdefghij"])
    assert hexrows(ordered_bytes(values, 4)) == ["01020000", "00000000", "61626364"]


# --------------------------------------------------------------------------------------
# Spark UDF rules for the types that are not a plain ZOrderByteUtils call
# --------------------------------------------------------------------------------------

def test_booleans():
    assert hexrows(ordered_bytes(np.array([True, False]))) == ["8100000000000000", "0" * 16]
    # a null boolean: Iceberg main and 1.12 (PRs 17669 / 18077), and so the default, give
    # zeros, the same as false; 1.11 and every earlier release throws
    for iceberg in ("main", "1.12", None):
        keywords = {} if iceberg is None else {"iceberg": iceberg}
        assert hexrows(ordered_bytes(np.array([True, True]), mask=np.array([False, True]),
                                     **keywords)) == ["8100000000000000", "0" * 16]
    with pytest.raises(ValueError, match=r"a null BOOLEAN \(first at index 1\)"):
        ordered_bytes(np.array([True, True]), mask=np.array([False, True]), iceberg="1.11")


def test_unsigned_keep_natural_order():
    values = np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64)
    assert hexrows(ordered_bytes(values)) == [
        "0000000000000000", "0000000000000001", "8000000000000000", "ffffffffffffffff"]
    assert hexrows(ordered_bytes(np.array([255], dtype=np.uint8))) == ["00000000000000ff"]


def test_dates_spark_4_and_3_5():
    days = np.array(["1970-01-01", "1969-12-31", "2025-01-01", "NaT"], dtype="M8[D]")
    assert hexrows(ordered_bytes(days)) == [
        "8000000000000000", "7fffffffffffffff", "8000000000004e79", "0" * 16]
    for spark in ("4", "4.0", "4.1", 4, 4.0):
        assert hexrows(ordered_bytes(days, spark=spark)) == hexrows(ordered_bytes(days))
    for spark in ("3.5", 3.5):
        assert hexrows(ordered_bytes(days, spark=spark)) == ["0" * 16] * 4
    # coarser units are dates too, converted exactly
    assert hexrows(ordered_bytes(np.array(["2025-01"], dtype="M8[M]"))) == ["8000000000004e79"]


def test_timestamps_ntz_micros_and_tz_seconds():
    ts = np.array(["2025-01-01T00:00:00", "1969-12-31T23:59:59.999999", "NaT",
                   "1970-01-01T00:00:00.000001"], dtype="M8[us]")
    # numpy has no zone: TIMESTAMP_NTZ, microseconds
    assert hexrows(ordered_bytes(ts)) == hexrows(ordered_bytes(ts, timestamp="ntz")) == [
        "80062a99ba0c6000", "7fffffffffffffff", "0" * 16, "8000000000000001"]
    # TIMESTAMP: Spark's cast to BIGINT, whole seconds, floored
    assert hexrows(ordered_bytes(ts, timestamp="tz")) == [
        "8000000067748580", "7fffffffffffffff", "0" * 16, "8000000000000000"]
    # other units: floored to microseconds, or multiplied exactly
    ns = np.array([-1, 1999], dtype="M8[ns]")
    assert hexrows(ordered_bytes(ns)) == ["7fffffffffffffff", "8000000000000001"]
    assert hexrows(ordered_bytes(np.array([2], dtype="M8[m]"))) == [
        zorder.long_to_ordered_bytes(120_000_000).hex()]
    assert hexrows(ordered_bytes(np.array([3], dtype="M8[5s]"), timestamp="tz")) == [
        zorder.long_to_ordered_bytes(15).hex()]


@pytest.mark.parametrize("unit", ["D", "W", "M", "h", "m", "s", "ms", "us", "ns", "5s", "2h"])
def test_datetimes_any_byte_order(unit):
    """A big-endian datetime64 array gives its native twin's bytes. (Its ticks were read
    through an int64 view in the wrong order: other bytes, or a false range error.)"""
    native = np.array(["2020-01-01T00:00:01", "NaT", "1969-12-31T23:59:59",
                       "2262-04-11T00:00:00"], dtype="M8[s]").astype(f"M8[{unit}]")
    swapped = native.astype(native.dtype.newbyteorder())
    assert not swapped.dtype.isnative
    for kind in (None, "tz"):
        want = hexrows(ordered_bytes(native, timestamp=kind))
        assert hexrows(ordered_bytes(swapped, timestamp=kind)) == want
    assert hexrows(zorder.zorder_values([swapped, swapped])) == \
        hexrows(zorder.zorder_values([native, native]))


def test_timestamp_out_of_spark_range_is_an_error():
    """Spark holds TIMESTAMP and TIMESTAMP_NTZ alike as microseconds in a long: a value
    past that is refused with either kind, though its seconds would fit a long."""
    pa = pytest.importorskip("pyarrow")
    far = np.array([0, 2**62], dtype="M8[s]")
    for kind in (None, "ntz", "tz"):
        with pytest.raises(ValueError, match="out of the range Spark can hold as "
                                             "microseconds \\(first at index 1\\)"):
            ordered_bytes(far, timestamp=kind)
    with pytest.raises(ValueError, match="out of the range Spark can hold as microseconds"):
        ordered_bytes(pa.array([2**62], pa.timestamp("s", "UTC")))
    # the last second Spark holds, and a null past the range (NaT) is no error
    last = (2**63 - 1) // 10**6
    edge = np.array([last, -last, "NaT"], dtype="M8[s]")
    assert hexrows(ordered_bytes(edge, timestamp="tz")) == [
        zorder.long_to_ordered_bytes(last).hex(),
        zorder.long_to_ordered_bytes(-last).hex(), "0" * 16]
    assert hexrows(ordered_bytes(edge[:2])) == [
        zorder.long_to_ordered_bytes(last * 10**6).hex(),
        zorder.long_to_ordered_bytes(-last * 10**6).hex()]
    for past in (last + 1, -last - 1):
        with pytest.raises(ValueError, match="out of the range"):
            ordered_bytes(np.array([past], dtype="M8[s]"), timestamp="tz")


@pytest.mark.parametrize("unit, far", [("W", 2**61), ("Y", 2**62), ("M", 2**40), ("D", 2**31),
                                       ("D", -(2**31) - 1), ("3D", 2**30), ("2W", 2**59)])
def test_date_out_of_spark_range_is_an_error(unit, far):
    """Spark's DATE is an int of days. Coarse numpy units wrapped past the long range when
    converted (2**61 weeks sorted before 1970); every unit is now refused past Spark's."""
    with pytest.raises(ValueError, match="a date is out of the range Spark can hold as "
                                         "days, an int \\(first at index 1\\)"):
        ordered_bytes(np.array([0, far, "NaT"], dtype=f"M8[{unit}]"))


@pytest.mark.parametrize("masked", ["mask=", "numpy.ma"])
def test_a_null_row_is_not_range_checked(masked):
    """A row the caller's mask makes null never reaches Spark: its value, however far, is
    not refused (the range checks saw only NaT as a null)."""
    for values, kind in ((np.array([2**40, 1], "M8[D]"), None), (np.array([2**62, 1], "M8[Y]"), None),
                         (np.array([2**62, 1], "M8[s]"), None), (np.array([2**62, 1], "M8[s]"), "tz")):
        flags = np.array([True, False])
        column = np.ma.array(values, mask=flags) if masked == "numpy.ma" else values
        out = ordered_bytes(column, timestamp=kind, **({"mask": flags} if masked == "mask=" else {}))
        assert hexrows(out)[0] == "0" * 16, values.dtype
        with pytest.raises(ValueError, match="out of the range Spark can hold"):
            ordered_bytes(values, timestamp=kind, mask=np.array([False, True]))


@pytest.mark.parametrize("chunks", [1, 2])
def test_an_arrow_row_the_mask_makes_null_is_not_range_checked(chunks):
    """mask= on an Arrow column: its rows are not range-checked either, chunk by chunk (the
    checks skipped only the Arrow column's own nulls)."""
    pa = pytest.importorskip("pyarrow")
    far_date = 2**61 // 86_400_000 * 86_400_000   # date64 milliseconds past Spark's days
    for typ, far in ((pa.timestamp("s"), 2**62), (pa.timestamp("s", tz="UTC"), 2**62),
                     (pa.date64(), far_date)):
        values = [1, far, None, 2]
        column = (pa.chunked_array([pa.array(values[:2], typ), pa.array(values[2:], typ)])
                  if chunks == 2 else pa.array(values, typ))
        out = ordered_bytes(column, mask=np.array([False, True, False, False]))
        assert hexrows(out)[1:3] == ["0" * 16] * 2, typ
        with pytest.raises(ValueError, match="out of the range Spark can hold"):
            ordered_bytes(column, mask=np.array([True, False, False, True]))


def test_a_chunked_arrow_columns_range_error_names_the_columns_row():
    """The row was counted within its chunk: 'first at index 1' for row 4."""
    pa = pytest.importorskip("pyarrow")
    typ = pa.timestamp("s")
    column = pa.chunked_array([pa.array([1, 2, 3], typ), pa.array([4, 2**62], typ)])
    with pytest.raises(ValueError, match=r"as microseconds \(first at index 4\)$"):
        ordered_bytes(column)
    days = pa.chunked_array([pa.array([0], pa.date64()), pa.array([0, 0, 2**61], pa.date64())])
    with pytest.raises(ValueError, match=r"as days, an int \(first at index 3\)$"):
        ordered_bytes(days)


def test_date_range_edges_and_arrow_dates():
    pa = pytest.importorskip("pyarrow")
    edge = np.array([2**31 - 1, -(2**31), "NaT"], dtype="M8[D]")
    assert hexrows(ordered_bytes(edge)) == [
        zorder.long_to_ordered_bytes(2**31 - 1).hex(),
        zorder.long_to_ordered_bytes(-(2**31)).hex(), "0" * 16]
    assert hexrows(ordered_bytes(np.array([2**31 // 7], dtype="M8[W]"))) == [
        zorder.long_to_ordered_bytes(2**31 // 7 * 7).hex()]
    with pytest.raises(ValueError, match="a date is out of the range Spark can hold as days"):
        ordered_bytes(pa.array([0, None, 2**62], pa.date64()))
    # a null date64 past the range is no error: nulls are zeros whatever they hold
    assert hexrows(ordered_bytes(pa.array([86_400_000, None], pa.date64()))) == [
        zorder.long_to_ordered_bytes(1).hex(), "0" * 16]


def test_nulls_are_zero_bytes():
    ints = np.array([5, -(2**63), 7], dtype=np.int64)
    out = ordered_bytes(ints, mask=np.array([True, False, False]))
    assert hexrows(out) == ["0" * 16, "0" * 16, "8000000000000007"]  # null == long MIN
    floats = np.ma.array([1.0, float("nan"), -math.inf], mask=[True, False, False])
    assert hexrows(ordered_bytes(floats, iceberg="main")) == [
        "0" * 16, "fff8000000000000", "000fffffffffffff"]
    assert hexrows(ordered_bytes(floats, iceberg="1.11")) == [  # 1.11: the same null
        "0" * 16, "fff80000fff00000", "000fffffffe00000"]
    strings = np.array(["ab", None, float("nan"), "", np.str_("c")], dtype=object)
    for path in STRING_PATHS:
        with string_path(path):
            assert hexrows(ordered_bytes(strings, 3)) == [
                "616200", "000000", "000000", "000000", "630000"]
            mixed = np.array([b"ab", bytearray(b"c"), memoryview(b"d"), np.bytes_(b"e"), None],
                             dtype=object)
            assert hexrows(ordered_bytes(mixed, 2)) == ["6162", "6300", "6400", "6500", "0000"]
    assert ints[0] == 5  # the input is never modified


@needs_arrow
def test_arrow_types_and_nulls():
    h = lambda arr, **kw: hexrows(ordered_bytes(arr, **kw))  # noqa: E731
    assert h(pa.array([1, None, -1], pa.int8())) == [
        "8000000000000001", "0" * 16, "7fffffffffffffff"]
    assert h(pa.array([1, None], pa.uint32())) == ["0000000000000001", "0" * 16]
    assert h(pa.array([1.0, None], pa.float32()), iceberg="1.11") == ["bff000007fe00000", "0" * 16]
    assert h(pa.array([1.0, None], pa.float32()), iceberg="main") == ["bff0000000000000", "0" * 16]
    assert h(pa.array([1.0], pa.float16()), iceberg="main") == ["bff0000000000000"]
    assert h(pa.array([True, None, False]), iceberg="main") == [
        "8100000000000000", "0" * 16, "0" * 16]
    assert h(pa.array([True, None, False])[1:], iceberg="main") == ["0" * 16, "0" * 16]
    assert h(pa.array([True, None, False])[2:], iceberg="1.11") == ["0" * 16]  # no null: fine in 1.11
    with pytest.raises(ValueError, match="null BOOLEAN"):
        h(pa.array([True, None, False])[1:], iceberg="1.11")
    assert h(pa.array([True, None, False])[1:]) == ["0" * 16, "0" * 16]  # the default, 1.12
    d = datetime.date(2025, 1, 1)
    assert h(pa.array([d, None], pa.date32())) == ["8000000000004e79", "0" * 16]
    assert h(pa.array([d, None], pa.date64())) == ["8000000000004e79", "0" * 16]
    assert h(pa.array([d], pa.date32()), spark="3.5") == ["0" * 16]
    moment = datetime.datetime(2025, 1, 1, 0, 0, 0, 700000)
    naive = pa.array([moment, None], pa.timestamp("ns"))
    aware = pa.array([moment, None], pa.timestamp("ms", tz="UTC"))
    assert h(naive) == ["80062a99ba170e60", "0" * 16]
    assert h(aware) == ["8000000067748580", "0" * 16]
    assert h(naive, timestamp="tz") == ["8000000067748580", "0" * 16]
    assert h(aware, timestamp="ntz") == ["80062a99ba170e60", "0" * 16]
    assert h(pa.array([b"ab", None], pa.binary(2)), length=3) == ["616200", "000000"]
    assert h(pa.array(["x", None, "yz"]), length=2) == ["7800", "0000", "797a"]
    assert h(pa.array([None, "ab"], pa.string()).dictionary_encode(), length=2) == ["0000", "6162"]
    # view-typed dictionaries, which pyarrow cannot decode (no take kernel): null indices,
    # a null value, and an empty dictionary behind null indices
    views = pa.DictionaryArray.from_arrays(pa.array([1, None, 0, 2, 1], pa.int8()),
                                           pa.array(["b", "a", None], pa.string_view()))
    assert h(views, length=2) == ["6100", "0000", "6200", "0000", "6100"]
    assert zorder.ordered_bytes(views, 2, mask=np.array([1, 0, 0, 0, 0], bool))[0].tolist() == [0, 0]
    empty = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int8()),
                                           pa.array([], pa.binary_view()))
    assert h(empty, length=2) == ["0000", "0000"]
    assert h(pa.array([None, None], pa.null()), length=3) == ["000000", "000000"]
    assert ordered_bytes(pa.chunked_array([], pa.null()), 3).shape == (0, 3)
    assert ordered_bytes(pa.chunked_array([], pa.string()), 5).shape == (0, 5)
    assert ordered_bytes(pa.chunked_array([], pa.int16())).shape == (0, 8)
    with pytest.raises(TypeError, match="unsupported Arrow type"):
        ordered_bytes(pa.array([1], pa.decimal128(5, 2)))
    with pytest.raises(TypeError, match="unsupported Arrow type"):
        ordered_bytes(pa.array([1], pa.time32("s")))
    with pytest.raises(TypeError, match="one column"):
        ordered_bytes(pa.table({"a": [1]}))


@needs_pandas
def test_pandas_series():
    h = lambda s, **kw: hexrows(ordered_bytes(s, **kw))  # noqa: E731
    # pandas' missing values are nulls, as when the frame goes to Iceberg through Arrow
    assert h(pd.Series([1.5, np.nan]), iceberg="1.11") == ["bff800007ff00000", "0" * 16]  # 1.11's 1.5
    assert h(pd.Series([1.5, np.nan]), iceberg="main") == ["bff8000000000000", "0" * 16]
    assert h(pd.Series([1, None], dtype="Int64")) == ["8000000000000001", "0" * 16]
    assert h(pd.Series(["a", None], dtype=object), length=2) == ["6100", "0000"]
    assert h(pd.Series(["a", None], dtype="string"), length=2) == ["6100", "0000"]
    assert h(pd.Series(["b", "a"], dtype="category"), length=1) == ["62", "61"]
    berlin = pd.Series(pd.to_datetime(["2025-01-01 01:00:00.9", None]).tz_localize("Europe/Berlin"))
    assert h(berlin) == ["8000000067748580", "0" * 16]  # the instant, in UTC seconds
    naive = pd.Series(pd.to_datetime(["2025-01-01", None]))
    assert h(naive) == ["80062a99ba0c6000", "0" * 16]
    assert h(pd.Index([True, False])) == ["8100000000000000", "0" * 16]
    assert h(pd.Series([None, None], dtype=object), length=2) == ["0000", "0000"]
    # object columns stay Python strings: a lone surrogate stops the encoding, as in Java
    assert h(pd.Series(["a\ud800b", pd.NA], dtype=object), length=3) == ["610000", "000000"]
    assert h(pd.Series([True, None], dtype="boolean"), iceberg="main") == [
        "8100000000000000", "0" * 16]
    with pytest.raises(ValueError, match="null BOOLEAN"):
        h(pd.Series([True, None], dtype="boolean"), iceberg="1.11")
    assert h(pd.Series([True, None], dtype="boolean")) == ["8100000000000000", "0" * 16]
    assert h(pd.Series([1.0, None], dtype="Float32"), iceberg="1.11") == ["bff000007fe00000", "0" * 16]
    assert h(pd.Series([1.0, None], dtype="Float32")) == ["bff0000000000000", "0" * 16]
    assert h(pd.Series([2, None], dtype="UInt8")) == ["0000000000000002", "0" * 16]
    with pytest.raises(TypeError, match="one column"):
        ordered_bytes(pd.DataFrame({"a": [1]}))
    with pytest.raises(TypeError, match="object column of int values could not be read as one type"):
        ordered_bytes(pd.Series([1, "a"]))
    with pytest.raises(TypeError, match="unsupported"):
        ordered_bytes(pd.Series(pd.period_range("2020", periods=2, freq="D")))


def test_empty_columns():
    for dtype, width in [(np.int8, 8), (np.float32, 8), (bool, 8), ("M8[D]", 8), ("M8[ns]", 8),
                         ("U", 5), ("S", 5), (object, 5)]:
        assert ordered_bytes(np.array([], dtype=dtype), 5).shape == (0, width)
    assert ordered_bytes(np.array(["abc"]), 0).shape == (1, 0)


def test_lists_and_tuples():
    assert hexrows(ordered_bytes([1, 2])) == hexrows(ordered_bytes(np.array([1, 2])))
    assert hexrows(ordered_bytes(("a", None), 1)) == ["61", "00"]
    assert hexrows(ordered_bytes([1, 2.0])) == hexrows(ordered_bytes(np.array([1.0, 2.0])))
    # numpy would make these a number column silently: a column has one type
    for mixed in ([1.0, True], [True, 2], [np.True_, 3], (False, np.int8(1))):
        with pytest.raises(TypeError, match="mixes booleans with numbers"):
            ordered_bytes(mixed)
    # no row order: a set of strings changes order from run to run, a mapping gives keys
    for unordered in ({"apple", "kiwi"}, frozenset([1, 2]), {1: 2}, {1: 2}.keys(),
                      {1: 2}.values(), collections.OrderedDict(a=1).values()):
        with pytest.raises(TypeError, match="sets and mappings have no row order"):
            ordered_bytes(unordered)
        with pytest.raises(TypeError, match="sets and mappings have no row order"):
            zorder.zorder_values([unordered])


@pytest.mark.parametrize("values, named", [
    ([np.int64(-1), 2**63], 2**63), ([np.uint64(2**64 - 1), -1], 2**64 - 1),
    ([np.int32(7), -(2**63) - 1], -(2**63) - 1), ([2**53 + 1, 0.5], 2**53 + 1),
    ([np.float32(1), np.int64(2**53 + 1)], 2**53 + 1), ([np.uint64(2**64 - 1), 1.0], 2**64 - 1),
    ([0.5, 2**1024], 2**1024)],
    ids=["int64-2**63", "uint64-neg", "int32-below-long", "2**53+1-float", "float32-int64",
         "uint64-max-float", "beyond-double"])
def test_mixed_number_lists_refuse_what_does_not_fit(values, named):
    """numpy promoted these lists to float64, rounding silently (2**53 + 1 became 2**53):
    integers are BIGINT and integers with floats DOUBLE, whatever numpy would make."""
    with pytest.raises(ValueError, match=f"value {named} at index {values.index(named)}"):
        ordered_bytes(values)
    with pytest.raises(ValueError, match=str(named)):
        zorder.zorder_values({"n": values}, columns=["n"])


def test_mixed_number_lists_keep_their_type():
    same = [([np.int64(-1), 2**62], np.array([-1, 2**62])),
            ([np.int8(1), np.uint8(200), 3], np.array([1, 200, 3])),
            ([np.uint64(5), 1], np.array([5, 1])),             # BIGINT, not numpy's float64
            ([np.uint64(2**64 - 1), np.uint8(1)], np.array([2**64 - 1, 1], np.uint64)),
            ([1, 0.5, np.float32(2.5)], np.array([1.0, 0.5, 2.5])),
            ([2**53, -(2**63), 2**70, 0.5], np.array([2.0**53, -(2.0**63), 2.0**70, 0.5])),
            ([np.float16(1), np.int8(3), float("nan")], np.array([1.0, 3.0, np.nan]))]
    for values, typed in same:
        assert hexrows(ordered_bytes(values)) == hexrows(ordered_bytes(typed)), values


def test_pandas_object_integers_are_bigint_whatever_their_kinds():
    """Arrow's inference raised OverflowError on [np.int64(-1), 2**63] in an object Series."""
    pd = pytest.importorskip("pandas")
    for values, named in (([np.int64(-1), 2**63], 2**63), ([np.uint64(2**64 - 1), None, -1], 2**64 - 1)):
        with pytest.raises(ValueError, match=f"value {named} at index {values.index(named)}"):
            ordered_bytes(pd.Series(values, dtype=object))
    got = ordered_bytes(pd.Series([np.int64(-1), None, 2**62, np.uint64(5)], dtype=object))
    assert hexrows(got) == hexrows(ordered_bytes(np.array([-1, 0, 2**62, 5]),
                                                 mask=np.array([False, True, False, False])))
    unsigned = pd.Series([np.uint64(2**63), np.uint64(1)], dtype=object)   # (Arrow's uint64)
    assert hexrows(ordered_bytes(unsigned)) == hexrows(ordered_bytes(np.array([2**63, 1], np.uint64)))


def test_output_is_contiguous_uint8():
    out = ordered_bytes(np.arange(10, dtype=np.int32)[::3])
    assert out.dtype == np.uint8 and out.flags.c_contiguous and out.shape == (4, 8)


# --------------------------------------------------------------------------------------
# Strings: Java's encoder, character by character (an independent model)
# --------------------------------------------------------------------------------------

def java_model(s, length):
    """What Java's UTF-8 CharsetEncoder writes into `length` bytes, one UTF-16 unit at a time."""
    units = list(struct.unpack(f"<{len(s.encode('utf-16-le', 'surrogatepass')) // 2}H",
                               s.encode("utf-16-le", "surrogatepass")))
    out = bytearray()
    i = 0
    while i < len(units):
        u = units[i]
        if 0xD800 <= u <= 0xDBFF:
            if i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
                cp = 0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00)
                step = 2
            else:
                break  # malformed: a high surrogate not followed by a low one
        elif 0xDC00 <= u <= 0xDFFF:
            break  # malformed: a lone low surrogate
        else:
            cp, step = u, 1
        enc = chr(cp).encode("utf-8")
        if len(out) + len(enc) > length:
            break  # overflow: the character does not fit whole
        out += enc
        i += step
    return bytes(out) + bytes(length - len(out))


CHARS = st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF)
SURROGATEY = st.lists(st.one_of(CHARS, st.sampled_from(["\ud800", "\udc00", "\udbff",
                                                          "\ud83d", "\ude00", "\U0001F600"])),
                      max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(SURROGATEY, st.integers(0, 20))
def test_string_matches_java_encoder_model(s, length):
    assert zorder.string_to_ordered_bytes(s, length) == java_model(s, length)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), SURROGATEY), max_size=20), st.integers(0, 12))
def test_vectorized_strings_equal_scalar(values, length):
    for path in STRING_PATHS:
        with string_path(path):
            check_strings_equal_scalar(values, length)


def check_strings_equal_scalar(values, length):
    want = [zorder.string_to_ordered_bytes(v, length).hex() for v in values]
    assert hexrows(ordered_bytes(np.array(values, dtype=object), length)) == want
    present = [v for v in values if v is not None]
    if present:
        assert hexrows(ordered_bytes(np.array(present, dtype=str), length)) == \
            [zorder.string_to_ordered_bytes(v, length).hex() for v in present]
    if pa is not None:
        clean = [v for v in values
                 if v is None or not any(0xD800 <= ord(c) <= 0xDFFF for c in v)]
        assert hexrows(ordered_bytes(pa.array(clean, pa.string()), length)) == \
            [zorder.string_to_ordered_bytes(v, length).hex() for v in clean]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=20), st.integers(0, 12))
def test_vectorized_bytes_equal_scalar(values, length):
    want = [zorder.byte_truncate_or_fill(v, length).hex() for v in values]
    for path in STRING_PATHS:
        with string_path(path):
            assert hexrows(ordered_bytes(np.array(values, dtype=object), length)) == want
            if pa is not None:
                assert hexrows(ordered_bytes(pa.array(values, pa.binary()), length)) == want


# --------------------------------------------------------------------------------------
# Order: byte order equals value order (main mode), NaN last, nulls first
# --------------------------------------------------------------------------------------

def assert_order_preserved(keys, encoded, strict=True):
    """For every pair: key order implies byte order (equal keys give equal bytes)."""
    rows = [bytes(r) for r in encoded]
    pairs = sorted(zip(keys, rows), key=lambda kr: kr[0])
    for (k1, b1), (k2, b2) in zip(pairs, pairs[1:]):
        if k1 == k2:
            assert b1 == b2
        elif strict:
            assert b1 < b2, (k1, k2, b1.hex(), b2.hex())
        else:
            assert b1 <= b2, (k1, k2, b1.hex(), b2.hex())


INT_TYPES = [(np.int8, zorder.tinyint_to_ordered_bytes), (np.int16, zorder.short_to_ordered_bytes),
             (np.int32, zorder.int_to_ordered_bytes), (np.int64, zorder.long_to_ordered_bytes)]


@pytest.mark.parametrize("dtype,scalar", INT_TYPES, ids=lambda x: getattr(x, "__name__", x))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_integer_order_and_scalar_agreement(dtype, scalar, data):
    values = data.draw(hnp.arrays(dtype, st.integers(0, 40)))
    out = ordered_bytes(values)
    assert hexrows(out) == [scalar(int(v)).hex() for v in values]
    assert_order_preserved([int(v) for v in values], out)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_unsigned_order(dtype, data):
    values = data.draw(hnp.arrays(dtype, st.integers(0, 40)))
    assert_order_preserved([int(v) for v in values], ordered_bytes(values))


def double_key(x):
    """Java's Double.compare: -0.0 < 0.0, every NaN equal and above +Infinity."""
    if math.isnan(x):
        return (2, 0.0)
    return (1, x, math.copysign(1.0, x))


NAN_BITS = st.sampled_from([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                            0xFFF0000000000001, 0x7FF4000000000000, 0xFFFFFFFFFFFFFFFF])
# Doubles of every kind, subnormals and NaNs of every sign and payload included.
DOUBLE_LISTS = st.lists(st.one_of(st.floats(allow_nan=True, allow_subnormal=True),
                                  NAN_BITS.map(lambda b: struct.unpack(">d", b.to_bytes(8, "big"))[0])),
                        max_size=40)


@settings(max_examples=200, deadline=None)
@given(DOUBLE_LISTS)
# Same top 32 bits: the pair an emulated aarch64 run drew, which 1.11 misorders.
@example([-1.1754943508222875e-38, -1.175494351e-38])
def test_double_order_main(values):
    # Only Iceberg main and 1.12 on order every double; 1.11 does not (next tests).
    arr = np.array(values, dtype=np.float64)
    out = ordered_bytes(arr, iceberg="main")
    assert hexrows(out) == [zorder.double_to_ordered_bytes(v, iceberg="main").hex() for v in values]
    assert_order_preserved([double_key(v) for v in values], out)


@settings(max_examples=200, deadline=None)
@given(DOUBLE_LISTS)
def test_double_legacy_keeps_main_top_32_bits(values):
    # 1.11 and earlier: the top 32 bits are main's, so the order is right among values
    # that differ there; only the low 32 bits are mixed (test_legacy_order_is_wrong_...).
    arr = np.array(values, dtype=np.float64)
    legacy, main = ordered_bytes(arr, iceberg="1.11"), ordered_bytes(arr, iceberg="main")
    assert hexrows(legacy) == [zorder.double_to_ordered_bytes(v, iceberg="1.11").hex() for v in values]
    assert [bytes(r[:4]) for r in legacy] == [bytes(r[:4]) for r in main]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True, allow_subnormal=True), max_size=40))
def test_float_order_main_and_equal_to_double(values):
    arr = np.array(values, dtype=np.float32)
    out = ordered_bytes(arr, iceberg="main")
    assert hexrows(out) == [zorder.float_to_ordered_bytes(v, iceberg="main").hex() for v in values]
    assert hexrows(out) == hexrows(ordered_bytes(arr.astype(np.float64), iceberg="main"))
    assert hexrows(out) == [zorder.double_to_ordered_bytes(float(v), iceberg="main").hex() for v in arr]
    assert_order_preserved([double_key(float(v)) for v in arr], out)


def test_legacy_order_is_wrong_where_documented():
    # the unit test's example: same top 32 bits, so 1.11.0 orders them wrongly
    a, b = -921614.125, -921614.0625
    assert a < b
    assert zorder.double_to_ordered_bytes(a, iceberg="main") < \
        zorder.double_to_ordered_bytes(b, iceberg="main")
    assert zorder.double_to_ordered_bytes(a, iceberg="1.11") > \
        zorder.double_to_ordered_bytes(b, iceberg="1.11")
    assert zorder.double_to_ordered_bytes(a) < zorder.double_to_ordered_bytes(b)  # the default, 1.12


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=30))
def test_nulls_sort_first(values):
    mask = np.array([v is None for v in values])
    arr = np.array([0 if v is None else v for v in values], dtype=np.int64)
    out = ordered_bytes(arr, mask=mask)
    smallest = min(bytes(r) for r in out)
    for row, null in zip(out, mask):
        if null:
            assert bytes(row) == bytes(8) == smallest


@settings(max_examples=50, deadline=None)
@given(st.lists(st.datetimes(min_value=datetime.datetime(1, 1, 1),
                             max_value=datetime.datetime(9999, 12, 31)), max_size=30))
def test_timestamp_and_date_order(values):
    arr = np.array(values, dtype="M8[us]")
    micros = arr.view(np.int64).tolist()
    assert_order_preserved(micros, ordered_bytes(arr))
    assert hexrows(ordered_bytes(arr)) == [zorder.long_to_ordered_bytes(m).hex() for m in micros]
    seconds = [m // 10**6 for m in micros]
    assert_order_preserved(seconds, ordered_bytes(arr, timestamp="tz"))
    assert hexrows(ordered_bytes(arr, timestamp="tz")) == \
        [zorder.long_to_ordered_bytes(s).hex() for s in seconds]
    days = arr.astype("M8[D]")
    assert_order_preserved(days.view(np.int64).tolist(), ordered_bytes(days))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(st.characters(max_codepoint=0x7F), max_size=10), max_size=30),
       st.integers(0, 10))
def test_ascii_string_order_is_weakly_preserved(values, length):
    # truncation makes ties, never inversions, for ASCII (for multibyte text Iceberg
    # drops a character that does not fit whole, which can invert the order)
    assert_order_preserved(values, ordered_bytes(np.array(values, dtype=object), length),
                           strict=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=10), max_size=30), st.integers(0, 10))
def test_binary_order_is_weakly_preserved(values, length):
    assert_order_preserved(values, ordered_bytes(np.array(values, dtype=object), length),
                           strict=False)


def test_multibyte_drop_can_invert_order_as_in_iceberg():
    # "xy" + emoji sorts after "xyz", but the emoji does not fit in 4 bytes and is dropped
    assert "xy\U0001F600" > "xyz"
    assert zorder.string_to_ordered_bytes("xy\U0001F600", 4) < zorder.string_to_ordered_bytes("xyz", 4)


# --------------------------------------------------------------------------------------
# Scalar edge cases and errors
# --------------------------------------------------------------------------------------

def test_float_scalar_edge_cases():
    assert zorder.double_to_ordered_bytes(5).hex() == zorder.double_to_ordered_bytes(5.0).hex()
    assert zorder.double_to_ordered_bytes(np.float32(1.5)) == zorder.double_to_ordered_bytes(1.5)
    # float: rounded to float32 as Java's (float) cast
    assert zorder.float_to_ordered_bytes(0.1) == zorder.double_to_ordered_bytes(float(np.float32(0.1)))
    assert zorder.float_to_ordered_bytes(1e300) == zorder.double_to_ordered_bytes(math.inf)
    assert zorder.double_to_ordered_bytes(5e-324).hex() == "8000000000000001"
    assert zorder.double_to_ordered_bytes(-math.nan, iceberg="main").hex() == "fff8000000000000"
    assert zorder.double_to_ordered_bytes(-math.nan, iceberg="1.11").hex() == "fff80000fff00000"
    assert zorder.double_to_ordered_bytes(-math.nan).hex() == "fff8000000000000"  # the default


def test_string_scalar_edge_cases():
    s = zorder.string_to_ordered_bytes
    assert s("a\ud800b", 4).hex() == "61000000"
    assert s("\udc00", 2).hex() == "0000"
    assert s("ab\ud83d", 4).hex() == "61620000"  # a high surrogate at the end
    assert s("\ud83d\ude00", 4).hex() == "f09f9880"  # a pair as two code points
    assert s("\U0001F600", 3).hex() == "000000"
    assert s("\x00", 2).hex() == "0000"
    assert s(np.str_("ab"), 2).hex() == "6162"


@pytest.mark.parametrize("fn,bad", [
    (zorder.tinyint_to_ordered_bytes, 128), (zorder.tinyint_to_ordered_bytes, -129),
    (zorder.short_to_ordered_bytes, 2**15), (zorder.int_to_ordered_bytes, -(2**31) - 1),
    (zorder.long_to_ordered_bytes, 2**63), (zorder.whole_number_ordered_bytes, -(2**63) - 1),
])
def test_integer_out_of_range(fn, bad):
    with pytest.raises(ValueError, match="out of range"):
        fn(bad)


@pytest.mark.parametrize("fn", [f for f, _ in SCALAR_INT.values()])
@pytest.mark.parametrize("bad", [True, np.bool_(False), "1", 1.0, None, b"\x01"])
def test_integer_wrong_type(fn, bad):
    with pytest.raises(TypeError, match="value must be an integer"):
        fn(bad)


def test_integer_accepts_numpy_and_index():
    class Idx:
        def __index__(self):
            return 7
    assert zorder.int_to_ordered_bytes(np.int64(7)) == zorder.int_to_ordered_bytes(Idx())


@pytest.mark.parametrize("fn", list(SCALAR_FLOAT.values()))
@pytest.mark.parametrize("bad", [True, "1.0", None, b"", 1j])
def test_float_wrong_type(fn, bad):
    with pytest.raises(TypeError, match="value must be a real number"):
        fn(bad)


def test_double_too_large_int():
    with pytest.raises(ValueError, match="too large"):
        zorder.double_to_ordered_bytes(10**400)


@pytest.mark.parametrize("bad", ["1.13", "2.0", "0.14", "", None, 1.11, "mainline"])
def test_unknown_iceberg_names_list_the_valid_ones(bad):
    for call in (lambda: zorder.double_to_ordered_bytes(1.0, iceberg=bad),
                 lambda: zorder.float_to_ordered_bytes(1.0, iceberg=bad),
                 lambda: ordered_bytes(np.array([1.0]), iceberg=bad)):
        with pytest.raises(ValueError, match="'1.11'.*'legacy'.*'main'"):
            call()


@pytest.mark.parametrize("bad", ["3.4", "5", "", None, "spark4"])
def test_unknown_spark_names_list_the_valid_ones(bad):
    with pytest.raises(ValueError, match="'4'.*'3.5'"):
        ordered_bytes(np.array([1]), spark=bad)


def test_unknown_timestamp_kind():
    with pytest.raises(ValueError, match="'ntz'.*'tz'"):
        ordered_bytes(np.array([1], dtype="M8[s]"), timestamp="utc")


@pytest.mark.parametrize("fn", [zorder.string_to_ordered_bytes, zorder.byte_truncate_or_fill])
def test_length_errors(fn):
    with pytest.raises(ValueError, match="length must be >= 0"):
        fn(None, -1)
    for bad in (1.5, "8", True, None):
        with pytest.raises(TypeError, match="length must be an integer"):
            fn(None, bad)


def test_ordered_bytes_length_errors():
    with pytest.raises(ValueError, match="length must be >= 0"):
        ordered_bytes(np.array(["a"]), -1)
    with pytest.raises(TypeError, match="length must be an integer"):
        ordered_bytes(np.array(["a"]), 2.0)


def test_string_and_bytes_wrong_types():
    with pytest.raises(TypeError, match="must be str or None"):
        zorder.string_to_ordered_bytes(b"abc", 4)
    with pytest.raises(TypeError, match="bytes-like or None, not str"):
        zorder.byte_truncate_or_fill("abc", 4)
    with pytest.raises(TypeError, match="bytes-like or None, not int"):
        zorder.byte_truncate_or_fill(5, 4)


def test_byte_truncate_or_fill_of_strided_views():
    """A view with gaps between its bytes is read in order (a memoryview cast raised)."""
    assert zorder.byte_truncate_or_fill(memoryview(b"abcd")[::2], 3) == b"ac\x00"
    assert zorder.byte_truncate_or_fill(np.frombuffer(b"abcd", np.uint8)[::-1], 2) == b"dc"


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8,
                    reason="long double is the 64-bit double on this platform")
@pytest.mark.parametrize("fn", [zorder.double_to_ordered_bytes, zorder.float_to_ordered_bytes,
                                zorder.floating_point_ordered_bytes])
def test_scalar_long_double_is_refused_like_a_column(fn):
    """As ordered_bytes refuses a long double column: rounding would give different
    values the same bytes, silently."""
    third = np.longdouble(1) / 3
    with pytest.raises(TypeError, match=f"{fn.__name__}: value is a .* \\(long double\\)"):
        fn(third)
    with pytest.raises(TypeError, match="long double"):
        ordered_bytes(np.array([third]))


@pytest.mark.parametrize("values,match", [
    (np.array([1 + 2j]), "unsupported dtype complex128"),
    (np.array([1], dtype="m8[s]"), "unsupported dtype timedelta64"),
    (np.zeros(2, dtype="V4"), "unsupported dtype"),
    (np.array([1, "a"], dtype=object), "found int at index 0"),
    (np.array([None, 2.5], dtype=object), "found float at index 1"),
    (np.array(["a", b"b"], dtype=object), "not both"),
    (np.zeros((2, 2)), "1-D"),
    (np.array(["NaT"], dtype="M8"), "without a unit"),
    ("abc", "1-D array or sequence"),
    (5, "1-D array or sequence"),
])
@pytest.mark.parametrize("path", STRING_PATHS)
def test_ordered_bytes_type_errors(values, match, path):
    with string_path(path), pytest.raises(TypeError, match=match):
        ordered_bytes(values)


def test_mask_errors():
    with pytest.raises(ValueError, match=r"mask must have shape \(2,\)"):
        ordered_bytes(np.array([1, 2]), mask=np.array([True]))
    with pytest.raises(TypeError, match="mask must be a bool array"):
        ordered_bytes(np.array([1, 2]), mask=np.array([1, 0]))


def test_public_names_are_exported():
    for name in ("ordered_bytes", "tinyint_to_ordered_bytes", "short_to_ordered_bytes",
                 "int_to_ordered_bytes", "long_to_ordered_bytes", "float_to_ordered_bytes",
                 "double_to_ordered_bytes", "string_to_ordered_bytes", "byte_truncate_or_fill",
                 "whole_number_ordered_bytes", "floating_point_ordered_bytes"):
        assert name in zorder.__all__
        assert getattr(zorder, name) is getattr(zorder.ordered, name)


def test_pandas_object_columns_from_arrow_round_trip():
    # to_pandas() turns Arrow dates into datetime.date objects and nullable booleans into
    # True/False/None objects: the bytes must be those of the Arrow column.
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    import datetime
    table = pa.table({
        "d": pa.array([datetime.date(2020, 1, 1), None, datetime.date(1969, 12, 31)]),
        "b": pa.array([True, None, False]),
        "t": pa.array([datetime.datetime(2021, 5, 1, 12, 0, 1, 500000, tzinfo=datetime.timezone.utc),
                       None, datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)]),
    })
    frame = table.to_pandas()
    # iceberg="main": a null boolean is zeros there (1.11 and earlier throw, see test_booleans)
    for name in table.column_names:
        np.testing.assert_array_equal(zorder.ordered_bytes(frame[name], iceberg="main"),
                                      zorder.ordered_bytes(table[name], iceberg="main"), err_msg=name)
    assert zorder.zorder_values(frame, iceberg="main").tobytes() == \
        b"".join(zorder.zorder_values(table, iceberg="main").to_pylist())
    for data in (frame["b"], table["b"]):
        with pytest.raises(ValueError, match="null BOOLEAN"):
            zorder.ordered_bytes(data, iceberg="1.11")
        np.testing.assert_array_equal(zorder.ordered_bytes(data),  # the default, 1.12
                                      zorder.ordered_bytes(table["b"], iceberg="main"))
