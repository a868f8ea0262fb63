"""What a release ships (issue 40): one version, an sdist that holds every tracked file,
and install lines in the docs that name extras which exist and suffice.

The wheel itself is checked where one is built: tools/wheel.sh (run by CI)."""

import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata

import pytest

import zorder

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
#: Files the sdist adds to the tracked ones: its metadata, which setuptools writes.
SDIST_METADATA = re.compile(r"^(PKG-INFO|setup\.cfg|zorder\.egg-info/.*)$")


def _tracked_files():
    """``git ls-files`` of the checkout these tests come from, or skip where they come
    from an unpacked sdist or a wheel (there is no checkout to compare with)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the sdist is checked from the clone it is made of")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return sorted(p for p in out.stdout.decode().split("\0") if p and (ROOT / p).is_file())


def _pyproject_text():
    if not PYPROJECT.exists():
        pytest.skip("no pyproject.toml beside the tests (they run from an installed wheel)")
    return PYPROJECT.read_text(encoding="utf-8")


def _table(text, name):
    """The body of TOML table ``[name]`` (up to the next table header)."""
    match = re.search(rf"^\[{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"pyproject.toml has no [{name}]"
    return match.group(1)


def extras_of(text):
    """{extra: [requirement, ...]} of pyproject.toml's [project.optional-dependencies]."""
    body = _table(text, "project.optional-dependencies")
    body = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
    return {name: re.findall(r'"([^"]+)"', value)
            for name, value in re.findall(r"^(\w[\w-]*)\s*=\s*\[(.*?)\]\s*$", body, re.MULTILINE | re.DOTALL)}


def distributions(requirements):
    """The distribution names a list of requirements installs, their own extras
    included as ``name[extra]`` entries (``pyiceberg[pyarrow]`` -> pyiceberg, pyiceberg[pyarrow])."""
    names = set()
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", requirement)
        name = match.group(1).lower()
        names.add(name)
        names.update(f"{name}[{extra.strip()}]" for extra in (match.group(2) or "").split(",") if extra.strip())
    return names


def test_the_version_is_written_once():
    text = _pyproject_text()
    declared = re.search(r'^version\s*=\s*"([^"]+)"', _table(text, "project"), re.MULTILINE).group(1)
    try:
        installed = metadata.version("zorder")
    except metadata.PackageNotFoundError:
        pytest.skip("zorder is not installed: no metadata to compare with pyproject.toml")
    assert installed == declared == zorder.__version__
    # ... and nowhere else in the package.
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "zorder").rglob("*.py")
            if re.search(rf"""["']{re.escape(declared)}["']""", p.read_text(encoding="utf-8"))]
    assert hits == []


#: What each extra named in the docs must install for the feature the docs promise with it.
NEEDS = {
    "arrow": {"pyarrow"},
    "dask": {"dask", "dask[dataframe]", "distributed", "pyarrow"},
    # every partition transform (month, day, bucket...) needs pyiceberg-core; the docs'
    # examples use the SQLite catalog.
    "iceberg": {"pyiceberg", "pyiceberg[pyarrow]", "pyiceberg[pyiceberg-core]", "pyiceberg[sql-sqlite]", "pyarrow"},
    "plot": {"matplotlib"},
    "cpuinfo": {"py-cpuinfo2"},
    "fuzz": {"atheris"},
    "compare": {"pytest-benchmark", "hilbertcurve", "numpy-hilbert-curve"},
    "spark": {"pyspark", "pyarrow"},
    "pandas": {"pandas"},
    "test": {"pytest", "pytest-xdist", "hypothesis", "pyarrow", "pandas", "dask[dataframe]", "distributed",
             "pyiceberg[pyiceberg-core]", "pyiceberg[sql-sqlite]", "duckdb", "mypy", "cython", "setuptools"},
}
INSTALL = re.compile(r"pip install\s+['\"]?(?:\.|zorder)\[([\w,\- ]+)\]")


def documented_extras():
    """{extra: [file:line, ...]} of every ``pip install '.[x]'`` / ``'zorder[x]'`` in the
    README, docs/, tools/ and the package's messages."""
    found = {}
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "tools").glob("*")),
             *sorted((ROOT / "zorder").rglob("*.py"))]
    for path in files:
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in INSTALL.finditer(line):
                for extra in match.group(1).split(","):
                    found.setdefault(extra.strip(), []).append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_every_documented_extra_exists_and_suffices():
    extras = extras_of(_pyproject_text())
    documented = documented_extras()
    assert {"arrow", "dask", "iceberg", "test"} <= set(documented), documented
    for extra, places in documented.items():
        assert extra in extras, f"{', '.join(places)}: no extra [{extra}] in pyproject.toml"
        assert extra in NEEDS, f"{', '.join(places)}: say in NEEDS what [{extra}] must install"
        missing = NEEDS[extra] - distributions(extras[extra])
        assert not missing, f"[{extra}] ({', '.join(places)}) does not install {sorted(missing)}"


def test_the_extras_parser_reads_what_it_should():
    text = '[project.optional-dependencies]\n# c\na = ["x>=1", "y[p,q]>=2; sys_platform == \'linux\'"]\nb = [\n  "z",\n]\n[tool.x]\n'
    extras = extras_of(text)
    assert extras == {"a": ["x>=1", "y[p,q]>=2; sys_platform == 'linux'"], "b": ["z"]}
    assert distributions(extras["a"]) == {"x", "y", "y[p]", "y[q]"}
    assert INSTALL.findall("pip install '.[dask]' and pip install 'zorder[a,b]'") == ["dask", "a,b"]


def test_the_sdist_holds_every_tracked_file_and_nothing_else(tmp_path):
    tracked = _tracked_files()
    # Made from a copy of exactly the tracked files, as a clean clone would make it.
    source = tmp_path / "src"
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-c",
                    f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"],
                   cwd=source, check=True, capture_output=True)
    (archive,) = out.glob("zorder-*.tar.gz")
    with tarfile.open(archive) as tar:
        members = [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile() and "/" in m.name]
    missing = sorted(set(tracked) - set(members))
    extra = sorted(m for m in set(members) - set(tracked) if not SDIST_METADATA.match(m))
    assert not missing, f"tracked files the sdist leaves out (MANIFEST.in): {missing}"
    assert not extra, f"files in the sdist that git does not track: {extra}"
    # the hand-written C is in; Cython's generated C never is
    assert "zorder/interleave/csrc/pdep_kernel.c" in members
    assert not [m for m in members if m.endswith(".c") and (ROOT / m).with_suffix(".pyx").exists()]
