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

How the process runs (threads, signals, shutdown): ``cloudai.serve.run``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cloudai.config.fields import MAX_SEED, shown
from cloudai.envs.base import BaseGym
from cloudai.envs.knobs import observation_leaves, validate_point
from cloudai.errors import CloudAIError, ConfigError
from cloudai.serve import wire
from cloudai.serve.calls import MAX_BODY, EnvCalls, ShuttingDown
from cloudai.serve.guard import Guard

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.websockets import WebSocket

log = logging.getLogger(__name__)
_REFUSE_WAIT_S = 2.0
SESSION_IDLE_TIMEOUT_S = 300.0  # a session that sends nothing this long is closed: it holds a slot


class Busy(Exception):
    """The env cannot take this request now (409)."""


@dataclass
class Session:
    episode_id: str | None = None
    step_count: int = 0
    env: BaseGym | None = None  # its own environment (the hub's ``env`` for the HTTP default session)


class Hub:
    """The shared env, the queue its calls run through, and who may step it."""

    def __init__(
        self,
        env: BaseGym,
        name: str,
        *,
        max_sessions: int = 1,
        description: str = "",
        idle_timeout_s: float = SESSION_IDLE_TIMEOUT_S,
        new_env: Callable[[int], BaseGym] | None = None,
    ) -> None:
        if new_env is None and max_sessions > 1:
            raise ConfigError(f"{max_sessions} sessions need an environment each: give new_env", field="max_sessions")
        self.env, self.name, self.max_sessions, self.description = env, name, max_sessions, description
        self.new_env, self.made = new_env, 0  # session environments made so far
        self.open_envs: set[BaseGym] = set()
        self.idle_timeout_s = idle_timeout_s
        self.sessions = 0
        self.closing = False
        self.default = Session(env=env)
        self.space = env.define_action_space()
        self.names = list(env.define_observation_space())
        self.leaves = observation_leaves(env)
        self.schemas = wire.schemas(self.space, self.names, self.leaves)
        self.calls = EnvCalls()
        self._lock = asyncio.Lock()
        self.closed = False

    async def _call(self, fn: Callable[[], Any], *, wait: bool) -> Any:
        if self.closing:
            raise ShuttingDown("the server is shutting down")
        if not wait and self._lock.locked():
            raise Busy("a trial is running; this environment steps one trial at a time")
        async with self._lock:
            return await asyncio.wrap_future(self.calls.submit(fn))

    async def open(self, session: Session) -> None:
        """Give a WebSocket session its environment (made in the env thread: a live env may start a server)."""
        if self.new_env is None:
            session.env = self.env
            return
        self.made += 1
        number, make = self.made, self.new_env
        env: BaseGym = await asyncio.wrap_future(self.calls.submit(lambda: make(number)))
        self.open_envs.add(env)
        session.env = env

    def release(self, session: Session) -> None:
        """Close a session's own environment in the env thread, after its calls (the hub's ``env`` stays open).
        Not awaited: a server stopping now closes it with the rest (``close_env``), whichever comes first."""
        env, session.env = session.env, None
        if env is None or env is self.env:
            return

        def close() -> None:
            if env in self.open_envs:
                self.open_envs.discard(env)
                env.close()

        self.calls.submit(close)

    async def reset(self, session: Session, data: Any, *, wait: bool = True) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise ConfigError(f"reset data must be an object, not {shown(data)}", field="data")
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
            raise ConfigError(f"seed must be an integer in 0..{MAX_SEED}, not {shown(seed)}", field="seed")
        options = data.get("options")
        if options is not None and not isinstance(options, dict):
            raise ConfigError("options must be an object", field="options")
        env = self._env_of(session)
        values, info = await self._call(lambda: env.reset(seed=seed, options=options), wait=wait)
        session.episode_id = str(data.get("episode_id") or uuid.uuid4())
        session.step_count = 0
        return wire.payload(values, None, False, info, self.names, self.leaves)

    async def step(self, session: Session, action: Mapping[str, Any], *, wait: bool = True) -> dict[str, Any]:
        point = validate_point(self.space, {k: v for k, v in action.items() if k != "metadata"})
        env = self._env_of(session)
        values, reward, done, info = await self._call(lambda: env.step(point), wait=wait)
        session.step_count += 1
        return wire.payload(values, reward, done, info, self.names, self.leaves)

    def state(self, session: Session) -> dict[str, Any]:
        next_step = self._env_of(session).next_step
        return {"episode_id": session.episode_id, "step_count": session.step_count, "next_step": next_step}

    def _env_of(self, session: Session) -> BaseGym:
        return session.env if session.env is not None else self.env

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

    def close_env(self) -> None:
        """Close the env (idempotent). Call it from the thread that runs ``calls.work()``, or after it ended."""
        self.closing = True
        if not self.closed:
            self.closed = True
            try:
                for env in list(self.open_envs):  # the sessions' still open: one failing to close stops no other
                    with suppress(Exception):
                        env.close()
            finally:
                self.open_envs.clear()
                self.env.close()

    async def shutdown(self) -> None:
        """Lifespan end: close the env through the call queue (after the call running now), stop the queue."""
        self.closing = True
        if self.closed:
            return
        done = self.calls.submit(self.close_env)
        self.calls.stop()
        with suppress(Exception):
            await asyncio.wrap_future(done)


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
    from fastapi import Body, FastAPI, HTTPException
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

    async def http_call(coro: Any) -> dict[str, Any]:
        try:
            return await coro
        except ConfigError as exc:
            raise HTTPException(422, detail=wire.action_errors(exc)) from None
        except Busy as exc:
            raise HTTPException(409, detail=str(exc)) from None
        except ShuttingDown as exc:
            raise HTTPException(503, detail=str(exc)) from None
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
        session = Session()
        try:
            try:
                await hub.open(session)
            except Exception as exc:  # the session's environment could not be made (a live server down...)
                log.exception("session environment not made")
                await _send_error(websocket, "SESSION_ERROR", f"no environment for this session: {exc}")
                with suppress(RuntimeError):
                    await websocket.close()
                return
            await _serve_session(hub, websocket, session)
        finally:
            hub.sessions -= 1
            hub.release(session)

    api.router.routes.append(WebSocketRoute("/ws", ws))  # plain Starlette: no dependency injection needed
    served = ServeApp(api, hub, token=token, max_body=max_body)
    return served


