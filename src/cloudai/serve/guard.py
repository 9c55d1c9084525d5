"""The ASGI middleware in front of ``cloudai serve`` and its lease control plane: bearer token, body size, and
what a refused client gets.

* A request without the right ``Authorization: Bearer <token>`` gets 401 (``WWW-Authenticate: Bearer``); a
  WebSocket handshake is denied with an HTTP 401 response. The comparison is constant-time; the token is never
  logged, echoed or written.
* Wrong tokens from one source (client host) are answered ever later (``Throttle``): the n-th refusal in a row
  waits ``delay(n)`` (50 ms doubling to 2 s) after the one before it, so guesses sent in parallel queue up too and
  400 guesses take over 60 s (``delay`` sums to ~790 s). The wait is an ``asyncio.sleep`` of that request only:
  other clients, and other sources, are served meanwhile. A right token from the source forgets its count.
* A body over ``max_body`` bytes gets 413 (uvicorn holds a body to its Content-Length, so the header suffices);
  a chunked body (no length) gets 411. The body is read and dropped first (up to ``DRAIN_MAX`` bytes): a client
  still sending when the answer came would see a broken pipe instead of the reason.
* One WARNING per client per minute for refused requests (``RefusalLog``): unauthenticated clients cannot fill
  the log.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("cloudai.serve")
DRAIN_MAX = 64 << 20  # bytes of a refused body read (and dropped) so its sender sees the answer


def delay(n: int, base_s: float = 0.05, cap_s: float = 2.0) -> float:
    """Seconds the n-th wrong token in a row (n >= 1) from one source waits after the one before it."""
    return min(cap_s, base_s * 2.0 ** min(n - 1, 64))


class Throttle:
    """Per source: how many wrong tokens in a row, and when the next answer to it is due (see the module
    docstring). A source quiet for ``forget_s`` starts over; the table holds ``size`` sources (oldest dropped)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        base_s: float = 0.05,
        cap_s: float = 2.0,
        forget_s: float = 600.0,
        size: int = 4096,
    ) -> None:
        self.clock, self.base_s, self.cap_s, self.forget_s, self.size = clock, base_s, cap_s, forget_s, size
        self._sources: dict[str, tuple[int, float]] = {}  # host -> (wrong tokens in a row, next answer due at)

    def refused(self, host: str) -> float:
        """Note a wrong token from ``host``; how long to wait before answering it."""
        now = self.clock()
        count, due = self._sources.pop(host, (0, now))
        if due < now - self.forget_s:
            count, due = 0, now
        count += 1
        due = max(due, now) + delay(count, self.base_s, self.cap_s)
        self._sources[host] = (count, due)
        while len(self._sources) > self.size:
            del self._sources[next(iter(self._sources))]
        return due - now

    def accepted(self, host: str) -> None:
        self._sources.pop(host, None)


class Guard:
    """ASGI middleware: bearer token, throttled refusals, body size (see the module docstring)."""

    def __init__(
        self, app: Any, *, token: str | None, max_body: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self._token = token.encode() if token else None
        self.max_body = max_body
        self.refusals = RefusalLog(clock)
        self.throttle = Throttle(clock)

    def _authorized(self, scope: Mapping[str, Any]) -> bool:
        if self._token is None:
            return True
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credentials = header.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        host = _host(scope)
        if not self._authorized(scope):
            self.refusals.note(scope)
            await asyncio.sleep(self.throttle.refused(host))
            return await self._deny(scope, receive, send, 401, "missing or wrong bearer token", self.max_body)
        if self._token is not None:
            self.throttle.accepted(host)
        if scope["type"] == "websocket":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is None and b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            return await self._deny(scope, receive, send, 411, "send a Content-Length (chunked bodies are refused)")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await self._deny(scope, receive, send, 413, f"request body over {self.max_body} bytes")
        return await self.app(scope, receive, send)

    async def _deny(
        self, scope: Any, receive: Any, send: Any, status: int, message: str, drain: int = DRAIN_MAX
    ) -> None:
        from starlette.responses import JSONResponse

        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        response = JSONResponse({"detail": message}, status_code=status, headers=headers)
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            if "websocket.http.response" not in scope.get("extensions", {}):
                await send({"type": "websocket.close", "code": 1008})
                return
        else:
            await _drain(receive, drain)
        await response(scope, receive, send)


async def _drain(receive: Any, limit: int) -> None:
    """Read and drop a request's body, up to ``limit`` bytes (past it the sender may see the connection close)."""
    seen = 0
    while seen <= limit:
        message = await receive()
        if message.get("type") != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body"):
            return


def _host(scope: Mapping[str, Any]) -> str:
    client = scope.get("client") or ("unknown", 0)
    return str(client[0])


class RefusalLog:
    """One WARNING per client (host) per ``every_s`` for refused requests: unauthenticated clients
    cannot fill the log. The table of clients is bounded (oldest dropped first)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, every_s: float = 60.0, size: int = 4096) -> None:
        self.clock, self.every_s, self.size = clock, every_s, size
        self._last: dict[str, float] = {}

    def note(self, scope: Mapping[str, Any]) -> bool:
        """Log this refusal unless its client was logged within ``every_s``; whether it was logged."""
        host, now = _host(scope), self.clock()
        last = self._last.get(host)
        if last is not None and now - last < self.every_s:
            return False
        self._last.pop(host, None)
        self._last[host] = now
        while len(self._last) > self.size:
            del self._last[next(iter(self._last))]
        kind = "WebSocket handshake" if scope.get("type") == "websocket" else "request"
        log.warning("refused %s from %s: missing or wrong bearer token (next note in %gs)", kind, host, self.every_s)
        return True
