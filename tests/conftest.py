"""Shared fixtures: every backend, and Iceberg's own test vectors (tests/data/)."""

import json
import pathlib

import pytest

import zorder

DATA = pathlib.Path(__file__).parent / "data"


def load_jsonl(name):
    with open(DATA / name, encoding="ascii") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(params=zorder.BACKEND_NAMES)
def backend(request):
    """Each backend module in turn; one this CPU or build cannot run is skipped, saying why."""
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
