"""The public API is visible to mypy: stubs for the compiled modules resolve, and the
types of a typical use come out as documented."""

import sys
import textwrap

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is in the test extra")

USE = textwrap.dedent("""
    import numpy as np
    import zorder

    one: bytes = zorder.interleave_bits([b"\\x80", b"\\x40"], 2)
    buf = bytearray(4)
    same: bytearray = zorder.interleave_bits([b"\\x80"], 1, out=buf)
    rows = zorder.interleave_rows(np.zeros((3, 2, 8), np.uint8), threads=2)
    reveal_type(rows)
    name: str = zorder.choose_backend({"arch": "X86_64", "flags": []})
    names: tuple[str, ...] = zorder.available_backends()
    z = zorder.zorder_values([np.arange(3)])
    o: bytes = zorder.long_to_ordered_bytes(5)
""")


def test_public_api_type_checks(tmp_path):
    script = tmp_path / "use.py"
    script.write_text(USE)
    out, err, status = api.run([str(script), "--no-incremental", "--cache-dir", str(tmp_path),
                                "--python-executable", sys.executable])
    assert status == 0, out + err
    assert 'Revealed type is "numpy.ndarray' in out
