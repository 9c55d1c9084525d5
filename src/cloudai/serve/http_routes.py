"""The HTTP routes of ``cloudai serve``: ``/health``, ``/metadata``, ``/schema``, ``/state``, ``/reset``, ``/step``.

``/reset`` and ``/step`` act on the hub's default session; a request while WebSocket sessions hold every slot, or
while a trial runs, gets 409; an action outside the space 422, a server shutting down 503, another error 500.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudai.errors import CloudAIError, ConfigError
from cloudai.serve import wire
from cloudai.serve.calls import ShuttingDown
from cloudai.serve.hub import Busy, Hub

if TYPE_CHECKING:
    from fastapi import FastAPI


def add_http_routes(api: FastAPI, hub: Hub) -> None:
    """Register the routes on ``api``, each answering from ``hub``."""
    from fastapi import Body, HTTPException

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
