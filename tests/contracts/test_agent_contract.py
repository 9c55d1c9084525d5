"""What every agent must do, built-in or plugin (after Optuna's ``optuna/testing/pytest_samplers.py``).

``AgentContract`` needs only an ``agent_cls`` fixture: a plugin gets the suite with

    class TestMyAgent(AgentContract):
        @pytest.fixture
        def agent_cls(self) -> type[BaseAgent]:
            return MyAgent

The environment is the contract's own: ``ContractGym`` over a pure function, whose
``step_wait`` finishes trials newest first (feedback arrives out of order, as with parallel
trials) and whose ``infeasible`` region yields ``constraint`` steps with the penalty reward.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from cloudai.agents import AGENTS
from cloudai.agents.base import AgentConfig, BaseAgent
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range, Space

SPACE = Space(
    {"fixed": "kept"},
    (
        Categorical("algo", ("ring", "tree", None)),
        Range("chunk", 1.0, 4096.0, log=True, dtype="int", grid_points=5),
        Range("ratio", 0.0, 1.0, grid_points=4),
    ),
)


def objective(point: dict[str, Any]) -> float:
    return -abs(math.log2(point["chunk"]) - 6) - point["ratio"] + (point["algo"] == "tree")


class ContractGym(BaseGym):
    max_in_flight = 4

    def __init__(self, history: list[Feedback] | None = None) -> None:
        super().__init__()
        self._history = history or []
        self._next = len(self._history) + 1
        self._pending: list[tuple[int, dict[str, Any]]] = []
        self.asked: list[dict[str, Any]] = []
        self.finished: list[Feedback] = []

    def define_action_space(self) -> Space:
        return SPACE

    def define_observation_space(self) -> list[str]:
        return ["value"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [0.0], {}

    @property
    def next_step(self) -> int:
        return self._next

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        raise AssertionError("the run loop steps through step_async/step_wait")

    def step_async(self, action: dict[str, Any]) -> int:
        self._pending.append((self._next, dict(action)))
        self.asked.append(dict(action))
        self._next += 1
        return self._next - 1

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        done = [
            Feedback(s, 1, a, -1.0, [0.0], "constraint")
            if a["ratio"] > 0.9
            else Feedback(s, 1, a, objective(a), [objective(a)], "ok")
            for s, a in reversed(self._pending)
        ]
        self._pending = []
        self.finished.extend(done)
        return done

    def history(self) -> list[Feedback]:
        return list(self._history)


def in_space(point: dict[str, Any]) -> bool:
    if set(point) != set(SPACE.names):
        return False
    chunk, ratio = point["chunk"], point["ratio"]
    return point["algo"] in ("ring", "tree", None) and isinstance(chunk, int) and 1 <= chunk <= 4096 and 0 <= ratio <= 1


class AgentContract:
    """The agent contract; subclasses provide ``agent_cls``."""

    def make(self, agent_cls: type[BaseAgent], env: BaseGym, max_steps: int, **config: Any) -> BaseAgent:
        return agent_cls(env, agent_cls.config_model(**config), max_steps)

    def test_declares_its_capabilities(self, agent_cls: type[BaseAgent]) -> None:
        assert isinstance(agent_cls.name, str) and agent_cls.name in AGENTS and AGENTS.get(agent_cls.name) is agent_cls
        assert isinstance(agent_cls.samples_env_params, bool) and isinstance(agent_cls.can_ask_ahead, bool)
        assert issubclass(agent_cls.config_model, AgentConfig)
        with pytest.raises(ValueError):
            agent_cls.config_model.model_validate({"no_such_field": 1})

    def test_runs_to_max_steps_inside_the_space(self, agent_cls: type[BaseAgent]) -> None:
        env = ContractGym()
        assert self.make(agent_cls, env, 15, seed=0).run() == 15
        assert len(env.asked) == 15 and all(in_space(p) for p in env.asked)

    def test_select_action_tags_the_next_step(self, agent_cls: type[BaseAgent]) -> None:
        env = ContractGym()
        choice = self.make(agent_cls, env, 5, seed=0).select_action([0.0])
        assert choice is not None and choice[0] == env.next_step == 1 and in_space(choice[1])

    def test_several_asks_in_flight_told_out_of_order(self, agent_cls: type[BaseAgent]) -> None:
        env = ContractGym()
        agent = self.make(agent_cls, env, 12, seed=0, max_parallel=4)
        assert agent.run() == 12
        assert sorted(f.step for f in env.finished) == list(range(1, 13))

    def test_penalty_steps_are_learned_from_not_best(self, agent_cls: type[BaseAgent]) -> None:
        agent = self.make(agent_cls, ContractGym(), 30, seed=1)
        agent.run()
        assert agent.best is not None and agent.best.status == "ok"

    def test_resume_tells_recorded_steps_first(self, agent_cls: type[BaseAgent]) -> None:
        first = ContractGym()
        self.make(agent_cls, first, 6, seed=2).run()
        resumed = ContractGym(history=sorted(first.finished, key=lambda f: f.step))
        assert self.make(agent_cls, resumed, 10, seed=2).run() == 10
        assert len(resumed.asked) == 4 and all(in_space(p) for p in resumed.asked)

    def test_seeded_runs_repeat(self, agent_cls: type[BaseAgent]) -> None:
        runs = [ContractGym(), ContractGym()]
        for env in runs:
            self.make(agent_cls, env, 10, seed=3).run()
        assert runs[0].asked == runs[1].asked


class TestBuiltinAgents(AgentContract):
    @pytest.fixture(params=["grid_search", "random_search", "optuna"])
    def agent_cls(self, request: pytest.FixtureRequest) -> type[BaseAgent]:
        return AGENTS.get(request.param)
