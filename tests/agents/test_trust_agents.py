"""Issue 15 at the agent contract: step-order tells, sweeps that stop short say why, warm start, enqueue."""

from __future__ import annotations

import random
from typing import Any

from tests.agents.conftest import FunctionGym, build_agent

from cloudai.agents.base import BaseAgent
from cloudai.agents.grid_search import GridSearchAgent
from cloudai.agents.optuna_agent import OptunaAgent
from cloudai.agents.random_search import RandomSearchAgent
from cloudai.envs.base import Feedback
from cloudai.space import Range, Space

BOWL = Space({}, (Range("x", -5.0, 5.0), Range("y", -5.0, 5.0)))


def bowl(p: dict[str, Any]) -> float:
    return -((p["x"] - 2) ** 2) - (p["y"] - 1) ** 2


class OneAtATimeGym(FunctionGym):
    """Finishes one pending trial per ``step_wait``, picked by ``rng``: completion order is random."""

    def __init__(self, *args: Any, rng: random.Random, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rng = rng

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        step, action = self._pending.pop(self.rng.randrange(len(self._pending)))
        value = self.fn(action)
        return [Feedback(step, 1, action, value, [value], "ok")]


class Recording(OptunaAgent):
    def update_policy(self, feedback: Feedback) -> None:
        self.told = [*getattr(self, "told", []), feedback.step]
        super().update_policy(feedback)


def test_parallel_optuna_asks_the_same_whatever_the_completion_order() -> None:
    runs = []
    for order_seed in (1, 2, 3):
        gym = OneAtATimeGym(BOWL, bowl, max_in_flight=4, rng=random.Random(order_seed))
        agent = build_agent(Recording, gym, 14, seed=7, max_parallel=4, n_startup_trials=4)
        assert agent.run() == 14
        assert agent.told == list(range(1, 15))  # told in step order, not completion order
        assert gym.most_in_flight == 4
        runs.append(gym.asked)
    assert runs[0] == runs[1] == runs[2]


def test_live_random_search_with_a_small_range_runs_to_agent_steps() -> None:
    space = Space({}, (Range("n", 1, 3, dtype="int"),))
    gym = FunctionGym(space, lambda p: float(p["n"]))
    gym.live = True  # a live env moves on: the same point is a new trial
    agent = build_agent(RandomSearchAgent, gym, 50, seed=1)
    assert agent.run() == 50
    assert agent.stop_reason is None


def test_offline_random_search_says_why_it_stops_short() -> None:
    space = Space({}, (Range("n", 1, 3, dtype="int"),))
    agent = build_agent(RandomSearchAgent, FunctionGym(space, lambda p: float(p["n"])), 50, seed=1)
    assert agent.run() == 3
    assert agent.stop_reason is not None and "exhausted after 3 distinct point(s)" in agent.stop_reason


def test_grid_search_says_why_it_stops_short(grid_space: Space) -> None:
    agent = build_agent(GridSearchAgent, FunctionGym(grid_space, lambda p: 0.0), 20)
    assert agent.run() == 12
    assert agent.stop_reason == "the grid has 12 point(s), all tried (fewer than agent_steps)"


def test_enqueued_point_first_and_not_asked_again(grid_space: Space) -> None:
    gym = FunctionGym(grid_space, lambda p: 0.0)
    agent = build_agent(GridSearchAgent, gym, 12, enqueue=[{"a": 2, "b": "y"}])
    assert agent.run() == 12
    assert gym.asked[0] == {"a": 2, "b": "y"}
    assert len({(p["a"], p["b"]) for p in gym.asked}) == 12  # the grid skipped it


def test_enqueued_point_already_recorded_is_not_run_again(grid_space: Space) -> None:
    done = Feedback(1, 1, {"a": 2, "b": "y"}, 0.0, [0.0], "ok")
    gym = FunctionGym(grid_space, lambda p: 0.0, history=[done])
    agent = build_agent(GridSearchAgent, gym, 3, enqueue=[{"a": 2, "b": "y"}])
    agent.run()
    assert {"a": 2, "b": "y"} not in gym.asked


def test_warm_start_informs_optuna_but_never_becomes_best() -> None:
    warm = [Feedback(i, 1, {"x": 2.0, "y": 1.0}, 100.0, [100.0], "ok") for i in range(1, 4)]
    agent: BaseAgent = build_agent(OptunaAgent, FunctionGym(BOWL, bowl), 2, seed=3)
    agent.warm_start(warm)
    agent.run()
    assert isinstance(agent, OptunaAgent)
    assert len(agent.study.trials) == 5  # 3 told first, then 2 asked
    assert agent.best is not None and agent.best.reward < 100.0


def test_sweeps_ignore_warm_start(grid_space: Space) -> None:
    gym = FunctionGym(grid_space, lambda p: 0.0)
    agent = build_agent(GridSearchAgent, gym, 12)
    agent.warm_start([Feedback(1, 1, {"a": 1, "b": "w"}, 5.0, [5.0], "ok")])
    assert agent.run() == 12 and {"a": 1, "b": "w"} in gym.asked
