"""``Hub``: the served env, the one queue its calls run through, and who may step it.

The HTTP default session steps the hub's ``env``; each WebSocket session gets an environment of its own from
``new_env(k)`` (made and closed in the env thread, ``EnvCalls``). A step asked with ``wait=False`` while another
runs is ``Busy`` (409 over HTTP); any call once the server is closing is ``ShuttingDown``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from cloudai.config.fields import MAX_SEED, shown
from cloudai.envs.base import BaseGym
from cloudai.envs.knobs import observation_leaves, validate_point
from cloudai.errors import ConfigError
from cloudai.serve import wire
from cloudai.serve.calls import EnvCalls, ShuttingDown

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
