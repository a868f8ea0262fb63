"""ZORDER_BACKEND in a fresh interpreter: forced, unknown, unavailable; and `info`."""

import json
import os
import pathlib

import pytest

import zorder


@pytest.mark.parametrize("name", zorder.available_backends())
def test_forcing_each_available_backend(name, run_python):
    done = run_python("-c", "import zorder; print(zorder.backend, zorder.interleave_bits.__module__)",
                      env={"ZORDER_BACKEND": name})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name, f"zorder.interleave.{name}"]


def test_auto_and_unset_pick_the_same(run_python):
    auto = run_python("-c", "import zorder; print(zorder.backend)", env={"ZORDER_BACKEND": "auto"}).stdout
    unset = run_python("-c", "import zorder; print(zorder.backend)").stdout
    assert auto == unset and auto.startswith("auto (")
    main = auto[len("auto ("):].split(";")[0].rstrip(")\n")
    assert main in zorder.available_backends()


def test_unknown_backend_fails_at_import_listing_valid_names(run_python):
    done = run_python("-c", "import zorder", env={"ZORDER_BACKEND": "fastest"})
    assert done.returncode != 0
    assert "BackendError" in done.stderr and "'fastest'" in done.stderr
    for name in ("auto",) + zorder.BACKEND_NAMES:
        assert name in done.stderr


def test_the_command_ends_a_bad_backend_with_one_line(run_python):
    """The zorder command imports the package before its own code runs: a bad
    ZORDER_BACKEND still ends it with one error line and the usage status, no traceback."""
    for command in (("-m", "zorder", "info"), ("-m", "zorder", "sort", "a", "b", "--columns", "x")):
        done = run_python(*command, env={"ZORDER_BACKEND": "fastest"})
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [
            f"error: ZORDER_BACKEND='fastest' is not a zorder backend; valid values: "
            f"{', '.join(('auto',) + zorder.BACKEND_NAMES)}"], done.stderr


def test_an_unbuilt_source_folder_says_so(run_python, tmp_path):
    """Importing the source folder (no compiled modules) names the problem, not a missing
    name deep in the package."""
    import shutil

    src = pathlib.Path(zorder.__file__).resolve().parent
    shutil.copytree(src, tmp_path / "tree" / "zorder",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    done = run_python("-c", "import zorder", env={"PYTHONPATH": str(tmp_path / "tree")})
    assert done.returncode == 1
    assert "zorder's compiled kernels are missing from" in done.stderr.splitlines()[-1], \
        done.stderr


def test_backend_error_is_import_and_value_error():
    assert issubclass(zorder.BackendError, ImportError)
    assert issubclass(zorder.BackendError, ValueError)


def test_unavailable_backend_fails_at_import_without_sigill(run_python):
    missing = [n for n in zorder.BACKEND_NAMES if n not in zorder.available_backends()]
    if missing:
        done = run_python("-c", "import zorder", env={"ZORDER_BACKEND": missing[0]})
        assert done.returncode == 1      # a Python exception, not a signal
        assert "not available here" in done.stderr and "available: bitloop" in done.stderr


def test_forcing_a_backend_the_cpu_lacks_is_refused():
    """The loader, handed a CPU without BMI2, AVX2 or AVX-512, refuses pdep, avx2 and simd
    by name, the same way import does with ZORDER_BACKEND on such a machine."""
    from zorder import interleave

    old_cpu = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
               "flags": ["sse2", "avx"], "os_avx512": False}
    assert interleave.available_backends(old_cpu) == ("bitloop", "table", "nibble")
    for name, lacking in (("pdep", "bmi2"), ("avx2", "avx2"), ("simd", "avx512f")):
        with pytest.raises(zorder.BackendError, match=f"not available here: this CPU lacks.*{lacking}"):
            interleave.resolve(name, "ZORDER_BACKEND", cpu_info=old_cpu)
    assert interleave.resolve("auto", cpu_info=old_cpu)[0] == "auto"
    assert "table for uniform 8-byte columns" in interleave.resolve("auto", cpu_info=old_cpu)[1]
    assert interleave.resolve("table", cpu_info=old_cpu) == ("table", "forced by the wish=table")


