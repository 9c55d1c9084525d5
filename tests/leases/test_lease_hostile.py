"""Lease calls against a hostile control plane (``tests.leases.hostile``: raw sockets on 127.0.0.1): ids that would
collide or escape the records dir, a reply that trickles or never ends, an error meant for the terminal; and a
control plane SIGKILLed with sandboxes running. Synchronisation: replies, process exits, ``wait_until``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.leases.hostile import Answer, Hostile, head, reply
from tests.reliability.procs import alive, gone_within

from cloudai.errors import GymServerError
from cloudai.gymserver.lease import LeaseClient, release_recorded


@pytest.fixture
def hostile() -> Iterator[list[Hostile]]:
    made: list[Hostile] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[Hostile], answer: Answer) -> Hostile:
    made.append(Hostile(answer))
    return made[-1]


def ids(*given: str) -> Answer:
    """POST answers the next of ``given`` as a ready sandbox; DELETE answers 200."""
    queue = list(given)

    def answer(method: str, path: str, conn: socket.socket, stop: threading.Event) -> None:
        if method == "POST":
            reply(conn, {"id": queue.pop(0), "status": "ready", "url": "http://127.0.0.1:9"}, 201)
        else:
            reply(conn, {"status": "released"})

    return answer


def test_two_ids_never_share_a_record_and_a_malformed_id_is_refused(hostile: list[Hostile], tmp_path: Path) -> None:
    """``L_1`` and ``L:1`` were both ``leases/L_1.json``: one record for two leases, one left after --resume."""
    plane = serve(hostile, ids("L_1", "L:1", "L/1", "..", "x" * 10_000, "a\x1b[2Jb"))
    client = LeaseClient(plane.url, record_dir=tmp_path)
    client.acquire(), client.acquire()
    assert sorted(p.name for p in (tmp_path / "leases").iterdir()) == ["L%3A1.json", "L_1.json"]
    for bad, why in [("L/1", "'/'"), ("..", "'..'"), ("x" * 60, "over 256 bytes"), ("a\\x1b[2Jb", "control")]:
        with pytest.raises(GymServerError) as caught:
            client.acquire()
        message = str(caught.value)
        assert message.startswith(f"lease ({plane.url}): the control plane gave a malformed lease id "), message
        assert bad in message and why in message and len(message) < 400 and "\x1b" not in message
    assert plane.requests.count("DELETE /sandboxes/L%2F1") == 1  # the sandbox it may hold is released
    assert release_recorded(tmp_path) == [
        f"released sandbox L:1 ({plane.url}), left by the earlier run",
        f"released sandbox L_1 ({plane.url}), left by the earlier run",
    ]
    assert list((tmp_path / "leases").iterdir()) == []
    client.close()


def trickle(method: str, path: str, conn: socket.socket, stop: threading.Event) -> None:
    """Headers, then one byte every 0.2 s of a body that never completes."""
    conn.sendall(head(201, 100_000))
    while not stop.wait(0.2):
        conn.sendall(b" ")


def test_a_trickling_reply_ends_at_the_lease_deadline(hostile: list[Hostile]) -> None:
    """A byte every 2 s kept ``cloudai run`` in ``POST /sandboxes`` for 100 s with ``env_lease_timeout_s = 5``:
    httpx's read timeout restarts with every byte."""
    plane = serve(hostile, trickle)
    client = LeaseClient(plane.url, timeout_s=30, lease_timeout_s=0.5)
    with pytest.raises(GymServerError, match=r"POST /sandboxes failed 1 time\(s\) \(last: no complete reply within"):
        client.acquire()
    assert plane.requests == ["POST /sandboxes"]


def endless(size: int, sent: list[int]) -> Answer:
    """A body of ``size`` bytes with no ``Content-Length`` (it runs to the close); ``sent[0]``: bytes written."""

    def answer(method: str, path: str, conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head(201))
        chunk = b" " * 65536
        while sent[0] < size and not stop.is_set():
            conn.sendall(chunk)
            sent[0] += len(chunk)

    return answer


def test_a_huge_reply_is_refused_after_a_megabyte(hostile: list[Hostile]) -> None:
    """A 300 MB lease reply took cloudai to 1.8 GB; 32 MB here (the old client read it all, then found no JSON)."""
    sent = [0]
    plane = serve(hostile, endless(32 << 20, sent))
    with pytest.raises(GymServerError, match=r"a reply over the 1048576 bytes allowed: a lease reply is one small"):
        LeaseClient(plane.url).acquire()
    plane.stop.set()
    assert sent[0] < 24 << 20  # it stopped reading: the sender blocked once the socket buffers filled
    declared = serve(hostile, lambda m, p, conn, s: conn.sendall(head(201, 300 << 20)))
    with pytest.raises(GymServerError, match=r"a reply of 314572800 bytes \(Content-Length\), over the 1048576"):
        LeaseClient(declared.url).acquire()


def test_a_servers_error_is_cut_and_made_printable(hostile: list[Hostile]) -> None:
    """A 900 kB error with 5 000 newlines, a terminal-title escape and a forged line: one short printable line."""
    error = "\x1b]0;pwned\x07boom\r\nINFO: all leases released\n" + "x\n" * 5000 + "y" * 900_000
    plane = serve(hostile, lambda m, p, conn, s: reply(conn, {"id": "sb-1", "status": "failed", "error": error}, 201))
    with pytest.raises(GymServerError) as caught:
        LeaseClient(plane.url).acquire()
    message = str(caught.value)
    assert message.startswith(f"lease ({plane.url}): sandbox sb-1 failed to start: \\x1b]0;pwned\\x07boom\\r\\nINFO")
    assert "more characters)" in message and len(message) < 1000
    assert all(c.isprintable() for c in message)


SERVES = (  # a sandbox: prints its URL, answers every GET with 200, forever
    "import http.server as h\n"
    "class H(h.BaseHTTPRequestHandler):\n"
    "    def do_GET(self): self.send_response(200); self.end_headers()\n"
    "    def log_message(self, *a): pass\n"
    "s = h.HTTPServer(('127.0.0.1', 0), H); print(f'at http://127.0.0.1:{s.server_port}', flush=True)\n"
    "s.serve_forever()\n"
)
PLANE = (  # a board (what ``cloudai serve --lease`` serves) holding one ready sandbox, until killed
    "import sys, time\n"
    "from cloudai.serve.sandboxes import Board\n"
    "board = Board(lambda name, options: [sys.executable, '-c', sys.argv[1]])\n"
    "sandbox = board.lease(None, {})\n"
    "while sandbox.status == 'pending': time.sleep(0.01)\n"
    "print(sandbox.status, sandbox.proc.pid, sandbox.url, flush=True)\n"
    "time.sleep(600)\n"
)


def test_sandboxes_die_with_a_sigkilled_control_plane() -> None:
    """SIGKILL of ``cloudai serve --lease`` left its sandboxes running, ports held: the parent-death signal."""
    plane = subprocess.Popen([sys.executable, "-c", PLANE, SERVES], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)  # fmt: skip
    assert plane.stdout is not None
    status, pid, url = plane.stdout.readline().split()
    try:
        assert status == "ready", status
        assert httpx.get(f"{url}/health").status_code == 200  # alive after the thread that started it ended
        os.kill(plane.pid, signal.SIGKILL)
        plane.wait(30)
        assert gone_within([int(pid)])
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/health")  # its port is free
    finally:
        for leftover in (plane.pid, int(pid)):
            if alive(leftover):
                os.kill(leftover, signal.SIGKILL)
