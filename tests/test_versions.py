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
    assert iceberg_release("1.12") == (1, 12, 0) and iceberg_release("1.12.1") == (1, 12, 1)
    with pytest.raises(ValueError, match="iceberg must be"):
        iceberg_release("1.13")


def test_null_boolean_raises_before_1_12_and_is_zeros_from_1_12_and_on_main():
    bools = pa.array([True, None, False])
    with pytest.raises(ValueError, match=r"a null BOOLEAN \(first at index 1\)"):
        zorder.ordered_bytes(bools, iceberg="1.11")
    with pytest.raises(ValueError, match="column 'b': a null BOOLEAN"):
        zorder.zorder_values(pa.table({"b": bools}), iceberg="1.10")
    with pytest.raises(ValueError, match="null BOOLEAN"):
        zorder.ordered_bytes(np.array([True, False]), iceberg="legacy", mask=np.array([False, True]))
    with pytest.raises(ValueError, match="null BOOLEAN"):
        zorder.ordered_bytes(bools, iceberg="1.11.9")
    main = zorder.ordered_bytes(bools, iceberg="main")
    assert main.tolist()[1] == [0] * 8 and main.tolist()[0][0] == 0x81
    for release in ("1.12", "1.12.0", "1.12.3"):
        np.testing.assert_array_equal(zorder.ordered_bytes(bools, iceberg=release), main)
    np.testing.assert_array_equal(
        zorder.ordered_bytes(np.array([True, False]), iceberg="1.12", mask=np.array([False, True])),
        zorder.ordered_bytes(pa.array([True, False])))
    # no null: every release gives the same bytes
    np.testing.assert_array_equal(zorder.ordered_bytes(pa.array([True, False]), iceberg="1.11"),
                                  zorder.ordered_bytes(pa.array([True, False]), iceberg="main"))


# The default iceberg= (issue 15, item 3): the newest release zorder models, not main.

def test_default_is_the_newest_release_zorder_models():
    from zorder.ordered.options import ICEBERG_DEFAULT, ICEBERG_RELEASES

    assert ICEBERG_DEFAULT == ICEBERG_RELEASES[-1] == "1.12"
    assert zorder.ICEBERG_DEFAULT == ICEBERG_DEFAULT and "main" not in ICEBERG_RELEASES
    # every listed release is accepted, the one after the newest is not (yet)
    for release in ICEBERG_RELEASES:
        assert iceberg_release(release) == (1, int(release.split(".")[1]), 0)
    newest = int(ICEBERG_RELEASES[-1].split(".")[1])
    with pytest.raises(ValueError, match="iceberg must be"):
        iceberg_release(f"1.{newest + 1}")
    assert zorder.IcebergOptions().iceberg == ICEBERG_DEFAULT


def _public_iceberg_defaults():
    import importlib
    import inspect

    found = {}
    for name in ("zorder", "zorder.dask", "zorder.spark", "zorder.parquet.sort"):
        module = importlib.import_module(name)
        for attr in dir(module):
            fn = getattr(module, attr)
            if not callable(fn):
                continue
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            if "iceberg" in params:
                found[f"{name}.{attr}"] = params["iceberg"].default
    return found


def test_every_public_iceberg_default_is_the_constant():
    found = _public_iceberg_defaults()
    # the functions that compute bytes are all here, so none can keep an old default
    for name in ("ordered_bytes", "double_to_ordered_bytes", "float_to_ordered_bytes",
                 "zorder_values", "sort_indices", "sort", "hilbert_values", "rank_boundaries"):
        assert f"zorder.{name}" in found
    assert "zorder.dask.cluster" in found and "zorder.spark.zvalue_batches" in found
    assert {k: v for k, v in found.items() if v != zorder.ICEBERG_DEFAULT} == {}


def test_cli_flag_defaults_to_the_constant():
    import argparse

    from zorder.cli.args import add_iceberg_arguments, iceberg_options

    parser = argparse.ArgumentParser()
    add_iceberg_arguments(parser)
    assert iceberg_options(parser.parse_args([])) == zorder.IcebergOptions()
    assert iceberg_options(parser.parse_args([])).iceberg == zorder.ICEBERG_DEFAULT
    assert iceberg_options(parser.parse_args(["--iceberg", "main"])).float_mode == "main"
    assert f"default {zorder.ICEBERG_DEFAULT}, the newest release" in " ".join(parser.format_help().split())


FLOATS = np.array([1.0, -0.0, -921614.125, -921614.0625, np.inf, np.nan])


