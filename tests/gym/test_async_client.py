"""The native async client (issue 38 item 2): coroutines over one WebSocket per environment, no thread each, against
a stock OpenEnv server, ``cloudai serve`` and a leased sandbox; ``collect`` in AReaL's shape."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gym.servers import OpenEnvServer
from tests.gym_adapter.knob_gym import KnobGym, discrete_space
from tests.leases.plane import plane
from tests.serve.serving import served

from cloudai.errors import GymServerError
from cloudai.gymserver.aio import AsyncRemoteEnv, collect, lease_env
from cloudai.gymserver.leased import lease_client
from cloudai.gymserver.protocol import ResetResult, StepResult
from cloudai.serve.app import create_app

pytestmark = pytest.mark.slow  # starts an openenv server and a lease plane (seconds each)

KNOBS = {"batch": 2, "use_cache": True, "ratio": 0.5, "threads": 4}


@pytest.fixture(scope="module")
def stock() -> Iterator[OpenEnvServer]:
    with OpenEnvServer("--max-sessions", "16") as running:
        yield running


def test_the_seeds_api_awaited_on_a_stock_server(stock: OpenEnvServer) -> None:
    async def main() -> None:
        async with AsyncRemoteEnv(stock.url) as env:
            assert (await env.health())["status"] == "healthy" and (await env.metadata())["name"]
            assert {"action", "observation"} <= set(await env.schema())
            reset = await env.reset(seed=5, episode_id="async-1")
            assert isinstance(reset, ResetResult) and reset.observation[-2:] == [5.0, 1.0]
            assert (await env.state())["episode_id"] == "async-1"
            result = await env.step(**KNOBS)
            assert isinstance(result, StepResult) and result.reward == 4.0
            observation, reward, done, _ = result
            assert (observation, reward, done) == (result.observation, 4.0, False)

    asyncio.run(main())


def test_sixteen_environments_on_one_loop_hold_no_thread_each(stock: OpenEnvServer) -> None:
    """AReaL's shape: the user's ``async def run_episode(env)``, 16 environments, 32 episodes, one event loop."""

    async def run_episode(env: AsyncRemoteEnv) -> float:
        await env.reset()
        total, done = 0.0, False
        while not done:
            _, reward, done, _ = await env.step(**KNOBS)
            total += reward
        return total

    async def main() -> tuple[list[float], int]:
        envs = [AsyncRemoteEnv(stock.url) for _ in range(16)]
        threads = [0]

        async def watched(env: AsyncRemoteEnv) -> float:
            threads[0] = max(threads[0], threading.active_count())
            return await run_episode(env)

        try:
            returns = await collect(watched, envs, 32)
        finally:
            await asyncio.gather(*(env.close() for env in envs))
        return returns, threads[0]

    before = threading.active_count()
    returns, most = asyncio.run(main())
    assert returns == [12.0] * 32  # 3 steps of reward 4 each episode (the stock app's episode)
    assert most - before <= 2, f"{most - before} threads for 16 environments"  # not one per environment


def test_cloudai_serve_awaited_and_a_hung_step_closes_the_session() -> None:
    async def served_episode(url: str) -> None:
        async with AsyncRemoteEnv(url, headers={"X-Tenant": "a"}) as env:
            await env.reset(seed=1, episode_id="s-1")
            assert (await env.state())["episode_id"] == "s-1"
            assert (await env.step(algo="tree", threads=2)).info.get("status", "ok") == "ok"

    with served(create_app(KnobGym(discrete_space()), name="Tests.knob")) as url:
        asyncio.run(served_episode(url))

    async def hung(url: str) -> None:
        async with AsyncRemoteEnv(url) as env:
            await env.reset()
            env._timeout_s = 1.0  # the step's reply only, not the connection's start under load
            with pytest.raises(GymServerError, match=r"no reply within 1s; the session was closed"):
                await env.step(**KNOBS, note="hang")
            with pytest.raises(GymServerError, match="no open session"):
                await env.step(**KNOBS)  # a late reply can never answer this one

    with OpenEnvServer() as own:  # its hung step holds that server: not the module's
        asyncio.run(hung(own.url))


def test_a_leased_sandbox_awaited_is_released_by_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", "lease-tok-9")
    with plane("lease-tok-9") as (board, url):
        args: dict[str, Any] = {"live_rl_mode": True, "env_lease_url": url, "env_lease_environment": "knobs"}
        client = lease_client(args, tmp_path)

        async def main() -> list[float]:
            envs = await asyncio.gather(*(lease_env(client) for _ in range(3)))
            assert board.live() == 3
            try:
                return [(await env.reset(), (await env.step(**KNOBS)).reward)[1] for env in envs]
            finally:
                await asyncio.gather(*(env.close() for env in envs))

        assert asyncio.run(main()) == [4.0, 4.0, 4.0]
        assert board.live() == 0
        client.close()
