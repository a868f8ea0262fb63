"""Release differences beyond floats (issue 15, item 3): invalid UTF-8 decoded as Spark
decodes it, TIMESTAMP_NTZ only from Iceberg 1.11, DATE zeros with Iceberg 1.10.0 on
Spark 4.0, and Spark 4.2 accepted."""

import numpy as np
import pytest

import zorder
from zorder.ordered.options import date_mode, iceberg_release

pa = pytest.importorskip("pyarrow")


def raw_strings(*values):
    """An Arrow string array holding the given raw bytes, valid UTF-8 or not."""
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])


def test_invalid_utf8_becomes_replacement_characters():
    # The shared note's example: b"ab\xffcd" -> 61 62 ef bf bd 63 64 00
    got = zorder.ordered_bytes(raw_strings(b"ab\xffcd", b"ok", b"\xe2\x82"))
    assert bytes(got[0]).hex() == "6162efbfbd636400"
    assert bytes(got[1]).hex() == "6f6b000000000000"
    assert bytes(got[2]).hex() == "efbfbd0000000000"   # a truncated sequence: one U+FFFD
    z = zorder.zorder_values(pa.table({"s": raw_strings(b"ab\xffcd")}))
    assert zorder.values.codec.as_matrix(z).shape == (1, 8)


def test_valid_utf8_takes_the_buffer_path_unchanged():
    arr = pa.array(["xy\U0001F600", None, "a"])
    np.testing.assert_array_equal(zorder.ordered_bytes(arr, 4),
                                  zorder.ordered_bytes(np.array(["xy\U0001F600", "", "a"], object), 4))


@pytest.mark.parametrize("release", ["1.10", "1.9.2", "1.0"])
def test_timestamp_ntz_refused_before_1_11(release):
    ntz = pa.array([1, 2], pa.timestamp("us"))
    with pytest.raises(TypeError, match=f"TIMESTAMP_NTZ column, which Iceberg {iceberg_release(release)[0]}"):
        zorder.ordered_bytes(ntz, iceberg=release)
    with pytest.raises(TypeError, match="column 't': a TIMESTAMP_NTZ"):
        zorder.zorder_values(pa.table({"t": ntz}), iceberg=release)
    with pytest.raises(TypeError, match="TIMESTAMP_NTZ"):
        zorder.ordered_bytes(np.array([1, 2], "M8[us]"), iceberg=release)
    # a zone, or the column read as TIMESTAMP, is fine in every release
    zorder.ordered_bytes(pa.array([1], pa.timestamp("us", tz="UTC")), iceberg=release)
    zorder.ordered_bytes(ntz, iceberg=release, timestamp="tz")
    for fine in ("1.11", "1.11.1", "main"):
        assert zorder.ordered_bytes(ntz, iceberg=fine).shape == (2, 8)


def test_dates_with_iceberg_1_10_0_on_spark_4_0_are_zeros():
    dates = np.array(["2024-01-02", "1969-12-31"], "M8[D]")
    assert not zorder.ordered_bytes(dates, iceberg="1.10.0", spark="4.0").any()
    assert not zorder.ordered_bytes(pa.array(dates), iceberg="1.10", spark="4").any()
    assert zorder.ordered_bytes(dates, iceberg="1.10.1", spark="4.0").any()
    assert zorder.ordered_bytes(dates, iceberg="1.10.0", spark="4.1").any()
    assert (date_mode("1.10.0", "4.0"), date_mode("1.10.1", "4.0"), date_mode("main", "3.5")) == \
        ("3.5", "4", "3.5")


def test_spark_4_2_and_release_parsing():
    dates = np.array(["2024-01-02"], "M8[D]")
    np.testing.assert_array_equal(zorder.ordered_bytes(dates, spark="4.2"), zorder.ordered_bytes(dates))
    assert iceberg_release("main") is None
    assert iceberg_release("legacy") == iceberg_release("1.11") == (1, 11, 0)
    assert iceberg_release("1.10.1") == (1, 10, 1)
    with pytest.raises(ValueError, match="iceberg must be"):
        iceberg_release("1.12")


def test_null_boolean_raises_for_releases_and_is_zeros_on_main():
    bools = pa.array([True, None, False])
    with pytest.raises(ValueError, match=r"a null BOOLEAN \(first at index 1\)"):
        zorder.ordered_bytes(bools, iceberg="1.11")
    with pytest.raises(ValueError, match="column 'b': a null BOOLEAN"):
        zorder.zorder_values(pa.table({"b": bools}), iceberg="1.10")
    with pytest.raises(ValueError, match="null BOOLEAN"):
        zorder.ordered_bytes(np.array([True, False]), iceberg="legacy", mask=np.array([False, True]))
    main = zorder.ordered_bytes(bools, iceberg="main")
    assert main.tolist()[1] == [0] * 8 and main.tolist()[0][0] == 0x81
    # no null: every release gives the same bytes
    np.testing.assert_array_equal(zorder.ordered_bytes(pa.array([True, False]), iceberg="1.11"),
                                  zorder.ordered_bytes(pa.array([True, False]), iceberg="main"))
