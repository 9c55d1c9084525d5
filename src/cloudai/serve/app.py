"""``cloudai serve``: one test's environment behind an OpenEnv-compatible server (FastAPI + uvicorn).

Wire protocol: ``openenv-core`` 0.3.0's (shapes in ``cloudai.serve.wire``). The primary path is the
WebSocket session at ``/ws``: frames ``reset``/``step``/``state``/``close``, one reply each
(``observation``/``state``/``error``), in order. ``GET /health``, ``/metadata``, ``/schema``
and ``/state`` as in OpenEnv.

Differences from a stock OpenEnv server, each on purpose:

* Sessions are isolated: each WebSocket session steps an environment of its own, with its own
  episodes and steps, made by ``new_env(k)`` for the k-th session (``cloudai serve``: the test's env
  recording into ``<results>/<test id>/<k>/``, so every row names its session by its dir; the HTTP
  default session's is ``<test id>/0``). Without ``new_env`` (an app built around one env object)
  the one WebSocket session steps ``env`` itself and ``max_sessions`` must be 1. Env calls run one
  at a time, in order, in one thread (an env is not thread-safe): ``EnvCalls``.
* ``POST /reset`` and ``/step`` act on one shared default session, on ``env`` (stock OpenEnv builds a
  fresh env per request), so ``curl`` can run an episode. A step while another trial runs,
  or while WebSocket sessions hold every slot, gets 409: trials run one at a time.
* ``max_sessions`` WebSocket sessions at most (default 1); past it the handshake is
  accepted and answered with a ``CAPACITY_REACHED`` error, then closed (as OpenEnv does).
* Bearer-token auth on every route when a token is given (wrong tokens answered ever later); bodies over
  ``max_body`` -> 413 (``cloudai.serve.guard``);
  an action with an unknown, missing, fixed or out-of-space knob -> ``VALIDATION_ERROR``
  (422 over HTTP).

Where each part lives: ``hub`` (the env, its call queue, the sessions), ``http_routes``, ``sessions`` (the
WebSocket sessions). How the process runs (threads, signals, shutdown): ``cloudai.serve.run``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from cloudai.envs.base import BaseGym
from cloudai.serve import wire
from cloudai.serve.calls import MAX_BODY
from cloudai.serve.guard import Guard
from cloudai.serve.http_routes import add_http_routes
from cloudai.serve.hub import SESSION_IDLE_TIMEOUT_S, Busy, Hub, Session
from cloudai.serve.sessions import websocket_endpoint

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["SESSION_IDLE_TIMEOUT_S", "Busy", "Hub", "ServeApp", "Session", "create_app"]


class ServeApp(Guard):
    """The ASGI app ``create_app`` returns: the guarded FastAPI app plus the ``hub`` that owns the env."""

    def __init__(self, app: Any, hub: Hub, *, token: str | None, max_body: int) -> None:
        super().__init__(app, token=token, max_body=max_body)
        self.hub = hub
        self.calls_in_main_thread = False  # ``run`` sets it; otherwise the lifespan starts a worker thread


def create_app(
    env: BaseGym,
    *,
    name: str,
    token: str | None = None,
    max_sessions: int = 1,
    max_body: int = MAX_BODY,
    description: str = "",
    session_idle_timeout_s: float = SESSION_IDLE_TIMEOUT_S,
    new_env: Callable[[int], BaseGym] | None = None,
) -> ServeApp:
    """The ASGI app: FastAPI inside the ``Guard``; ``.hub`` holds the envs (``new_env``: the module docstring)."""
    from fastapi import FastAPI
    from starlette.routing import WebSocketRoute

    wire.quiet_refused_handshakes()
    hub = Hub(env, name, max_sessions=max_sessions, description=description, idle_timeout_s=session_idle_timeout_s,
              new_env=new_env)  # fmt: skip

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not served.calls_in_main_thread:
            threading.Thread(target=hub.calls.work, name="cloudai-serve-env", daemon=True).start()
        yield
        await hub.shutdown()

    api = FastAPI(title=f"cloudai serve: {name}", lifespan=lifespan, docs_url=None, redoc_url=None)
    add_http_routes(api, hub)
    api.router.routes.append(WebSocketRoute("/ws", websocket_endpoint(hub)))  # plain Starlette: no injection needed
    served = ServeApp(api, hub, token=token, max_body=max_body)
    return served
