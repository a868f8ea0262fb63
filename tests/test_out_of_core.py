"""Issue 38: the out-of-core sort. A limit of a few hundred kB sends a few thousand rows
through it; its output must be the in-memory path's, byte for byte, and its spill files
must go however it ends."""

import errno
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fs_snapshot import leftovers, snapshot  # noqa: E402

import zorder  # noqa: E402
from zorder.__main__ import main  # noqa: E402
from zorder.parquet import external, spill  # noqa: E402
from zorder.parquet import memory  # noqa: E402
from zorder.parquet.memory import arrow_bytes, memory_limit_of  # noqa: E402
from zorder.parquet.sort import sort_parquet  # noqa: E402
from zorder.values.ordering import Ordering  # noqa: E402

N = 4000
LIMIT = "200kB"   # (the files below take 100-160 kB in Arrow: 4x is over it)


def table(n=N, seed=2, heavy=False):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 40, n)
    b = rng.normal(size=n)
    if heavy:   # most rows one curve value
        a = np.where(rng.random(n) < 0.9, 7, a)
        b = np.where(a == 7, 0.5, b)
    words = np.char.add("w", rng.integers(0, 500, n).astype("U3")).astype(object)
    words[rng.random(n) < 0.05] = None
    return pa.table({"a": pa.array(a, mask=rng.random(n) < 0.03), "b": b,
                     "s": pa.array(words, pa.string()), "rid": np.arange(n)})


@pytest.fixture
def data(tmp_path):
    pq.write_table(table(), tmp_path / "in.parquet", row_group_size=600)
    return tmp_path


def both(folder, limit=LIMIT, **kw):
    """(in-memory result, out-of-core result), written to mem.parquet and ooc.parquet."""
    kw = {"columns": ["a", "b", "s"], "row_group_size": 250, "overwrite": True, **kw}
    stages = set()
    mem = sort_parquet(folder / "in.parquet", folder / "mem.parquet", **kw)
    ooc = sort_parquet(folder / "in.parquet", folder / "ooc.parquet", memory_limit=limit,
                       progress=lambda stage, *_: stages.add(stage), **kw)
    assert {"sampling", "spilling", "sorting", "writing"} <= stages, stages   # (out of core)
    return mem, ooc


