"""Fixtures shared by the end-to-end modules."""

import pytest

from helpers import open_session


@pytest.fixture
def c(daemon):
    """A session on the module's own `daemon` fixture, closed after the test."""
    client = open_session(daemon)
    yield client
    client.close()