async def _refuse(websocket: WebSocket, hub: Hub) -> None:
    """CAPACITY_REACHED at once (as OpenEnv does), and again as the answer to the client's first frame.

    A client that sends before reading (openenv's own) would otherwise race the close and see
    a closed connection instead of the reason; the extra reply waits at most ``_REFUSE_WAIT_S``.
    """
    extra = {"active_sessions": hub.sessions, "max_sessions": hub.max_sessions}
    message = (
        "the server is shutting down" if hub.closing else f"at capacity: {hub.sessions}/{hub.max_sessions} sessions"
    )
    await _send_error(websocket, "CAPACITY_REACHED", message, **extra)
    with suppress(Exception):
        await asyncio.wait_for(websocket.receive_text(), _REFUSE_WAIT_S)
        await _send_error(websocket, "CAPACITY_REACHED", message, **extra)
    with suppress(RuntimeError):
        await websocket.close()


async def _send_error(websocket: WebSocket, code: str, message: str, **extra: Any) -> None:
    await websocket.send_text(wire.dumps({"type": "error", "data": {"message": message, "code": code, **extra}}))


async def _serve_session(hub: Hub, websocket: WebSocket, session: Session) -> None:
    """One WebSocket session: answer each frame in order until ``close``, disconnect or shutdown."""
    import json

    from starlette.websockets import WebSocketDisconnect

    with suppress(WebSocketDisconnect, OSError):  # OSError: uvicorn's ClientDisconnected on a late reply
        while True:
            try:
                received = await asyncio.wait_for(websocket.receive(), hub.idle_timeout_s)
            except TimeoutError:
                idle = f"no frame for {hub.idle_timeout_s:g}s: the session is closed to free its slot"
                await _send_error(websocket, "SESSION_IDLE_TIMEOUT", idle)
                break
            if received["type"] == "websocket.disconnect":
                return  # nothing left to close
            raw = received.get("text")
            if raw is None:
                await _send_error(websocket, "INVALID_FRAME", "binary frames are not supported; send JSON text")
                continue
            try:
                message = json.loads(raw)
            except (ValueError, RecursionError) as exc:  # also: ints over 4300 digits, nesting too deep
                text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                await _send_error(websocket, "INVALID_JSON", f"Invalid JSON: {text}")
                continue
            kind = message.get("type", "") if isinstance(message, dict) else ""
            data = message.get("data") if isinstance(message, dict) else None
            if kind == "close":
                break
            try:
                if kind == "reset":
                    reply = {"type": "observation", "data": await hub.reset(session, {} if data is None else data)}
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
            except ShuttingDown as exc:  # the session ends with the server
                await _send_error(websocket, "SESSION_ERROR", str(exc))
                break
            except Exception as exc:  # the env call failed: report it, keep the session
                log.exception("trial failed")
                await _send_error(websocket, "EXECUTION_ERROR", str(exc))
                continue
            await websocket.send_text(wire.dumps(reply))
    with suppress(RuntimeError, WebSocketDisconnect, OSError):
        await websocket.close()
