"""One blocking WebSocket client connection, read in the caller's thread (websockets' Sans-I/O protocol).

Why not ``websockets.sync.client``: it reads the socket in a thread of its own and hands each message over through
a queue, so every reply costs two thread wake-ups besides the socket's: about 0.3 ms of client CPU per live step
(``benchmarks/bench_rollouts.py``). An OpenEnv session is one request, one reply, so the caller reads its reply
itself. The same interface and errors as websockets' sync ``ClientConnection`` for what ``Wire`` uses: ``send``,
``recv(timeout)`` (``TimeoutError``; ``ConnectionClosed`` once the connection is gone, a message that arrived
before the close still handed out first), ``close``; ``open`` raises ``InvalidStatus``/``InvalidHandshake``,
``OSError`` or ``TimeoutError``.

Between calls a daemon thread reads what arrived every ``IDLE_S`` (the server's pings, answered: a policy update
longer than the server's ping timeout must not cost the session); a message read then waits for the next ``recv``.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections import deque
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidHandshake
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

IDLE_S = 5.0  # between calls, pings are answered this often (servers' ping timeouts are ~20 s)


class Connection:
    """A WebSocket connection whose reads happen in the calling thread (see the module docstring)."""

    def __init__(self, sock: socket.socket, protocol: ClientProtocol, close_timeout: float) -> None:
        self._sock, self._protocol, self._close_timeout = sock, protocol, close_timeout
        self._messages: deque[str | bytes] = deque()  # whole messages not handed out yet
        self._parts: list[bytes] = []  # a fragmented message's frames so far
        self._text = True  # the kind of the message in ``_parts``
        self._lock = threading.Lock()  # a caller's call, or the idle reader
        self._closed = threading.Event()
        threading.Thread(target=self._idle, name="cloudai-ws-idle", daemon=True).start()

    @classmethod
    def open(
        cls, url: str, *, headers: dict[str, str], open_timeout: float, close_timeout: float, max_size: int, logger: Any
    ) -> Connection:
        """Connect and handshake within ``open_timeout``; no compression (small JSON frames)."""
        uri = parse_uri(url)
        deadline = time.monotonic() + open_timeout
        sock = socket.create_connection((uri.host, uri.port), timeout=open_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if uri.secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
            protocol = ClientProtocol(uri, max_size=max_size, logger=logger)
            request = protocol.connect()
            for name, value in headers.items():
                request.headers[name] = value
            protocol.send_request(request)
            sock.sendall(b"".join(protocol.data_to_send()))
            while True:
                events = protocol.events_received()
                if protocol.handshake_exc is not None:
                    raise protocol.handshake_exc
                if any(isinstance(event, Response) for event in events):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("timed out during the opening handshake")
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    raise InvalidHandshake("the server closed the connection during the handshake")
                protocol.receive_data(data)
            connection = cls(sock, protocol, close_timeout)
            connection._take(events)  # frames sent right after the handshake (e.g. CAPACITY_REACHED)
            return connection
        except BaseException:
            sock.close()
            raise

    def send(self, text: str) -> None:
        with self._lock:
            if self._protocol.state is not State.OPEN:
                raise self._gone()
            self._protocol.send_text(text.encode())
            self._flush()

    def recv(self, timeout: float | None = None) -> str | bytes:
        """The next message, waiting at most ``timeout`` seconds (None: for ever; 0: only one already here)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self._messages:
                if self._protocol.state is State.CLOSED:
                    raise self._gone()
                self._read(None if deadline is None else deadline - time.monotonic())
            return self._messages.popleft()

    def close(self) -> None:
        """The closing handshake (waiting at most ``close_timeout`` for the server's close), then the socket."""
        self._closed.set()
        with self._lock:
            try:
                if self._protocol.state is State.OPEN:
                    self._protocol.send_close()
                    self._flush()
                deadline = time.monotonic() + self._close_timeout
                while self._protocol.state is not State.CLOSED and time.monotonic() < deadline:
                    self._read(deadline - time.monotonic())
            except (OSError, TimeoutError):
                pass
            finally:
                self._sock.close()

    def _read(self, timeout: float | None) -> None:
        """Read once from the socket (``TimeoutError`` when nothing came within ``timeout``), answer what needs an
        answer (pings, a close) and keep the messages."""
        if timeout is not None and timeout <= 0:
            self._sock.settimeout(0.0)  # non-blocking: only what is already here
        else:
            self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(65536)
        except (BlockingIOError, ssl.SSLWantReadError):
            raise TimeoutError from None
        except TimeoutError:
            raise
        except OSError:  # reset by the peer: as websockets does, the connection is closed
            data = b""
        if data:
            self._protocol.receive_data(data)
        else:
            self._protocol.receive_eof()
        self._take(self._protocol.events_received())
        self._flush()

    def _take(self, events: list[Any]) -> None:
        for frame in events:
            if not isinstance(frame, Frame) or frame.opcode not in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                continue  # pings are answered by the protocol, pongs and the close need nothing more
            if frame.opcode is not Opcode.CONT:
                self._text, self._parts = frame.opcode is Opcode.TEXT, []
            self._parts.append(bytes(frame.data))
            if frame.fin:
                data = b"".join(self._parts)
                self._messages.append(data.decode() if self._text else data)
                self._parts = []

    def _flush(self) -> None:
        for data in self._protocol.data_to_send():
            try:
                if data:
                    self._sock.sendall(data)
                else:  # the protocol's end of stream
                    self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                self._protocol.receive_eof()
                return

    def _gone(self) -> ConnectionClosed:
        protocol = self._protocol
        if protocol.state is State.CLOSED:
            return protocol.close_exc
        return ConnectionClosedError(protocol.close_rcvd, protocol.close_sent, protocol.close_rcvd_then_sent)

    def _idle(self) -> None:
        """Every ``IDLE_S`` while no call runs: read what arrived (pings are answered as they are read)."""
        while not self._closed.wait(IDLE_S):
            if not self._lock.acquire(blocking=False):
                continue  # a call is reading: it answers them
            try:
                while self._protocol.state is not State.CLOSED:
                    self._read(0.0)
            except (OSError, TimeoutError):
                pass
            finally:
                self._lock.release()
