"""Helpers: serve an app on a free loopback port (thread or ``cloudai serve`` subprocess), wait on /health.

Synchronisation is on the bound port and ``GET /health``, never on sleeps.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import uvicorn

from cloudai.serve.run import bind


def wait_healthy(url: str, token: str | None = None, timeout: float = 60.0) -> None:
    """Poll ``/health`` until it answers 200 (bounded; the server binds before it serves)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/health", headers=headers, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not become healthy")
        time.sleep(0.02)  # polling interval, not a synchronisation


@contextmanager
def served(app: Any, token: str | None = None) -> Iterator[str]:
    """Run ``app`` under uvicorn in a thread on a free loopback port; yields the base URL."""
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        wait_healthy(url, token)
        yield url
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


class ServeProcess:
    """``cloudai serve ...`` as a user starts it (in its own session, so its pid is its process group).

    ``url`` and ``trial_dir`` (the HTTP default session's records) are parsed from its banner line, printed once
    the port is bound; WebSocket session n records into ``session_dir(n)``.
    """

    BANNER = re.compile(r"Serving '(?P<id>[^']+)' at (?P<url>http://\S+) .*; results in (?P<dir>\S+) \(HTTP\)")

    def __init__(self, *args: str | os.PathLike[str], env: dict[str, str] | None = None, cwd: Path | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cloudai", "serve", "--port", "0", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,  # its own process group: tests check nothing of it survives
        )
        line = self._stdout().readline()
        match = self.BANNER.search(line.strip())
        if match is None:
            self.proc.kill()
            raise AssertionError(f"no banner: {line!r}\n{self.proc.stderr.read() if self.proc.stderr else ''}")
        self.banner, self.url, self.trial_dir = line, match["url"], Path(match["dir"])

    def session_dir(self, number: int) -> Path:
        return self.trial_dir.parent / str(number)

    def _stdout(self) -> IO[str]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def stop(self, signal_number: int, timeout: float = 120) -> tuple[int, str, str]:
        self.proc.send_signal(signal_number)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=60)
