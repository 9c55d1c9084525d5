"""``cloudai serve``: one test's environment behind an OpenEnv-compatible server (FastAPI + uvicorn).

Wire protocol: ``openenv-core`` 0.3.0's (shapes in ``serve_wire``). The primary path is the
WebSocket session at ``/ws``: frames ``reset``/``step``/``state``/``close``, one reply each
(``observation``/``state``/``error``), in order. ``GET /health``, ``/metadata``, ``/schema``
and ``/state`` as in OpenEnv.

Differences from a stock OpenEnv server, each on purpose:

* There is one environment, the test's: every session steps the same ``BaseGym``, so every
  trial lands in the test's one trajectory.csv with monotonic steps. Trials run one at a
  time, in a single worker thread (an env is not thread-safe).
* ``POST /reset`` and ``/step`` act on one shared default session (stock OpenEnv builds a
  fresh env per request), so ``curl`` can run an episode. A step while another trial runs,
  or while WebSocket sessions hold every slot, gets 409: the env is not concurrent.
* ``max_sessions`` WebSocket sessions at most (default 1); past it the handshake is
  accepted and answered with a ``CAPACITY_REACHED`` error, then closed (as OpenEnv does).
* Bearer-token auth on every route when a token is given; bodies over ``max_body`` -> 413;
  an action with an unknown, missing, fixed or out-of-space knob -> ``VALIDATION_ERROR``
  (422 over HTTP).

Shutdown (SIGINT/SIGTERM through uvicorn): new steps are refused, the running trial gets
``grace_s`` seconds to finish, then ``env.close()`` cancels what still runs; the env flushes
its CSV rows per step, so the files stay parseable whatever the moment.
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cloudai.errors import CloudAIError, ConfigError
from cloudai.gym import serve_wire as wire
from cloudai.gym.adapter import observation_leaves, validate_point
from cloudai.gym.base import BaseGym

if TYPE_CHECKING:
    from types import FrameType

    from fastapi import FastAPI
    from starlette.websockets import WebSocket

log = logging.getLogger(__name__)
MAX_BODY = 1 << 20
_REFUSE_WAIT_S = 2.0


class Busy(Exception):
    """The env cannot take this request now (409 / CAPACITY_REACHED)."""


@dataclass
class Session:
    episode_id: str | None = None
    step_count: int = 0


@dataclass
class Hub:
    """The shared env, its worker thread, and who may step it."""

    env: BaseGym
    name: str
    max_sessions: int = 1
    grace_s: float = 30.0
    description: str = ""
    sessions: int = 0
    closing: bool = False
    default: Session = field(default_factory=Session)

    def __post_init__(self) -> None:
        self.space = self.env.define_action_space()
        self.names = list(self.env.define_observation_space())
        self.leaves = observation_leaves(self.env)
        self.schemas = wire.schemas(self.space, self.names, self.leaves)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cloudai-serve")
        self._lock = asyncio.Lock()
        self._running: Future[Any] | None = None  # the env call in the worker, if any
        self._deadline = math.inf
        self._closed = False

    async def _call(self, fn: Callable[[], Any], *, wait: bool) -> Any:
        if self.closing:
            raise Busy("the server is shutting down")
        if not wait and self._lock.locked():
            raise Busy("a trial is running; this environment steps one trial at a time")
        async with self._lock:
            if self.closing:
                raise Busy("the server is shutting down")
            self._running = self._worker.submit(fn)
            return await asyncio.wrap_future(self._running)

    async def reset(self, session: Session, data: Mapping[str, Any], *, wait: bool = True) -> dict[str, Any]:
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ConfigError(f"seed must be a non-negative integer, not {seed!r}", field="seed")
        options = data.get("options")
        if options is not None and not isinstance(options, dict):
            raise ConfigError("options must be an object", field="options")
        values, info = await self._call(lambda: self.env.reset(seed=seed, options=options), wait=wait)
        session.episode_id = str(data.get("episode_id") or uuid.uuid4())
        session.step_count = 0
        return wire.payload(values, None, False, info, self.names, self.leaves)

    async def step(self, session: Session, action: Mapping[str, Any], *, wait: bool = True) -> dict[str, Any]:
        point = validate_point(self.space, {k: v for k, v in action.items() if k != "metadata"})
        values, reward, done, info = await self._call(lambda: self.env.step(point), wait=wait)
        session.step_count += 1
        return wire.payload(values, reward, done, info, self.names, self.leaves)

    def state(self, session: Session) -> dict[str, Any]:
        return {"episode_id": session.episode_id, "step_count": session.step_count, "next_step": self.env.next_step}

    def metadata(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {
            "name": self.name,
            "description": self.description or f"cloudai test '{self.name}' served as an OpenEnv environment",
            "readme_content": None,
            "version": version("cloudai"),
            "author": None,
            "documentation_url": None,
        }

    def begin_shutdown(self) -> None:
        """First SIGINT/SIGTERM: refuse new trials from now on; the running one has ``grace_s`` from now."""
        if not self.closing:
            self.closing = True
            self._deadline = time.monotonic() + self.grace_s

    async def shutdown(self) -> None:
        """Lifespan end: let the running trial finish until the deadline, cancel it otherwise, close the env."""
        self.begin_shutdown()
        running = self._running
        if running is not None and not running.done():
            left = max(0.0, self._deadline - time.monotonic())
            log.warning("waiting up to %.0fs for the running trial", left)
            done, _ = await asyncio.get_running_loop().run_in_executor(None, wait, [running], left)
            if not done:
                log.warning("cancelling the running trial")
        await asyncio.get_running_loop().run_in_executor(None, self.close_now)

    def close_now(self) -> None:
        """Close the env from this thread (cancelling a running trial's job), then join the worker. Idempotent."""
        self.closing = True
        if not self._closed:
            self._closed = True
            with suppress(Exception):  # a trial cancelled mid-step fails in the worker: nothing to report
                self.env.close()
        self._worker.shutdown(wait=True)


class ServeApp(wire.Guard):
    """The ASGI app ``create_app`` returns: the guarded FastAPI app plus the ``hub`` that owns the env."""

    def __init__(self, app: Any, hub: Hub, *, token: str | None, max_body: int) -> None:
        super().__init__(app, token=token, max_body=max_body)
        self.hub = hub


def create_app(
    env: BaseGym,
    *,
    name: str,
    token: str | None = None,
    max_sessions: int = 1,
    max_body: int = MAX_BODY,
    grace_s: float = 30.0,
    description: str = "",
) -> ServeApp:
    """The ASGI app: FastAPI inside the ``Guard``; ``.hub`` holds the env."""
    from fastapi import Body, FastAPI, HTTPException
    from starlette.routing import WebSocketRoute

    hub = Hub(env, name, max_sessions=max_sessions, grace_s=grace_s, description=description)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await hub.shutdown()

    api = FastAPI(title=f"cloudai serve: {name}", lifespan=lifespan, docs_url=None, redoc_url=None)
    api.state.hub = hub

    async def http_call(coro: Any) -> dict[str, Any]:
        try:
            return await coro
        except ConfigError as exc:
            raise HTTPException(422, detail=wire.action_errors(exc)) from None
        except Busy as exc:
            raise HTTPException(409, detail=str(exc)) from None
        except CloudAIError as exc:
            raise HTTPException(500, detail=str(exc)) from None

    def check_slot() -> None:
        if hub.sessions >= hub.max_sessions:
            raise HTTPException(409, detail=f"{hub.sessions} WebSocket session(s) hold this environment")

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "unhealthy" if hub.closing else "healthy"}

    @api.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return hub.metadata()

    @api.get("/schema")
    async def schema() -> dict[str, Any]:
        return hub.schemas

    @api.get("/state")
    async def state() -> dict[str, Any]:
        return hub.state(hub.default)

    @api.post("/reset")
    async def reset(request: dict[str, Any] | None = Body(default=None)) -> dict[str, Any]:  # noqa: B008
        check_slot()
        return await http_call(hub.reset(hub.default, request or {}, wait=False))

    @api.post("/step")
    async def step(request: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        action = request.get("action")
        if not isinstance(action, dict):
            raise HTTPException(422, detail=[{"type": "missing", "loc": ["body", "action"], "msg": "Field required"}])
        check_slot()
        return await http_call(hub.step(hub.default, action, wait=False))

    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        if hub.sessions >= hub.max_sessions or hub.closing:
            await _refuse(websocket, hub)
            return
        hub.sessions += 1
        try:
            await _serve_session(hub, websocket)
        finally:
            hub.sessions -= 1

    api.router.routes.append(WebSocketRoute("/ws", ws))  # plain Starlette: no dependency injection needed
    return ServeApp(api, hub, token=token, max_body=max_body)


async def _refuse(websocket: WebSocket, hub: Hub) -> None:
    """CAPACITY_REACHED at once (as OpenEnv does), and again as the answer to the client's first frame.

    A client that sends before reading (openenv's own) would otherwise race the close and see
    a closed connection instead of the reason; the extra reply waits at most ``_REFUSE_WAIT_S``.
    """
    extra = {"active_sessions": hub.sessions, "max_sessions": hub.max_sessions}
    message = f"at capacity: {hub.sessions}/{hub.max_sessions} sessions"
    await _send_error(websocket, "CAPACITY_REACHED", message, **extra)
    with suppress(Exception):
        await asyncio.wait_for(websocket.receive_text(), _REFUSE_WAIT_S)
        await _send_error(websocket, "CAPACITY_REACHED", message, **extra)
    with suppress(RuntimeError):
        await websocket.close()


async def _send_error(websocket: WebSocket, code: str, message: str, **extra: Any) -> None:
    await websocket.send_text(wire.dumps({"type": "error", "data": {"message": message, "code": code, **extra}}))


async def _serve_session(hub: Hub, websocket: WebSocket) -> None:
    """One WebSocket session: answer each frame in order until ``close`` or disconnect."""
    import json

    from starlette.websockets import WebSocketDisconnect

    session = Session()
    try:
        while True:
            raw = await websocket.receive_text()
            try:
                message = json.loads(raw)
            except json.JSONDecodeError as exc:
                await _send_error(websocket, "INVALID_JSON", f"Invalid JSON: {exc}")
                continue
            kind = message.get("type", "") if isinstance(message, dict) else ""
            data = message.get("data") if isinstance(message, dict) else None
            if kind == "close":
                break
            try:
                if kind == "reset":
                    reply = {"type": "observation", "data": await hub.reset(session, data or {})}
                elif kind == "step":
                    if not isinstance(data, dict):
                        raise ConfigError("a step frame needs the action object as data")
                    reply = {"type": "observation", "data": await hub.step(session, data)}
                elif kind == "state":
                    reply = {"type": "state", "data": hub.state(session)}
                else:
                    await _send_error(websocket, "UNKNOWN_TYPE", f"Unknown message type: {kind}")
                    continue
            except ConfigError as exc:
                await _send_error(websocket, "VALIDATION_ERROR", str(exc), errors=wire.action_errors(exc))
                continue
            except Busy as exc:
                await _send_error(websocket, "SESSION_ERROR", str(exc))
                continue
            except Exception as exc:  # the trial failed: report it, keep the session
                log.exception("trial failed")
                await _send_error(websocket, "EXECUTION_ERROR", str(exc))
                continue
            await websocket.send_text(wire.dumps(reply))
    except WebSocketDisconnect:
        pass
    with suppress(RuntimeError):
        await websocket.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one), bound before anything is written."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", field="--host/--port",
                          hint="pick a free --port (0 picks one)") from None  # fmt: skip
    sock.set_inheritable(True)
    return sock


def run(app: ServeApp, sock: socket.socket, *, max_body: int = MAX_BODY) -> None:
    """Serve on ``sock`` until SIGINT/SIGTERM, then shut down (see the module docstring).

    The first signal starts the graceful shutdown (no new trials; the running one may finish
    within ``grace_s``); a second one stops at once. Either way the env is closed before this
    returns, which cancels a trial still running and leaves its files consistent.
    """
    import uvicorn

    hub = app.hub

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            """Not re-raised after the shutdown (uvicorn's default), so ``close_now`` always runs."""
            hub.begin_shutdown()
            self.force_exit = self.should_exit
            self.should_exit = True

    config = uvicorn.Config(
        app, log_level="warning", ws_max_size=max_body, timeout_graceful_shutdown=math.ceil(hub.grace_s), lifespan="on"
    )
    try:
        Server(config).run(sockets=[sock])
    finally:
        hub.close_now()
