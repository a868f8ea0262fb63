"""Output safety for the commands that write files (``zorder sort``, ``zorder cluster``).

One home for four promises:

- an output is never the input under another name: :func:`check_apart` compares real paths
  in both directions (equal, output inside input, input inside output) and file identity
  ``(st_dev, st_ino)`` of every ancestor, which catches symbolic links, hard links, ``..``,
  relative spellings and bind mounts; :func:`check_file_output` and
  :func:`check_folder_output` also refuse an existing output of the wrong kind (a device,
  fifo or folder where a Parquet file goes; a file where a folder goes);
- a single output file is written beside its final place and renamed over it only when
  complete (:func:`atomic_file`), so the old file stays whole until then;
- working files (spill runs) live in a folder of their own (:func:`temporary_folder`),
  removed with everything in it however the work ends;
- a folder is replaced (:func:`replace_folder`) in named steps (:data:`FOLDER_STEPS`), and a
  failure or interrupt between any two of them puts the old content back; a leftover that
  cannot be cleaned up is named in the error.

:func:`interrupts_as_exceptions` turns SIGTERM into :class:`Terminated` (a ``SystemExit``
with code 143) so that the same cleanup runs for ``kill`` as for Ctrl-C, and remembers a
Ctrl-C, so that one whose KeyboardInterrupt Python dropped still stops the command before
it publishes (:func:`raise_if_interrupted`, in the steps above).

Tests inject faults through :data:`fault_hook`, called with a step's name just before it
runs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import sys
import threading
import uuid
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, NoReturn, Optional, Sequence, Tuple

from zorder.values.stages import COMMIT, stage

__all__ = [
    "FOLDER_STEPS",
    "FILE_STEPS",
    "LeftoverError",
    "Terminated",
    "atomic_file",
    "check_apart",
    "check_file_output",
    "check_folder_output",
    "check_no_shared_files",
    "check_side_output",
    "exception_for",
    "interrupts_as_exceptions",
    "overlap",
    "physical",
    "published_outputs",
    "raise_if_interrupted",
    "replace_folder",
    "set_handlers",
    "sibling",
    "temporary_folder",
]

#: Steps of :func:`replace_folder`, in order.
FOLDER_STEPS: Tuple[str, ...] = ("move_old_aside", "move_new_in", "remove_old")
#: Steps of :func:`atomic_file`, in order.
FILE_STEPS: Tuple[str, ...] = ("fsync_temp", "replace", "fsync_folder")

#: Called with a step's name just before the step runs; tests set it to inject a fault.
fault_hook: Optional[Callable[[str], None]] = None


def _step(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)


class LeftoverError(OSError):
    """Cleanup failed: ``leftovers`` lists the paths left behind (also in the message)."""

    def __init__(self, message: str, leftovers: List[str]) -> None:
        super().__init__(message)
        self.leftovers = leftovers


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread by :func:`interrupts_as_exceptions`; exit code
    143."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


# ---------------------------------------------------------------------------------------
# Is the output the input under another name?


def _identity(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _ancestors(path: str) -> Iterator[str]:
    """``path`` (made real) and every folder above it, up to the root."""
    path = os.path.realpath(path)
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _holds(outer: str, inner: str) -> bool:
    """Whether ``inner`` is ``outer`` or lies inside it, by identity of each ancestor."""
    target = _identity(outer)
    if target is None:
        return False
    return any(_identity(p) == target for p in _ancestors(inner))


def overlap(output: str, input: str) -> Optional[str]:
    """How ``output`` and ``input`` share files, in words, or None when they are apart.

    Real paths are compared in both directions, and so are file identities (device and
    inode) of each path and its ancestors, so a symbolic link, a hard link, ``..``, a
    relative spelling or a bind mount of the input is seen for what it is.
    """
    in_real = os.path.realpath(input)
    out_id, in_id = _identity(output), _identity(input)
    # The path as the kernel resolves it, and as it reads (``a/../b`` with ``a`` a link
    # goes elsewhere than ``b``): either one reaching the input is refused.
    for out in (os.path.realpath(output), os.path.abspath(output)):
        if out == in_real or (out_id is not None and out_id == in_id):
            return "is the input"
        if out.startswith(in_real.rstrip(os.sep) + os.sep):
            return "is inside the input"
        if in_real.startswith(out.rstrip(os.sep) + os.sep):
            return "holds the input"
    if _holds(input, output):
        return "is inside the input"
    if _holds(output, input):
        return "holds the input"
    return None


def check_no_shared_files(out_dir: str, inputs: List[str], name: str = "out_dir") -> None:
    """ValueError if a file under the existing folder ``out_dir`` is one of ``inputs``
    under another name (a hard link): replacing the folder would touch the input's data."""
    if not os.path.isdir(out_dir):
        return
    wanted = {i for i in map(_identity, inputs) if i is not None}
    for root, _, names in os.walk(out_dir):
        for entry in names:
            path = os.path.join(root, entry)
            if _identity(path) in wanted:
                raise ValueError(f"{name} {out_dir!r} holds the input under another name "
                                 f"({path!r} is a hard link to an input file); "
                                 "write somewhere else")


