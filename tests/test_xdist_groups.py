"""The test harness's pytest-xdist scheduler (tests/conftest.py): under --dist loadgroup,
every test of test_dask.py is one unit of work, so its Dask cluster starts in one worker
only, whatever pytest's node ids look like; other tests are spread as xdist spreads them."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import zorder

pytest.importorskip("xdist")

HARNESS = pathlib.Path(__file__).with_name("conftest.py")   # the scheduler's home


class _Config:
    """What the scheduler reads of pytest's config."""

    def __init__(self, dist):
        self.values = {"dist": dist, "tx": ["2*popen"]}

    def getvalue(self, name):
        return self.values[name]


@pytest.fixture
def harness(request):
    plugin = request.config.pluginmanager.get_plugin(str(HARNESS))
    assert plugin is not None, f"{HARNESS} is not loaded as a plugin"
    return plugin


def test_dask_tests_are_one_unit_of_work(harness):
    sched = harness.pytest_xdist_make_scheduler(_Config("loadgroup"), None)
    scopes = {sched._split_scope(nodeid) for nodeid in (
        "tests/test_dask.py::test_no_row_lost_or_duplicated",
        "tests/test_dask.py::test_bad_arguments_are_named[kwargs0-ValueError-x]",
        # the suffix pytest-xdist adds where pytest still lets it
        "tests/test_dask.py::test_parse_size@dask",
    )}
    assert scopes == {"tests/test_dask.py"}


def test_other_tests_keep_xdists_loadgroup_scopes(harness):
    sched = harness.pytest_xdist_make_scheduler(_Config("loadgroup"), None)
    assert sched._split_scope("tests/test_leaks.py::test_x") == "tests/test_leaks.py::test_x"
    assert sched._split_scope("tests/test_leaks.py::test_x[a@b]") == "tests/test_leaks.py::test_x[a@b]"
    # xdist's own parsing of the `@group` suffix: a tripwire that also fires if a new
    # xdist passes groups another way, when the file grouping above may still work.
    assert sched._split_scope("tests/test_leaks.py::test_x@g") == "g"


def test_other_distributions_are_left_to_xdist(harness):
    for dist in ("load", "loadfile", "loadscope", "worksteal", "no"):
        assert harness.pytest_xdist_make_scheduler(_Config(dist), None) is None


def test_a_real_run_keeps_a_test_dask_file_in_one_worker(tmp_path):
    """pytest-xdist really schedules by the hook: two workers, a test_dask.py and another
    file of 8 tests each; every test_dask test runs in one worker."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("zorder_tests_harness", {str(HARNESS)!r})
        harness = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(harness)
        pytest_xdist_make_scheduler = harness.pytest_xdist_make_scheduler
    """))
    body = textwrap.dedent("""
        import os, pathlib, pytest
        @pytest.mark.parametrize("i", range(8))
        def test_x(i):
            with open(pathlib.Path(__file__).with_suffix(".workers"), "a") as f:
                f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    """)
    for name in ("test_dask.py", "test_other.py"):
        (tmp_path / name).write_text(body)
    # the harness imports zorder: the one this process runs, installed or built in place
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(pathlib.Path(zorder.__file__).resolve().parent.parent),
         os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    dask_workers = set((tmp_path / "test_dask.workers").read_text().split())
    other_workers = set((tmp_path / "test_other.workers").read_text().split())
    assert len(dask_workers) == 1, dask_workers
    assert dask_workers | other_workers == {"gw0", "gw1"}   # both workers ran tests
