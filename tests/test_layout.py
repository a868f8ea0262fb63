"""The package's floors: every import points down (or stays on its own floor).

    cli -> bench -> (the face: zorder/__init__, zorder.dask, zorder.spark) -> engines -> parquet
        -> values -> ordered | hilbert -> interleave -> cpu

Sibling floors (ordered and hilbert) do not import each other. The check reads the
source (.py, .pyx, .pxd), so it also covers compiled modules and imports inside functions.
"""

import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "zorder"

#: Floor of each subpackage (and of the face's modules), lowest first.
RANK = {"cpu": 0, "interleave": 1, "ordered": 2, "hilbert": 2, "values": 3, "parquet": 4, "engines": 5,
        "face": 6, "bench": 7, "cli": 8}
FACE = {"__init__", "dask", "iceberg", "spark"}
IMPORT = re.compile(r"^[ \t]*(?:from\s+(zorder(?:\.\w+)*)\s+c?import|c?import\s+(zorder(?:\.\w+)*))",
                    re.MULTILINE)


def floor_of_module(dotted: str) -> str:
    parts = dotted.split(".")
    if len(parts) == 1:
        return "face"
    name = parts[1]
    if name == "__main__":
        return "cli"
    return "face" if name in FACE else name


def floor_of_file(path: pathlib.Path, package=None) -> str:
    rel = path.relative_to(package or PACKAGE)
    if len(rel.parts) == 1:
        return "cli" if rel.stem == "__main__" else "face"
    return rel.parts[0]


def sources(package=None):
    for pattern in ("*.py", "*.pyx", "*.pxd"):
        yield from (package or PACKAGE).rglob(pattern)


def imports(path: pathlib.Path):
    text = path.read_text(encoding="utf-8")
    for match in IMPORT.finditer(text):
        target = match.group(1) or match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        yield line, target


def upward_imports(package=None):
    package = package or PACKAGE
    bad = []
    for path in sources(package):
        here = floor_of_file(path, package)
        for line, target in imports(path):
            if target == "zorder" and here != "face" and path.name != "__main__.py":
                # `from zorder import cpu` names a floor; `import zorder` is the face.
                names = re.search(r"from zorder c?import ([\w, ()]+)", path.read_text().splitlines()[line - 1])
                floors = [n.strip() for n in names.group(1).strip("()").split(",")] if names else ["face"]
                targets = [f"zorder.{n}" if n in RANK else "zorder" for n in floors]
            else:
                targets = [target]
            for t in targets:
                there = floor_of_module(t)
                if there == here:
                    continue
                if RANK[there] >= RANK[here]:
                    bad.append(f"{path.relative_to(package.parent)}:{line}: {here} imports {t} ({there})")
    return bad


def test_every_file_is_on_a_known_floor():
    for path in sources():
        assert floor_of_file(path) in RANK, path


def test_imports_point_down():
    assert upward_imports() == []


def test_checker_catches_an_upward_import(tmp_path):
    """The check itself: a values module importing the parquet floor is reported."""
    fake = tmp_path / "zorder"
    (fake / "values").mkdir(parents=True)
    (fake / "values" / "bad.py").write_text("from zorder.parquet.files import parquet_files\n")
    (fake / "values" / "ok.py").write_text("from zorder.ordered import ordered_bytes\n")
    (fake / "ordered").mkdir()
    (fake / "ordered" / "sibling.py").write_text("def f():\n    from zorder.hilbert import hilbert_rows\n")
    bad = upward_imports(fake)
    assert len(bad) == 2
    assert any("values imports zorder.parquet.files" in b for b in bad)
    assert any("ordered imports zorder.hilbert" in b for b in bad)


@pytest.mark.parametrize("floor", [f for f in RANK if f != "face"])
def test_each_floor_says_its_role(floor):
    init = PACKAGE / floor / "__init__.py"
    doc = init.read_text(encoding="utf-8").split('"""')[1]
    assert "floor" in doc.lower() or floor == "cli", init
    assert len(doc.split()) >= 20, f"{init}: a one-paragraph docstring saying what it holds"
