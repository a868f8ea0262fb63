"""Output safety: an output is never the input under any name, and is replaced whole.

Every command that writes goes through here, so the rules live in one place:
``check_distinct`` before anything is written, then a temporary file or folder beside the
output that is renamed into place only when complete.
"""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Optional, Tuple

__all__ = ["check_distinct", "commit_dir", "prepare_out_dir"]


def check_distinct(input: str, output: str, what: str = "output") -> None:
    """Raise ValueError if ``output`` names ``input`` (the same path once resolved)."""
    if os.path.abspath(input) == os.path.abspath(output):
        raise ValueError(f"{what} must differ from input (write elsewhere, then rename)")


def prepare_out_dir(out_dir: str, data_path: Optional[str], overwrite: bool) -> Tuple[str, str]:
    """Check ``out_dir`` against the input and make a temporary folder beside it;
    returns (absolute out_dir, temporary folder)."""
    out_dir = os.path.abspath(out_dir)
    if data_path is not None:
        src = os.path.abspath(data_path)
        if out_dir == src or out_dir.startswith(src.rstrip(os.sep) + os.sep) or \
                src.startswith(out_dir.rstrip(os.sep) + os.sep):
            raise ValueError(
                f"out_dir {out_dir!r} must be apart from the input {src!r} "
                "(not the same folder, inside it, or around it)"
            )
    if os.path.exists(out_dir):
        if not os.path.isdir(out_dir):
            raise ValueError(f"out_dir {out_dir!r} exists and is not a folder")
        if os.listdir(out_dir) and not overwrite:
            raise ValueError(f"out_dir {out_dir!r} is not empty; pass overwrite=True "
                             "(--overwrite) to replace it")
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(out_dir)}.zorder-tmp-{uuid.uuid4().hex[:12]}")
    os.mkdir(tmp)
    return out_dir, tmp


def commit_dir(tmp: str, out_dir: str) -> None:
    """Move the finished folder into place (atomic rename on one filesystem)."""
    old = None
    if os.path.exists(out_dir):
        if os.listdir(out_dir):
            old = f"{out_dir}.zorder-old-{uuid.uuid4().hex[:12]}"
            os.rename(out_dir, old)
        else:
            os.rmdir(out_dir)
    os.rename(tmp, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
