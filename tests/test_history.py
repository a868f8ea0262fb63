"""Commit subjects fit on one line of `git log --oneline`: at most 72 characters.

The rule holds from the commit after a548918 on (issue 36); the why and any figures go in
the commit's body. Outside a git checkout (an sdist, say) there is no history to read.
"""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The last commit before the rule.
SINCE = "a548918"
LIMIT = 72


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def subjects_since(since):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: no history to check")
    if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout (an sdist?): no history to check")
    if git("cat-file", "-e", f"{since}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {since} is not in this clone (shallow?): the range is unknown")
    log = git("log", "--format=%h %s", f"{since}..HEAD")
    assert log.returncode == 0, log.stderr
    return [line.partition(" ")[::2] for line in log.stdout.splitlines()]


def test_commit_subjects_are_at_most_72_characters():
    long = [f"{sha} ({len(subject)} characters): {subject[:80]}..."
            for sha, subject in subjects_since(SINCE) if len(subject) > LIMIT]
    assert not long, "commit subjects over 72 characters:\n" + "\n".join(long)
