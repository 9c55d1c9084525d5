"""The WebSocket sessions of ``cloudai serve`` at ``/ws``: one environment each, one reply per frame, in order.

Past ``max_sessions`` (or while the server shuts down) the handshake is accepted and answered with
``CAPACITY_REACHED``, then closed; a session silent for ``idle_timeout_s`` is closed to free its slot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError
from cloudai.serve import wire
from cloudai.serve.calls import ShuttingDown
from cloudai.serve.hub import Hub, Session

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

log = logging.getLogger("cloudai.serve.app")  # the name the server's log lines have always had
_REFUSE_WAIT_S = 2.0


def websocket_endpoint(hub: Hub) -> Callable[[WebSocket], Awaitable[None]]:
    """The ``/ws`` endpoint: a session of its own per connection, while ``hub`` has a slot for it."""

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

    return ws


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
            readable, message = await _parsed(websocket, received.get("text"))
            if not readable:
                continue
            kind = message.get("type", "") if isinstance(message, dict) else ""
            data = message.get("data") if isinstance(message, dict) else None
            if kind == "close" or not await _answer(hub, websocket, session, kind, data):
                break
    with suppress(RuntimeError, WebSocketDisconnect, OSError):
        await websocket.close()


async def _parsed(websocket: WebSocket, raw: str | None) -> tuple[bool, Any]:
    """``(True, the frame's JSON)``, or ``(False, None)`` once the client is told why its frame is unreadable."""
    import json

    if raw is None:
        await _send_error(websocket, "INVALID_FRAME", "binary frames are not supported; send JSON text")
        return False, None
    try:
        return True, json.loads(raw)
    except (ValueError, RecursionError) as exc:  # also: ints over 4300 digits, nesting too deep
        text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        await _send_error(websocket, "INVALID_JSON", f"Invalid JSON: {text}")
        return False, None


async def _answer(hub: Hub, websocket: WebSocket, session: Session, kind: str, data: Any) -> bool:
    """Answer one ``reset``/``step``/``state`` frame (an error for anything else); False: the session ends with it
    (the server is shutting down)."""
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
            return True
    except ConfigError as exc:
        await _send_error(websocket, "VALIDATION_ERROR", str(exc), errors=wire.action_errors(exc))
        return True
    except ShuttingDown as exc:  # the session ends with the server
        await _send_error(websocket, "SESSION_ERROR", str(exc))
        return False
    except Exception as exc:  # the env call failed: report it, keep the session
        log.exception("trial failed")
        await _send_error(websocket, "EXECUTION_ERROR", str(exc))
        return True
    await websocket.send_text(wire.dumps(reply))
    return True
