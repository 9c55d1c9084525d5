"""best.toml's reward per env_params regime: a configuration good only in the easy regime must show it."""

from __future__ import annotations

from typing import Any

from cloudai.config.test import EnvParamSpec
from cloudai.envs.base import Feedback
from cloudai.envs.env_params import EnvParamSampler
from cloudai.run.best import regime_notes
from cloudai.space import Categorical, Range, Space

SPACE = Space({}, (Categorical("load", (0.0, 0.5, 0.9)), Range("jitter", 0.0, 0.3)))
SAMPLER = EnvParamSampler({"load": EnvParamSpec(), "jitter": EnvParamSpec()}, SPACE, 0)
BEST = {"algo": "ring"}


def step(n: int, action: dict[str, Any], reward: float, load: float, jitter: float, status: str = "ok") -> Feedback:
    return Feedback(n, 1, action, reward, [reward], status, info={"env_params": {"load": load, "jitter": jitter}})


def test_the_best_actions_reward_in_each_regime_and_the_regimes_it_never_met() -> None:
    steps = [
        step(1, BEST, 50.0, 0.0, 0.05),
        step(2, BEST, 30.0, 0.5, 0.05),
        step(3, {"algo": "tree"}, 45.0, 0.9, 0.05),  # another action: not counted
        step(4, BEST, 40.0, 0.0, 0.25, "cached"),
        step(5, BEST, -1.0, 0.5, 0.25, "failed"),  # not a measurement
    ]
    lines = regime_notes(steps, steps[0], SAMPLER)
    assert lines[0].startswith("Reward of this action per env_params regime")
    assert "  load=0.0: 45 / 40 (n=2)" in lines
    assert "  load=0.5: 30 / 30 (n=1)" in lines
    assert "  jitter=[0, 0.1): 40 / 30 (n=2)" in lines
    assert "  jitter=[0.2, 0.3]: 40 / 40 (n=1)" in lines
    assert lines[-2] == "  across regimes: mean 38.75, min 30"  # over the 4 regimes measured
    assert lines[-1] == "  never measured in: load=0.9, jitter=[0.1, 0.2) (a good result there is unproven)"


def test_nothing_without_env_params() -> None:
    assert regime_notes([step(1, BEST, 1.0, 0.0, 0.0)], step(1, BEST, 1.0, 0.0, 0.0), None) == []
