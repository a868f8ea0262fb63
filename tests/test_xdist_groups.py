"""The test harness's pytest-xdist scheduler (tests/conftest.py): under --dist loadgroup,
every test of test_dask.py is one unit of work, so its Dask cluster starts in one worker
only, whatever pytest's node ids look like; other tests are spread as xdist spreads them."""

import pathlib

import pytest

pytest.importorskip("xdist")


class _Config:
    """What the scheduler reads of pytest's config."""

    def __init__(self, dist):
        self.values = {"dist": dist, "tx": ["2*popen"]}

    def getvalue(self, name):
        return self.values[name]


@pytest.fixture
def harness(request):
    path = pathlib.Path(__file__).with_name("conftest.py")
    plugin = request.config.pluginmanager.get_plugin(str(path))
    assert plugin is not None, f"{path} is not loaded as a plugin"
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
    assert sched._split_scope("tests/test_leaks.py::test_x@g") == "g"


def test_other_distributions_are_left_to_xdist(harness):
    for dist in ("load", "loadfile", "loadscope", "worksteal", "no"):
        assert harness.pytest_xdist_make_scheduler(_Config(dist), None) is None
