"""``RemoteGymServer``: a ``GymServer`` that is a running OpenEnv server, spoken to over its wire protocol.

Wire facts, as ``openenv-core`` 0.3.0 implements them (``openenv/core/env_server/http_server.py``):

* An episode lives in a WebSocket session at ``/ws``: each connection gets its own environment.
  Client frames are ``{"type": "reset", "data": {"seed": .., "options": ..}}`` (the server passes
  the ``data`` keys that its ``reset`` signature accepts), ``{"type": "step", "data": {<action
  fields>}}``, ``{"type": "state"}`` and ``{"type": "close"}`` (no reply; the server ends the
  session). Replies are ``{"type": "observation", "data": {"observation", "reward", "done"}}``,
  ``{"type": "state", "data": {..}}`` or ``{"type": "error", "data": {"message", "code"}}``; one
  per request, in order, with no request id. A server at ``max_concurrent_envs`` sends one
  ``CAPACITY_REACHED`` error right after the handshake and closes.
* HTTP ``POST /reset`` and ``/step`` build a fresh environment per request, so no episode can
  run over them; this client uses HTTP only for ``GET /health`` and ``GET /schema``, unless
  told ``transport="http"`` (``cmd_args.env_transport``) for a server known to keep state
  there (``cloudai serve``): then ``POST /reset`` (``{"seed", "options"}``) and ``POST /step``
  (``{"action": {..}}``) carry the episode, each answered with the same ``{"observation",
  "reward", "done"}`` object, and a step is still never retried.
* ``/schema`` holds the JSON Schemas of the action and the observation. The action space is
  derived from it: ``enum``/``const`` -> a categorical list, ``boolean`` -> ``[False, True]``,
  ``number``/``integer`` with both bounds -> ``ContinuousSpace`` (an exclusive float bound is
  moved inward by one ulp). ``action_fields`` (the test's ``cmd_args``) narrow or declare
  fields by name (lists, ``{low, high}`` tables, scalars held fixed and sent every step). A
  required field with no bounds that is not declared is a ``ConfigError``; an optional one
  keeps the server's default. A declared name the schema lacks is a ``ConfigError``.
* The observation is the numeric fields of the server's observation (bools as 0/1, lists
  flattened) in ``metrics`` order (default: schema order; a list field of fixed length
  ``n`` contributes ``name[0]`` .. ``name[n-1]``, a list of unknown length is left out unless
  named). A missing or non-numeric value is NaN. ``reward`` arrives as a number, a bool or
  ``null`` (no reward, or NaN/inf, which pydantic serialises as ``null``): ``null`` becomes
  ``math.nan`` with ``info["reward_null"] = True``; the env scores a NaN reward as a failure.
  A trial status the server sends (``metadata.status``, else ``trial.status``: ``cloudai serve``
  sends both) lands in ``info["status"]`` with ``info["reason"]``, so a ``constraint`` or
  ``failed`` step on the server is recorded as such by the client.

Behaviour: the first call waits for ``/health`` (bounded by ``health_timeout_s``, exponential
backoff); idempotent GETs retry with backoff; a step is never retried. Every call has a
timeout; a step or reset with no reply in ``timeout_s`` closes the session (a late reply must
never answer a later request) and raises; the next ``reset()`` opens a new session. When the
environment variable ``token_var`` is set, ``Authorization: Bearer <token>`` goes on every HTTP
call and the WebSocket handshake; the token is never logged, put in a message or written.
Every failure is one ``GymServerError`` naming the URL, the call and the cause. One caller at
a time: the protocol has no request ids.

The API the OpenEnv clients' users know: ``health()``, ``metadata()``, ``schema()`` and ``state()``;
``reset(seed=, episode_id=, options=)`` (OpenEnv passes ``episode_id`` to an environment whose ``reset``
takes it); results as objects (``ResetResult``, ``StepResult``: ``.observation``, ``.reward``, ``.done``,
``.info``) that still unpack as Gymnasium's tuples; ``step(action)`` or ``step(**knobs)``; ``headers``
sent with every call beside the token (a gateway's key, a tenant id).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.gymserver.protocol import ResetResult, StepResult
from cloudai.gymserver.schema import action_fields, observation_plan, observe, trial_status
from cloudai.gymserver.spaces import ActionSpec, ContinuousSpace, narrow_space
from cloudai.gymserver.wire import Wire


class RemoteGymServer:
    """An OpenEnv server as a ``GymServer`` (see the module docstring for the protocol and guarantees).

    The transport is ``cloudai.gymserver.wire.Wire``; the schema mapping ``cloudai.gymserver.schema``.
    """

    def __init__(
        self,
        url: str,
        *,
        token_var: str = "CLOUDAI_GYM_TOKEN",
        timeout_s: float = 30.0,
        health_timeout_s: float = 60.0,
        action_fields: Mapping[str, Any] | None = None,
        metrics: Sequence[str] | None = None,
        retries: int = 3,
        transport: str = "ws",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if transport not in ("ws", "http"):
            raise ConfigError(f"{transport!r} is not a transport (ws or http)", field="cmd_args.env_transport")
        self._transport = transport
        self._wire = Wire(
            url,
            token_var=token_var,
            timeout_s=timeout_s,
            health_timeout_s=health_timeout_s,
            retries=retries,
            headers=headers,
        )
        self.url = self._wire.url
        self._declared = dict(action_fields or {})
        self._metrics = list(metrics) if metrics is not None else None
        self._schema: SchemaPlan | None = None  # /schema, read once (``_load``)

    def __repr__(self) -> str:
        return f"RemoteGymServer({self.url!r})"

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return dict(self._load().dims)

    def observation_space(self) -> list[str]:
        return list(self._load().names)

    @property
    def fixed(self) -> dict[str, Any]:
        """Action fields held at a declared value: sent with every step, never chosen by the agent."""
        return dict(self._load().fixed)

    def health(self) -> dict[str, Any]:
        """``GET /health`` (``{"status": "healthy"}`` on a stock server)."""
        return self._wire.get_json("/health", "health")

    def metadata(self) -> dict[str, Any]:
        """``GET /metadata``: the environment's name, description, version..."""
        return self._wire.get_json("/metadata", "metadata")

    def schema(self) -> dict[str, Any]:
        """``GET /schema``: the action, observation and state JSON Schemas."""
        return self._wire.get_json("/schema", "schema")

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, *, episode_id: str | None = None
    ) -> ResetResult:
        self._load()
        data: dict[str, Any] = {} if seed is None else {"seed": seed}
        if episode_id is not None:
            data["episode_id"] = episode_id
        if options:
            data["options"] = options
        if self._transport == "http":
            observation, _, _, info = self._result(self._wire.post("/reset", data, "reset"), "reset")
            return ResetResult(observation, info)
        if self._wire.ws is None:
            self._wire.connect()
        reply = self._wire.exchange({"type": "reset", "data": data}, "reset", "observation")
        observation, _, _, info = self._result(reply, "reset")
        return ResetResult(observation, info)

    def step(self, action: dict[str, Any] | None = None, **knobs: Any) -> StepResult:
        """One step with ``action`` (a dict) or the knobs as keywords (``step(batch=4, ratio=0.5)``), or both."""
        payload = self._load().payload(action, knobs)
        if self._transport == "http":
            return self._result(self._wire.post("/step", {"action": payload}, "step"), "step")
        return self._result(self._wire.exchange({"type": "step", "data": payload}, "step", "observation"), "step")

    def state(self) -> dict[str, Any]:
        """The server's ``state`` of the current session (episode id, step count, ...): over the session's
        WebSocket when one is open, else ``GET /state``."""
        if self._transport == "ws" and self._wire.ws is not None:
            return self._wire.exchange({"type": "state"}, "state", "state")
        return self._wire.get_json("/state", "state")

    def close(self) -> None:
        """End the session (a ``close`` frame, then the socket) and the HTTP client. Safe to call twice."""
        self._wire.close()

    def __enter__(self) -> RemoteGymServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _load(self) -> SchemaPlan:
        """Wait for health, read /schema once, derive both spaces."""
        if self._schema is None:
            self._wire.wait_healthy()
            plan = plan_of(self._wire.get_json("/schema", "schema"), self._declared, self._metrics, self.url)
            if isinstance(plan, str):
                raise self._wire.error(plan, "schema")
            self._schema = plan
        return self._schema

    def _result(self, data: dict[str, Any], call: str) -> StepResult:
        result = result_of(data, self._load().plan)
        if isinstance(result, str):
            raise self._wire.error(result, call)
        return result


