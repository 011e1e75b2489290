"""Fixtures shared by the test modules."""

import pytest

from helpers import open_session, remove_tree


@pytest.fixture
def c(daemon):
    """A session on the module's own `daemon` fixture, closed after the test."""
    client = open_session(daemon)
    yield client
    client.close()


@pytest.fixture
def deep_dir(tmp_path):
    """A directory for a tree nested past the recursion limit, removed after the test by
    helpers.remove_tree: left in tmp_path, pytest's own cleanup of old runs (shutil.rmtree)
    would fail on it with a RecursionError at the end of every later session."""
    path = tmp_path / "deep"
    path.mkdir()
    yield path
    remove_tree(path)
