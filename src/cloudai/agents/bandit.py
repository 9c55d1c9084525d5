"""``bandit``: a contextual multi-armed bandit whose context is the env_params of the next step.

Arms are the grid points of the action space (a range joins only with ``grid_points``; a
range without raises ``ConfigError``), so the bandit suits small discrete spaces (tens to
hundreds of points); use ``optuna`` for large or continuous ones. The context of a step is
its env_params *regime* (``EnvParamSampler.regime``: a list param's candidate, one of
``bins`` equal bins of a range param), and each regime runs its own bandit:

* ``ucb1`` (default): every arm once, then ``argmax mean + ucb_c * sigma * sqrt(ln N / n)``
  (``N`` pulls in the regime, ``n`` of the arm). ``sigma`` is the measurement noise: the
  pooled within-arm standard deviation of rewards (the observed reward range until some arm
  was pulled twice). Classic UCB1 assumes rewards in [0, 1]; scaling by the noise makes
  ``ucb_c`` unit-free and keeps a bandwidth-sized reward from drowning in exploration;
* ``epsilon_greedy``: a uniformly random arm with probability ``epsilon`` (or while the
  regime has no pull yet), else the best mean.

The seam: the agent must know step n's env_params *before* choosing step n's action. It
asks the env for its sampler, ``env.env_param_sampler() -> EnvParamSampler | None``, which
is deterministic per (seed, name, step), so peeking at ``sample(env.next_step)`` costs
nothing and draws exactly what the env will apply. An env without env_params (sampler None)
gives one empty context: a plain, non-contextual bandit. One trial at a time
(``can_ask_ahead = False``): the context is that of ``env.next_step``.

Arms that break the workload's rule are never pulled: a chosen arm the rule refuses (``refused``: recorded once as
``infeasible``, no job, no share of ``agent_steps``) leaves the arms for good and another is chosen.
Failed, timed-out and infeasible steps count as pulls with their (penalty) reward; steps
replayed on ``--resume`` are learned from like any other. ``best_per_context()`` gives each
regime's best arm and ``best_notes()`` the lines ``cloudai.run.dse`` adds to best.toml.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from cloudai.agents.base import MAX_REJECTS, AgentConfig, BaseAgent
from cloudai.display import show_value
from cloudai.envs.base import BaseGym, Feedback, Observation

if TYPE_CHECKING:
    from cloudai.envs.env_params import Regime

_RANDOM_TRIES = 64  # random draws for an untried arm before enumerating the grid


class BanditConfig(AgentConfig):
    """``agent_config`` for ``bandit``."""

    strategy: Literal["ucb1", "epsilon_greedy"] = "ucb1"
    epsilon: float = Field(default=0.1, ge=0.0, le=1.0)  # epsilon_greedy: share of random pulls
    ucb_c: float = Field(default=math.sqrt(2), ge=0.0)  # ucb1: exploration weight
    bins: int = Field(default=3, ge=1, le=100)  # regimes per range env param (1: not context)


@dataclass
class _Arm:
    pulls: int = 0
    mean: float = 0.0

    def add(self, reward: float) -> float:
        """Count one pull (Welford); returns its increase of the arm's sum of squared deviations."""
        self.pulls += 1
        delta = reward - self.mean
        self.mean += delta / self.pulls
        return delta * (reward - self.mean)