def test_backend_names_are_read_alike_everywhere():
    """get_backend, use and ZORDER_BACKEND take a name in any case with spaces around it;
    anything but a str is refused by name."""
    from zorder import interleave

    assert zorder.get_backend(" Table ") is zorder.get_backend("table")
    assert interleave.backend_name("  BITLOOP") == "bitloop"
    with pytest.raises(zorder.BackendError, match="must be a str such as 'table', not int 3"):
        zorder.get_backend(3)
    with pytest.raises(zorder.BackendError, match="'auto' is not one backend"):
        zorder.get_backend(" AUTO")


def test_a_backend_of_another_architecture_says_so():
    """Not 'not built (No module named ...)': the backend exists only elsewhere."""
    from zorder import interleave

    elsewhere, arch = ("avx2", "x86-64") if "neon" in zorder.available_backends() else ("neon", "aarch64")
    module, why = interleave.load(elsewhere)
    assert module is None and why.startswith(f"it exists only on {arch}, and this is ")
    with pytest.raises(zorder.BackendError, match=f"exists only on {arch}"):
        zorder.get_backend(elsewhere)


def test_use_of_a_named_backend_honours_the_cpu_description():
    """use(name, cpu_info) refuses what that CPU cannot run, as get_backend does, and
    leaves the default as it was."""
    from zorder import interleave

    before = interleave.describe()
    no_avx = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6, "flags": []}
    with pytest.raises(zorder.BackendError, match="'simd' is not available here: this CPU lacks"):
        interleave.use("simd", no_avx)
    assert interleave.describe() == before


def test_avx2_is_refused_without_the_os_ymm_state():
    """AVX2 in CPUID is not enough: the OS must save the YMM registers (XGETBV)."""
    from zorder import interleave

    cpu = {"arch": "X86_64", "vendor_id_raw": "GenuineIntel", "family": 6,
           "flags": ["avx", "avx2", "bmi2"], "os_avx": False, "os_avx512": False}
    with pytest.raises(zorder.BackendError, match="not available here: the OS does not save the YMM"):
        interleave.resolve("avx2", "ZORDER_BACKEND", cpu_info=cpu)
    assert "avx2" not in interleave.available_backends(cpu)
    # what the selector picks there, with every other backend built (pdep is not built on
    # an aarch64 host that runs this test)
    built = [name for name in zorder.cpu.select.BACKEND_NAMES if name != "avx2"]
    assert zorder.choose_backend(cpu, available=built) == "pdep"


def test_info_command_reports_choice_and_cpu(run_python):
    # the child gets this process's ZORDER_BACKEND (if any), so both report the same choice
    same = {"ZORDER_BACKEND": os.environ.get("ZORDER_BACKEND")}
    done = run_python("-m", "zorder", "info", "--json", env=same)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["backend"] == zorder.backend
    assert info["reason"]
    # a dispatch plan for every shape class under auto; none when one backend is forced
    forced = os.environ.get("ZORDER_BACKEND", "").strip().lower() not in ("", "auto")
    assert set(info["dispatch"]) == (set() if forced else set(zorder.cpu.select.SHAPE_CLASSES))
    assert all(e["backend"] in zorder.available_backends() for e in info["dispatch"].values())
    assert set(info["backends"]) == set(zorder.BACKEND_NAMES)
    assert "flags" in info["cpu"]
    text = run_python("-m", "zorder", "info", env=same).stdout
    assert f"backend:   {info['backend']}" in text
    if info["dispatch"]:
        assert "dispatch (auto" in text and "ragged-full" in text


def test_import_does_not_start_a_child_process(run_python):
    # py-cpuinfo's get_cpu_info() would re-run Python; zorder reads CPUID in-process.
    code = ("import subprocess, multiprocessing\n"
            "calls = []\n"
            "real = subprocess.Popen.__init__\n"
            "def spy(self, *a, **k): calls.append(a); return real(self, *a, **k)\n"
            "subprocess.Popen.__init__ = spy\n"
            "import zorder\n"
            "print(len(calls))\n")
    done = run_python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_console_script_runs_from_anywhere(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    script = shutil.which("zorder", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("zorder is built in place, not installed: no console script")
    done = subprocess.run([script, "info", "--json"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["backend"] == zorder.backend
    usage = subprocess.run([script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert usage.returncode == 2 and usage.stdout.startswith("usage: zorder ")
