"""Shared fixtures: every backend, and Iceberg's own test vectors (tests/data/)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import zorder

DATA = pathlib.Path(__file__).parent / "data"


def load_jsonl(name):
    with open(DATA / name, encoding="ascii") as f:
        return [json.loads(line) for line in f if line.strip()]


# Test files whose tests share an expensive module fixture and so must run in one
# pytest-xdist worker under --dist loadgroup (pyproject.toml's addopts, for `pytest -n`
# and tools/aarch64.sh): test_dask's LocalCluster
# takes 7-13 s to set up natively and up to 90 s under qemu-user. The xdist_group mark would
# say this, but pytest 9.2 ignores the node-id suffix through which pytest-xdist (3.8 and
# earlier) carries the mark to its scheduler, so marked tests are spread over every worker
# with nothing said (pytest-xdist#1386). The scheduler below groups by file name instead.
ONE_WORKER_FILES = frozenset({"test_dask.py"})


def xdist_scope(nodeid):
    """The unit of work a test belongs to under --dist loadgroup: its file, for the files
    above, else whatever pytest-xdist's own loadgroup makes of it (None: leave it to xdist)."""
    path = nodeid.split("::", 1)[0]
    return path if os.path.basename(path) in ONE_WORKER_FILES else None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid):
            return xdist_scope(nodeid) or super()._split_scope(nodeid)

    return FileGroupScheduling(config, log)


#: The backends of this machine's architecture (neon is not a test case on x86-64, nor
#: pdep, avx2 and simd on aarch64: tools/aarch64.sh runs those).
ARCH_BACKENDS = [name for name in zorder.BACKEND_NAMES
                 if zorder.cpu.backend_applies(name, zorder.cpu.facts())]


@pytest.fixture(params=ARCH_BACKENDS)
def backend(request):
    """Each backend of this architecture in turn; one this CPU or build cannot run is
    skipped, saying why."""
    name = request.param
    if name not in zorder.available_backends():
        try:
            zorder.get_backend(name)
        except zorder.BackendError as exc:
            pytest.skip(str(exc))
    return zorder.get_backend(name)


@pytest.fixture(scope="session")
def interleave_vectors():
    return load_jsonl("interleave.jsonl")


@pytest.fixture(scope="session")
def interleave_reuse_vectors():
    return load_jsonl("interleave_reuse.jsonl")


@pytest.fixture(scope="session")
def ordered_vectors():
    return load_jsonl("ordered.jsonl")


@pytest.fixture(scope="session")
def ordered_extra_vectors():
    return load_jsonl("ordered_extra.jsonl")


@pytest.fixture
def run_python(tmp_path):
    """Runs ``python ARGS...`` in a fresh interpreter that imports the zorder under test.

    The child starts in an empty folder, with the folder holding this zorder first on
    PYTHONPATH: from the source tree, ``python -c``/``-m`` would otherwise import the
    uncompiled source folder. ``env`` entries are added (None removes one);
    ZORDER_BACKEND is unset unless given.
    """
    package_parent = str(pathlib.Path(zorder.__file__).resolve().parent.parent)

    def run(*args, env=None, timeout=120):
        child_env = dict(os.environ)
        child_env.pop("ZORDER_BACKEND", None)
        child_env["PYTHONPATH"] = package_parent + os.pathsep + child_env.get("PYTHONPATH", "")
        for key, value in (env or {}).items():
            if value is None:
                child_env.pop(key, None)
            else:
                child_env[key] = value
        return subprocess.run([sys.executable, *args], env=child_env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)

    return run
