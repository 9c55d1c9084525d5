"""A real in-process ``BaseGym`` over a pure function, for agent unit tests.

``FunctionGym`` numbers steps like the real env, keeps up to ``max_in_flight`` trials
pending between ``step_async`` and ``step_wait`` (finishing them newest first, to exercise
out-of-order feedback), replays ``history`` as a resumed run would, and turns actions the
``infeasible`` predicate rejects into ``constraint`` steps with the penalty reward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from cloudai.agents.base import AgentConfig, BaseAgent
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range, Space

Point = dict[str, Any]


class FunctionGym(BaseGym):
    def __init__(
        self,
        space: Space,
        fn: Callable[[Point], float],
        *,
        max_in_flight: int = 1,
        history: Iterable[Feedback] = (),
        infeasible: Callable[[Point], bool] | None = None,
        penalty: float = -1.0,
    ) -> None:
        super().__init__()
        self.space, self.fn, self.infeasible, self.penalty = space, fn, infeasible, penalty
        self.max_in_flight = max_in_flight
        self._history = list(history)
        self._next = max((f.step for f in self._history), default=0) + 1
        self._pending: list[tuple[int, Point]] = []
        self.asked: list[Point] = []  # actions stepped in this process, in step order
        self.feedback: list[Feedback] = []  # every finished step of this process, in finish order
        self.most_in_flight = 0

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return ["value"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [0.0], {}

    @property
    def next_step(self) -> int:
        return self._next

    def step(self, action: Point) -> tuple[Observation, float, bool, dict]:
        self._next += 1
        self.asked.append(dict(action))
        if self.infeasible is not None and self.infeasible(action):
            return [0.0], self.penalty, False, {"status": "constraint"}
        value = self.fn(action)
        return [value], value, False, {"status": "ok"}

    def step_async(self, action: Point) -> int:
        step = self._next
        self._next += 1
        self.asked.append(dict(action))
        self._pending.append((step, dict(action)))
        self.most_in_flight = max(self.most_in_flight, len(self._pending))
        return step

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        done: list[Feedback] = []
        for step, action in reversed(self._pending):
            if self.infeasible is not None and self.infeasible(action):
                done.append(Feedback(step, 1, action, self.penalty, [0.0], "constraint"))
            else:
                value = self.fn(action)
                done.append(Feedback(step, 1, action, value, [value], "ok"))
        self._pending = []
        self.feedback.extend(done)
        return done

    def history(self) -> list[Feedback]:
        return list(self._history)


def build_agent(agent_cls: type[BaseAgent], env: BaseGym, max_steps: int, **config: Any) -> BaseAgent:
    """An agent as the pipeline builds one: ``agent_config`` validated by its ``config_model``."""
    cfg: AgentConfig = agent_cls.config_model(**config)
    return agent_cls(env, cfg, max_steps)


def quadratic_fn(point: Point) -> float:
    """A smooth bowl with its maximum 0 at x=1.3, y=-2.1 (categorical ``mode`` adds an offset)."""
    offset = {"a": 0.0, "b": -0.5, "c": -2.0}.get(point.get("mode", "a"), 0.0)
    return offset - (point["x"] - 1.3) ** 2 - (point["y"] + 2.1) ** 2


@pytest.fixture
def make_gym() -> type[FunctionGym]:
    return FunctionGym


@pytest.fixture
def make_agent() -> Callable[..., BaseAgent]:
    return build_agent


@pytest.fixture
def quadratic() -> Callable[[Point], float]:
    return quadratic_fn


@pytest.fixture
def grid_space() -> Space:
    """12 points: a 3-way categorical times a 4-way one."""
    return Space({"fixed": 1}, (Categorical("a", (1, 2, 3)), Categorical("b", ("w", "x", "y", "z"))))


@pytest.fixture
def smooth_space() -> Space:
    return Space(
        {},
        (Categorical("mode", ("a", "b", "c")), Range("x", -5.0, 5.0, grid_points=11), Range("y", -5.0, 5.0)),
    )