def assert_same_files(folder):
    mem, ooc = folder / "mem.parquet", folder / "ooc.parquet"
    assert pq.read_table(ooc).equals(pq.read_table(mem))
    groups = [[f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
              for f in (pq.ParquetFile(mem), pq.ParquetFile(ooc))]
    assert groups[0] == groups[1]
    assert mem.read_bytes() == ooc.read_bytes()


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
@pytest.mark.parametrize("encoding", ["iceberg", "rank"])
def test_same_output_as_in_memory(data, curve, encoding):
    mem, ooc = both(data, curve=curve, encoding=encoding)
    assert_same_files(data)
    assert ooc == mem   # (rows, row groups, value bytes, and the skipping report)
    assert leftovers(data) == []


def test_rank_boundaries_from_a_sample_of_a_larger_file(tmp_path, monkeypatch):
    # more rows than the sample: boundaries come from the rows default_rng draws
    from zorder.values import rank
    # (both paths' default sample made 500 rows, so 4,000 rows are more than it)
    monkeypatch.setattr(rank.boundaries_of, "__defaults__", (500, 0))
    monkeypatch.setattr(external.Sampler.__init__, "__defaults__", (500, 0))
    pq.write_table(table(seed=4), tmp_path / "in.parquet", row_group_size=600)
    both(tmp_path, encoding="rank")
    assert_same_files(tmp_path)


def test_heavy_value_and_ties(tmp_path):
    pq.write_table(table(heavy=True), tmp_path / "in.parquet", row_group_size=600)
    both(tmp_path, columns=["a", "b"])
    assert_same_files(tmp_path)
    rid = pq.read_table(tmp_path / "ooc.parquet").column("rid").to_numpy()
    assert len(np.unique(rid)) == N


def test_a_column_named_like_the_key_column(tmp_path):
    t = table()
    t = t.append_column(external.KEY_COLUMN, pa.array(np.arange(N)[::-1]))
    pq.write_table(t, tmp_path / "in.parquet", row_group_size=600)
    both(tmp_path, columns=["a", external.KEY_COLUMN])
    assert_same_files(tmp_path)


def test_compare_layouts_out_of_core(data):
    mem, ooc = both(data, compare=("encoding", "curve"))
    assert ooc["report"] == mem["report"]
    assert len(ooc["report"]["columns"]["a"]) == 5   # before, and four layouts
    assert leftovers(data) == []


def core_order(t, ordering, columns, row_bytes, limit, tmp_path, batch=300):
    """The rows of ``t`` as the core orders them, through its engine-neutral API."""
    folder = tmp_path / "spill"
    folder.mkdir()
    done = external.external_sort(
        t.select(columns).to_batches(batch), lambda rows: t.to_batches(batch), t.num_rows,
        ordering, columns, schema=t.schema, budget=external.Budget(limit),
        spill_folder=str(folder), row_bytes=row_bytes)
    out = pa.concat_tables(list(done.tables))
    assert os.listdir(folder) == []   # (each run removed once given)
    return out


@pytest.mark.parametrize("heavy", [False, True])
def test_core_splits_a_range_too_large_again(tmp_path, heavy):
    # Told rows are tiny, the core makes one range, finds it too large, and splits it
    # from its own curve values (a heavy value: into a range that needs no sort).
    t = table(heavy=heavy)
    ordering = Ordering()
    out = core_order(t, ordering, ["a", "b"], row_bytes=0.01, limit=40_000, tmp_path=tmp_path)
    expected = t.take(zorder.sort_indices(t, columns=["a", "b"]))
    assert out.equals(expected)


def test_regroup_cuts_across_tables():
    tables = [pa.table({"x": np.arange(a, b)}) for a, b in [(0, 3), (3, 4), (4, 11), (11, 11)]]
    groups = list(external.regroup(tables, 4))
    assert [g.num_rows for g in groups] == [4, 4, 3]
    assert pa.concat_tables(groups).column("x").to_pylist() == list(range(11))


def test_range_splits_give_a_heavy_value_its_own_range():
    values = np.zeros((100, 2), np.uint8)
    values[:, 0] = 1
    values[:50, 1] = 3            # the smallest value: no split below it
    values[50:90, 1] = 5          # heavy: [5, 6) is a range of one value
    values[90:, 1] = np.arange(10, 20)
    splits = external.range_splits(values, 4)
    assert [bytes(k) for k in splits] == [b"\1\4", b"\1\5", b"\1\6"]
    assert external._single_key_ranges(splits) == [False, True, True, False]
    assert len(external.range_splits(values[:50], 4)) == 1   # one value: split after it


def test_spill_folder_in_temp_dir_is_removed(data, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    both(data, temp_dir=str(temp))
    assert os.listdir(temp) == []


@pytest.mark.parametrize("stage", ["spilling", "sorting", "writing"])
def test_spill_removed_after_sigterm(data, stage):
    # a real SIGTERM, sent to this process at a stage of the work: the same cleanup
    import signal
    from zorder.parquet.safety import Terminated

    sent = []

    def progress(now, done, total, unit):
        if now == stage and done and not sent:
            sent.append(now)
            os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(Terminated):
        sort_parquet(data / "in.parquet", data / "ooc.parquet", ["a", "b"],
                     memory_limit=LIMIT, row_group_size=250, progress=progress)
    assert sent == [stage]
    assert not (data / "ooc.parquet").exists() and leftovers(data) == []


def test_spill_removed_after_an_error_mid_way(data, monkeypatch):
    pq.write_table(pa.table({"x": [1]}), data / "ooc.parquet")
    before = snapshot(data / "ooc.parquet"), snapshot(data / "in.parquet")
    calls = []

    def failing(values):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("injected mid-way")
        return zorder.argsort_zvalues(values)
    monkeypatch.setattr(external, "argsort_zvalues", failing)
    with pytest.raises(RuntimeError, match="injected"):
        sort_parquet(data / "in.parquet", data / "ooc.parquet", ["a", "b"], overwrite=True,
                     memory_limit=LIMIT, row_group_size=250)
    assert len(calls) == 2
    assert (snapshot(data / "ooc.parquet"), snapshot(data / "in.parquet")) == before
    assert leftovers(data) == []


def cli(capsys, *argv):
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def test_full_disk_while_spilling_is_one_line(data, monkeypatch, capsys):
    pq.write_table(pa.table({"x": [1]}), data / "out.parquet")
    before = snapshot(data / "out.parquet"), snapshot(data / "in.parquet")
    appended = []
    real = spill.SpillRun.append

    def append(self, batch):
        appended.append(1)
        if len(appended) > 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(self, batch)
    monkeypatch.setattr(spill.SpillRun, "append", append)
    rc, err = cli(capsys, "sort", str(data / "in.parquet"), str(data / "out.parquet"),
                  "--columns", "a,b", "--overwrite", "--memory-limit", LIMIT,
                  "--row-group-size", "250")
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert os.strerror(errno.ENOSPC) in lines[0]
    assert (snapshot(data / "out.parquet"), snapshot(data / "in.parquet")) == before
    assert leftovers(data) == []


def test_too_small_limit_is_refused_before_writing(data, capsys):
    with pytest.raises(ValueError, match="memory_limit"):
        sort_parquet(data / "in.parquet", data / "out.parquet", ["a"], memory_limit=20_000)
    assert not (data / "out.parquet").exists() and leftovers(data) == []
    rc, err = cli(capsys, "sort", str(data / "in.parquet"), str(data / "out.parquet"),
                  "--columns", "a", "--memory-limit", "20kB")
    assert rc == 2 and err.count("\n") == 1 and "--memory-limit 20000" in err, err
    assert "memory_limit" not in err
    assert not (data / "out.parquet").exists() and leftovers(data) == []


@pytest.mark.parametrize("value", ["lots", "-1GB", "0", "2XB"])
def test_memory_limit_flag_errors_name_the_flag(data, capsys, value):
    rc, err = cli(capsys, "sort", str(data / "in.parquet"), str(data / "out.parquet"),
                  "--columns", "a", f"--memory-limit={value}")
    assert rc == 2 and "argument --memory-limit" in err, err
    assert not (data / "out.parquet").exists()


def test_missing_temp_dir_is_a_usage_error(data, capsys):
    rc, err = cli(capsys, "sort", str(data / "in.parquet"), str(data / "out.parquet"),
                  "--columns", "a", "--temp-dir", str(data / "nowhere"))
    assert rc == 2 and err.startswith("error: --temp-dir") and "temp_dir=" not in err, err


def test_memory_limit_keyword_errors():
    with pytest.raises(ValueError, match="memory_limit"):
        memory_limit_of("12 parsecs")
    with pytest.raises(TypeError, match="memory_limit"):
        memory_limit_of(1.5)
    assert memory_limit_of("2GB") == 2 * 10**9
    assert memory_limit_of(None) > 0


def test_arrow_bytes_estimate_is_near_the_decoded_size(tmp_path):
    t = table(n=20_000)
    for dictionary in (True, False):
        pq.write_table(t, tmp_path / "x.parquet", use_dictionary=dictionary)
        estimate = arrow_bytes(pq.read_metadata(tmp_path / "x.parquet"))
        assert 0.8 * t.nbytes <= estimate <= 1.5 * t.nbytes, (dictionary, estimate, t.nbytes)


def test_info_prints_the_default_limit(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "default --memory-limit" in out


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


# A fresh process choosing the command's pool, and what a spawned child of it runs on.
POOL_OF_A_CHILD = textwrap.dedent("""
    import multiprocessing, os
    import pyarrow as pa
    from zorder.parquet.memory import use_command_pool

    def child():
        return (pa.default_memory_pool().backend_name, os.environ.get("JE_ARROW_MALLOC_CONF"))

    if __name__ == "__main__":
        print(use_command_pool(), pa.default_memory_pool().backend_name)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(*pool.apply(child))
""")

_NO_POOL_CHOSEN = {"ARROW_DEFAULT_MEMORY_POOL": None, "JE_ARROW_MALLOC_CONF": None}


def test_the_command_runs_on_jemalloc_and_so_do_its_children(run_python, tmp_path):
    done = run_python("-m", "zorder", "info", "--json", env=_NO_POOL_CHOSEN)
    assert done.returncode == 0, done.stderr
    default = pa.default_memory_pool().backend_name
    expected = "jemalloc" if _has_jemalloc() else default
    assert json.loads(done.stdout)["memory"]["arrow_pool"] == expected
    (tmp_path / "child.py").write_text(POOL_OF_A_CHILD)
    done = run_python("child.py", env=_NO_POOL_CHOSEN)
    assert done.returncode == 0, done.stderr
    parent, child = done.stdout.splitlines()
    assert parent == f"{expected} {expected}"
    decay = (f"dirty_decay_ms:{memory.JEMALLOC_DECAY_MS},"
             f"muzzy_decay_ms:{memory.JEMALLOC_DECAY_MS}")
    assert child == (f"jemalloc {decay}" if _has_jemalloc() else f"{default} None")


# What jemalloc's options were as pyarrow was first imported (it reads them then).
OPTIONS_AT_IMPORT = textwrap.dedent("""
    import os, sys
    seen = []
    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name == "pyarrow" and not seen:
                seen.append(os.environ.get("JE_ARROW_MALLOC_CONF"))
    sys.meta_path.insert(0, Watch())
    sys.argv = ["zorder", "info", "--json"]
    from zorder.cli import main
    sys.stdout = open(os.devnull, "w")
    main()
    sys.stdout = sys.__stdout__
    print(seen[0])
""")


def test_the_command_sets_jemalloc_options_before_pyarrow_reads_them(run_python):
    done = run_python("-c", OPTIONS_AT_IMPORT, env=_NO_POOL_CHOSEN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"dirty_decay_ms:{memory.JEMALLOC_DECAY_MS},"
                                   f"muzzy_decay_ms:{memory.JEMALLOC_DECAY_MS}")


def test_bench_does_not_import_pyarrow(run_python):
    code = ("import sys\n"
            "sys.argv = ['zorder', 'bench', '--rows', '2000', '--calls', '200', '--shapes',"
            " '2x8', '--threads', '1', '--repeat', '1', '--matrix-rows', '0', '--quiet']\n"
            "from zorder.cli import main\n"
            "assert main() == 0\n"
            "print('pyarrow' in sys.modules)\n")
    done = run_python("-c", code, env=_NO_POOL_CHOSEN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False"


def test_the_command_keeps_the_pool_and_options_the_user_chose(run_python, tmp_path):
    done = run_python("-m", "zorder", "info", env={"ARROW_DEFAULT_MEMORY_POOL": "system"})
    assert done.returncode == 0, done.stderr
    assert "Arrow's pool system" in done.stdout
    if _has_jemalloc():
        (tmp_path / "child.py").write_text(POOL_OF_A_CHILD)
        done = run_python("child.py", env={"ARROW_DEFAULT_MEMORY_POOL": None,
                                           "JE_ARROW_MALLOC_CONF": "dirty_decay_ms:500"})
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1] == "jemalloc dirty_decay_ms:500"


def test_main_called_in_a_process_leaves_its_pool_alone():
    before = pa.default_memory_pool().backend_name
    env = {k: os.environ.get(k) for k in _NO_POOL_CHOSEN}
    assert main(["info"]) == 0
    assert pa.default_memory_pool().backend_name == before
    assert {k: os.environ.get(k) for k in _NO_POOL_CHOSEN} == env


WITHOUT_PYARROW = textwrap.dedent("""
    import os, sys
    sys.modules["pyarrow"] = None   # (an install without the arrow extra)
    from zorder.parquet.memory import use_command_pool
    assert use_command_pool() is None
    assert "JE_ARROW_MALLOC_CONF" not in os.environ
    sys.argv = ["zorder", "info"]
    from zorder.cli import main
    sys.exit(main())
""")


def test_the_command_runs_without_pyarrow(run_python):
    done = run_python("-c", WITHOUT_PYARROW, env=_NO_POOL_CHOSEN)
    assert done.returncode == 0, done.stderr
    assert "default --memory-limit" in done.stdout
    assert "Arrow's pool" not in done.stdout


def test_without_jemalloc_the_pool_and_environment_stay(monkeypatch):
    def missing():
        raise NotImplementedError("This Arrow build does not enable jemalloc")

    for name in _NO_POOL_CHOSEN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    before = pa.default_memory_pool().backend_name
    assert memory.use_command_pool() == before
    assert pa.default_memory_pool().backend_name == before
    assert not any(name in os.environ for name in _NO_POOL_CHOSEN)


BOUNDED = textwrap.dedent("""
    import sys, tracemalloc
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from zorder.parquet.sort import sort_parquet
    folder, limit = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    n = 400_000
    pq.write_table(pa.table({"a": rng.integers(0, 10**9, n), "b": rng.normal(size=n),
                             "c": rng.integers(0, 10**6, n)}),
                   folder + "/in.parquet", row_group_size=20_000)
    pool = pa.default_memory_pool()
    base = pool.max_memory()
    tracemalloc.start()
    sort_parquet(folder + "/in.parquet", folder + "/out.parquet", ["a", "b"],
                 memory_limit=None if limit == "none" else limit, report=False,
                 overwrite=True)
    print(pool.max_memory() - base + tracemalloc.get_traced_memory()[1])
""")


@pytest.mark.parametrize("limit", ["3MB"])
def test_memory_is_bounded_by_the_limit(tmp_path, limit):
    # numpy's allocations (tracemalloc) and Arrow's pool peak (each at its own peak, so
    # their sum bounds the data held at once) on 400,000 rows (9.6 MB in Arrow): the
    # in-memory path holds about 4 times that, the out-of-core one the limit plus the
    # rank sample's rows (262,144 values of two 8-byte columns and their 16-byte values)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(zorder.__file__))}

    def peak(limit):
        # (run from tmp_path: `python -c` puts its folder first on sys.path, and in a
        # checkout that would be the uncompiled source folder)
        run = subprocess.run([sys.executable, "-c", BOUNDED, str(tmp_path), limit],
                             capture_output=True, text=True, timeout=120, env=env,
                             cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        return int(run.stdout)
    in_memory, bounded = peak("none"), peak(limit)
    sample = 262_144 * (16 + 16) * 2
    assert bounded <= memory_limit_of(limit) + sample, (bounded, in_memory)
    assert in_memory > 3 * 9_600_000, in_memory   # (the comparison is not vacuous)


def test_prefetched_passes_errors_and_stops_its_thread():
    import threading

    def items():
        yield 1
        raise OSError("read failed")
    assert list(external.prefetched(iter([1, 2, 3]))) == [1, 2, 3]
    with pytest.raises(OSError, match="read failed"):
        list(external.prefetched(items()))
    stream = external.prefetched(iter(range(10**9)))
    assert next(stream) == 0
    stream.close()   # (the consumer leaves early: the thread ends)
    assert not [t for t in threading.enumerate() if t.name == "zorder-reader"]


def test_report_values_are_those_sorted_sample_takes(tmp_path):
    # over 100,000 valid values: the streamed gathering keeps exactly the evenly spaced
    # ones sorted_sample takes from the whole column (nulls and NaN skipped)
    from zorder.parquet.skipping import sorted_sample
    from zorder.parquet.sort import _ReportValues

    rng = np.random.default_rng(8)
    n = 130_000
    b = rng.normal(size=n)
    b[rng.random(n) < 0.1] = np.nan
    t = pa.table({"a": pa.array(rng.integers(0, 10**6, n), mask=rng.random(n) < 0.1),
                  "b": pa.array(b, mask=rng.random(n) < 0.05), "c": np.arange(n) % 7})
    gather = _ReportValues(["a", "b", "c"])
    for _ in gather.count(t.to_batches(7_000)):
        pass
    for _ in gather.gather(t.to_batches(9_000)):
        pass
    values = gather.values(t.schema)
    for name in ("a", "b", "c"):
        assert sorted_sample(values[name]) == sorted_sample(t.column(name)), name


@pytest.mark.parametrize("version", ["v2", "v1", "none"])
def test_available_memory_reads_the_cgroup(tmp_path, monkeypatch, version):
    from zorder.parquet import memory

    (tmp_path / "meminfo").write_text("MemTotal: 9 kB\nMemAvailable:   8000000 kB\n")
    if version == "v2":
        (tmp_path / "cgroup").write_text("0::/job\n")
        (tmp_path / "sys" / "job").mkdir(parents=True)
        (tmp_path / "sys" / "job" / "memory.max").write_text("2000000000\n")
        (tmp_path / "sys" / "job" / "memory.current").write_text("500000000\n")
    elif version == "v1":
        (tmp_path / "cgroup").write_text("4:memory:/box\n0::/\n")
        (tmp_path / "sys" / "memory" / "box").mkdir(parents=True)
        (tmp_path / "sys" / "memory" / "box" / "memory.limit_in_bytes").write_text("1000000000\n")
        (tmp_path / "sys" / "memory" / "box" / "memory.usage_in_bytes").write_text("100000000\n")
    else:   # a cgroup with no limit ("max"): MemAvailable
        (tmp_path / "cgroup").write_text("0::/\n")
        (tmp_path / "sys").mkdir()
        (tmp_path / "sys" / "memory.max").write_text("max\n")
    monkeypatch.setattr(memory, "_PROC_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(memory, "_MEMINFO", str(tmp_path / "meminfo"))
    monkeypatch.setattr(memory, "_CGROUP", str(tmp_path / "sys"))
    available, source = memory.available_memory()
    assert available == {"v2": 1_500_000_000, "v1": 900_000_000, "none": 8_192_000_000}[version]
    assert source.endswith({"v2": "memory.max", "v1": "memory.limit_in_bytes",
                            "none": "MemAvailable"}[version])
    assert memory.default_memory_limit() == available // 2
