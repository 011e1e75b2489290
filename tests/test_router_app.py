"""Unit tests for the pure parts of the per-request gates (gsmcpd/router/app.py)."""

import pytest

from gsmcpd.router.app import _accept_lists

SSE = "text/event-stream"


@pytest.mark.parametrize("accept", [
    "text/event-stream", "application/json, text/event-stream", "Text/Event-Stream; q=0.5", "*/*", "text/*",
    "text/event-stream;q=1", "text/event-stream;q=0.001", "text/event-stream;q=zero",  # a bad weight is ignored
    "text/*;q=0, text/event-stream", "*/*;q=0, text/*",                                  # more specific wins
])
def test_acceptable(accept):
    assert _accept_lists(accept, SSE) is True


@pytest.mark.parametrize("accept", [
    "application/json", "text/event-streams", "", "text/event-stream;q=0", "text/event-stream; Q=0.000",
    "application/json, text/event-stream;q=0", "*/*;q=0", "text/*;q=0",
    "text/event-stream;q=0, */*", "text/event-stream;q=0, text/*", "text/*;q=0, */*",  # more specific wins
])
def test_not_acceptable(accept):
    assert _accept_lists(accept, SSE) is False
