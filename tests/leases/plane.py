"""A small lease control plane of the tests' own (FastAPI + uvicorn on 127.0.0.1): each lease a stock openenv-core
server, so cloudai's lease client is checked against a control plane it did not write.

``Plane.mode`` says how it behaves: ``ok`` (a sandbox is ready at once), ``hold`` (pending until ``go`` is set, or its
id is put in ``ready``: a sandbox that never becomes ready, or one that is slow to), ``fail`` (``failed`` with an
error), ``401``/``500``/``garbage`` (every lease request answered so). ``release_failures``: how many DELETEs answer
500 before one succeeds. A sandbox is the stock app (``tests.gym.openenv_app``) under uvicorn in a thread, or, with
``process_args``, in a process of its own (``--die-at N``: it dies mid-episode). ``live()`` is the core assertion's
count: leases not released.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from tests.gym.openenv_app import make_app
from tests.gym.servers import OpenEnvServer
from tests.serve.serving import served

from cloudai.serve.run import bind


class ThreadServer:
    """The stock OpenEnv app under uvicorn in a thread on a free loopback port."""

    def __init__(self) -> None:
        self.sock = bind("127.0.0.1", 0)
        self.server = uvicorn.Server(uvicorn.Config(make_app(), log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()  # the socket listens already: connections queue until uvicorn accepts
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def kill(self) -> None:
        self.server.should_exit = self.server.force_exit = True  # open sessions are cut, not waited for
        self.thread.join(30)
        self.sock.close()


class Plane:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.sandboxes: dict[str, Any] = {}  # id -> its server (None while held pending)
        self._lock = threading.Lock()
        self.reset()
        self.app = self._app()

    def reset(self) -> None:
        """As new (one plane serves a module's tests): mode ``ok``, ids from ``sb-1``, no request seen."""
        self.stop()
        self.mode = "ok"
        self.release_failures = 0
        self.process_args: tuple[str, ...] | None = None
        self.go = threading.Event()
        self.ready: set[str] = set()  # held sandboxes let start one by one (mode hold)
        self.start_s: float | None = None  # mode hold: a sandbox is ready this long after it was asked for
        self._asked: dict[str, float] = {}
        self.requests: list[str] = []
        self._ids = itertools.count(1)

    def live(self) -> int:
        return len(self.sandboxes)

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def guard(request: Request, call_next: Any) -> Response:
            self.requests.append(f"{request.method} {request.url.path}")
            if (
                request.url.path != "/health"
                and self.token
                and request.headers.get("authorization") != (f"Bearer {self.token}")
            ):
                return PlainTextResponse("unauthorized", status_code=401)
            return await call_next(request)

        @app.get("/health")
        def health() -> dict[str, str]:
            return {"status": "ok"}

        @app.post("/sandboxes")
        def lease(body: dict[str, Any]) -> Response:
            if self.mode in ("401", "500"):
                return PlainTextResponse(f"said {self.mode}", status_code=int(self.mode))
            if self.mode == "garbage":
                return PlainTextResponse("<html>not json</html>", status_code=200)
            lease_id = f"sb-{next(self._ids)}"
            with self._lock:
                self.sandboxes[lease_id] = None
                self._asked[lease_id] = time.monotonic()
            if self.mode == "fail":
                return JSONResponse({"id": lease_id, "status": "failed", "error": "image pull failed: no such image"})
            if self.mode == "ok" or self.go.is_set() or lease_id in self.ready:
                self._start(lease_id)
            return JSONResponse(self._status(lease_id), status_code=201)

        @app.get("/sandboxes/{lease_id}")
        def status(lease_id: str) -> Response:
            if lease_id not in self.sandboxes:
                return JSONResponse({"error": "no such sandbox"}, status_code=404)
            if self.sandboxes[lease_id] is None and (self.go.is_set() or lease_id in self.ready or self._due(lease_id)):
                self._start(lease_id)
            return JSONResponse(self._status(lease_id))

        @app.delete("/sandboxes/{lease_id}")
        def release(lease_id: str) -> Response:
            if self.release_failures > 0:
                self.release_failures -= 1
                return JSONResponse({"error": "storage backend unavailable"}, status_code=500)
            with self._lock:
                server = self.sandboxes.pop(lease_id, "gone")
            if server == "gone":
                return JSONResponse({"error": "no such sandbox"}, status_code=404)
            if server is not None:
                server.kill()
            return JSONResponse({"id": lease_id, "status": "released"})

        return app

    def _due(self, lease_id: str) -> bool:
        return self.start_s is not None and time.monotonic() - self._asked[lease_id] >= self.start_s

    def _start(self, lease_id: str) -> None:
        server = ThreadServer() if self.process_args is None else OpenEnvServer(*self.process_args)
        with self._lock:
            self.sandboxes[lease_id] = server

    def _status(self, lease_id: str) -> dict[str, Any]:
        server = self.sandboxes[lease_id]
        if server is None:
            return {"id": lease_id, "status": "pending"}
        return {"id": lease_id, "status": "ready", "url": server.url}

    def stop(self) -> None:
        with self._lock:
            servers, self.sandboxes = list(self.sandboxes.values()), {}
        for server in servers:
            if server is not None:
                server.kill()


@contextmanager
def plane(token: str | None = None) -> Iterator[tuple[Plane, str]]:
    """A ``Plane`` served on a free loopback port: (the plane, its URL)."""
    control = Plane(token)
    try:
        with served(control.app) as url:
            yield control, url
    finally:
        control.stop()
