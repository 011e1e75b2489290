"""The router's worker starts: a real forkserver worker, owned by the router alone."""

import multiprocessing
import select
import socket

from gsmcpd.router import workers
from gsmcpd.wire import frames


def test_a_started_worker_answers_and_multiprocessing_does_not_track_it():
    process, sock = workers.start_process()
    try:
        # multiprocessing would poll every tracked child at each later start
        assert process not in multiprocessing.active_children()
        assert process.is_alive()
        sock.settimeout(20)
        sock.sendall(frames.encode({"op": "prepare", "session": {"toolsets": ["bench"]}}) +
                     frames.encode({"op": "call", "seq": 1,
                                    "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}))
        decoder, got = frames.FrameDecoder(), []
        while len(got) < 2:
            got += decoder.feed(sock.recv(65536))
        assert got[0]["op"] == "prepared" and got[0]["ok"] is True
        assert got[1] == {"op": "reply", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    finally:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    # the router learns of the exit from the sentinel, and reaps through exitcode
    assert select.select([process.sentinel], [], [], 20)[0]
    process.join(20)
    assert process.exitcode == 0
    process.close()