class BanditAgent(BaseAgent):
    name = "bandit"
    samples_env_params = True
    can_ask_ahead = False
    config_model = BanditConfig

    def __init__(self, env: BaseGym, config: AgentConfig, max_steps: int) -> None:
        super().__init__(env, config, max_steps)
        assert isinstance(self.config, BanditConfig)  # lifted by BaseAgent
        self.cfg = self.config
        self.space = env.define_action_space()
        self.size = self.space.grid_size  # raises ConfigError for a range without grid_points
        self.sampler = env.env_param_sampler()
        self.rng = np.random.default_rng(self.cfg.seed)
        self.arms: dict[Regime, dict[int, _Arm]] = {}
        self._low, self._high = math.inf, -math.inf  # observed reward range
        self._squares, self._dof = 0.0, 0  # pooled within-arm squared deviations, and their degrees of freedom
        self._invalid: set[int] = set()  # arms the workload's rule refuses

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        for _ in range(MAX_REJECTS):
            step = self.env.next_step
            regime = self.sampler.regime(self.sampler.sample(step), self.cfg.bins) if self.sampler else ()
            point = self.space.grid_point(self._choose(self.arms.get(regime, {})))
            if not self.refused(point):
                return step, point
        self.gave_up(MAX_REJECTS)
        return None

    def update_policy(self, feedback: Feedback) -> None:
        try:
            index = self.space.grid_index(feedback.action)
        except (KeyError, ValueError):
            return  # not a point of this grid (e.g. the space changed since the recorded run)
        if feedback.status == "infeasible":
            self._invalid.add(index)
            return
        regime = self.context(feedback.env_params)
        if regime is None:
            return
        reward = feedback.reward if math.isfinite(feedback.reward) else self.cfg.penalty_reward
        arm = self.arms.setdefault(regime, {}).setdefault(index, _Arm())
        self._squares += arm.add(reward)
        self._dof += arm.pulls > 1
        self._low, self._high = min(self._low, reward), max(self._high, reward)

    def context(self, env_params: dict[str, Any]) -> Regime | None:
        """The regime of one step's env_params; ``()`` without a sampler, None when values are missing."""
        if self.sampler is None:
            return ()
        if not all(name in env_params for name in self.sampler.names):
            return None
        return self.sampler.regime(env_params, self.cfg.bins)

    def best_per_context(self) -> dict[Regime, tuple[dict[str, Any], float]]:
        """Each regime seen: its best arm (highest mean, then most pulls) as an action, and that mean."""
        best: dict[Regime, tuple[dict[str, Any], float]] = {}
        for regime, arms in sorted(self.arms.items()):
            index, arm = max(arms.items(), key=lambda item: (item[1].mean, item[1].pulls, -item[0]))
            best[regime] = (self.space.grid_point(index), arm.mean)
        return best

    def best_notes(self) -> list[str]:
        """Comment lines for best.toml: the best action per env_params regime."""
        if self.sampler is None or not self.arms:
            return []
        lines = ["bandit: best action per env_params regime (mean reward):"]
        for regime, (action, mean) in self.best_per_context().items():
            where = ", ".join(f"{name}={label}" for name, label in zip(self.sampler.names, regime, strict=True))
            what = ", ".join(f"{k}={show_value(v)}" for k, v in action.items())
            lines.append(f"  {where}: {what} -> {mean:.6g}")
        return lines

    def noise(self) -> float:
        """The reward's noise (pooled within-arm std); the reward range while no arm has two pulls."""
        if self._dof:
            return math.sqrt(self._squares / self._dof)
        return self._high - self._low if self._high > self._low else 1.0

    def _choose(self, arms: dict[int, _Arm]) -> int:
        if self.cfg.strategy == "epsilon_greedy":
            if not arms or self.rng.random() < self.cfg.epsilon:
                return int(self.rng.integers(self.size))
            return max(arms, key=lambda i: (arms[i].mean, -i))
        if len(arms) + len(self._invalid) < self.size and (untried := self._untried(arms)) is not None:
            return untried
        total = sum(arm.pulls for arm in arms.values())
        bonus = self.cfg.ucb_c * self.noise()

        def score(i: int) -> tuple[float, int]:
            return arms[i].mean + bonus * math.sqrt(math.log(total) / arms[i].pulls), -i

        return max(arms, key=score)

    def _untried(self, arms: dict[int, _Arm]) -> int | None:
        """A uniformly random arm not pulled in this regime yet and not refused by the rule (None: none left)."""
        for _ in range(_RANDOM_TRIES):
            index = int(self.rng.integers(self.size))
            if index not in arms and index not in self._invalid:
                return index
        untried = [i for i in range(self.size) if i not in arms and i not in self._invalid]
        return untried[int(self.rng.integers(len(untried)))] if untried else None
