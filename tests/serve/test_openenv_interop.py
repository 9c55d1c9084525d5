"""Wire compatibility: openenv-core's own client and a raw ``websockets`` client against the served app."""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

import httpx
import pytest
from tests.gym_adapter.knob_gym import KnobGym, mixed_space
from tests.serve.serving import served
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from cloudai.serve.app import create_app

POINT = {"algo": "nvls", "use_cuda": True, "chunk_kb": 4096, "ratio": 0.5}


def test_generic_env_client_runs_an_episode() -> None:
    from openenv.core.generic_client import GenericEnvClient  # ~3 s to import: only where used

    gym = KnobGym(mixed_space(), live=True, horizon=3)
    with served(create_app(gym, name="Tests.knob")) as url, GenericEnvClient(base_url=url).sync() as client:
        first = client.reset(seed=5)
        assert first.done is False and first.reward is None
        results = [client.step(POINT) for _ in range(3)]
        state = client.state()
    assert [r.done for r in results] == [False, False, True]
    assert [r.reward for r in results] == [row["reward"] for row in gym.rows]
    assert results[-1].observation["trial"]["step"] == 3
    assert state["step_count"] == 3 and state["next_step"] == 4


def test_generic_env_client_sees_validation_and_capacity_errors() -> None:
    from openenv.core.generic_client import GenericEnvClient  # ~3 s to import: only where used

    with served(create_app(KnobGym(mixed_space()), name="t")) as url, GenericEnvClient(base_url=url).sync() as client:
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({**POINT, "bogus": 1})
        client.reset()
        second = GenericEnvClient(base_url=url).sync()
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            second.reset()
        with suppress(Exception):  # the server closed that connection, as a stock OpenEnv server does
            second.close()
        assert client.step(POINT).reward is not None


def test_schema_derives_a_space_like_openenv_clients_do() -> None:
    """What a schema-driven client (issue #6's RemoteGymServer) reads: enums and bounds, no extra declaration."""
    with served(create_app(KnobGym(mixed_space()), name="t")) as url:
        schema = httpx.get(f"{url}/schema").json()
    props: dict[str, Any] = schema["action"]["properties"]
    bounded = {n: p for n, p in props.items() if "enum" in p or {"minimum", "maximum"} <= set(p)}
    assert set(bounded) == set(schema["action"]["required"]) == {"algo", "use_cuda", "chunk_kb", "ratio"}
    assert "metadata" not in schema["action"]["required"]


def test_raw_websocket_frames_and_auth() -> None:
    with served(create_app(KnobGym(mixed_space()), name="t", token="tok-123"), token="tok-123") as url:
        ws_url = url.replace("http://", "ws://") + "/ws"
        with pytest.raises(InvalidStatus) as denied:
            connect(ws_url).close()
        assert denied.value.response.status_code == 401
        with connect(ws_url, additional_headers={"Authorization": "Bearer tok-123"}) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv())["type"] == "observation"
            ws.send(json.dumps({"type": "step", "data": POINT}))
            reply = json.loads(ws.recv())
            ws.send(json.dumps({"type": "close"}))
        assert reply["type"] == "observation" and reply["data"]["observation"]["trial"]["step"] == 1
        assert httpx.get(f"{url}/health").status_code == 401
