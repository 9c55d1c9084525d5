"""The contextual ``bandit``: the agent contract, and learning the best algo per background-load regime."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
from tests.contracts.test_agent_contract import AgentContract

from cloudai.agents import AGENTS
from cloudai.agents.bandit import BanditAgent, BanditConfig
from cloudai.agents.base import AgentConfig, BaseAgent
from cloudai.agents.random_search import RandomSearchAgent
from cloudai.config.test import EnvParamSpec
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.envs.env_params import EnvParamSampler
from cloudai.errors import ConfigError
from cloudai.space import Categorical, Range, Space
from cloudai.workloads.synthetic_model import evaluate, expected, infeasible

NODES = 4
FIXED = {"message_size": 1 << 28}
ACTIONS = (
    Categorical("algo", ("ring", "tree", "nvls", "collnet")),
    Categorical("chunk_kb", (256, 1024, 4096)),
    Categorical("num_channels", (2, 4, 8, 16)),
)
LOADS = (0.0, 0.5, 0.9)
SPACE = Space(FIXED, (*ACTIONS, Categorical("background_load", LOADS), Range("jitter", 0.0, 0.3)))
SPECS = {"background_load": EnvParamSpec(weights=[0.5, 0.3, 0.2]), "jitter": EnvParamSpec()}
PENALTY = -1.0


class SyntheticGym(BaseGym):
    """The Synthetic model in-process, with env_params sampled per step as ``CloudAIGymEnv`` does.

    ``env_param_sampler()`` is the seam the bandit peeks through; ``seam=False`` hides it.
    """

    def __init__(self, seed: int = 0, *, seam: bool = True, history: list[Feedback] | None = None) -> None:
        super().__init__()
        self.sampler = EnvParamSampler(SPECS, SPACE, seed)
        self.seam = seam
        self._history = history or []
        self._next = len(self._history) + 1
        self.feedback: list[Feedback] = []

    def env_param_sampler(self) -> EnvParamSampler | None:
        return self.sampler if self.seam else None

    def define_action_space(self) -> Space:
        return SPACE.without(set(SPECS))

    def define_observation_space(self) -> list[str]:
        return ["bus_bw"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [math.nan], {}

    @property
    def next_step(self) -> int:
        return self._next

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        step, self._next = self._next, self._next + 1
        env = self.sampler.sample(step)
        point = {**FIXED, **action, **env}
        if infeasible(point, NODES):
            observation, reward, status = [math.nan], PENALTY, "constraint"
        else:
            bus_bw = evaluate(point, NODES)["bus_bw"]
            observation, reward, status = [bus_bw], bus_bw, "ok"
        info = {"status": status, "env_params": env}
        self.feedback.append(Feedback(step, 1, dict(action), reward, observation, status, False, info))
        return observation, reward, False, info

    def history(self) -> list[Feedback]:
        return list(self._history)


def value(action: dict[str, Any], load: float) -> float:
    """The noise-free reward of an action under a load (the penalty where infeasible)."""
    point = {**FIXED, **action, "background_load": load, "jitter": 0.0}
    return PENALTY if infeasible(point, NODES) else expected(point, NODES)["bus_bw"]


def grid_mean(load: float) -> float:
    """What uniform random sampling earns under a load: every point equally often (random_search's walk)."""
    return statistics.fmean(value(p, load) for p in Space({}, ACTIONS).iter_grid())


def oracle(load: float) -> float:
    return max(value(p, load) for p in Space({}, ACTIONS).iter_grid())


def run_bandit(steps: int, seed: int = 3, *, seam: bool = True, **config: Any) -> tuple[BanditAgent, SyntheticGym]:
    env = SyntheticGym(seed, seam=seam)
    agent = BanditAgent(env, BanditConfig(seed=seed, bins=1, **config), steps)
    assert agent.run() == steps
    return agent, env


def last_rewards(env: SyntheticGym, n: int) -> tuple[list[float], list[float], list[float]]:
    """Over the last n steps: the bandit's noise-free rewards, random sampling's and the oracle's, same loads."""
    tail = env.feedback[-n:]
    loads = [f.env_params["background_load"] for f in tail]
    return (
        [value(f.action, f.env_params["background_load"]) for f in tail],
        [grid_mean(x) for x in loads],
        [oracle(x) for x in loads],
    )


class TestBanditContract(AgentContract):
    @pytest.fixture
    def agent_cls(self) -> type[BaseAgent]:
        return BanditAgent

    def test_is_registered_as_a_sampling_one_at_a_time_agent(self) -> None:
        assert AGENTS.get("bandit") is BanditAgent
        assert BanditAgent.samples_env_params is True and BanditAgent.can_ask_ahead is False


class TestEpsilonGreedyContract(AgentContract):
    @pytest.fixture
    def agent_cls(self) -> type[BaseAgent]:
        return BanditAgent

    def make(self, agent_cls: type[BaseAgent], env: BaseGym, max_steps: int, **config: Any) -> BaseAgent:
        return super().make(agent_cls, env, max_steps, strategy="epsilon_greedy", **config)


def run_random_search(steps: int, seed: int = 3) -> SyntheticGym:
    env = SyntheticGym(seed)
    assert RandomSearchAgent(env, AgentConfig(seed=seed), steps).run() == steps  # a pass per 48 steps
    return env


@pytest.mark.parametrize("strategy", ["ucb1", "epsilon_greedy"])
def test_bandit_beats_random_search_on_synthetic(strategy: str) -> None:
    """Same seed, so the same background_load at every step: only the choices differ."""
    _, env = run_bandit(600, strategy=strategy)
    other = run_random_search(600)
    assert [f.env_params for f in env.feedback] == [f.env_params for f in other.feedback]
    mine, random_, best = last_rewards(env, 200)
    theirs = last_rewards(other, 200)[0]
    assert statistics.fmean(theirs) == pytest.approx(statistics.fmean(random_), rel=0.15)  # ~27 GB/s
    assert statistics.fmean(mine) > statistics.fmean(theirs) + 10
    # epsilon_greedy spends epsilon = 10% of its pulls at random (~27 GB/s): ~0.96 of the oracle at most
    assert statistics.fmean(mine) > statistics.fmean(best) * (0.95 if strategy == "ucb1" else 0.85)


def test_context_beats_one_answer_for_every_regime() -> None:
    """Peeking at the env_params pays: the same bandit blind to them does worse on the same steps."""
    _, seeing = run_bandit(600)
    _, blind = run_bandit(600, seam=False)
    assert [f.env_params for f in seeing.feedback] == [f.env_params for f in blind.feedback]
    assert statistics.fmean(last_rewards(seeing, 200)[0]) > statistics.fmean(last_rewards(blind, 200)[0]) + 2


def test_best_per_context_finds_each_regimes_algo() -> None:
    agent, _ = run_bandit(600)
    best = agent.best_per_context()
    assert set(best) == {(str(load), "[0, 0.3]") for load in LOADS}
    assert best[("0.0", "[0, 0.3]")][0]["algo"] == "ring"
    assert best[("0.9", "[0, 0.3]")][0]["algo"] == "collnet"
    notes = agent.best_notes()
    assert notes[0].startswith("bandit: best action per env_params regime")
    assert "background_load=0.0, jitter=[0, 0.3]: algo='ring'" in notes[1]


def test_range_env_params_are_binned_into_contexts() -> None:
    env = SyntheticGym(1)
    agent = BanditAgent(env, BanditConfig(seed=1, bins=2), 60)
    agent.run()
    assert {regime[1] for regime in agent.arms} == {"[0, 0.15)", "[0.15, 0.3]"}
    assert sum(arm.pulls for arms in agent.arms.values() for arm in arms.values()) == 60


def test_the_context_is_the_step_it_is_chosen_for() -> None:
    """Every pull is booked under the regime the env actually sampled for that step."""
    agent, env = run_bandit(200)
    pulls = {regime: sum(a.pulls for a in arms.values()) for regime, arms in agent.arms.items()}
    counted = {(str(load), "[0, 0.3]"): 0 for load in LOADS}
    for f in env.feedback:
        counted[(str(f.env_params["background_load"]), "[0, 0.3]")] += 1
    assert pulls == counted


def test_ucb1_tries_every_arm_of_a_regime_before_repeating() -> None:
    agent, env = run_bandit(200)
    quiet = [f.action for f in env.feedback if f.env_params["background_load"] == 0.0][:48]
    assert len({tuple(a.values()) for a in quiet}) == 48
    assert len(agent.arms[("0.0", "[0, 0.3]")]) == 48


def test_seeded_runs_repeat_and_seeds_differ() -> None:
    first, second, other = run_bandit(80, seed=5)[1], run_bandit(80, seed=5)[1], run_bandit(80, seed=6)[1]
    assert [f.action for f in first.feedback] == [f.action for f in second.feedback]
    assert [f.action for f in first.feedback] != [f.action for f in other.feedback]


def test_resume_learns_the_recorded_steps() -> None:
    _, first = run_bandit(100)
    resumed = SyntheticGym(3, history=first.feedback)
    agent = BanditAgent(resumed, BanditConfig(seed=3, bins=1), 150)
    assert agent.run() == 150 and [f.step for f in resumed.feedback] == list(range(101, 151))
    assert sum(a.pulls for arms in agent.arms.values() for a in arms.values()) == 150


def test_a_range_without_grid_points_is_refused() -> None:
    class RangeGym(SyntheticGym):
        def define_action_space(self) -> Space:
            return Space({}, (Range("chunk_kb", 64, 8192),))

    with pytest.raises(ConfigError, match="grid_points"):
        BanditAgent(RangeGym(), BanditConfig(), 10)


def test_without_the_seam_it_is_a_plain_bandit() -> None:
    agent, _ = run_bandit(60, seam=False)
    assert list(agent.arms) == [()] and agent.best_notes() == []


@pytest.mark.parametrize(("field", "bad"), [("strategy", "thompson"), ("epsilon", 1.5), ("ucb_c", -1), ("bins", 0)])
def test_config_is_validated(field: str, bad: Any) -> None:
    with pytest.raises(ValueError, match=field):
        BanditConfig.model_validate({field: bad})