def physical(path: str) -> str:
    """``path`` with its folder resolved as the kernel resolves it (links and ``..``
    followed in order, unlike ``os.path.abspath``), so every later step names the one
    place that was checked. A last component that is a link stays a link."""
    path = os.fspath(path)
    head, tail = os.path.split(path.rstrip(os.sep) or os.sep)
    if tail in ("", ".", ".."):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(head or "."), tail)


def check_apart(output: str, input: str, output_name: str = "output",
                input_name: str = "the input") -> None:
    """ValueError unless ``output`` and ``input`` are apart (see :func:`overlap`)."""
    for path, name in ((input, input_name), (output, output_name)):
        if not path:   # ('' would be the current folder to some calls, no file to others)
            raise ValueError(f"{name} is an empty path")
    how = overlap(output, input)
    if how is not None:
        real = os.path.realpath(input)
        raise ValueError(
            f"{output_name} {output!r} {how} ({input_name}: {input!r}"
            + (f", really {real!r}" if real != os.path.abspath(input) else "")
            + "); write somewhere else"
        )


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a fifo"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a file" if stat.S_ISREG(mode) else "a special file"


def check_file_output(path: str, overwrite: bool, name: str = "output") -> None:
    """Refuse a single-file output that exists and is not a regular file, or exists without
    ``overwrite``, or whose folder is missing. Never opens ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{name}: the folder for {path!r} does not exist: {folder!r}")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path) and not overwrite:   # a link to nothing is still there
            raise FileExistsError(f"{name} {path!r} exists (a symbolic link to a missing "
                                  "file); pass overwrite=True (--overwrite on the command "
                                  "line) to replace the link") from None
        return
    if not stat.S_ISREG(mode):
        raise ValueError(f"{name} {path!r} exists and is {_kind(mode)}; "
                         "it must be a regular file or not exist")
    if not overwrite:
        raise FileExistsError(f"{name} {path!r} exists; pass overwrite=True "
                              "(--overwrite on the command line) to replace it")


def check_side_output(path: str, name: str, apart_from: Sequence[Tuple[str, str]],
                      overwrite: bool) -> None:
    """Refuse, before any work, a command's second output (``--plot``, ``--report-json``)
    that is, holds or lies inside any of ``apart_from`` (``(path, what)`` pairs: the
    input, the main output), or that :func:`check_file_output` refuses: its folder
    missing, an existing path of another kind, an existing file without ``overwrite``."""
    if not path:
        raise ValueError(f"{name} is an empty path")
    for other, what in apart_from:
        how = overlap(path, other)
        if how is not None:
            raise ValueError(f"{name} {path!r} {how.replace('the input', what)} "
                             f"({other!r}); write it somewhere else")
    check_file_output(path, overwrite, name)


def check_folder_output(path: str, overwrite: bool, name: str = "out_dir") -> None:
    """Refuse a folder output that exists and is not a folder, or is not empty without
    ``overwrite``."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise ValueError(f"{name} {path!r} exists and is {_kind(mode)}, not a folder")
    if os.listdir(path) and not overwrite:
        raise ValueError(f"{name} {path!r} is not empty; pass overwrite=True "
                         "(--overwrite) to replace it")


# ---------------------------------------------------------------------------------------
# Writing and replacing


