from __future__ import annotations

import statistics
from typing import Any

import optuna
import pytest
from pydantic import ValidationError

from cloudai.agents.base import AgentConfig
from cloudai.agents.optuna_agent import OptunaAgent, OptunaConfig
from cloudai.agents.random_search import RandomSearchAgent
from cloudai.envs.base import Feedback
from cloudai.space import Categorical, Range, Space

SEEDS = range(5)


@pytest.fixture
def bowl() -> Space:
    return Space({}, (Categorical("mode", ("a", "b", "c")), Range("x", -5.0, 5.0), Range("y", -5.0, 5.0)))


def test_tpe_beats_random_on_a_smooth_function(make_gym: Any, make_agent: Any, quadratic: Any, bowl: Space) -> None:
    """Seeded, so deterministic; the margin (median best -0.03 vs -0.8 when written) is wide on purpose."""

    def best(agent_cls: Any, seed: int) -> float:
        agent = make_agent(agent_cls, make_gym(bowl, quadratic), max_steps=60, seed=seed)
        agent.run()
        return agent.best.reward

    tpe = statistics.median(best(OptunaAgent, s) for s in SEEDS)
    rnd = statistics.median(best(RandomSearchAgent, s) for s in SEEDS)
    assert tpe > -0.15
    assert tpe > rnd + 0.2


def test_same_seed_same_trials(make_gym: Any, make_agent: Any, quadratic: Any, bowl: Space) -> None:
    runs = []
    for seed in (4, 4, 5):
        env = make_gym(bowl, quadratic)
        make_agent(OptunaAgent, env, max_steps=15, seed=seed).run()
        runs.append(env.asked)
    assert runs[0] == runs[1] != runs[2]


def test_failed_steps_are_infeasible_whatever_the_penalty(
    make_gym: Any, make_agent: Any, quadratic: Any, bowl: Space
) -> None:
    """Every real reward is below the penalty (-1): told as plain values, TPE would chase failures."""

    def infeasible(p: dict[str, Any]) -> bool:
        return p["x"] < -2

    env = make_gym(bowl, lambda p: quadratic(p) - 100, infeasible=infeasible, penalty=-1.0)
    agent = make_agent(OptunaAgent, env, max_steps=60, seed=0)
    agent.run()
    told = {t.number: t for t in agent.study.trials}
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in told.values())
    assert {t.constraints["cloudai_infeasible"] for t in told.values()} == {0.0, 1.0}
    assert sum(infeasible(p) for p in env.asked[-30:]) <= 3
    assert agent.best.reward > -100.2


def test_parallel_asks_before_tells(make_gym: Any, make_agent: Any, quadratic: Any, bowl: Space) -> None:
    env = make_gym(bowl, quadratic, max_in_flight=4)
    agent = make_agent(OptunaAgent, env, max_steps=20, max_parallel=4, seed=0)
    assert agent.run() == 20
    assert env.most_in_flight == 4
    assert len(agent.study.trials) == 20
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in agent.study.trials)
    assert len({(p["x"], p["y"]) for p in env.asked}) == 20  # constant liar: in-flight trials spread out


def test_resumed_steps_become_trials(make_gym: Any, make_agent: Any, quadratic: Any, bowl: Space) -> None:
    first = make_gym(bowl, quadratic)
    make_agent(OptunaAgent, first, max_steps=8, seed=0).run()
    foreign = Feedback(9, 1, {"mode": "zzz", "x": 0.0, "y": 0.0}, 0.0, [0.0], "ok")  # not in this space
    history = [*sorted(first.feedback, key=lambda f: f.step), foreign]
    resumed = make_gym(bowl, quadratic, history=history)
    agent = make_agent(OptunaAgent, resumed, max_steps=12, seed=0)
    assert agent.run() == 12
    assert len(resumed.asked) == 3
    recorded = agent.study.trials[:8]
    assert [t.params for t in recorded] == first.asked
    assert [t.value for t in recorded] == [f.reward for f in sorted(first.feedback, key=lambda f: f.step)]


def test_non_native_choices_are_asked_by_index(make_gym: Any, make_agent: Any) -> None:
    choices = ((1, 2), [3, 4], {"k": 5})
    space = Space({}, (Categorical("shape", choices), Range("n", 1, 1024, log=True, dtype="int")))
    history = [Feedback(1, 1, {"shape": [3, 4], "n": 8}, 1.0, [1.0], "ok")]
    env = make_gym(space, lambda p: float(p["n"]), history=history)
    agent = make_agent(OptunaAgent, env, max_steps=30, seed=0)
    agent.run()
    assert all(p["shape"] in choices for p in env.asked)
    assert all(isinstance(p["n"], int) and 1 <= p["n"] <= 1024 for p in env.asked)
    assert agent.study.trials[0].params == {"shape (index)": 1, "n": 8}


def test_config_fields_and_quiet_logging(make_gym: Any, make_agent: Any, bowl: Space) -> None:
    assert OptunaAgent.config_model is OptunaConfig and issubclass(OptunaConfig, AgentConfig)
    with pytest.raises(ValidationError):
        OptunaConfig(n_startup_trials=-1)
    agent = make_agent(OptunaAgent, make_gym(bowl, lambda p: 0.0), max_steps=5, n_startup_trials=2, multivariate=False)
    assert isinstance(agent.study.sampler, optuna.samplers.TPESampler)
    assert optuna.logging.get_verbosity() == optuna.logging.WARNING
    assert OptunaAgent(make_gym(bowl, lambda p: 0.0), AgentConfig(seed=1), 5).select_action([0.0]) is not None


def test_optuna_samples_env_params_and_asks_ahead() -> None:
    assert OptunaAgent.samples_env_params is True and OptunaAgent.can_ask_ahead is True
    assert OptunaAgent.name == "optuna"
