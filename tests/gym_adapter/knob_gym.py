"""``KnobGym``: a real in-process ``BaseGym`` over a pure function, numbered like the real env.

Steps are monotonic across resets; ``info`` carries ``step``, ``episode``, ``status`` and
``metrics`` as ``CloudAIGymEnv`` does; in live mode ``done`` comes at ``horizon`` steps per
episode; ``StructuredKnobGym`` adds ``observation_descriptors()``. Every step is appended to
``rows`` (what a trajectory.csv would hold), so tests can compare records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cloudai.envs.base import BaseGym, Observation
from cloudai.space import Categorical, Range, Space


@dataclass(frozen=True)
class Leaf:
    kind: str
    low: float | None = None
    high: float | None = None
    n: int | None = None


def mixed_space() -> Space:
    return Space(
        {"fixed_flag": "on", "num_nodes": 1},
        (
            Categorical("algo", ("ring", "tree", "nvls")),
            Categorical("use_cuda", (True, False)),
            Range("chunk_kb", 64, 8192, log=True, dtype="int", grid_points=4),
            Range("ratio", 0.0, 1.0, grid_points=3),
        ),
    )


def discrete_space() -> Space:
    return Space({"fixed_flag": "on"}, (Categorical("algo", ("ring", "tree")), Categorical("threads", (1, 2, 4))))


def score(point: dict[str, Any]) -> float:
    """A deterministic objective; best at algo=tree, threads/chunk large, ratio near 0.3."""
    value = {"ring": 1.0, "tree": 2.0, "nvls": 1.5}[point["algo"]]
    value += 0.1 * float(point.get("threads", 1)) + 1e-4 * float(point.get("chunk_kb", 0))
    return value - abs(float(point.get("ratio", 0.3)) - 0.3)


class KnobGym(BaseGym):
    structured = False

    def __init__(
        self,
        space: Space,
        fn: Callable[[dict[str, Any]], float] = score,
        *,
        live: bool = False,
        horizon: int = 5,
    ) -> None:
        super().__init__()
        self.space, self.fn, self.live, self.horizon = space, fn, live, horizon
        self._next, self.episode, self._in_episode = 1, 0, 0
        self.rows: list[dict[str, Any]] = []
        self.closed = 0

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return ["value", "load", "mode"] if self.structured else ["value", "load"]

    @property
    def next_step(self) -> int:
        return self._next

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        self.episode += 1
        self._in_episode = 0
        return self._obs(0.0), {"episode": self.episode}

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        unknown = set(action) - set(self.space.names)
        if unknown:
            raise KeyError(f"unknown knobs {unknown}")
        step, self._next = self._next, self._next + 1
        self._in_episode += 1
        value = self.fn(dict(action))
        done = self.live and self._in_episode >= self.horizon
        info = {"step": step, "episode": self.episode, "status": "ok", "metrics": {"value": value}}
        self.rows.append({"step": step, "episode": self.episode, "action": dict(action), "reward": value})
        return self._obs(value), value, done, info

    def close(self) -> None:
        self.closed += 1

    def _obs(self, value: float) -> list[float]:
        load = (self._in_episode % 10) / 10
        return [value, load, float(self._in_episode % 3)] if self.structured else [value, load]


class StructuredKnobGym(KnobGym):
    """``KnobGym`` with structured observations: a free box, a bounded box and a categorical leaf."""

    structured = True

    def observation_descriptors(self) -> dict[str, Leaf]:
        return {"value": Leaf("box"), "load": Leaf("box", 0.0, 1.0), "mode": Leaf("categorical", n=3)}
