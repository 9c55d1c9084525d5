"""``AsyncRemoteEnv``: an OpenEnv server's session as coroutines over one WebSocket, for asyncio trainers.

RL users who drive many environments from one event loop (RLE's ``AsyncClient``, AReaL's ``arun_episode``) need
awaitables that do not hold a thread each: ``reset``/``step``/``state``/``close`` here await the socket on the
caller's loop, so N environments cost N sockets and no thread. The protocol, the schema mapping and the result
objects are the sync client's (``cloudai.gymserver.remote``: ``plan_of``, ``result_of``, ``read_reply``), so both
clients read a server the same way; the same guarantees hold: every call has a timeout, a step with no reply
closes the session and is never retried, the token is never shown.

``lease_env`` leases a sandbox from a control plane (``cloudai serve --lease`` or any plane speaking its API) and
connects to it: the lease calls, small and rare, run in the loop's default executor (the lease client and its
records, deadlines and bounded reads are the sync client's), the episode over the socket.

``collect(run_episode, envs, episodes)`` is a collector in AReaL's shape: the user writes ``async def
run_episode(env)`` (reset, act, step until done; return what a trainer needs) and ``collect`` runs ``episodes`` of
them over the environments at once, each environment one episode at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from cloudai.errors import GymServerError
from cloudai.gymserver.protocol import ResetResult, StepResult
from cloudai.gymserver.remote import SchemaPlan, plan_of, result_of
from cloudai.gymserver.wire import Wire, read_reply

if TYPE_CHECKING:
    import httpx
    from websockets.asyncio.client import ClientConnection

    from cloudai.gymserver.lease import Lease, LeaseClient

T = TypeVar("T")


class AsyncRemoteEnv:
    """One session of an OpenEnv server, awaited (module docstring). ``async with`` closes it."""

    def __init__(
        self,
        url: str,
        *,
        token_var: str = "CLOUDAI_GYM_TOKEN",
        timeout_s: float = 30.0,
        health_timeout_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
        action_fields: Mapping[str, Any] | None = None,
        metrics: Sequence[str] | None = None,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        # The sync transport validates the URL, the token and the headers once, and words every error; this
        # client never opens its connections.
        self._wire = Wire(url, token_var=token_var, timeout_s=timeout_s, health_timeout_s=health_timeout_s,
                          retries=1, headers=headers)  # fmt: skip
        self.url = self._wire.url
        self._timeout_s, self._health_timeout_s = timeout_s, health_timeout_s
        self._declared, self._metrics = dict(action_fields or {}), list(metrics) if metrics is not None else None
        self._http: httpx.AsyncClient | None = None
        self._ws: ClientConnection | None = None
        self._schema: SchemaPlan | None = None
        self._on_close = on_close  # after the session ends (a leased sandbox's release)

    def __repr__(self) -> str:
        return f"AsyncRemoteEnv({self.url!r})"

    async def __aenter__(self) -> AsyncRemoteEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the server's own routes -----------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        return await self._get("/health", "health")

    async def metadata(self) -> dict[str, Any]:
        return await self._get("/metadata", "metadata")

    async def schema(self) -> dict[str, Any]:
        return await self._get("/schema", "schema")

    async def observation_space(self) -> list[str]:
        return list((await self._load()).names)

    # -- the episode ---------------------------------------------------------------------------

    async def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, *, episode_id: str | None = None
    ) -> ResetResult:
        """Start an episode (opening the session first when there is none)."""
        await self._load()
        data: dict[str, Any] = {} if seed is None else {"seed": seed}
        if episode_id is not None:
            data["episode_id"] = episode_id
        if options:
            data["options"] = options
        if self._ws is None:
            await self._connect()
        result = await self._result(await self._exchange({"type": "reset", "data": data}, "reset", "observation"))
        return ResetResult(result.observation, result.info)

    async def step(self, action: Mapping[str, Any] | None = None, **knobs: Any) -> StepResult:
        """One step with ``action`` or the knobs as keywords; never retried."""
        plan = await self._load()
        message = {"type": "step", "data": plan.payload(action, knobs)}
        return await self._result(await self._exchange(message, "step", "observation"))

    async def state(self) -> dict[str, Any]:
        """The session's state (episode id, step count...); ``GET /state`` before a session is open."""
        if self._ws is None:
            return await self._get("/state", "state")
        return await self._exchange({"type": "state"}, "state", "state")

    async def close(self) -> None:
        """End the session (a ``close`` frame), the HTTP client and, for a leased sandbox, its lease. Safe twice."""
        ws, self._ws = self._ws, None
        try:
            if ws is not None:
                with contextlib.suppress(Exception):  # the connection is going away either way
                    await ws.send('{"type":"close"}')
                await ws.close()
            if self._http is not None:
                await self._http.aclose()
                self._http = None
        finally:
            release, self._on_close = self._on_close, None
            if release is not None:
                await release()

    # -- transport -----------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(base_url=self.url, headers=self._wire.headers, timeout=self._timeout_s)
        return self._http

    async def _get(self, path: str, call: str) -> dict[str, Any]:
        import httpx

        try:
            response = await self._client().get(path)
        except httpx.HTTPError as exc:
            raise self._wire.error(f"GET {path}: {type(exc).__name__}: {exc}", call) from None
        if response.status_code in (401, 403):
            raise self._wire.auth_error(response.status_code, call)
        if response.status_code != 200:
            raise self._wire.error(f"GET {path}: HTTP {response.status_code}", call)
        try:
            body = response.json()
        except ValueError:
            raise self._wire.error(f"GET {path}: malformed JSON: {response.text[:200]!r}", call) from None
        if not isinstance(body, dict):
            raise self._wire.error(f"GET {path}: expected a JSON object, got {type(body).__name__}", call)
        return body

    async def _load(self) -> SchemaPlan:
        """Wait for ``/health`` (backoff, at most ``health_timeout_s``), then read ``/schema`` once."""
        if self._schema is None:
            deadline = time.monotonic() + self._health_timeout_s
            delay = 0.05
            while True:
                try:
                    await self.health()
                    break
                except GymServerError:
                    if time.monotonic() + delay > deadline:
                        raise
                    await asyncio.sleep(delay)  # a backoff between tries of a server still starting
                    delay = min(delay * 2, 2.0)
            plan = plan_of(await self.schema(), self._declared, self._metrics, self.url)
            if isinstance(plan, str):
                raise self._wire.error(plan, "schema")
            self._schema = plan
        return self._schema

    async def _connect(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        try:
            self._ws = await connect(
                self._wire.ws_url,
                additional_headers=self._wire.headers,
                open_timeout=self._timeout_s,
                close_timeout=min(self._timeout_s, 5.0),
                compression=None,
                max_size=64 * 2**20,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise self._wire.auth_error(status, "connect") from None
            raise self._wire.error(f"WebSocket handshake refused: HTTP {status}", "connect") from None
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise self._wire.error(f"cannot open {self._wire.ws_url}: {type(exc).__name__}: {exc}", "connect") from None

    async def _exchange(self, message: dict[str, Any], call: str, expect: str) -> dict[str, Any]:
        """Send one frame, await its one reply; anything that could leave the session out of step drops it."""
        from websockets.exceptions import ConnectionClosed

        ws = self._ws
        if ws is None:
            raise self._wire.error("no open session; call reset() to start one", call)
        try:
            await ws.send(json.dumps(message))
            raw = await asyncio.wait_for(ws.recv(), self._timeout_s)
        except TimeoutError:
            await self._drop()
            raise self._wire.error(
                f"no reply within {self._timeout_s:g}s; the session was closed and the episode is lost", call
            ) from None
        except (ConnectionClosed, OSError) as exc:
            await self._drop()
            raise self._wire.error(f"the connection ended during the {call} ({type(exc).__name__})", call) from None
        data, problem, ends = read_reply(raw, call, expect)
        if ends:
            await self._drop()
        if problem:
            raise self._wire.error(problem, call)
        return data

    async def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()

    async def _result(self, data: dict[str, Any]) -> StepResult:
        result = result_of(data, (await self._load()).plan)
        if isinstance(result, str):
            raise self._wire.error(result, "step")
        return result


async def lease_env(client: LeaseClient, **options: Any) -> AsyncRemoteEnv:
    """A sandbox leased through ``client`` (``cloudai.gymserver.lease.LeaseClient``), as an ``AsyncRemoteEnv``
    whose ``close`` releases it. The lease calls run in the loop's executor (module docstring)."""
    loop = asyncio.get_running_loop()
    lease: Lease = await loop.run_in_executor(None, client.acquire)

    async def release() -> None:
        await loop.run_in_executor(None, client.release, lease)

    try:
        return AsyncRemoteEnv(lease.url, on_close=release, **options)
    except BaseException:
        await release()
        raise


async def collect(
    run_episode: Callable[[AsyncRemoteEnv], Awaitable[T]], envs: Sequence[AsyncRemoteEnv], episodes: int
) -> list[T]:
    """``episodes`` results of the user's ``run_episode(env)`` over ``envs`` at once, in the order they ended."""
    if episodes < 1 or not envs:
        raise ValueError("collect needs at least one environment and one episode")
    results: list[T] = []
    left = [episodes]

    async def lane(env: AsyncRemoteEnv) -> None:
        while left[0] > 0:
            left[0] -= 1
            results.append(await run_episode(env))

    await asyncio.gather(*(lane(env) for env in envs))
    return results
