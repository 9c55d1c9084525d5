"""One HTTP exchange with a total deadline and a bounded reply: what a call to a server we do not control needs.

httpx's timeouts are per operation: a server that sends its headers, then one byte every 2 s, never trips a 30 s
read timeout and holds the caller as long as it likes; and ``response.json()`` reads a reply of any size into
memory (300 MB took cloudai to 1.8 GB). ``fetch`` bounds both:

* the whole exchange (connect, send, headers, body) ends by ``deadline_s``: a timer shuts the connection's socket
  down when it passes (the socket comes from httpcore's ``trace`` hook as the connection opens; the client must
  not reuse connections, see ``client_limits``), so even a trickle of header bytes ends there; ``Overdue``;
* at most ``max_bytes`` of body are read (a larger ``Content-Length`` is refused before any is), as sent
  (``Accept-Encoding: identity``; a compressed body is not inflated): ``TooLarge``.

Transport errors are httpx's own. Thread-safe as the ``httpx.Client`` it is given.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


class Overdue(Exception):
    """No complete reply by the deadline."""


class TooLarge(Exception):
    """The reply's body is larger than allowed."""


@dataclass(frozen=True)
class Reply:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


def client_limits() -> httpx.Limits:
    """Connection limits for a client ``fetch`` uses: no connection kept for reuse (each exchange opens its own,
    so its deadline can cut it)."""
    import httpx

    return httpx.Limits(max_keepalive_connections=0)


def fetch(client: httpx.Client, method: str, url: str, *, deadline_s: float, max_bytes: int, body: Any = None) -> Reply:
    """``method url`` (``body`` as JSON), its whole reply read by ``deadline_s``, at most ``max_bytes`` of it."""
    cutter = _Cutter()
    timer = threading.Timer(max(0.0, deadline_s), cutter.cut)
    timer.daemon = True
    timer.start()
    try:
        with client.stream(method, url, json=body, timeout=max(0.001, deadline_s),
                           headers={"Accept-Encoding": "identity"},
                           extensions={"trace": cutter.trace}) as response:  # fmt: skip
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise TooLarge(f"a reply of {int(declared)} bytes (Content-Length), over the {max_bytes} allowed")
            chunks, size = [], 0
            for chunk in response.iter_raw():
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge(f"a reply over the {max_bytes} bytes allowed")
                chunks.append(chunk)
            if cutter.done:
                raise Overdue(f"no complete reply within {deadline_s:g}s")
            return Reply(response.status_code, b"".join(chunks))
    except Exception as exc:
        if cutter.done and not isinstance(exc, TooLarge):
            raise Overdue(f"no complete reply within {deadline_s:g}s") from None
        raise
    finally:
        timer.cancel()


class _Cutter:
    """Holds the exchange's socket; ``cut`` (the deadline) shuts it down, whatever httpx is blocked in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.done = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._socks.append(sock)
            late = self.done
        if late:
            _shut(sock)

    def cut(self) -> None:
        with self._lock:
            self.done = True
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
