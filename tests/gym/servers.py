"""Servers the remote tests talk to: the stock OpenEnv app in a subprocess, and a raw misbehaving one.

Synchronisation is on the printed port (the socket listens before it is printed) and on the
client's own health wait, never on sleeps.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.sync.server import ServerConnection, serve

REPO = Path(__file__).resolve().parents[2]


class OpenEnvServer:
    """``python -m tests.gym.openenv_app`` on a loopback port; ``url`` is its base URL."""

    def __init__(self, *args: str, port: int = 0, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.gym.openenv_app", "--port", str(port), *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            _, err = self.proc.communicate(timeout=60)
            raise AssertionError(f"server did not start: {line!r}\n{err}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=60)

    def __enter__(self) -> OpenEnvServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def held_port() -> socket.socket:
    """A bound, non-listening socket: connections to its port are refused until it is closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


SCHEMA: dict[str, Any] = {
    "action": {
        "type": "object",
        "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 3}},
        "required": ["x"],
    },
    "observation": {"type": "object", "properties": {"y": {"type": "number"}}},
    "state": {},
}


@contextmanager
def raw_server(
    routes: dict[str, Callable[[], tuple[int, str]]], on_frame: Callable[[dict[str, Any]], str | None] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """A tiny HTTP + WebSocket server (``websockets``' own) that answers exactly what the test says.

    ``routes`` maps an HTTP path to ``() -> (status, body)``; ``/ws`` upgrades and each text frame
    is answered with ``on_frame(frame)`` (``None``: close the connection). Yields the base URL
    and the list of requested paths.
    """
    seen: list[str] = []

    def process_request(connection: ServerConnection, request: Request) -> Response | None:
        seen.append(request.path)
        if request.path == "/ws":
            return None
        status, body = routes.get(request.path, lambda: (404, "{}"))()
        # websockets closes the connection after this response: say so, or a client reusing it would race the close
        headers = Headers(
            [("Content-Type", "application/json"), ("Content-Length", str(len(body.encode()))), ("Connection", "close")]
        )
        return Response(status, "X", headers, body.encode())

    def handler(connection: ServerConnection) -> None:
        for frame in connection:
            reply = on_frame(json.loads(frame)) if on_frame else None
            if reply is None:
                return
            connection.send(reply)

    with serve(handler, "127.0.0.1", 0, process_request=process_request, close_timeout=0.5) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.socket.getsockname()[1]}", seen
        finally:
            server.shutdown()
            thread.join(30)


def ok_json(body: Any) -> Callable[[], tuple[int, str]]:
    return lambda: (200, json.dumps(body))
