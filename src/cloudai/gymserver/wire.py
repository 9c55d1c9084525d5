"""The OpenEnv wire: one server's HTTP calls and WebSocket session, with retries, timeouts and auth.

``Wire`` owns the transport and nothing of the episode's meaning (``cloudai.gymserver.remote`` has that):
idempotent GETs retried with backoff, episode calls never retried, one WebSocket frame answered by
exactly one reply (anything that could desynchronise the session drops it), and every failure one
``GymServerError`` naming the URL and the call, with the bearer token masked. See
``cloudai.gymserver.remote`` for the protocol facts.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError, GymServerError

if TYPE_CHECKING:
    import httpx

    from cloudai.gymserver.wsconn import Connection

log = logging.getLogger("cloudai.gymserver.remote")  # one logger name for the whole client, as before the split

_ENDS_SESSION = frozenset({"CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"})  # the server closes after these


_HEADER_SAFE = re.compile(r"^[\x21-\x7e]+$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_HEADER_VALUE = re.compile(r"^[\x20-\x7e]*$")


class Wire:
    """The transport to one OpenEnv server at ``url`` (``http(s)://`` or ``ws(s)://``, ``/ws`` optional)."""

    def __init__(
        self,
        url: str,
        *,
        token_var: str,
        timeout_s: float,
        health_timeout_s: float,
        retries: int,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        base = url.rstrip("/").removesuffix("/ws")
        if not re.match(r"^(https?|wss?)://[^/\s]+", base):
            raise ConfigError(f"{url!r} is not an http(s):// or ws(s):// URL", field="cmd_args.env_url")
        self.url = re.sub(r"^ws", "http", base)
        self.ws_url = re.sub(r"^http", "ws", self.url) + "/ws"
        self._token_var = token_var
        self._token = os.environ.get(token_var) or None
        if self._token is not None and not _HEADER_SAFE.fullmatch(self._token):
            raise ConfigError(
                f"${token_var} holds characters an HTTP header cannot carry (spaces, newlines or non-ASCII)",
                field="cmd_args.env_token_var",
                hint="set it to the bare token",
            )
        bad = [name for name, value in (headers or {}).items()
               if not _HEADER_NAME.fullmatch(str(name)) or not _HEADER_VALUE.fullmatch(str(value))]  # fmt: skip
        if bad:
            raise ConfigError(
                f"header(s) {', '.join(repr(b) for b in bad)}: a name is letters, digits and -, a value printable "
                "ASCII without a newline", field="headers")  # fmt: skip
        self.headers = {str(k): str(v) for k, v in (headers or {}).items()}  # the caller's (e.g. a gateway's key)
        if self._token:  # the token variable's wins over a caller's Authorization header
            self.headers["Authorization"] = f"Bearer {self._token}"
        self._timeout_s = timeout_s
        self._health_timeout_s = health_timeout_s
        self._retries = max(1, retries)
        self._http: httpx.Client | None = None
        self.ws: Connection | None = None
        self._closed_why = "no session yet"

    def close(self) -> None:
        """End the session (a ``close`` frame, then the socket) and the HTTP client. Safe to call twice."""
        ws, self.ws = self.ws, None
        if ws is not None:
            with contextlib.suppress(Exception):  # the connection is going away either way
                ws.send('{"type":"close"}')
            ws.close()
        self._closed_why = "closed by close()"
        if self._http is not None:
            self._http.close()
            self._http = None

    def client(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(base_url=self.url, headers=self.headers, timeout=self._timeout_s)
        return self._http

    def wait_healthy(self) -> None:
        """GET /health until 200, with exponential backoff, for at most ``health_timeout_s``."""
        import httpx

        deadline = time.monotonic() + self._health_timeout_s
        delay = 0.05
        while True:
            try:
                response = self.client().get("/health", timeout=min(self._timeout_s, self._health_timeout_s))
                if response.status_code == 200:
                    return
                if response.status_code in (401, 403):
                    raise self.auth_error(response.status_code, "health")
                if response.status_code == 404:
                    raise self.error("GET /health: 404; is this an OpenEnv server?", "health")
                cause = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                cause = _describe(exc)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.error(f"not healthy after {self._health_timeout_s:g}s (last: {cause})", "health")
            log.debug("waiting for %s/health (%s); next try in %.2fs", self.url, cause, min(delay, remaining))
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 2.0)

    def get_json(self, path: str, call: str) -> dict[str, Any]:
        """An idempotent GET: transport errors and 5xx are retried with backoff; 4xx and bad JSON are not."""
        import httpx

        cause = ""
        for attempt in range(self._retries):
            if attempt:
                time.sleep(0.1 * 2 ** (attempt - 1))
            try:
                response = self.client().get(path)
            except httpx.HTTPError as exc:
                cause = _describe(exc)
                continue
            if response.status_code in (401, 403):
                raise self.auth_error(response.status_code, call)
            if response.status_code >= 500 or response.status_code == 429:
                cause = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise self.error(f"GET {path}: HTTP {response.status_code}", call)
            return self._object(response, f"GET {path}", call)
        raise self.error(f"GET {path} failed {self._retries} times (last: {cause})", call)

    def post(self, path: str, body: dict[str, Any], call: str) -> dict[str, Any]:
        """One episode call over HTTP: never retried (a lost reply may have moved the episode on)."""
        import httpx

        try:
            response = self.client().post(
                path, content=json.dumps(body, default=_plain), headers={"Content-Type": "application/json"}
            )
        except httpx.TimeoutException:
            raise self.error(f"POST {path}: no reply within {self._timeout_s:g}s; not retried", call) from None
        except httpx.HTTPError as exc:
            raise self.error(f"POST {path}: {_describe(exc)}", call) from None
        if response.status_code in (401, 403):
            raise self.auth_error(response.status_code, call)
        if response.status_code != 200:
            raise self.error(f"POST {path}: HTTP {response.status_code}: {response.text[:300]}", call)
        return self._object(response, f"POST {path}", call)

    def _object(self, response: httpx.Response, request: str, call: str) -> dict[str, Any]:
        """A 200 reply's body, which must be a JSON object (an error naming ``request`` otherwise)."""
        try:
            body = response.json()
        except ValueError:
            raise self.error(f"{request}: malformed JSON: {response.text[:200]!r}", call) from None
        if not isinstance(body, dict):
            raise self.error(f"{request}: expected a JSON object, got {type(body).__name__}", call)
        return body

    def connect(self) -> None:
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        from cloudai.gymserver.wsconn import Connection

        try:
            self.ws = Connection.open(
                self.ws_url,
                headers=self.headers,
                open_timeout=self._timeout_s,
                close_timeout=min(self._timeout_s, 5.0),
                max_size=64 * 2**20,
                logger=_NoWireDebug(log, {}),  # websockets logs handshake headers (the token) at DEBUG
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise self.auth_error(status, "connect") from None
            raise self.error(f"WebSocket handshake refused: HTTP {status}", "connect") from None
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise self.error(f"cannot open {self.ws_url}: {_describe(exc)}", "connect") from None

    def exchange(self, message: dict[str, Any], call: str, expect: str) -> dict[str, Any]:
        """Send one frame, read its one reply. Anything that could desynchronise the session drops it."""
        from websockets.exceptions import ConnectionClosed

        ws = self.ws
        if ws is None:
            raise self.error(f"no open session ({self._closed_why}); call reset() to start one", call)
        try:
            text = json.dumps(message, default=_plain)
        except (TypeError, ValueError) as exc:
            raise self.error(f"the {call} is not JSON-serialisable: {exc}", call) from None
        try:
            ws.send(text)
            raw = ws.recv(timeout=self._timeout_s)
        except TimeoutError:
            self.drop(f"{call} timed out")
            raise self.error(
                f"no reply within {self._timeout_s:g}s; the session was closed (a late reply must not answer a "
                "later request) and the episode is lost; reset() starts a new one",
                call,
            ) from None
        except ConnectionClosed as exc:
            raw = _pending(ws)  # e.g. CAPACITY_REACHED, sent right after the handshake before closing
            self.drop(f"connection lost during {call}")
            if raw is None:
                raise self.error(
                    f"the server closed the connection during the {call} ({_describe(exc)})", call
                ) from None
        except OSError as exc:
            self.drop(f"connection lost during {call}")
            raise self.error(f"connection failed during the {call}: {_describe(exc)}", call) from None
        data, problem, ends = read_reply(raw, call, expect)
        if ends:
            self.drop(ends)
        if problem:
            raise self.error(problem, call)
        return data

    def drop(self, why: str) -> None:
        ws, self.ws = self.ws, None
        self._closed_why = f"the last one ended: {why}"
        if ws is not None:
            ws.close()

    def error(self, message: str, call: str) -> GymServerError:
        if self._token:
            message = message.replace(self._token, "***")
        return GymServerError(message, where=self.url, call=call)

    def auth_error(self, status: int, call: str) -> GymServerError:
        if self._token:
            return self.error(f"HTTP {status}: the server refused the token in ${self._token_var}", call)
        return self.error(f"HTTP {status}: the server wants a bearer token; set ${self._token_var}", call)


class _NoWireDebug(logging.LoggerAdapter):
    """websockets' logger with DEBUG off: its debug lines carry the handshake's Authorization header."""

    def isEnabledFor(self, level: int) -> bool:
        return level > logging.DEBUG and self.logger.isEnabledFor(level)


def read_reply(raw: str | bytes, call: str, expect: str) -> tuple[dict[str, Any], str, str]:
    """One reply frame of a session: ``(data, problem, ends)``. ``problem`` ("" when none) is what to raise;
    ``ends`` ("" when the session goes on) why the session must be dropped: a reply that could leave it out of
    step (malformed, unexpected) or an error the server ends it with. Shared by the sync and async clients."""
    try:
        reply = json.loads(raw)
        kind, data = reply["type"], reply.get("data") or {}
        if not isinstance(data, dict):
            raise TypeError
    except (ValueError, TypeError, KeyError):
        return {}, f"malformed reply (not a JSON message with a type): {str(raw)[:200]!r}", f"malformed reply to {call}"
    if kind == "error":
        code = str(data.get("code", "UNKNOWN"))
        ends = f"server error {code}" if code in _ENDS_SESSION else ""
        return {}, f"{code}: {data.get('message', '')}{_validation_detail(data)}", ends
    if kind != expect:
        return {}, f"expected a '{expect}' reply, got '{kind}'", f"unexpected reply to {call}"
    return data, "", ""


def _validation_detail(data: Mapping[str, Any]) -> str:
    errors = data.get("errors")
    if not isinstance(errors, list) or not errors:
        return ""
    parts = [f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in errors[:5] if isinstance(e, dict)]
    return f" ({'; '.join(parts)})"


def _pending(ws: Connection) -> str | bytes | None:
    """A frame the server sent before closing (e.g. CAPACITY_REACHED right after the handshake), if any."""
    from websockets.exceptions import ConnectionClosed

    try:
        return ws.recv(timeout=0)
    except (ConnectionClosed, TimeoutError):
        return None


def _plain(value: Any) -> Any:
    """numpy scalars and arrays to plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
