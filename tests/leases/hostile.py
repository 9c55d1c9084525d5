"""A hostile lease control plane on 127.0.0.1 (port 0), raw sockets so it can misbehave as no framework would.

``Hostile(answer)``: every request is read (request line, headers, ``Content-Length`` body) and handed to
``answer(method, path, conn, stop)``, which writes whatever it likes on ``conn``: a trickle, an endless body,
a forged JSON. ``requests`` lists ``"METHOD /path"`` as they came. ``close()`` stops every connection (``stop`` is
set, sockets shut).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

Answer = Callable[[str, str, socket.socket, threading.Event], None]


class Hostile:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[str] = []
        self.stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                top, _, rest = head.partition(b"\r\n\r\n")
                lines = top.decode("latin-1").split("\r\n")
                method, path = lines[0].split()[:2]
                length = next((int(v) for k, _, v in (h.partition(": ") for h in lines[1:])
                               if k.lower() == "content-length"), 0)  # fmt: skip
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests.append(f"{method} {path}")
                self.answer(method, path, conn, self.stop)
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self._server.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def head(status: int = 200, length: int | None = None) -> bytes:
    """A status line and headers (a JSON body; ``Content-Length`` when given, else the body runs to the close)."""
    lines = [f"HTTP/1.1 {status} X", "Content-Type: application/json", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def reply(conn: socket.socket, body: Any, status: int = 200) -> None:
    data = json.dumps(body).encode()
    conn.sendall(head(status, len(data)) + data)
