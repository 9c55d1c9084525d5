"""``cloudai serve --lease``: a control plane that leases sandboxes (the HTTP API over a ``sandboxes.Board``).

The lease protocol, the server side of ``cloudai.gymserver.lease`` (JSON; the bearer token on every route when
one is set, 401 otherwise):

* ``POST /sandboxes`` ``{"environment"?: str, "options"?: {..}}`` -> 201 ``{"id", "status": "pending",
  "idle_timeout_s"}``; 429 at ``max_leases`` live leases; 400 for an environment or option ``argv`` refuses.
* ``GET /sandboxes/{id}`` -> ``{"id", "status": "pending"|"ready"|"failed", "url"?, "error"?, "idle_timeout_s"}``
  (renews the lease); 404 for none.
* ``DELETE /sandboxes/{id}`` -> 200 ``{"id", "status": "released"}`` once its process is gone; 404 for none.
* ``GET /sandboxes`` -> ``{"sandboxes": [..]}`` (every lease held), ``GET /health`` -> ``{"status": "ok"}``.

``run_control_plane`` serves until SIGINT/SIGTERM, then releases every lease (each sandbox's process stops)
before it raises ``Interrupted``; leases idle past the board's ``idle_timeout_s`` are released as it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import socket
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request  # at module level: FastAPI resolves the routes' annotations here

from cloudai.errors import CloudAIError, Interrupted, raise_stopped
from cloudai.serve.calls import MAX_BODY
from cloudai.serve.guard import Guard
from cloudai.serve.sandboxes import Board, Full

_WILDCARD = re.compile(r"^(?P<scheme>https?://)(0\.0\.0\.0|\[::\])(?P<rest>:\d+.*)$")


class BadLease(ValueError):
    """A lease body the control plane cannot start (an unknown environment, an option it does not take): 400."""


def create_control_app(board: Board, *, token: str | None = None) -> Guard:
    """The control plane's ASGI app over ``board`` (the module docstring has the routes)."""
    from fastapi import Body, FastAPI, HTTPException
    from fastapi.responses import JSONResponse

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        expiry = asyncio.create_task(_expire_periodically(board))
        try:
            yield
        finally:
            expiry.cancel()
            await asyncio.to_thread(board.stop_all)

    api = FastAPI(title="cloudai lease control plane", lifespan=lifespan)
    ttl = board.idle_timeout_s

    @api.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "leases": len(board.leases())}

    @api.post("/sandboxes", status_code=201)
    def lease(request: Request, body: dict[str, Any] = Body(default_factory=dict)) -> Any:  # noqa: B008 (FastAPI's)
        environment, options = body.get("environment"), body.get("options") or {}
        if (environment is not None and not isinstance(environment, str)) or not isinstance(options, dict):
            raise HTTPException(400, "environment must be a string and options an object")
        try:
            return reachable(board.lease(environment, options).to_json(ttl), request.url.hostname)
        except Full as exc:
            return JSONResponse({"error": str(exc)}, status_code=429)
        except BadLease as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    @api.get("/sandboxes")
    def leases(request: Request) -> dict[str, Any]:
        return {"sandboxes": [reachable(s.to_json(ttl), request.url.hostname) for s in board.leases()]}

    @api.get("/sandboxes/{lease_id}")
    def status(request: Request, lease_id: str) -> dict[str, Any]:
        sandbox = board.get(lease_id)
        if sandbox is None:
            raise HTTPException(404, f"no lease {lease_id}")
        return reachable(sandbox.to_json(ttl), request.url.hostname)

    @api.delete("/sandboxes/{lease_id}")
    def release(lease_id: str) -> dict[str, Any]:
        if not board.release(lease_id):
            raise HTTPException(404, f"no lease {lease_id}")
        return {"id": lease_id, "status": "released"}

    return Guard(api, token=token, max_body=MAX_BODY)


def reachable(body: dict[str, Any], hostname: str | None) -> dict[str, Any]:
    """A sandbox bound to a wildcard address (``--host 0.0.0.0``) is reached the way the client reached us."""
    url = body.get("url")
    if not url or not hostname:
        return body
    wildcard = _WILDCARD.match(url)
    if wildcard is None:
        return body
    host = f"[{hostname}]" if ":" in hostname else hostname
    return {**body, "url": f"{wildcard['scheme']}{host}{wildcard['rest']}"}


async def _expire_periodically(board: Board) -> None:
    interval = max(0.05, min(1.0, board.idle_timeout_s / 4))
    while True:
        await asyncio.sleep(interval)
        await asyncio.to_thread(board.expire)


def run_control_plane(app: Guard, board: Board, sock: socket.socket) -> None:
    """Serve on ``sock`` until SIGINT/SIGTERM; release every lease; raise ``Interrupted`` (exit 130).

    uvicorn runs in a thread (no signal handlers of its own there); this thread waits for the signal, so the
    shutdown, every sandbox's process included, runs here whatever uvicorn is doing.
    """
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="cloudai-lease-http", daemon=True)
    previous = signal.signal(signal.SIGTERM, raise_stopped)
    try:
        thread.start()
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.should_exit = True
        board.stop_all()
        thread.join(10.0)
        raise Interrupted("interrupted; every lease was released and its sandbox stopped") from None
    finally:
        board.stop_all()
        signal.signal(signal.SIGTERM, previous)
    raise CloudAIError("the control plane's HTTP server stopped on its own; run with -v for its log")