@dataclass(frozen=True)
class SchemaPlan:
    """What a server's ``/schema`` says, read once: the agent's knobs, the fields held fixed, the int fields (an
    integral float is sent as an int) and where each observation column comes from. Shared by the sync and the
    async client."""

    dims: dict[str, ActionSpec]
    fixed: dict[str, Any]
    int_fields: tuple[str, ...]
    names: list[str]
    plan: list[tuple[str, int | None]]

    def payload(self, action: Mapping[str, Any] | None, knobs: Mapping[str, Any]) -> dict[str, Any]:
        """A step's action fields: the fixed ones, then ``action`` and ``knobs``; an integral float of an int field
        as an int."""
        payload = {**self.fixed, **(action or {}), **knobs}
        for name in self.int_fields:
            value = payload.get(name)
            if isinstance(value, float) and value.is_integer():
                payload[name] = int(value)
        return payload


def plan_of(
    schema: Mapping[str, Any], declared: Mapping[str, Any], metrics: Sequence[str] | None, url: str
) -> SchemaPlan | str:
    """The plan of a ``/schema`` reply against the test's declared fields; a ``str`` when the reply is no schema.
    A declared field the server lacks, or a required one without bounds nobody declared: ``ConfigError``."""
    action, observation = schema.get("action"), schema.get("observation")
    if not isinstance(action, dict) or not isinstance(observation, dict):
        return "/schema has no 'action' and 'observation' JSON Schemas"
    offered, required = action_fields(action, declared)
    problems = [
        Problem(None, f"cmd_args.{name}", f"the server's action has no field '{name}'", did_you_mean(name, offered))
        for name in declared
        if name not in offered
    ]
    problems += [
        Problem(
            None,
            f"cmd_args.{name}",
            f"the server's action field '{name}' is required and /schema gives it no bounds or values",
            f"declare it in cmd_args: a list of values, a {{low, high}} range, or one value ({url})",
        )
        for name in required
        if offered[name] is None and name not in declared
    ]
    if problems:
        raise ConfigError(problems=problems)
    dims, fixed = narrow_space(offered, declared)
    int_fields = tuple(n for n, s in dims.items() if isinstance(s, ContinuousSpace) and s.dtype == "int")
    names, plan = observation_plan(observation, metrics)
    return SchemaPlan(dims, fixed, int_fields, names, plan)


def result_of(data: Mapping[str, Any], plan: Sequence[tuple[str, int | None]]) -> StepResult | str:
    """A reset or step reply's data as a ``StepResult``; a ``str`` saying what is wrong with it."""
    observation = data.get("observation")
    if not isinstance(observation, dict):
        return "the reply's data has no 'observation' object"
    raw_reward = data.get("reward")
    info: dict[str, Any] = {"server_observation": observation, **trial_status(observation)}
    if raw_reward is None:
        reward = math.nan
        info["reward_null"] = True
    elif isinstance(raw_reward, bool | int | float):
        reward = float(raw_reward)
    else:
        return f"reward must be a number, a bool or null, not {raw_reward!r}"
    return StepResult(observe(observation, plan), reward, bool(data.get("done", False)), info)
