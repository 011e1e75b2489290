from gsmcpd.router.pending import PendingRequests


def test_ids_have_their_own_namespace_and_match_responses():
    table = PendingRequests(timeout=30)
    a = table.add("probe", "s1", now=100.0, generation=1)
    b = table.add("probe", "s2", now=101.0, generation=4)
    assert (a.request_id, b.request_id) == ("srv-1", "srv-2")
    assert a.deadline == 130.0
    got = table.resolve("srv-2", "s2")
    assert (got.kind, got.session_id, got.generation) == ("probe", "s2", 4)
    assert table.resolve("srv-2", "s2") is None        # answered once
    assert len(table) == 1 and "srv-1" in table


def test_client_ids_and_foreign_sessions_do_not_match():
    table = PendingRequests()
    entry = table.add("probe", "s1", now=0.0)
    assert table.resolve(1) is None
    assert table.resolve("1") is None
    assert table.resolve(entry.request_id, "other-session") is None
    assert entry.request_id in table                   # still waiting for its own session
    assert table.resolve(entry.request_id, "s1") is entry


def test_expiry_is_returned_as_data():
    table = PendingRequests(timeout=30)
    table.add("probe", "s1", now=0.0, generation=1)
    table.add("probe", "s2", now=10.0, generation=2, note="x")
    assert table.next_deadline() == 30.0
    assert table.expire(29.9) == []
    first = table.expire(30.0)
    assert [e.session_id for e in first] == ["s1"]
    assert table.next_deadline() == 40.0
    second = table.expire(100.0)
    assert second[0].data == {"note": "x"}
    assert table.next_deadline() is None
    assert table.resolve(first[0].request_id) is None  # late answers are ignored


def test_per_request_timeout_drop_session_and_shift():
    table = PendingRequests(timeout=30)
    table.add("probe", "s1", now=0.0, timeout=5)
    table.add("other", "s1", now=0.0)
    keep = table.add("probe", "s2", now=0.0)
    assert table.next_deadline() == 5.0
    assert [e.kind for e in table.for_session("s1", kind="probe")] == ["probe"]
    assert len(table.drop_session("s1")) == 2
    table.shift(100.0)
    assert keep.deadline == 130.0 and keep.sent_at == 100.0
    assert table.expire(129.0) == []
