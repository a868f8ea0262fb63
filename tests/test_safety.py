"""zorder.parquet.safety: an output is never the input, and every exit leaves it old or complete."""

import os
import re
import sys
import signal
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dropped_signal import drop_a_signal  # noqa: E402
from fs_snapshot import leftovers, snapshot  # noqa: E402

from zorder.parquet import safety as _safety


@pytest.fixture
def layout(tmp_path):
    """data/ (with a file), data/sub/, out/ (with a file), and links to them."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "part.parquet").write_bytes(b"input")
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.parquet").write_bytes(b"old output")
    os.symlink(data, tmp_path / "data_link")
    os.symlink(tmp_path, tmp_path / "here")
    os.link(data / "part.parquet", tmp_path / "hard.parquet")
    return tmp_path


@pytest.mark.parametrize("output, input, how", [
    ("data", "data", "is the input"),
    ("data_link", "data", "is the input"),
    ("here/data", "data", "is the input"),
    ("data/sub/../", "data", "is the input"),
    ("hard.parquet", "data/part.parquet", "is the input"),
    ("here/hard.parquet", "data_link/part.parquet", "is the input"),
    ("data/sub", "data", "is inside the input"),
    ("data_link/new", "data", "is inside the input"),
    ("data/new", "data_link", "is inside the input"),
    (".", "data", "holds the input"),
    ("here", "data_link", "holds the input"),
    ("data", "data_link/part.parquet", "holds the input"),
])
def test_overlap_sees_every_name_of_the_input(layout, monkeypatch, output, input, how):
    monkeypatch.chdir(layout)
    assert _safety.overlap(output, input) == how
    with pytest.raises(ValueError, match=how):
        _safety.check_apart(output, input)


@pytest.mark.parametrize("output, input", [
    ("out", "data"), ("out/new.parquet", "data/part.parquet"), ("data_other", "data"),
    ("datafile", "data"),
])
def test_overlap_none_when_apart(layout, monkeypatch, output, input):
    monkeypatch.chdir(layout)
    assert _safety.overlap(output, input) is None
    _safety.check_apart(output, input)


def test_bind_mount_like_identity_is_seen(layout, monkeypatch):
    # Two different real paths of one folder (as a bind mount gives) are caught by inode.
    real_stat = os.stat
    data_id = real_stat(layout / "data")

    def stat(path, *a, **k):
        if os.path.realpath(path) == str(layout / "out"):
            return data_id
        return real_stat(path, *a, **k)

    monkeypatch.setattr(_safety.os, "stat", stat)
    assert _safety.overlap(str(layout / "out" / "x"), str(layout / "data")) == "is inside the input"


def test_check_file_output_refuses_non_regular_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="fifo"):
        _safety.check_file_output(str(fifo), overwrite=True)
    with pytest.raises(ValueError, match="folder"):
        _safety.check_file_output(str(tmp_path), overwrite=True)
    with pytest.raises(ValueError, match="character device"):
        _safety.check_file_output("/dev/null", overwrite=True)
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(FileExistsError, match="overwrite"):
        _safety.check_file_output(str(tmp_path / "f"), overwrite=False)
    _safety.check_file_output(str(tmp_path / "f"), overwrite=True)
    _safety.check_file_output(str(tmp_path / "new"), overwrite=False)
    with pytest.raises(FileNotFoundError, match="folder"):
        _safety.check_file_output(str(tmp_path / "missing" / "f"), overwrite=True)


def test_check_file_output_sees_a_link_to_nothing(tmp_path):
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    with pytest.raises(FileExistsError, match="symbolic link to a missing file"):
        _safety.check_file_output(str(tmp_path / "dangling"), overwrite=False)
    _safety.check_file_output(str(tmp_path / "dangling"), overwrite=True)


def test_check_folder_output(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(ValueError, match="exists and is a file, not a folder"):
        _safety.check_folder_output(str(tmp_path / "f"), overwrite=True)
    with pytest.raises(ValueError, match="not empty"):
        _safety.check_folder_output(str(tmp_path), overwrite=False)
    _safety.check_folder_output(str(tmp_path), overwrite=True)
    _safety.check_folder_output(str(tmp_path / "new"), overwrite=False)


def test_check_side_output_keeps_a_second_output_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.parquet").write_bytes(b"data")
    (tmp_path / "d").mkdir()
    apart = [("in.parquet", "the input"), ("d", "OUT_DIR")]
    for path, words in (("in.parquet", "'in.parquet' is the input ('in.parquet')"),
                        ("d/../in.parquet", "is the input"), ("d/p.png", "is inside OUT_DIR"),
                        ("", "--plot is an empty path")):
        with pytest.raises(ValueError, match=re.escape(words)):
            _safety.check_side_output(path, "--plot", apart, overwrite=True)
    (tmp_path / "p.png").write_bytes(b"old")
    with pytest.raises(FileExistsError, match="--plot 'p.png' exists"):
        _safety.check_side_output("p.png", "--plot", apart, overwrite=False)
    _safety.check_side_output("p.png", "--plot", apart, overwrite=True)
    _safety.check_side_output("new.png", "--plot", apart, overwrite=False)


# ---------------------------------------------------------------------------------------
# atomic_file


def test_atomic_file_replaces_only_when_complete(tmp_path):
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    with _safety.atomic_file(str(out)) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)
        with open(tmp, "wb") as f:
            f.write(b"new")
        assert out.read_bytes() == b"old"
    assert out.read_bytes() == b"new"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError, OSError])
@pytest.mark.parametrize("step", ["write", *_safety.FILE_STEPS])
def test_atomic_file_fault_at_each_step(tmp_path, monkeypatch, step, error):
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")

    def hook(name):
        if name == step:
            raise error("injected")

    monkeypatch.setattr(_safety, "fault_hook", hook)
    with pytest.raises(error):
        with _safety.atomic_file(str(out)) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"new")
            if step == "write":
                raise error("injected")
    # Old or complete, never missing or partial; no temporary file left.
    assert out.read_bytes() == (b"new" if step == "fsync_folder" else b"old")
    assert leftovers(tmp_path) == []


def test_atomic_file_names_a_temp_file_it_cannot_remove(tmp_path, monkeypatch):
    out = tmp_path / "out.parquet"
    monkeypatch.setattr(_safety, "_remove", lambda path: False)
    with pytest.raises(RuntimeError) as info:
        with _safety.atomic_file(str(out)) as tmp:
            raise RuntimeError("disk on fire")
    assert tmp in "\n".join(getattr(info.value, "__notes__", []))


# ---------------------------------------------------------------------------------------
# replace_folder


@pytest.fixture
def folders(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.parquet").write_bytes(b"old a")
    (target / "keep.txt").write_bytes(b"old keep")
    new = tmp_path / ".out.zorder-tmp-123"
    new.mkdir()
    (new / "part-0.parquet").write_bytes(b"new 0")
    (new / "_zorder.json").write_bytes(b"{}")
    return tmp_path, str(new), str(target), snapshot(target), snapshot(new)


def test_replace_folder_success(folders):
    root, new, target, _, new_tree = folders
    _safety.replace_folder(new, target)
    assert snapshot(target) == new_tree
    assert leftovers(root) == []


def test_replace_folder_into_missing_target(tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "x").write_bytes(b"x")
    _safety.replace_folder(str(new), str(tmp_path / "out"))
    assert snapshot(tmp_path / "out") == {"x": b"x"}


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError, _safety.Terminated])
@pytest.mark.parametrize("step", _safety.FOLDER_STEPS)
def test_replace_folder_fault_at_each_step(folders, monkeypatch, step, error, when):
    """A fault before a step, or (for the renames) just after it took effect."""
    root, new, target, old_tree, new_tree = folders
    real_rename = os.rename
    real_rmtree = _safety.shutil.rmtree
    armed = {}

    def hook(name):
        armed["step"] = name
        if name == step and when == "before":
            raise error() if error is _safety.Terminated else error("injected")

    def rename(src, dst):
        real_rename(src, dst)
        if armed.pop("step", None) == step and when == "after":
            raise error() if error is _safety.Terminated else error("injected")

    def rmtree(path, *a, **k):
        real_rmtree(path, *a, **k)
        if armed.pop("step", None) == step and when == "after":
            raise error() if error is _safety.Terminated else error("injected")

    monkeypatch.setattr(_safety, "fault_hook", hook)
    monkeypatch.setattr(_safety.os, "rename", rename)
    monkeypatch.setattr(_safety.shutil, "rmtree", rmtree)
    raised = None
    try:
        _safety.replace_folder(new, target)
    except BaseException as exc:  # noqa: B036 - the point is what is left, whatever raised
        raised = exc
    monkeypatch.undo()
    assert snapshot(target) in (old_tree, new_tree), "the output is neither old nor complete"
    if snapshot(target) == old_tree:
        assert raised is not None and snapshot(new) == new_tree  # the caller still has the result
    # Only the caller's own temporary folder may remain (it removes it); nothing else.
    assert [n for n in leftovers(root) if "zorder-old" in n] == []
    if step == "remove_old" and isinstance(raised, Exception):
        pytest.fail(f"a failed first removal of the old copy should be retried, got {raised!r}")


def test_replace_folder_names_an_old_copy_it_cannot_put_back(folders, monkeypatch):
    root, new, target, old_tree, _ = folders
    real_rename = os.rename
    calls = []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) >= 2:
            raise OSError(5, "I/O error")
        real_rename(src, dst)

    monkeypatch.setattr(_safety.os, "rename", rename)
    with pytest.raises(_safety.LeftoverError) as info:
        _safety.replace_folder(new, target)
    monkeypatch.undo()
    (old,) = info.value.leftovers
    assert old in str(info.value) and snapshot(old) == old_tree


def test_replace_folder_names_an_old_copy_it_cannot_remove(folders, monkeypatch):
    root, new, target, _, new_tree = folders

    def rmtree(path, *a, **k):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(_safety.shutil, "rmtree", rmtree)
    monkeypatch.setattr(_safety, "_remove", lambda path: False)
    with pytest.raises(_safety.LeftoverError) as info:
        _safety.replace_folder(new, target)
    assert snapshot(target) == new_tree
    assert info.value.leftovers[0] in str(info.value)


# ---------------------------------------------------------------------------------------
# interrupts_as_exceptions


def test_sigterm_becomes_an_exception_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(_safety.Terminated) as info:
        with _safety.interrupts_as_exceptions():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert info.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is before


def test_interrupts_as_exceptions_is_a_no_op_off_the_main_thread():
    seen = []

    def work():
        with _safety.interrupts_as_exceptions():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [before]


@pytest.fixture
def pythons_ctrl_c():
    """Python's own Ctrl-C handler, whatever the test runner set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def unraisable(monkeypatch):
    """What Python reports as "Exception ignored in" (the test runner's hook reports it
    as a warning only)."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_python_drops_a_ctrl_c_raised_in_a_weakref_callback(pythons_ctrl_c, unraisable):
    # The premise of the tests below: no exception reaches the caller.
    drop_a_signal()
    assert [u.exc_type for u in unraisable] == [KeyboardInterrupt]


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt),
                                            (signal.SIGTERM, _safety.Terminated)])
@pytest.mark.parametrize("publish", ["atomic_file", "replace_folder"])
def test_a_dropped_interrupt_still_stops_the_output(tmp_path, pythons_ctrl_c, unraisable,
                                                    publish, signum, raised):
    target = tmp_path / "out"
    new = tmp_path / ".out.zorder-tmp-1"
    if publish == "atomic_file":
        target.write_bytes(b"old")
    else:
        target.mkdir()
        (target / "part-0.parquet").write_bytes(b"old")
        new.mkdir()
        (new / "part-0.parquet").write_bytes(b"new")
    old_tree = snapshot(tmp_path)
    hook = sys.unraisablehook
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    with pytest.raises(raised):
        with _safety.interrupts_as_exceptions():
            with _safety.interrupts_as_exceptions():   # nested: changes nothing
                if publish == "atomic_file":
                    with _safety.atomic_file(str(target)) as tmp:
                        with open(tmp, "wb") as fh:
                            fh.write(b"new")
                        drop_a_signal(signum)
                else:
                    drop_a_signal(signum)
                    _safety.replace_folder(str(new), str(target))
    assert snapshot(tmp_path) == old_tree   # (for replace_folder, new is its maker's)
    assert unraisable == []                 # raised where it counts, not printed
    assert sys.unraisablehook is hook
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers
    assert _safety._signals_seen == []
    with _safety.interrupts_as_exceptions():  # the next block starts without it
        with _safety.atomic_file(str(tmp_path / "next")) as tmp:
            open(tmp, "wb").close()
    assert (tmp_path / "next").exists()


def test_a_callers_own_ctrl_c_handler_is_left_alone(tmp_path):
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with _safety.interrupts_as_exceptions():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            signal.raise_signal(signal.SIGINT)
            with _safety.atomic_file(str(tmp_path / "out")) as tmp:
                open(tmp, "wb").close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT] and (tmp_path / "out").exists()


@pytest.mark.parametrize("at, signums", [(1, [signal.SIGINT]), (2, [signal.SIGINT]),
                                         (1, [signal.SIGINT, signal.SIGTERM])])
def test_signals_while_the_handlers_are_put_back(tmp_path, pythons_ctrl_c, at, signums):
    """``signal.signal`` runs pending handlers before it swaps: a Ctrl-C (or a Ctrl-C and
    a SIGTERM) arriving as the block puts its handlers back made the swap raise, and left
    zorder's handlers and record in place for good (the next publish in the process was
    refused). Simulated here as the 1st or the 2nd of those swaps starts."""
    import _signal   # (signal.signal is a Python wrapper of _signal.signal)
    import _thread

    hook = sys.unraisablehook
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    swaps, ending = [], []

    def profile(frame, event, arg):
        if ending and event == "c_call" and arg is _signal.signal:
            swaps.append(1)
            if len(swaps) == at:
                for signum in signums:   # pending: run before the swap
                    _thread.interrupt_main(signum)

    with pytest.raises(KeyboardInterrupt):
        with _safety.interrupts_as_exceptions():
            sys.setprofile(profile)
            ending.append(1)
    sys.setprofile(None)
    assert len(swaps) >= at
    assert sys.unraisablehook is hook
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers
    assert _safety._signals_seen == [] and not _safety._inside
    with _safety.interrupts_as_exceptions():   # the next block publishes
        with _safety.atomic_file(str(tmp_path / "next")) as tmp:
            open(tmp, "wb").close()
    assert (tmp_path / "next").exists()
