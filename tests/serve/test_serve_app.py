"""The ``cloudai serve`` app in-process (Starlette's TestClient): routes, frames, errors, auth, limits."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from tests.gym_adapter.knob_gym import KnobGym, StructuredKnobGym, discrete_space, mixed_space

from cloudai.errors import ConfigError
from cloudai.serve.app import create_app

POINT = {"algo": "tree", "use_cuda": False, "chunk_kb": 128, "ratio": 0.25}


@pytest.fixture
def gym() -> KnobGym:
    return KnobGym(mixed_space())


@pytest.fixture
def client(gym: KnobGym) -> Iterator[TestClient]:
    with TestClient(create_app(gym, name="Tests.knob")) as client:
        yield client


def frame(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send_text(json.dumps(message))
    return json.loads(ws.receive_text())


def test_health_metadata_schema(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "healthy"}
    assert client.get("/metadata").json()["name"] == "Tests.knob"
    schema = client.get("/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    action = schema["action"]
    assert action["properties"]["algo"] == {"title": "algo", "enum": ["ring", "tree", "nvls"], "type": "string"}
    assert action["properties"]["use_cuda"]["enum"] == [True, False]
    assert action["properties"]["chunk_kb"] | {"description": ""} == {
        "title": "chunk_kb", "type": "integer", "minimum": 64, "maximum": 8192, "description": ""}  # fmt: skip
    assert action["properties"]["ratio"] == {"title": "ratio", "type": "number", "minimum": 0.0, "maximum": 1.0}
    assert action["required"] == ["algo", "use_cuda", "chunk_kb", "ratio"]
    assert action["additionalProperties"] is False and "fixed_flag" not in action["properties"]
    assert {"value", "load", "trial"} <= set(schema["observation"]["properties"])


def test_websocket_episode(client: TestClient, gym: KnobGym) -> None:
    with client.websocket_connect("/ws") as ws:
        reset = frame(ws, {"type": "reset", "data": {"seed": 7, "episode_id": "e1"}})
        assert reset["type"] == "observation" and reset["data"]["done"] is False
        replies = [frame(ws, {"type": "step", "data": {**POINT, "metadata": {"note": "ignored"}}}) for _ in range(3)]
        assert {r["type"] for r in replies} == {"observation"}
        rewards, reply = [r["data"]["reward"] for r in replies], replies[-1]
        assert reply["data"]["observation"]["trial"] == {
            "step": 3,
            "episode": 1,
            "status": "ok",
            "reason": "",
            "env_params": {},
        }
        assert reply["data"]["observation"]["value"] == pytest.approx(reply["data"]["reward"])
        state = frame(ws, {"type": "state"})
        assert state == {"type": "state", "data": {"episode_id": "e1", "step_count": 3, "next_step": 4}}
        ws.send_text(json.dumps({"type": "close"}))
    assert [r["action"] for r in gym.rows] == [POINT] * 3
    assert rewards == [r["reward"] for r in gym.rows]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("{not json", "INVALID_JSON"),
        ({"type": "jump"}, "UNKNOWN_TYPE"),
        ({"type": "step", "data": {**POINT, "bogus": 1}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {**POINT, "algo": "mesh"}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {**POINT, "chunk_kb": 1e9}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {"algo": "ring"}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {**POINT, "fixed_flag": "off"}}, "VALIDATION_ERROR"),
        ({"type": "step"}, "VALIDATION_ERROR"),
        ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
    ],
)
def test_websocket_errors_keep_the_session(client: TestClient, gym: KnobGym, message: Any, code: str) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.send_text(message if isinstance(message, str) else json.dumps(message))
        reply = json.loads(ws.receive_text())
        assert reply["type"] == "error" and reply["data"]["code"] == code
        assert frame(ws, {"type": "step", "data": POINT})["type"] == "observation"  # still usable
    assert len(gym.rows) == 1


def test_unknown_key_names_the_key(client: TestClient) -> None:
    with client.websocket_connect("/ws") as ws:
        reply = frame(ws, {"type": "step", "data": {**POINT, "bogus": 1}})
    assert "bogus" in reply["data"]["message"]
    response = client.post("/step", json={"action": {**POINT, "bogus": 1}})
    assert response.status_code == 422 and "bogus" in json.dumps(response.json())


def test_a_bad_categorical_value_lists_the_candidates(client: TestClient) -> None:
    client.post("/reset", json={})
    response = client.post("/step", json={"action": {**POINT, "algo": "mesh"}})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["action", "algo"]
    assert "'mesh' is not a candidate of 'algo'" in error["msg"] and "'ring'" in error["msg"], error
    with client.websocket_connect("/ws") as ws:
        frame(ws, {"type": "reset", "data": {}})
        reply = frame(ws, {"type": "step", "data": {**POINT, "algo": "mesh"}})
    assert "'ring'" in json.dumps(reply["data"]["errors"])


def test_trial_failure_is_an_execution_error(gym: KnobGym) -> None:
    def boom(point: dict[str, Any]) -> float:
        raise RuntimeError("the job crashed")

    app = create_app(KnobGym(discrete_space(), fn=boom), name="t")
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        reply = frame(ws, {"type": "step", "data": {"algo": "ring", "threads": 1}})
    assert reply["data"] == {"message": "the job crashed", "code": "EXECUTION_ERROR"}


def test_capacity_reached_past_the_session_limit(client: TestClient) -> None:
    with client.websocket_connect("/ws") as first:
        assert frame(first, {"type": "reset"})["type"] == "observation"
        with client.websocket_connect("/ws") as second:
            second.send_text(json.dumps({"type": "reset"}))  # a client that sends before it reads
            replies = [json.loads(second.receive_text()) for _ in range(2)]  # the refusal, and its answer
            assert [r["data"]["code"] for r in replies] == ["CAPACITY_REACHED"] * 2
            assert (replies[0]["data"]["active_sessions"], replies[0]["data"]["max_sessions"]) == (1, 1)
            with pytest.raises(WebSocketDisconnect):
                second.receive_text()
        assert client.post("/step", json={"action": POINT}).status_code == 409  # the session holds the env
        assert frame(first, {"type": "step", "data": POINT})["type"] == "observation"
    assert client.post("/step", json={"action": POINT}).status_code == 200  # slot free again


def test_sessions_are_isolated_each_with_its_own_env_episodes_and_steps() -> None:
    """Issue 30 item 3: B's reset moved A into episode 2 when the sessions shared one env."""
    made: dict[int, KnobGym] = {}

    def new_env(number: int) -> KnobGym:
        made[number] = KnobGym(mixed_space(), live=True, horizon=5)
        return made[number]

    default = KnobGym(mixed_space())
    with (
        TestClient(create_app(default, name="t", max_sessions=2, new_env=new_env)) as client,
        client.websocket_connect("/ws") as a,
        client.websocket_connect("/ws") as b,
    ):
        frame(a, {"type": "reset", "data": {"episode_id": "A"}})
        first = frame(a, {"type": "step", "data": POINT})["data"]["observation"]["trial"]
        frame(b, {"type": "reset", "data": {"episode_id": "B"}})
        frame(b, {"type": "step", "data": POINT})
        again = frame(a, {"type": "step", "data": POINT})["data"]["observation"]["trial"]
        states = [frame(ws, {"type": "state"})["data"] for ws in (a, b)]
    assert (first["step"], again["step"]) == (1, 2)  # A's own step sequence, untouched by B
    assert [(s["episode_id"], s["step_count"], s["next_step"]) for s in states] == [("A", 2, 3), ("B", 1, 2)]
    assert sorted(made) == [1, 2] and [len(made[n].rows) for n in (1, 2)] == [2, 1] and default.rows == []
    assert all(env.closed for env in made.values())  # each session's env closed with its session