def test_no_iceberg_equals_the_default_where_releases_differ():
    from zorder.ordered.options import ICEBERG_DEFAULT

    # floats: the default is 1.12's formula, PR 17071's (main's), not 1.11's
    default = zorder.ordered_bytes(FLOATS)
    np.testing.assert_array_equal(default, zorder.ordered_bytes(FLOATS, iceberg=ICEBERG_DEFAULT))
    np.testing.assert_array_equal(default, zorder.ordered_bytes(FLOATS, iceberg="main"))
    assert not np.array_equal(default, zorder.ordered_bytes(FLOATS, iceberg="1.11"))
    assert zorder.double_to_ordered_bytes(1.0).hex() == "bff0000000000000"
    assert zorder.double_to_ordered_bytes(1.0, iceberg="1.11").hex() == "bff000007fe00000"
    for fn in (zorder.double_to_ordered_bytes, zorder.float_to_ordered_bytes,
               zorder.floating_point_ordered_bytes):
        assert fn(-921614.125) == fn(-921614.125, iceberg=ICEBERG_DEFAULT)
    table = pa.table({"x": FLOATS, "y": FLOATS[::-1].copy()})
    z = zorder.values.codec.as_matrix(zorder.zorder_values(table))
    np.testing.assert_array_equal(
        z, zorder.values.codec.as_matrix(zorder.zorder_values(table, iceberg=ICEBERG_DEFAULT)))
    np.testing.assert_array_equal(
        z, zorder.values.codec.as_matrix(zorder.zorder_values(table, iceberg="main")))
    assert not np.array_equal(
        z, zorder.values.codec.as_matrix(zorder.zorder_values(table, iceberg="1.11")))
    np.testing.assert_array_equal(zorder.sort_indices(table),
                                  zorder.sort_indices(table, iceberg=ICEBERG_DEFAULT))
    np.testing.assert_array_equal(
        zorder.values.codec.as_matrix(zorder.hilbert_values(table, ["x", "y"])),
        zorder.values.codec.as_matrix(zorder.hilbert_values(table, ["x", "y"], iceberg=ICEBERG_DEFAULT)))
    # the documented bug is 1.11's, not the default's: -921614.125 sorts after -921614.0625
    assert zorder.double_to_ordered_bytes(-921614.125) < zorder.double_to_ordered_bytes(-921614.0625)
    assert zorder.double_to_ordered_bytes(-921614.125, iceberg="1.11") > \
        zorder.double_to_ordered_bytes(-921614.0625, iceberg="1.11")


def test_no_iceberg_gives_a_null_boolean_zeros_as_1_12_does():
    bools = pa.array([True, None])
    assert zorder.ordered_bytes(bools).tolist()[1] == [0] * 8
    np.testing.assert_array_equal(zorder.ordered_bytes(bools), zorder.ordered_bytes(bools, iceberg="1.12"))
    table = pa.table({"b": bools})
    np.testing.assert_array_equal(zorder.values.codec.as_matrix(zorder.zorder_values(table)),
                                  [[0x81] + [0] * 7, [0] * 8])
    np.testing.assert_array_equal(zorder.sort_indices(table), [1, 0])
    with pytest.raises(ValueError, match="column 'b': a null BOOLEAN"):
        zorder.zorder_values(table, iceberg="1.11")
    with pytest.raises(ValueError, match="null BOOLEAN"):
        zorder.sort_indices(table, iceberg="1.11")


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def _section(path, heading):
    """The text of a Markdown section, from its heading to the next of the same level."""
    text = (ROOT / path).read_text(encoding="utf-8")
    level = heading.split(" ")[0] + " "
    start = text.index(heading + "\n")
    end = text.find("\n" + level, start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def test_the_docs_list_the_release_modes_the_code_accepts():
    from zorder.ordered.options import ICEBERG_DEFAULT, ICEBERG_RELEASES, ICEBERG_VERSIONS

    section = _section("docs/iceberg.md", "## Iceberg release modes")
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `\"")]
    names = [row.split("`")[1].strip('"') for row in rows]
    assert sorted(names) == sorted(ICEBERG_VERSIONS)
    assert [row for row in rows if "(default)" in row] == [f'`"{ICEBERG_DEFAULT}"` (default)']
    assert f"from {ICEBERG_RELEASES[0]} to {ICEBERG_RELEASES[-1]}" in section
    readme = _section("README.md", "### Iceberg versions")
    assert f"{ICEBERG_DEFAULT} today" in readme
    for name in ICEBERG_VERSIONS:
        assert f'`"{name}"`' in readme, name
    usage = (ROOT / "docs/iceberg.md").read_text(encoding="utf-8")
    assert f"newest Iceberg release zorder models ({ICEBERG_DEFAULT})" in usage
    assert f'iceberg="{ICEBERG_DEFAULT}"' in (ROOT / "docs/spark.md").read_text(encoding="utf-8")


def test_1_12_is_main_in_every_modelled_behaviour():
    from zorder.ordered.options import iceberg_mode

    assert iceberg_mode("1.12") == iceberg_mode("1.12.4") == iceberg_mode("main") == "main"
    assert iceberg_mode("1.11.9") == iceberg_mode("legacy") == "1.11"
    assert zorder.IcebergOptions(iceberg="1.12").float_mode == "main"
    ntz = pa.array([1, 2], pa.timestamp("us"))
    table = pa.table({"x": FLOATS, "b": pa.array([True, None, False, True, None, False]),
                      "t": pa.array(range(6), pa.timestamp("us")),
                      "d": pa.array(np.arange(6).astype("M8[D]"))})
    for spark in ("4", "3.5"):
        np.testing.assert_array_equal(
            zorder.values.codec.as_matrix(zorder.zorder_values(table, iceberg="1.12", spark=spark)),
            zorder.values.codec.as_matrix(zorder.zorder_values(table, iceberg="main", spark=spark)))
        np.testing.assert_array_equal(
            zorder.values.codec.as_matrix(zorder.hilbert_values(table, iceberg="1.12", spark=spark)),
            zorder.values.codec.as_matrix(zorder.hilbert_values(table, iceberg="main", spark=spark)))
    assert zorder.ordered_bytes(ntz, iceberg="1.12").shape == (2, 8)
