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

Behaviour: the first call waits for ``/health`` (bounded by ``health_timeout_s``, exponential
backoff); idempotent GETs retry with backoff; a step is never retried. Every call has a
timeout; a step or reset with no reply in ``timeout_s`` closes the session (a late reply must
never answer a later request) and raises; the next ``reset()`` opens a new session. When the
environment variable ``token_var`` is set, ``Authorization: Bearer <token>`` goes on every HTTP
call and the WebSocket handshake; the token is never logged, put in a message or written.
Every failure is one ``GymServerError`` naming the URL, the call and the cause. One caller at
a time: the protocol has no request ids.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError, GymServerError, Problem, did_you_mean
from cloudai.gymserver.spaces import ActionSpec, ContinuousSpace, narrow_space

if TYPE_CHECKING:
    import httpx
    from websockets.sync.client import ClientConnection

log = logging.getLogger(__name__)

_NOT_OBSERVED = frozenset({"done", "reward", "metadata"})  # OpenEnv moves these out of the observation
_ENDS_SESSION = frozenset({"CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"})  # the server closes after these
_INDEXED = re.compile(r"^(?P<field>.+)\[(?P<index>\d+)\]$")
_HEADER_SAFE = re.compile(r"^[\x21-\x7e]+$")


class RemoteGymServer:
    """An OpenEnv server as a ``GymServer`` (see the module docstring for the protocol and guarantees)."""

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
    ) -> None:
        if transport not in ("ws", "http"):
            raise ConfigError(f"{transport!r} is not a transport (ws or http)", field="cmd_args.env_transport")
        self._transport = transport
        base = url.rstrip("/").removesuffix("/ws")
        if not re.match(r"^(https?|wss?)://[^/\s]+", base):
            raise ConfigError(f"{url!r} is not an http(s):// or ws(s):// URL", field="cmd_args.env_url")
        self.url = re.sub(r"^ws", "http", base)
        self._ws_url = re.sub(r"^http", "ws", self.url) + "/ws"
        self._token_var = token_var
        self._token = os.environ.get(token_var) or None
        if self._token is not None and not _HEADER_SAFE.match(self._token):
            raise ConfigError(
                f"${token_var} holds characters an HTTP header cannot carry (spaces, newlines or non-ASCII)",
                field="cmd_args.env_token_var",
                hint="set it to the bare token",
            )
        self._headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        self._timeout_s = timeout_s
        self._health_timeout_s = health_timeout_s
        self._declared = dict(action_fields or {})
        self._metrics = list(metrics) if metrics is not None else None
        self._retries = max(1, retries)
        self._http: httpx.Client | None = None
        self._ws: ClientConnection | None = None
        self._closed_why = "no session yet"
        self._dims: dict[str, ActionSpec] | None = None
        self._fixed: dict[str, Any] = {}
        self._int_fields: tuple[str, ...] = ()
        self._names: list[str] = []
        self._plan: list[tuple[str, int | None]] = []

    def __repr__(self) -> str:
        return f"RemoteGymServer({self.url!r})"

    # -- GymServer ---------------------------------------------------------------------------

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return dict(self._load())

    def observation_space(self) -> list[str]:
        self._load()
        return list(self._names)

    @property
    def fixed(self) -> dict[str, Any]:
        """Action fields held at a declared value: sent with every step, never chosen by the agent."""
        self._load()
        return dict(self._fixed)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        self._load()
        data: dict[str, Any] = {} if seed is None else {"seed": seed}
        if options:
            data["options"] = options
        if self._transport == "http":
            observation, _, _, info = self._result(self._post("/reset", data, "reset"), "reset")
            return observation, info
        if self._ws is None:
            self._connect()
        reply = self._exchange({"type": "reset", "data": data}, "reset", "observation")
        observation, _, _, info = self._result(reply, "reset")
        return observation, info

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        self._load()
        payload = {**self._fixed, **action}
        for name in self._int_fields:
            value = payload.get(name)
            if isinstance(value, float) and value.is_integer():
                payload[name] = int(value)
        if self._transport == "http":
            return self._result(self._post("/step", {"action": payload}, "step"), "step")
        return self._result(self._exchange({"type": "step", "data": payload}, "step", "observation"), "step")

    def state(self) -> dict[str, Any]:
        """The server's ``state`` of the current session (episode id, step count, ...)."""
        return self._exchange({"type": "state"}, "state", "state")

    def close(self) -> None:
        """End the session (a ``close`` frame, then the socket) and the HTTP client. Safe to call twice."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):  # the connection is going away either way
                ws.send('{"type":"close"}')
            ws.close()
        self._closed_why = "closed by close()"
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> RemoteGymServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema ------------------------------------------------------------------------------

    def _load(self) -> dict[str, ActionSpec]:
        """Wait for health, read /schema once, derive both spaces."""
        if self._dims is not None:
            return self._dims
        self._wait_healthy()
        schema = self._get_json("/schema", "schema")
        action, observation = schema.get("action"), schema.get("observation")
        if not isinstance(action, dict) or not isinstance(observation, dict):
            raise self._error("/schema has no 'action' and 'observation' JSON Schemas", "schema")
        offered, required = action_fields(action, self._declared)
        problems = [
            Problem(None, f"cmd_args.{name}", f"the server's action has no field '{name}'", did_you_mean(name, offered))
            for name in self._declared
            if name not in offered
        ]
        problems += [
            Problem(
                None,
                f"cmd_args.{name}",
                f"the server's action field '{name}' is required and /schema gives it no bounds or values",
                f"declare it in cmd_args: a list of values, a {{low, high}} range, or one value ({self.url})",
            )
            for name in required
            if offered[name] is None and name not in self._declared
        ]
        if problems:
            raise ConfigError(problems=problems)
        dims, self._fixed = narrow_space(offered, self._declared)
        self._int_fields = tuple(n for n, s in dims.items() if isinstance(s, ContinuousSpace) and s.dtype == "int")
        self._names, self._plan = observation_plan(observation, self._metrics)
        self._dims = dims
        return dims

    # -- transport ---------------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._timeout_s)
        return self._http

    def _wait_healthy(self) -> None:
        """GET /health until 200, with exponential backoff, for at most ``health_timeout_s``."""
        import httpx

        deadline = time.monotonic() + self._health_timeout_s
        delay = 0.05
        while True:
            try:
                response = self._client().get("/health", timeout=min(self._timeout_s, self._health_timeout_s))
                if response.status_code == 200:
                    return
                if response.status_code in (401, 403):
                    raise self._auth_error(response.status_code, "health")
                if response.status_code == 404:
                    raise self._error("GET /health: 404; is this an OpenEnv server?", "health")
                cause = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                cause = _describe(exc)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._error(f"not healthy after {self._health_timeout_s:g}s (last: {cause})", "health")
            log.debug("waiting for %s/health (%s); next try in %.2fs", self.url, cause, min(delay, remaining))
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 2.0)

    def _get_json(self, path: str, call: str) -> dict[str, Any]:
        """An idempotent GET: transport errors and 5xx are retried with backoff; 4xx and bad JSON are not."""
        import httpx

        cause = ""
        for attempt in range(self._retries):
            if attempt:
                time.sleep(0.1 * 2 ** (attempt - 1))
            try:
                response = self._client().get(path)
            except httpx.HTTPError as exc:
                cause = _describe(exc)
                continue
            if response.status_code in (401, 403):
                raise self._auth_error(response.status_code, call)
            if response.status_code >= 500 or response.status_code == 429:
                cause = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise self._error(f"GET {path}: HTTP {response.status_code}", call)
            try:
                body = response.json()
            except ValueError:
                raise self._error(f"GET {path}: malformed JSON: {response.text[:200]!r}", call) from None
            if not isinstance(body, dict):
                raise self._error(f"GET {path}: expected a JSON object, got {type(body).__name__}", call)
            return body
        raise self._error(f"GET {path} failed {self._retries} times (last: {cause})", call)

    def _post(self, path: str, body: dict[str, Any], call: str) -> dict[str, Any]:
        """One episode call over HTTP: never retried (a lost reply may have moved the episode on)."""
        import httpx

        try:
            response = self._client().post(
                path, content=json.dumps(body, default=_plain), headers={"Content-Type": "application/json"}
            )
        except httpx.TimeoutException:
            raise self._error(f"POST {path}: no reply within {self._timeout_s:g}s; not retried", call) from None
        except httpx.HTTPError as exc:
            raise self._error(f"POST {path}: {_describe(exc)}", call) from None
        if response.status_code in (401, 403):
            raise self._auth_error(response.status_code, call)
        if response.status_code != 200:
            raise self._error(f"POST {path}: HTTP {response.status_code}: {response.text[:300]}", call)
        try:
            data = response.json()
        except ValueError:
            raise self._error(f"POST {path}: malformed JSON: {response.text[:200]!r}", call) from None
        if not isinstance(data, dict):
            raise self._error(f"POST {path}: expected a JSON object, got {type(data).__name__}", call)
        return data

    def _connect(self) -> None:
        from websockets.exceptions import InvalidHandshake, InvalidStatus
        from websockets.sync.client import connect

        try:
            connection = connect(
                self._ws_url,
                additional_headers=self._headers,
                open_timeout=self._timeout_s,
                close_timeout=min(self._timeout_s, 5.0),
                compression=None,  # small JSON frames: deflate costs more than it saves
                max_size=64 * 2**20,
                logger=_NoWireDebug(log, {}),  # websockets logs handshake headers (the token) at DEBUG
            )
            self._ws = connection.__enter__()  # we own its lifetime; entering marks it so for websockets >= 17
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise self._auth_error(status, "connect") from None
            raise self._error(f"WebSocket handshake refused: HTTP {status}", "connect") from None
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise self._error(f"cannot open {self._ws_url}: {_describe(exc)}", "connect") from None

    def _exchange(self, message: dict[str, Any], call: str, expect: str) -> dict[str, Any]:
        """Send one frame, read its one reply. Anything that could desynchronise the session drops it."""
        from websockets.exceptions import ConnectionClosed

        ws = self._ws
        if ws is None:
            raise self._error(f"no open session ({self._closed_why}); call reset() to start one", call)
        try:
            text = json.dumps(message, default=_plain)
        except (TypeError, ValueError) as exc:
            raise self._error(f"the {call} is not JSON-serialisable: {exc}", call) from None
        try:
            ws.send(text)
            raw = ws.recv(timeout=self._timeout_s)
        except TimeoutError:
            self._drop(f"{call} timed out")
            raise self._error(
                f"no reply within {self._timeout_s:g}s; the session was closed (a late reply must not answer a "
                "later request) and the episode is lost; reset() starts a new one",
                call,
            ) from None
        except ConnectionClosed as exc:
            raw = _pending(ws)  # e.g. CAPACITY_REACHED, sent right after the handshake before closing
            self._drop(f"connection lost during {call}")
            if raw is None:
                raise self._error(
                    f"the server closed the connection during the {call} ({_describe(exc)})", call
                ) from None
        except OSError as exc:
            self._drop(f"connection lost during {call}")
            raise self._error(f"connection failed during the {call}: {_describe(exc)}", call) from None
        try:
            reply = json.loads(raw)
            kind, data = reply["type"], reply.get("data") or {}
            if not isinstance(data, dict):
                raise TypeError
        except (ValueError, TypeError, KeyError):
            self._drop(f"malformed reply to {call}")
            raise self._error(f"malformed reply (not a JSON message with a type): {str(raw)[:200]!r}", call) from None
        if kind == "error":
            code = str(data.get("code", "UNKNOWN"))
            if code in _ENDS_SESSION:
                self._drop(f"server error {code}")
            raise self._error(f"{code}: {data.get('message', '')}{_validation_detail(data)}", call)
        if kind != expect:
            self._drop(f"unexpected reply to {call}")
            raise self._error(f"expected a '{expect}' reply, got '{kind}'", call)
        return data

    def _drop(self, why: str) -> None:
        ws, self._ws = self._ws, None
        self._closed_why = f"the last one ended: {why}"
        if ws is not None:
            ws.close()

    def _result(self, data: dict[str, Any], call: str) -> tuple[list[float], float, bool, dict]:
        observation = data.get("observation")
        if not isinstance(observation, dict):
            raise self._error("the reply's data has no 'observation' object", call)
        raw_reward = data.get("reward")
        info: dict[str, Any] = {"server_observation": observation}
        if raw_reward is None:
            reward = math.nan
            info["reward_null"] = True
        elif isinstance(raw_reward, bool | int | float):
            reward = float(raw_reward)
        else:
            raise self._error(f"reward must be a number, a bool or null, not {raw_reward!r}", call)
        return observe(observation, self._plan), reward, bool(data.get("done", False)), info

    # -- errors ------------------------------------------------------------------------------

    def _error(self, message: str, call: str) -> GymServerError:
        if self._token:
            message = message.replace(self._token, "***")
        return GymServerError(message, where=self.url, call=call)

    def _auth_error(self, status: int, call: str) -> GymServerError:
        if self._token:
            return self._error(f"HTTP {status}: the server refused the token in ${self._token_var}", call)
        return self._error(f"HTTP {status}: the server wants a bearer token; set ${self._token_var}", call)


class _NoWireDebug(logging.LoggerAdapter):
    """websockets' logger with DEBUG off: its debug lines carry the handshake's Authorization header."""

    def isEnabledFor(self, level: int) -> bool:
        return level > logging.DEBUG and self.logger.isEnabledFor(level)


def action_fields(
    schema: Mapping[str, Any], declared: Mapping[str, Any]
) -> tuple[dict[str, ActionSpec | None], list[str]]:
    """Each action field's offered space (``None``: no bounds) and the required names, from a JSON Schema.

    A schema without ``properties`` (a free-form action) offers exactly the declared fields.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return dict.fromkeys(declared), []
    defs = schema.get("$defs", {})
    offered = {name: field_space(_resolve(prop, defs)) for name, prop in properties.items()}
    return offered, [name for name in schema.get("required", []) if name in offered]


