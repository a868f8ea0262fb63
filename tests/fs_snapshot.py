"""What a test compares before and after a command: the bytes under a path, and zorder's
temporary names left in a folder. (Imported by the tests that guard files.)"""

import os


def snapshot(path):
    """The bytes of a file, or {relative path: bytes} of a folder (links resolved), or
    None where nothing is."""
    path = os.path.realpath(path)
    if not os.path.lexists(path):
        return None
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                found[os.path.relpath(full, path)] = f.read()
    return found


def leftovers(folder):
    """zorder's temporary and old copies (``*.zorder-*``) in ``folder``."""
    return sorted(n for n in os.listdir(folder) if ".zorder-" in n)
