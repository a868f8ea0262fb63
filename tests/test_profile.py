"""The stage breakdown (``zorder.values.stages``) and the commands' ``--profile``."""

import re
import threading
import time

import numpy as np
import pytest

from zorder.values import stages
from zorder.values.stages import (
    COMMIT, CURVE, ORDERED_BYTES, RANKS, READ, REORDER, SORT, STAGES, WRITE, profiling, stage,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from zorder.__main__ import main  # noqa: E402

#: One row of the printed breakdown: name, wall s, share, CPU s, calls.
ROW = re.compile(r"^  (\S(?:.*\S)?)\s+(\d+\.\d{3})\s+(\d+)%\s+(\d+\.\d{3})\s+(\d+)$")
TOTAL = re.compile(r": (\d+\.\d{3}) s wall, (\d+\.\d{3}) s CPU .* on (\d+) thread")


def breakdown(err):
    """(total wall, threads, {stage: (wall, cpu, calls)}) of a printed breakdown."""
    total = TOTAL.search(err)
    assert total, err
    rows = {m.group(1): (float(m.group(2)), float(m.group(4)), int(m.group(5)))
            for m in map(ROW.match, err.splitlines()) if m}
    return float(total.group(1)), int(total.group(3)), rows


def plausible(err, expected):
    wall, threads, rows = breakdown(err)
    assert set(expected) <= set(rows), (expected, err)
    assert wall > 0
    for name, (w, cpu, calls) in rows.items():
        assert calls >= 1 and w >= 0 and cpu >= 0, err
    # stages on several threads overlap, each at most the whole run
    assert sum(w for w, _, _ in rows.values()) <= wall * max(1, threads) + 1e-3, err
    return rows


def test_nothing_is_recorded_outside_a_profiled_run():
    assert stages._active is None
    with stage(SORT):
        pass
    with profiling() as profile:
        pass
    assert profile.totals() == {}
    assert stages._active is None


def test_stages_add_up_per_name_and_an_inner_stage_counts_in_the_outer_only():
    with profiling() as profile:
        for _ in range(3):
            with stage(READ):
                time.sleep(0.002)
        with stage(WRITE):
            with stage(SORT):   # (inside WRITE, on the same thread)
                time.sleep(0.002)
    totals = profile.totals()
    assert list(totals) == [READ, WRITE]
    assert totals[READ].calls == 3 and totals[READ].wall >= 0.006
    assert profile.wall >= totals[READ].wall + totals[WRITE].wall


def test_every_thread_records_and_the_breakdown_says_they_overlap():
    def work():
        with stage(CURVE):
            time.sleep(0.01)

    with profiling() as profile:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert profile.totals()[CURVE].calls == 2
    assert profile.threads == 2
    text = profile.format("test")
    assert "may add up to more than the total" in text
    plausible(text, [CURVE])


def test_a_profile_inside_another_records_to_the_inner_one_only():
    with profiling() as outer:
        with profiling() as inner:
            with stage(SORT):
                pass
        with stage(READ):
            pass
    assert list(inner.totals()) == [SORT]
    assert list(outer.totals()) == [READ]


def test_helper_cpu_counts_in_the_stage_running_on_the_calling_thread():
    stages.add_helper_cpu(5.0)   # (no run profiled: nothing to count it in)
    with profiling() as profile:
        stages.add_helper_cpu(7.0)   # (no stage on this thread)
        with stage(WRITE):
            with stage(SORT):   # (counts in WRITE, the outer one)
                stages.add_helper_cpu(2.0)
            stages.add_helper_cpu(1.0)
    totals = profile.totals()
    assert list(totals) == [WRITE]
    assert 3.0 <= totals[WRITE].cpu < 3.5


def test_the_large_sort_counts_its_helper_threads_cpu():
    """From PARALLEL_ROWS rows the sort runs on a pool of its own: their CPU time is the
    sort's too, beside the calling thread's."""
    from zorder.values._radix import PARALLEL_ROWS, argsort_rows

    z = np.random.default_rng(7).integers(0, 256, (2 * PARALLEL_ROWS, 16), dtype=np.uint8)
    with profiling() as profile:
        with stage(SORT):
            start = time.thread_time()
            argsort_rows(z, None, 2)
            own = time.thread_time() - start
    assert profile.totals()[SORT].cpu > own + 1e-4

def test_the_values_floor_records_ordered_bytes_ranks_curve_and_sort():
    import zorder

    table = pa.table({"a": np.arange(2000) % 7, "b": np.random.default_rng(0).normal(size=2000)})
    with profiling() as profile:
        zorder.sort(table, ["a", "b"], encoding="rank")
    assert set(profile.totals()) == {ORDERED_BYTES, RANKS, CURVE, SORT}


@pytest.fixture
def events(tmp_path):
    rng = np.random.default_rng(3)
    n = 4000
    table = pa.table({"ts": pa.array(rng.integers(0, 10**12, n)).cast(pa.timestamp("us")),
                      "user": rng.zipf(1.5, n) % 1000, "x": rng.normal(size=n),
                      "city": pa.array([f"c{k}" for k in rng.integers(0, 20, n)])})
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(2):
        pq.write_table(table.slice(i * n // 2, n // 2), folder / f"{i}.parquet",
                       row_group_size=500)
    return folder, table


@pytest.mark.parametrize("encoding", ["iceberg", "rank"])
def test_sort_profile_prints_every_stage_after_the_result(events, tmp_path, capsys, encoding):
    folder, _ = events
    out = tmp_path / "out.parquet"
    assert main(["sort", str(folder / "0.parquet"), str(out), "--columns", "ts,user",
                 "--encoding", encoding, "--profile"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("wrote 2,000 rows")
    assert "zorder sort --profile" in captured.err
    expected = [READ, ORDERED_BYTES, CURVE, SORT, REORDER, WRITE, COMMIT, "report"]
    rows = plausible(captured.err, expected + ([RANKS] if encoding == "rank" else []))
    assert [r for r in rows if r in STAGES] == [s for s in STAGES if s in rows]  # in order


def test_without_the_flag_nothing_is_printed(events, tmp_path, capsys):
    folder, _ = events
    assert main(["sort", str(folder / "0.parquet"), str(tmp_path / "o.parquet"),
                 "--columns", "ts,user", "--no-report"]) == 0
    assert capsys.readouterr().err == ""


def test_a_failing_command_ends_with_its_error_not_a_profile(events, tmp_path, capsys):
    folder, _ = events
    assert main(["sort", str(folder / "0.parquet"), str(tmp_path / "o.parquet"),
                 "--columns", "nope", "--profile"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "profile" not in err


def test_cluster_profile(events, tmp_path, capsys):
    pytest.importorskip("dask")
    folder, _ = events
    assert main(["cluster", str(folder), str(tmp_path / "out"), "--columns", "ts,user",
                 "--target-file-size", "20KB", "--scheduler", "threads", "--quiet",
                 "--no-report", "--profile"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("wrote 4,000 rows")
    assert "zorder cluster --profile" in captured.err
    assert "Dask's reading" in captured.err   # (what it cannot see, said)
    plausible(captured.err, [ORDERED_BYTES, CURVE, SORT, REORDER, WRITE, COMMIT])


def test_iceberg_rewrite_profile(events, tmp_path, capsys):
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog

    _, table = events
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    created = catalog.create_table("db.events", table.schema)
    for i in range(2):
        created.append(table.slice(i * 2000, 2000))
    assert main(["iceberg", "rewrite", "db.events", "--columns", "ts,user", "--quiet",
                 "--catalog", "test", "--uri", f"sqlite:///{tmp_path}/catalog.db",
                 "--warehouse", f"file://{tmp_path}/wh", "--profile"]) == 0
    captured = capsys.readouterr()
    assert "committed snapshot" in captured.out
    assert "zorder iceberg rewrite --profile" in captured.err
    plausible(captured.err, [READ, ORDERED_BYTES, CURVE, SORT, REORDER, WRITE, "checksum",
                             COMMIT, "report"])
