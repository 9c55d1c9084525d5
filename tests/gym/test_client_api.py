"""The client API the OpenEnv seeds' users know (issue 38 item 3), against a stock OpenEnv server, ``cloudai serve``
and a leased sandbox: ``health``/``metadata``/``schema``/``state``, ``reset(seed=, episode_id=)``, result objects
that still unpack as Gymnasium's tuples, ``step(**knobs)`` and custom headers beside the token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send
from tests.gym.servers import OpenEnvServer
from tests.gym_adapter.knob_gym import KnobGym, discrete_space
from tests.leases.plane import plane
from tests.serve.serving import served

from cloudai.errors import ConfigError
from cloudai.gymserver.factory import create_gym_server
from cloudai.gymserver.leased import LeasedGymServer
from cloudai.gymserver.protocol import ResetResult, StepResult
from cloudai.gymserver.remote import RemoteGymServer
from cloudai.serve.app import create_app

pytestmark = pytest.mark.slow  # starts an openenv server and a lease plane (seconds each)

KNOBS = {"batch": 2, "use_cache": True, "ratio": 0.5, "threads": 4}


@pytest.fixture(scope="module")
def stock() -> Iterator[OpenEnvServer]:
    with OpenEnvServer("--max-sessions", "2") as running:
        yield running


def test_a_stock_openenv_server_through_the_seeds_api(stock: OpenEnvServer) -> None:
    with RemoteGymServer(stock.url) as client:
        assert client.health()["status"] == "healthy"
        assert client.metadata()["name"]
        assert {"action", "observation"} <= set(client.schema())
        reset = client.reset(seed=3, episode_id="run-7/ep-1")
        assert isinstance(reset, ResetResult) and reset.reward is None and reset.done is False
        observation, info = reset  # Gymnasium's unpacking
        assert observation == reset.observation and info == reset.info
        assert client.state()["episode_id"] == "run-7/ep-1"
        result = client.step(**KNOBS)
        assert isinstance(result, StepResult) and result.reward == 4.0 and result.done is False
        observation, reward, done, info = result
        assert (observation, reward, done) == (result.observation, 4.0, False) and info is result.info
        assert client.step({"batch": 2, "use_cache": True}, ratio=0.5, threads=4).reward == 4.0  # both at once
        assert client.state()["step_count"] == 2


class Recorded:
    """An ASGI app that records each request's and handshake's headers, then passes it to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app, self.seen = app, []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            self.seen.append((scope["type"], scope["path"], headers))
        await self.app(scope, receive, send)


def test_cloudai_serve_through_the_seeds_api_with_custom_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDAI_SERVE_TOKEN", "tok-12")
    app = Recorded(create_app(KnobGym(discrete_space()), name="Tests.knob", token="tok-12"))
    with served(app, "tok-12") as url:
        headers = {"X-Tenant": "team-a", "Authorization": "Bearer not-this"}
        with RemoteGymServer(url, token_var="CLOUDAI_SERVE_TOKEN", headers=headers) as client:
            assert client.health()["status"] == "healthy" and client.metadata()["name"] == "Tests.knob"
            client.reset(seed=1, episode_id="e-42")
            assert client.state()["episode_id"] == "e-42"
            result = client.step(algo="tree", threads=2)
            observation, reward, done, _ = result
            assert reward == result.reward and observation == result.observation and done == result.done
    ours = [(kind, path, h) for kind, path, h in app.seen if "x-tenant" in h]  # not the fixture's health wait
    assert {kind for kind, _, _ in ours} == {"http", "websocket"} and {"/health", "/metadata", "/ws"} <= {
        path for _, path, _ in ours}  # fmt: skip
    assert all(h["x-tenant"] == "team-a" and h.get("authorization") == "Bearer tok-12" for _, _, h in ours)


@pytest.mark.parametrize("headers", [{"X-Bad": "a\r\nInjected: 1"}, {"Bad Name": "x"}])
def test_a_header_that_could_split_a_request_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="header"):
        RemoteGymServer("http://127.0.0.1:9", headers=headers)


def test_a_leased_sandbox_answers_the_same_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", "lease-tok-7")
    with plane("lease-tok-7") as (board, url):
        args: dict[str, Any] = {"live_rl_mode": True, "env_lease_url": url, "env_lease_environment": "knobs"}
        server = create_gym_server(args, record_dir=tmp_path)
        assert isinstance(server, LeasedGymServer)
        try:
            assert server.health()["status"] == "healthy" and "action" in server.schema()
            assert server.metadata()["name"]
            server.reset(seed=1, episode_id="lease-ep")
            assert server.state()["episode_id"] == "lease-ep"
            assert server.step(**KNOBS).reward == 4.0
        finally:
            server.close()
        assert board.live() == 0
