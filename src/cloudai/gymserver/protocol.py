"""``GymServer``: a running environment a live-RL trial steps (the protocol; making one: ``gymserver.factory``).

In live-RL mode a trial is one step of a live environment (an inference server retuned
online, a simulator, a remote sandbox). ``cloudai.envs.live.LiveGymEnv`` reaches it only through this
protocol. Call order: ``action_space()``/``observation_space()`` any time, then
``reset(seed, options)`` before the first ``step`` and after every ``done=True``, then
``step(action)`` until ``done``; ``close()`` (optional) once at the end.

* ``action_space()``: ``{name: list | ContinuousSpace}``: the knobs an agent chooses.
* ``observation_space()``: metric names (each observation slot one float, in this order) or
  ``{leaf: ObsLeafDescriptor}`` for a structured observation.
* ``reset(seed=None, options=None) -> (observation, info)``: ``options`` may carry
  ``{"env_params": {...}}``, the environment parameters sampled for this episode.
* ``step(action) -> (observation, reward, done, info)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

from cloudai.gymserver.spaces import ContinuousSpace, ObsLeafDescriptor


class ResetResult(NamedTuple):
    """What ``reset`` returns: ``result.observation``/``.info`` (and ``.reward`` None, ``.done`` False), as the
    OpenEnv clients' result objects read, and ``observation, info = result`` as Gymnasium code unpacks it."""

    observation: list[float]
    info: dict[str, Any]

    @property
    def reward(self) -> float | None:
        return None

    @property
    def done(self) -> bool:
        return False


class StepResult(NamedTuple):
    """What ``step`` returns: ``result.observation``/``.reward``/``.done``/``.info``, and
    ``observation, reward, done, info = result`` as Gymnasium code unpacks it."""

    observation: list[float]
    reward: float
    done: bool
    info: dict[str, Any]


@runtime_checkable
class GymServer(Protocol):
    """A live environment; see the module docstring for the call order. ``close()`` is optional."""

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]: ...

    def observation_space(self) -> list[str] | dict[str, ObsLeafDescriptor]: ...

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]: ...

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]: ...


def close_server(server: GymServer) -> None:
    """Call the server's optional ``close()`` if it has one."""
    close = getattr(server, "close", None)
    if callable(close):
        close()
