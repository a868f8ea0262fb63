"""zorder cluster within a memory limit (issue 38): out of core through spill runs on the
local schedulers, and --scheduler local:N (a LocalCluster started and always stopped).

A few thousand rows and a limit of a megabyte or two make the out-of-core path run."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
psutil = pytest.importorskip("psutil")

from zorder import dask as zd  # noqa: E402
from zorder.__main__ import main  # noqa: E402
from zorder.engines import dask_stages  # noqa: E402
from zorder.engines.dask_scheduler import check_scheduler, local_workers  # noqa: E402
from zorder.values import codec  # noqa: E402

ROWS = 24_000
COLUMNS = ["a", "b"]
OPTIONS = dict(target_file_size="100kB", keep_zvalue=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("in") / "table"
    path.mkdir()
    rng = np.random.default_rng(7)
    per = ROWS // 4
    for f in range(4):
        pq.write_table(pa.table({
            "id": np.arange(f * per, (f + 1) * per, dtype=np.int64),
            "a": rng.integers(0, 500, per),          # repeats: ties in Z-value
            "b": rng.normal(0.0, 10.0, per),
            "s": pa.array([f"w{x}" for x in rng.integers(0, 40, per)]),
        }), str(path / f"in-{f}.parquet"), row_group_size=2_000)
    return str(path)


def _rows_in_order(result):
    tables = [pq.read_table(f.path) for f in result.files]
    previous = None
    for table in tables:
        keys = codec.sort_keys(codec.as_matrix(table.column(zd.ZVALUE_COLUMN)))
        assert np.all(keys[:-1] <= keys[1:])
        if previous is not None:
            assert previous < keys[0]
        previous = keys[-1]
    return pa.concat_tables(tables)


def _leftovers(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("."))


@pytest.fixture(scope="module")
def in_memory(dataset, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("mem") / "z")
    return _rows_in_order(zd.cluster(dataset, out, COLUMNS, scheduler="threads", **OPTIONS))


def test_out_of_core_gives_the_in_memory_order(dataset, in_memory, tmp_path, monkeypatch):
    spilled = []
    spill = dask_stages.spill_partition

    def counted(*args, **kwargs):
        spilled.append(args[1])
        return spill(*args, **kwargs)
    monkeypatch.setattr(dask_stages, "spill_partition", counted)
    result = zd.cluster(dataset, str(tmp_path / "z"), COLUMNS, scheduler="threads",
                        memory_limit="1MB", **OPTIONS)
    assert sorted(spilled) == [0, 1, 2, 3]
    table = _rows_in_order(result)
    assert result.rows == ROWS
    # rows, and ties, in the one order a stable sort of the whole input gives
    assert table.column("id").equals(in_memory.column("id"))
    assert table.drop_columns([zd.ZVALUE_COLUMN]).equals(
        in_memory.drop_columns([zd.ZVALUE_COLUMN]))
    assert _leftovers(tmp_path) == []


def test_small_limit_is_refused_before_writing(dataset, tmp_path):
    with pytest.raises(ValueError, match=r"memory_limit=100000 \(--memory-limit\)"):
        zd.cluster(dataset, str(tmp_path / "z"), COLUMNS, scheduler="sync",
                   memory_limit="100kB")
    assert os.listdir(tmp_path) == []


def test_scheduler_names_are_checked(tmp_path, capsys):
    assert local_workers("local:3") == 3 and local_workers("threads") is None
    for bad in ("local:0", "local:", "local:999"):
        with pytest.raises(ValueError, match="local:N"):
            check_scheduler(bad)
    with pytest.raises(SystemExit) as exit_:
        main(["cluster", str(tmp_path), str(tmp_path / "z"), "--columns", "a",
              "--scheduler", "local:0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--scheduler" in err and "local:N" in err


def _workers_of(pid):
    try:
        return [p for p in psutil.Process(pid).children(recursive=True)
                if "spawn_main" in " ".join(p.cmdline())]
    except psutil.Error:
        return []


def test_local_cluster_out_of_core_and_stopped(dataset, in_memory, tmp_path):
    result = zd.cluster(dataset, str(tmp_path / "z"), COLUMNS, scheduler="local:2",
                        memory_limit="2MB", **OPTIONS)
    table = _rows_in_order(result)
    assert table.column("id").equals(in_memory.column("id"))
    assert _leftovers(tmp_path) == []
    deadline = time.monotonic() + 10
    while _workers_of(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _workers_of(os.getpid()) == []


def test_sigterm_stops_the_local_cluster(dataset, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, "-m", "zorder", "cluster", dataset, str(tmp_path / "z"),
         "--columns", "a,b", "--scheduler", "local:2", "--memory-limit", "2MB",
         "--quiet", "--no-report"], env=env, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path)   # (`-m` puts its folder first on sys.path: never the source folder)
    deadline = time.monotonic() + 60
    while len(_workers_of(child.pid)) < 2 and child.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = _workers_of(child.pid)
    assert len(workers) == 2, "the LocalCluster's workers did not start"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "Traceback" not in err
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert alive == []
    assert os.listdir(tmp_path) == []
