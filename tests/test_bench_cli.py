"""`python -m zorder bench` on tiny inputs: the report's structure, never its speed."""

import json
import pathlib
import sys

import pytest

import zorder
from zorder.cli import bench as _bench
from zorder.__main__ import main

TINY = ["--rows", "1000", "--calls", "50", "--repeat", "1", "--quiet", "--matrix-rows", "0"]


def run_json(capsys, *args):
    assert main(["bench", *TINY, "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_report_has_every_backend_and_the_baseline(capsys):
    report = run_json(capsys, "--shapes", "4x32", "--threads", "1")
    backends = list(zorder.available_backends())
    assert report["backends"] == backends
    assert report["auto"] == zorder.backend
    assert report["auto"] in backends or report["auto"].startswith("auto (")
    assert report["rows"] == 1000 and report["bitloop_rows"] == 1000
    assert report["cpu"]["brand"] and report["cpu"]["logical_cpus"] >= 1
    assert report["threads"] == [1]
    (result,) = report["results"]
    assert (result["columns"], result["column_bytes"], result["output_bytes"]) == (4, 8, 32)
    for path in ("per_row", "batch"):
        timed = result[path]
        assert set(timed["ns"]) == set(backends) | {"memcpy"}
        assert all(v > 0 for v in timed["ns"].values())
        # Speedups are over bitloop, for every other backend; x_memcpy for every backend.
        assert set(timed["speedup_vs_bitloop"]) == set(backends) - {"bitloop"}
        assert set(timed["x_memcpy"]) == set(backends)
        for name, speedup in timed["speedup_vs_bitloop"].items():
            assert speedup == pytest.approx(timed["ns"]["bitloop"] / timed["ns"][name])
    assert result["threads"] == {}


def test_thread_scaling_is_reported_per_backend(capsys):
    report = run_json(capsys, "--shapes", "2x8", "--threads", "2")
    assert report["threads"] == [1, 2]
    scaling = report["results"][0]["threads"]
    assert set(scaling) == set(zorder.available_backends()) - {"bitloop"}
    for per_thread in scaling.values():
        assert set(per_thread) == {"1", "2"} and all(v > 0 for v in per_thread.values())


def test_text_report_names_cpu_backends_and_shapes(capsys):
    assert main(["bench", *TINY, "--shapes", "3x8,8x64", "--threads", "2"]) == 0
    text = capsys.readouterr().out
    assert f"auto picks {zorder.backend}" in text
    assert zorder.cpu_info()["brand_raw"] in text
    for name in zorder.available_backends():
        assert name in text
    for label in ("3x8B->8B", "8x8B->64B", "memcpy", "per-row", "batch", "threads=T"):
        assert label in text


def test_default_shapes_are_the_issue_shapes():
    assert _bench.DEFAULT_SHAPES == ((2, 16), (2, 8), (3, 24), (3, 8), (4, 32), (4, 8), (8, 64))
    assert _bench.DEFAULT_ROWS == 1_000_000


@pytest.mark.parametrize("bad", ["4", "4x", "0x8", "4x33", "x", "4x8,,2y"])
def test_bad_shapes_are_argument_errors(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--shapes", bad])
    assert exc.value.code == 2
    assert "shape" in capsys.readouterr().err


def test_unknown_backend_is_refused(capsys):
    assert main(["bench", *TINY, "--backends", "table,nope"]) == 2
    assert "unknown zorder backend 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("given, message", [
    ("table, TABLE", "--backends: table is given twice"),
    ("auto", "--backends: 'auto' is not one backend but the per-call choice"),
])
def test_backends_option_refuses_auto_and_repeats(given, message, capsys):
    assert main(["bench", *TINY, "--backends", given]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message) and err.count("\n") == 1


def test_backends_option_limits_the_report(capsys):
    # (names as ZORDER_BACKEND takes them: any case, spaces around)
    report = run_json(capsys, "--shapes", "2x16", "--threads", "1", "--backends", " Table")
    assert report["backends"] == ["table"]
    ns = report["results"][0]["batch"]["ns"]
    assert set(ns) == {"table", "memcpy"}
    assert report["results"][0]["batch"]["speedup_vs_bitloop"] == {}


def test_plot_writes_a_png_or_says_what_is_missing(tmp_path, capsys, monkeypatch):
    target = tmp_path / "bench.png"
    args = ["bench", *TINY, "--shapes", "2x8", "--threads", "1", "--plot", str(target)]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --plot needs matplotlib") and "zorder[plot]" in err
        assert not target.exists()
        return
    assert main(args) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    # Without matplotlib the same command stops before timing anything, and says why, in
    # one line.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(args) == 2
    assert capsys.readouterr().err == (
        "error: --plot needs matplotlib, which is not installed (pip install 'zorder[plot]')\n")


def test_progress_goes_to_stderr_only_after_the_delay(capsys):
    from zorder.cli.progress import Progress

    bar = Progress("zorder bench", total=2, delay=0.0)
    bar.step("first")
    bar.close()
    captured = capsys.readouterr()
    assert "[1/2] first" in captured.err and captured.out == ""
    quiet = Progress("zorder bench", total=2, delay=3600.0)
    quiet.step("first")
    assert capsys.readouterr().err == ""


def test_module_command_end_to_end(run_python):
    done = run_python("-m", "zorder", "bench", *TINY, "--shapes", "4x8", "--threads", "1",
                      "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["results"][0]["shape"] == "4x8B->8B"


def load_bench_report_tool():
    import importlib.util
    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "bench_report.py"
    if not path.exists():
        pytest.skip("tools/bench_report.py is not part of this checkout")
    spec = importlib.util.spec_from_file_location("bench_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_report_tool_reads_saved_reports(tmp_path, capsys):
    tool = load_bench_report_tool()
    report = run_json(capsys, "--shapes", "2x8,4x32", "--threads", "2")
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(report))
    assert tool.main(["compare", str(saved), str(saved)]) == 0
    text = capsys.readouterr().out
    assert "per-row" in text and "batch" in text and "4x8B->32B" in text
    assert "1.00" in text   # a report against itself
    assert tool.main(["markdown", str(saved)]) == 0
    md = capsys.readouterr().out
    assert md.count("| 2x8B->8B |") == 3   # batch, per-row and threads tables
    for name in report["backends"]:
        assert f" {name} " in md


def test_unwritable_plot_path_fails_before_timing(capsys):
    assert main(["bench", *TINY, "--shapes", "2x8", "--plot", "/nonexistent-folder/x.png"]) == 2
    err = capsys.readouterr().err
    assert "cannot write --plot" in err and "[1/" not in err


def test_shape_matrix_covers_every_class_and_the_hilbert_rows(capsys):
    report = run_json(capsys, "--shapes", "2x8", "--threads", "1", "--matrix-rows", "2000")
    matrix = report["matrix"]
    assert {r["class"] for r in matrix["shapes"]} == set(zorder.cpu.select.SHAPE_CLASSES)
    assert "auto" in matrix["backends"]
    for r in matrix["shapes"]:
        assert r["ns"]["memcpy"] > 0 and all(v > 0 for v in r["ns"].values())
        assert r["auto_vs_best"] > 0
    assert [h["columns"] for h in matrix["hilbert"]] == [2, 3, 4, 8]
    assert main(["bench", *TINY, "--shapes", "2x8", "--threads", "1", "--matrix-rows", "2000"]) == 0
    text = capsys.readouterr().out
    assert "shape matrix" in text and "8+16->24" in text and "hilbert_rows" in text
