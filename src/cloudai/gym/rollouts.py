"""Many environments for trainers: an async env, a Gymnasium vector env, and a rollout helper.

* ``AsyncEnv`` wraps one of a test's environments (``load_env(...).env``, or a lane of its own) so that an asyncio
  program awaits it: ``await env.reset()``, ``await env.step(action)``. Each call runs the environment's blocking
  step (a remote OpenEnv session, a leased sandbox, an in-process class, a real job) in a worker thread, so N
  ``AsyncEnv`` step at once under one event loop, as an RL framework's rollout collector does. Every step is
  recorded as ``cloudai run`` records it (trajectory.csv, episodes.jsonl).
* ``make_vec(tests_dir, scenario, num_envs=N)`` is Gymnasium's own ``SyncVectorEnv`` over N
  ``GymnasiumAdapter``s of the test (each passes Gymnasium's ``check_env``); sub-env k records into
  ``<run dir>/<test id>/<k>/``, one results dir for the whole vector. It steps the sub-envs one after the other,
  as Gymnasium's sync vector env does; for N environments stepping at once use ``AsyncEnv`` + ``rollout`` (or
  ``cloudai run`` with ``agent_config.max_parallel``). Gymnasium's process-based ``AsyncVectorEnv`` is not
  offered: a sub-env holds a session (or a lease) opened before it would be forked.
* ``rollout(policy, envs, episodes)`` runs ``policy`` (sync or ``async def policy(observation, env_index)``
  returning an action) over the ``AsyncEnv``s at once until ``episodes`` episodes have ended (``done``, or
  ``max_steps`` steps: truncated), and returns them, each a list of ``Transition`` in order.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import gymnasium

    from cloudai.envs.base import BaseGym, Observation

_log = logging.getLogger(__name__)
Policy = Callable[[list[float], int], dict[str, Any] | Awaitable[dict[str, Any]]]


class AsyncEnv:
    """One environment awaited from asyncio (see the module docstring); ``close`` releases it."""

    def __init__(self, env: BaseGym) -> None:
        self.env = env
        self._lock = asyncio.Lock()  # one call at a time on one environment

    async def reset(self, seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        async with self._lock:
            return await asyncio.to_thread(self.env.reset, seed)

    async def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict[str, Any]]:
        async with self._lock:
            return await asyncio.to_thread(self.env.step, action)

    async def close(self) -> None:
        await asyncio.to_thread(self.env.close)


@dataclass(frozen=True)
class Transition:
    observation: list[float]  # what the policy acted on
    action: dict[str, Any]
    reward: float
    next_observation: list[float]
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


async def rollout(
    policy: Policy, envs: Sequence[AsyncEnv], episodes: int, *, max_steps: int | None = None
) -> list[list[Transition]]:
    """``episodes`` whole episodes collected over ``envs`` at once, in the order they ended."""
    if episodes < 1 or not envs:
        raise ValueError("rollout needs at least one environment and one episode")
    _say_where(envs)
    ended: list[list[Transition]] = []
    started = [0]

    async def worker(index: int, env: AsyncEnv) -> None:
        while started[0] < episodes:
            started[0] += 1
            ended.append(await _episode(policy, env, index, max_steps))

    await asyncio.gather(*(worker(i, env) for i, env in enumerate(envs)))
    return ended


def _say_where(envs: Sequence[AsyncEnv]) -> None:
    """``cloudai rollout: recording 4 environment(s) into <run dir>/t/{0,1,2,3}`` (or that nothing is recorded)."""
    dirs = [e.env.record_dir for e in envs]
    recorded = [d for d in dirs if d is not None]
    if not recorded:
        text = f"cloudai rollout: {len(envs)} environment(s); nothing is recorded (no results dir)"
    elif len(recorded) == 1:
        text = f"cloudai rollout: recording into {recorded[0]}"
    else:
        parent = Path(os.path.commonpath(recorded))
        text = f"cloudai rollout: recording {len(recorded)} environment(s) under {parent}: " + ", ".join(
            str(d.relative_to(parent)) for d in recorded
        )
        if len(recorded) < len(dirs):
            text += f" ({len(dirs) - len(recorded)} not recorded)"
    _log.info(text)
    print(text, file=sys.stderr)


async def _episode(policy: Policy, env: AsyncEnv, index: int, max_steps: int | None) -> list[Transition]:
    observation, _ = await env.reset()
    steps: list[Transition] = []
    while True:
        action = policy(list(observation), index)
        if inspect.isawaitable(action):
            action = await action
        after, reward, done, info = await env.step(dict(action))
        truncated = not done and max_steps is not None and len(steps) + 1 >= max_steps
        steps.append(Transition(list(observation), dict(action), reward, list(after), done, truncated, info))
        if done or truncated:
            return steps
        observation = after


def make_vec(
    tests_dir: str | Path,
    scenario: str | Path,
    num_envs: int,
    test_id: str | None = None,
    *,
    max_steps: int | None = None,
    **overrides: Any,
) -> gymnasium.vector.VectorEnv:
    """Gymnasium's vector env over ``num_envs`` adapters of one test, recording into one results dir."""
    import gymnasium

    from cloudai.gym.adapter import GymnasiumAdapter
    from cloudai.gym.from_toml import adapt, load_env

    if num_envs < 1:
        raise ValueError("num_envs must be at least 1")
    loaded = load_env(tests_dir, scenario, test_id, **overrides)
    kwargs = {"tests_dir": tests_dir, "scenario": scenario, "test_id": test_id, "max_steps": max_steps, **overrides}

    def sub_env(k: int) -> Callable[[], GymnasiumAdapter]:
        return lambda: adapt(loaded.env if k == 0 else loaded.another(k), loaded, max_steps, kwargs)

    return gymnasium.vector.SyncVectorEnv([sub_env(k) for k in range(num_envs)])