def field_space(prop: Mapping[str, Any]) -> ActionSpec | None:
    """The space one JSON Schema property offers, or ``None`` when it is unbounded or not a knob."""
    if "enum" in prop:
        values = [v for v in prop["enum"] if v is not None]
        return values or None
    if "const" in prop:
        return [prop["const"]]
    kind = prop.get("type")
    if kind == "boolean":
        return [False, True]
    if kind not in ("number", "integer"):
        return None
    integer = kind == "integer"
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is None and "exclusiveMinimum" in prop:
        bound = prop["exclusiveMinimum"]
        low = bound + 1 if integer else math.nextafter(bound, math.inf)
    if high is None and "exclusiveMaximum" in prop:
        bound = prop["exclusiveMaximum"]
        high = bound - 1 if integer else math.nextafter(bound, -math.inf)
    if low is None or high is None or low > high:
        return None
    if low == high:
        return [low]
    return ContinuousSpace(low, high, "int" if integer else "float")


def observation_plan(
    schema: Mapping[str, Any], metrics: Sequence[str] | None
) -> tuple[list[str], list[tuple[str, int | None]]]:
    """Slot names and, per name, (field, list index or None), from the observation JSON Schema."""
    properties = schema.get("properties")
    props = {n: _resolve(p, schema.get("$defs", {})) for n, p in (properties or {}).items() if n not in _NOT_OBSERVED}
    if metrics is None:
        names: list[str] = []
        for name, prop in props.items():
            kind = prop.get("type")
            if kind in ("number", "integer", "boolean"):
                names.append(name)
            elif kind == "array" and prop.get("minItems") is not None and prop.get("minItems") == prop.get("maxItems"):
                names += [f"{name}[{i}]" for i in range(int(prop["minItems"]))]
        metrics = names
    plan: list[tuple[str, int | None]] = []
    problems: list[Problem] = []
    for name in metrics:
        match = _INDEXED.match(name)
        field, index = (match["field"], int(match["index"])) if match and match["field"] in props else (name, None)
        if properties is not None and field not in props:
            close = difflib.get_close_matches(field, props, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the server observes: {', '.join(props) or 'nothing'}"
            problems.append(Problem(None, "agent_metrics", f"the server's observation has no field '{field}'", hint))
        plan.append((field, index))
    if problems:
        raise ConfigError(problems=problems)
    return list(metrics), plan


def observe(observation: Mapping[str, Any], plan: Sequence[tuple[str, int | None]]) -> list[float]:
    """The observation as floats in plan order: bools 0/1, lists flattened, anything else NaN."""
    values: list[float] = []
    for field, index in plan:
        value = observation.get(field)
        if index is not None:
            value = value[index] if isinstance(value, list) and index < len(value) else None
        if isinstance(value, list):
            values += [_number(v) for v in value]
        else:
            values.append(_number(value))
    return values


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def _resolve(prop: Any, defs: Mapping[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` and unwrap ``Optional`` (an ``anyOf`` with one non-null branch)."""
    if not isinstance(prop, dict):
        return {}
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = {**defs.get(ref.removeprefix("#/$defs/"), {}), **{k: v for k, v in prop.items() if k != "$ref"}}
    branches = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(branches, list):
        real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(real) == 1:
            return {**_resolve(real[0], defs), **{k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}}
    return prop


def _validation_detail(data: Mapping[str, Any]) -> str:
    errors = data.get("errors")
    if not isinstance(errors, list) or not errors:
        return ""
    parts = [f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in errors[:5] if isinstance(e, dict)]
    return f" ({'; '.join(parts)})"


def _pending(ws: ClientConnection) -> str | bytes | None:
    """A frame the server sent before closing (e.g. CAPACITY_REACHED right after the handshake), if any."""
    from websockets.exceptions import ConnectionClosed

    try:
        return ws.recv(timeout=0)
    except (ConnectionClosed, TimeoutError):
        return None


def _plain(value: Any) -> Any:
    """numpy scalars and arrays to plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
