"""``RemoteGymServer`` against a raw server that misbehaves on purpose: every fault is one ``GymServerError``."""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np
import pytest
from tests.gym.servers import SCHEMA, ok_json, raw_server

from cloudai.errors import ConfigError, GymServerError
from cloudai.gymserver.remote import RemoteGymServer
from cloudai.gymserver.schema import field_space
from cloudai.gymserver.spaces import ContinuousSpace

HEALTHY = {"/health": ok_json({"status": "healthy"}), "/schema": ok_json(SCHEMA)}
OBSERVATION = json.dumps({"type": "observation", "data": {"observation": {"y": 1.5}, "reward": 2, "done": False}})


def replies(step: str | None) -> Any:
    """Answer reset with an observation and every step with ``step`` (``None``: hang up)."""
    return lambda frame: OBSERVATION if frame["type"] == "reset" else step


def test_malformed_schema_json_is_not_retried() -> None:
    bad = {**HEALTHY, "/schema": lambda: (200, "{not json")}
    with raw_server(bad) as (url, seen), pytest.raises(GymServerError, match="GET /schema: malformed JSON") as raised:
        RemoteGymServer(url).action_space()
    assert raised.value.where == url and raised.value.call == "schema"
    assert seen.count("/schema") == 1


def test_http_500_is_retried_then_reported() -> None:
    failing = {**HEALTHY, "/schema": lambda: (500, "{}")}
    expected = r"GET /schema failed 3 times \(last: HTTP 500\)"
    with raw_server(failing) as (url, seen), pytest.raises(GymServerError, match=expected):
        RemoteGymServer(url, retries=3).observation_space()
    assert seen.count("/schema") == 3


def test_unhealthy_server_is_bounded() -> None:
    expected = r"not healthy after 0.3s \(last: HTTP 503\)"
    with raw_server({"/health": lambda: (503, "{}")}) as (url, seen), pytest.raises(GymServerError, match=expected):
        RemoteGymServer(url, health_timeout_s=0.3).reset()
    assert seen.count("/health") >= 1 and "/ws" not in seen


def test_malformed_frame_closes_the_session() -> None:
    with raw_server(HEALTHY, replies("{oops")) as (url, _):
        remote = RemoteGymServer(url)
        assert remote.reset() == ([1.5], {"server_observation": {"y": 1.5}})
        with pytest.raises(GymServerError, match="malformed reply"):
            remote.step({"x": 1})
        with pytest.raises(GymServerError, match="no open session"):
            remote.step({"x": 1})
        remote.close()


def test_wrong_reply_type_closes_the_session() -> None:
    with raw_server(HEALTHY, replies(json.dumps({"type": "state", "data": {}}))) as (url, _):
        remote = RemoteGymServer(url)
        remote.reset()
        with pytest.raises(GymServerError, match="expected a 'observation' reply, got 'state'"):
            remote.step({"x": 1})
        remote.close()


def test_connection_closed_mid_step() -> None:
    with raw_server(HEALTHY, replies(None)) as (url, _):
        remote = RemoteGymServer(url)
        remote.reset()
        with pytest.raises(GymServerError, match="closed the connection during the step"):
            remote.step({"x": 1})
        remote.close()


def test_error_frame_becomes_gym_server_error() -> None:
    error = {"type": "error", "data": {"message": "boom", "code": "EXECUTION_ERROR"}}
    with raw_server(HEALTHY, replies(json.dumps(error))) as (url, _):
        remote = RemoteGymServer(url)
        remote.reset()
        with pytest.raises(GymServerError, match=r"step .*: EXECUTION_ERROR: boom"):
            remote.step({"x": 1})
        remote.close()


def test_required_unbounded_field_must_be_declared() -> None:
    schema = {**SCHEMA, "action": {**SCHEMA["action"], "properties": {"x": {"type": "integer"}}}}
    sent: list[dict[str, Any]] = []

    def record(frame: dict[str, Any]) -> str:
        sent.append(frame)
        return OBSERVATION

    with raw_server({**HEALTHY, "/schema": ok_json(schema)}, record) as (url, _):
        with pytest.raises(ConfigError, match="'x' is required and /schema gives it no bounds") as raised:
            RemoteGymServer(url).action_space()
        assert raised.value.problems[0].field == "cmd_args.x"
        with RemoteGymServer(url, action_fields={"x": [1, 2]}) as remote:
            assert remote.action_space() == {"x": [1, 2]}
            remote.reset(seed=3, options={"env_params": {"a": 1}})
            remote.step({"x": np.int64(2)})
    assert sent == [
        {"type": "reset", "data": {"seed": 3, "options": {"env_params": {"a": 1}}}},
        {"type": "step", "data": {"x": 2}},
        {"type": "close"},
    ]


def test_token_never_appears_in_errors_or_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "s3cr3t-token-value"
    monkeypatch.setenv("MY_TOKEN", secret)
    echo = lambda: (401, json.dumps({"detail": f"bad token {secret}"}))  # noqa: E731  # a server that echoes it
    with raw_server({"/health": ok_json({}), "/schema": echo}) as (url, _), pytest.raises(GymServerError) as raised:
        RemoteGymServer(url, token_var="MY_TOKEN").action_space()
    assert "$MY_TOKEN" in str(raised.value) and secret not in str(raised.value)
    client_side = [r.getMessage() for r in caplog.records if not r.name.startswith("websockets.server")]
    assert client_side and not any(secret in line for line in client_side)  # the raw server itself logs it
    monkeypatch.setenv("MY_TOKEN", "two\nlines")
    with pytest.raises(ConfigError, match=r"\$MY_TOKEN holds characters") as bad:
        RemoteGymServer(url, token_var="MY_TOKEN")
    assert "two" not in str(bad.value)


def test_unreachable_server_names_the_url() -> None:
    with raw_server(HEALTHY) as (url, _):
        pass  # closed: nothing listens on that port any more
    with pytest.raises(GymServerError, match="not healthy after") as raised:
        RemoteGymServer(url, health_timeout_s=0.2).reset()
    assert raised.value.where == url and raised.value.call == "health"


@pytest.mark.parametrize(
    ("prop", "space"),
    [
        ({"enum": ["a", "b"]}, ["a", "b"]),
        ({"const": 3}, [3]),
        ({"type": "boolean"}, [False, True]),
        ({"type": "number", "minimum": 0, "maximum": 2}, ContinuousSpace(0, 2)),
        ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5}, ContinuousSpace(1, 4, "int")),
        ({"type": "integer", "minimum": 2, "maximum": 2}, [2]),
        ({"type": "number", "minimum": 0}, None),
        ({"type": "string"}, None),
    ],
)
def test_field_space_from_json_schema(prop: dict[str, Any], space: Any) -> None:
    assert field_space(prop) == space