def test_more_sessions_than_one_need_an_env_each() -> None:
    with pytest.raises(ConfigError, match="2 sessions need an environment each: give new_env"):
        create_app(KnobGym(mixed_space()), name="t", max_sessions=2)


def test_http_default_session(client: TestClient, gym: KnobGym) -> None:
    reset = client.post("/reset", json={"seed": 3}).json()
    assert set(reset) == {"observation", "reward", "done"} and reset["reward"] is None
    bodies = [client.post("/step", json={"action": POINT, "timeout_s": 5, "request_id": "r"}).json() for _ in range(2)]
    body = bodies[-1]
    assert body["observation"]["trial"]["step"] == 2
    assert client.get("/state").json()["step_count"] == 2
    assert client.post("/reset").status_code == 200  # an empty body is a reset with defaults
    assert client.post("/step", json={"nothing": 1}).status_code == 422
    assert len(gym.rows) == 2


def test_http_step_while_a_trial_runs_is_409() -> None:
    started, release = threading.Event(), threading.Event()

    def slow(point: dict[str, Any]) -> float:
        started.set()
        release.wait(30)
        return 1.0

    gym = KnobGym(discrete_space(), fn=slow)
    action = {"algo": "ring", "threads": 1}
    with TestClient(create_app(gym, name="t")) as client:
        first: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: first.update(r=client.post("/step", json={"action": action})))
        worker.start()
        assert started.wait(30)
        second = client.post("/step", json={"action": action})
        release.set()
        worker.join(30)
    assert second.status_code == 409 and "one trial at a time" in second.json()["detail"]
    assert first["r"].status_code == 200 and len(gym.rows) == 1


def test_structured_observation_fields() -> None:
    with TestClient(create_app(StructuredKnobGym(mixed_space(), live=True, horizon=1), name="t")) as client:
        body = client.post("/step", json={"action": POINT}).json()
        schema = client.get("/schema").json()["observation"]["properties"]
    assert body["done"] is True and body["observation"]["mode"] == 1 and isinstance(body["observation"]["mode"], int)
    assert schema["mode"] == {"title": "mode", "type": "integer", "minimum": 0, "maximum": 2}
    assert schema["load"] == {"title": "load", "type": "number", "minimum": 0.0, "maximum": 1.0}


def test_nan_travels_as_null() -> None:
    gym = KnobGym(discrete_space(), fn=lambda p: float("nan"))
    with TestClient(create_app(gym, name="t")) as client:
        body = client.post("/step", json={"action": {"algo": "ring", "threads": 1}}).json()
    assert body["reward"] is None and body["observation"]["value"] is None


def test_token_required_when_set(gym: KnobGym) -> None:
    with TestClient(create_app(gym, name="t", token="s3cret")) as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            response = client.get("/schema", headers=headers)
            assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
            assert "s3cret" not in response.text
        with pytest.raises(WebSocketDisconnect) as denied, client.websocket_connect("/ws"):
            pass
        assert "s3cret" not in str(denied.value)
        ok = {"Authorization": "Bearer s3cret"}
        assert client.get("/health", headers=ok).status_code == 200
        with client.websocket_connect("/ws", headers=ok) as ws:
            assert frame(ws, {"type": "step", "data": POINT})["type"] == "observation"


def test_oversized_body_is_413(gym: KnobGym) -> None:
    with TestClient(create_app(gym, name="t", max_body=1000)) as client:
        response = client.post("/step", json={"action": {**POINT, "pad": "x" * 2000}})
    assert response.status_code == 413 and gym.rows == []


def test_shutdown_closes_the_env(gym: KnobGym) -> None:
    with TestClient(create_app(gym, name="t")) as client:
        client.post("/step", json={"action": POINT})
    assert gym.closed >= 1