def sibling(path: str, kind: str) -> str:
    """A fresh hidden name beside ``path``: ``.NAME.zorder-KIND-XXXXXXXXXXXX``."""
    path = os.path.abspath(path)
    return os.path.join(os.path.dirname(path),
                        f".{os.path.basename(path)}.zorder-{kind}-{uuid.uuid4().hex[:12]}")


def _fsync(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a folder
        if not directory or exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _remove(path: str) -> bool:
    """Remove a file or folder if present; True if nothing is left."""
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    return not os.path.lexists(path)


@contextlib.contextmanager
def atomic_file(path: str) -> Iterator[str]:
    """Yields a temporary path beside ``path`` to write; on a clean exit the file is
    fsynced and renamed over ``path`` (atomic on one file system).

    On any exception or interrupt the temporary file is removed and ``path`` keeps its old
    content; if it cannot be removed, the error names it.
    """
    tmp = sibling(path, "tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        with stage(COMMIT):
            _step("fsync_temp")
            _fsync(tmp)
            raise_if_interrupted()
            _step("replace")
            os.replace(tmp, path)
            _mark_published(path)
            _step("fsync_folder")
            _fsync(os.path.dirname(os.path.abspath(path)), directory=True)
    except BaseException as exc:
        if not _remove(tmp):
            _note(exc, f"zorder could not remove its temporary file {tmp!r}")
        raise


@contextlib.contextmanager
def temporary_folder(beside: str, kind: str, inside: Optional[str] = None) -> Iterator[str]:
    """Yields a fresh hidden folder (``.NAME.zorder-KIND-XXXXXXXXXXXX``) beside ``beside``,
    or in the existing folder ``inside``; removed with all it holds on any exit (success,
    error, interrupt). One that cannot be removed is named: a :class:`LeftoverError` after
    success, a note on the exception otherwise."""
    if inside is not None:
        folder = os.path.join(inside, os.path.basename(sibling(beside, kind)))
    else:
        folder = sibling(beside, kind)
    os.mkdir(folder, 0o700)
    try:
        yield folder
    except BaseException as exc:
        if not _remove(folder):
            _note(exc, f"zorder could not remove its temporary folder {folder!r}")
        raise
    if not _remove(folder):
        raise LeftoverError(f"zorder could not remove its temporary folder {folder!r}",
                            [folder])


def _note(exc: BaseException, text: str) -> None:
    add_note = getattr(exc, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(text)


def _leftover(exc: BaseException, message: str, path: str) -> NoReturn:
    """Raise for a path left behind: a LeftoverError from an error, or ``exc`` itself with
    the message as a note when it is an interrupt."""
    if isinstance(exc, Exception):
        raise LeftoverError(message, [path]) from exc
    _note(exc, message)
    raise exc


def _remove_old(old: str) -> None:
    try:
        _step("remove_old")
        shutil.rmtree(old)
    except BaseException as exc:
        if not _remove(old):  # one more try, ignoring errors, before giving up
            _leftover(exc, f"the new output is complete, but its old copy is left at {old!r}",
                      old)
        if not isinstance(exc, Exception):
            raise  # an interrupt still ends the command, with the output complete


def replace_folder(new: str, target: str) -> None:
    """Move the complete folder ``new`` to ``target``, replacing what ``target`` holds.

    Steps (:data:`FOLDER_STEPS`): ``move_old_aside`` renames an existing ``target`` to a
    hidden sibling, ``move_new_in`` renames ``new`` to ``target``, ``remove_old`` deletes
    the old copy. A failure or interrupt before the new folder is in place moves the old
    one back and re-raises (``new`` stays for its maker to remove); after, ``target`` is
    complete and the old copy is removed before anything is re-raised. A path that cannot
    be cleaned up is named: a :class:`LeftoverError` from an error, a note on an interrupt.
    ``new`` and ``target`` must be on one file system.
    """
    old = sibling(target, "old") if os.path.lexists(target) else None
    try:
        if old is not None:
            raise_if_interrupted()
            _step("move_old_aside")
            os.rename(target, old)
        raise_if_interrupted()
        _step("move_new_in")
        os.rename(new, target)
        _mark_published(target)
    except BaseException as exc:
        new_is_in = not os.path.lexists(new) and os.path.lexists(target)
        if new_is_in:
            _mark_published(target)
        if old is not None and os.path.lexists(old):
            if not new_is_in:
                try:
                    os.rename(old, target)
                except OSError as restore:
                    _leftover(exc, f"{target!r} could not be put back ({restore}); "
                                   f"its old content is at {old!r}", old)
                raise
            _remove_old(old)  # the interrupt came just after the new folder moved in
        raise
    if old is not None:
        _remove_old(old)


# ---------------------------------------------------------------------------------------
# Signals


#: The signals (SIGINT, SIGTERM) that came within :func:`interrupts_as_exceptions`'s
#: block, whether or not their exceptions survived; cleared as the block starts and ends.
_signals_seen: List[int] = []
#: Whether the main thread is inside that block (an inner one changes nothing).
_inside = False
#: The outputs put in place within the last (or the current) such block.
_published: List[str] = []


def _mark_published(path: str) -> None:
    if _inside and threading.current_thread() is threading.main_thread():
        _published.append(path)


def published_outputs() -> List[str]:
    """The outputs that :func:`atomic_file` and :func:`replace_folder` put in place within
    the last (or the current) block of :func:`interrupts_as_exceptions`: an interrupt
    after one of them did not leave the output as it was."""
    return list(_published)


def exception_for(signum: int) -> BaseException:
    """What a Ctrl-C (KeyboardInterrupt) or SIGTERM (:class:`Terminated`) raises."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def set_handlers(handlers: Dict[int, Any]) -> Optional[BaseException]:
    """Install each signal's handler (None: the default) whatever arrives meanwhile:
    ``signal.signal`` first runs the handlers of signals pending, and one that raises
    would leave the old handler in place. Each swap is retried; the first exception
    raised so is returned, for the caller to raise once every handler is in place."""
    raised: Optional[BaseException] = None
    for signum, handler in handlers.items():
        while True:
            try:
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
                break
            except (KeyboardInterrupt, SystemExit) as exc:
                raised = raised or exc
    return raised


def _raise_for_signal(signum: int, frame: Optional[FrameType]) -> None:
    _signals_seen.append(signum)
    raise exception_for(signum)


def raise_if_interrupted() -> None:
    """Raise the KeyboardInterrupt or :class:`Terminated` of a signal that came within
    :func:`interrupts_as_exceptions`'s block: called before each step that publishes
    output, so that one whose exception Python dropped still stops the command there.
    (A signal is the whole process's: it stops zorder's work in every thread.)"""
    if _signals_seen:
        raise exception_for(_signals_seen[0])


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """Within the block, in the main thread (where Python runs signal handlers), SIGTERM
    raises :class:`Terminated`, so that cleanup (``finally``, ``except BaseException``)
    runs for ``kill`` as for Ctrl-C, and a Ctrl-C raises KeyboardInterrupt, as Python's
    own handler does (a caller's own handler is left in place).

    Both are also remembered, for :func:`raise_if_interrupted`. Python raises them
    wherever the main thread is, and some are lost: one raised inside a weakref callback
    or a finalizer is printed ("Exception ignored in") and dropped, and one raised while
    a C module imports another through ``PyCapsule_Import`` becomes an ImportError, which
    a fallback import catches (``xml.etree``'s, when ``distributed`` is first imported).
    The command went on and published its output. A dropped one is not printed either,
    since the next publishing step raises it again.

    The old handlers are restored after, even if a signal arrives meanwhile (it is then
    raised once they are); a block inside another changes nothing."""
    global _inside
    if _inside or threading.current_thread() is not threading.main_thread():
        yield
        return

    def unraisable(report: "sys.UnraisableHookArgs") -> None:
        dropped = report.exc_type in (KeyboardInterrupt, Terminated) and _signals_seen
        if not dropped:
            hook(report)

    _inside = True
    del _signals_seen[:], _published[:]
    hook, sys.unraisablehook = sys.unraisablehook, unraisable
    previous: Dict[int, Any] = {}
    raised: Optional[BaseException] = None
    try:
        previous[signal.SIGTERM] = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _raise_for_signal)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous[signal.SIGINT] = signal.default_int_handler
            signal.signal(signal.SIGINT, _raise_for_signal)
        yield
    finally:
        sys.unraisablehook = hook
        raised = set_handlers(previous)
        del _signals_seen[:]
        _inside = False
    if raised is not None:
        raise raised
