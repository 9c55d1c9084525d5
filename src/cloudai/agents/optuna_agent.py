"""``optuna``: Optuna's TPE sampler through ``study.ask()`` / ``study.tell()``, maximizing reward.

Each dimension becomes an Optuna distribution: a list → ``CategoricalDistribution`` (its
values when they are all None/bool/int/float/str, else their indices, mapped back on ask),
a range → ``FloatDistribution`` / ``IntDistribution`` with ``log``. Several trials may be
asked before any is told (``max_parallel``); TPE's constant liar keeps them apart.

Failed, timed-out and infeasible (``constraint``) steps are told as COMPLETE with the
env's penalty reward *and* an Optuna constraint violation (``Trial.set_constraint``). Why
not ``TrialState.FAIL``: TPE ignores failed trials, so it would keep proposing the region
that broke. Why not the penalty alone: its value competes with real rewards (with the
``negative`` reward every real reward may be below -1). As a violated constraint, TPE
ranks the step below every feasible one and learns to avoid it whatever the penalty is.

Steps the agent never asked (``--resume`` replays) are added with ``study.add_trial``;
ones that do not fit the current space are skipped. Optuna's INFO logging is silenced.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from pydantic import Field

from cloudai.agents.base import AgentConfig, BaseAgent
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range

_INFEASIBLE = "cloudai_infeasible"  # constraint key: > 0 for failed/timeout/constraint steps
_NATIVE = (type(None), bool, int, float, str)


class OptunaConfig(AgentConfig):
    """``agent_config`` for ``optuna``: TPESampler's knobs a user may want to turn."""

    n_startup_trials: int = Field(default=10, ge=0)  # random trials before TPE models the landscape
    multivariate: bool = True  # model dimensions jointly (Optuna 5's default for one objective)
    constant_liar: bool = True  # treat in-flight trials as bad, so parallel asks spread out


class OptunaAgent(BaseAgent):
    name = "optuna"
    samples_env_params = True
    can_ask_ahead = True
    config_model = OptunaConfig

    def __init__(self, env: BaseGym, config: AgentConfig, max_steps: int) -> None:
        super().__init__(env, config, max_steps)
        cfg = self.config
        assert isinstance(cfg, OptunaConfig)  # lifted by BaseAgent
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space = env.define_action_space()
        self.distributions: dict[str, BaseDistribution] = {d.name: _distribution(d) for d in self.space.dims}
        self._by_index = {  # categorical dims Optuna cannot hold as values: asked by index
            d.name: d.choices
            for d in self.space.dims
            if isinstance(d, Categorical) and not all(isinstance(c, _NATIVE) for c in d.choices)
        }
        sampler = optuna.samplers.TPESampler(
            seed=cfg.seed,
            n_startup_trials=cfg.n_startup_trials,
            multivariate=cfg.multivariate,
            constant_liar=cfg.constant_liar,
        )
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self._running: dict[int, optuna.Trial] = {}  # step -> asked, not yet told

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        trial = self.study.ask(self.distributions)
        step = self.env.next_step
        self._running[step] = trial
        return step, {name: self._external(name, value) for name, value in trial.params.items()}

    def update_policy(self, feedback: Feedback) -> None:
        infeasible = 0.0 if feedback.status in ("ok", "cached") else 1.0
        trial = self._running.pop(feedback.step, None)
        if trial is not None:
            trial.set_constraint(_INFEASIBLE, infeasible)
            self.study.tell(trial, feedback.reward)
            return
        try:
            params = {name: self._internal(name, feedback.action[name]) for name in self.distributions}
            recorded = optuna.trial.create_trial(
                params=params,
                distributions=self.distributions,
                value=feedback.reward,
                constraints={_INFEASIBLE: infeasible},
            )
        except (KeyError, ValueError):
            return  # not a point of this space (e.g. the space changed since the recorded run)
        self.study.add_trial(recorded)

    def _external(self, name: str, value: Any) -> Any:
        return self._by_index[name][value] if name in self._by_index else value

    def _internal(self, name: str, value: Any) -> Any:
        return self._by_index[name].index(value) if name in self._by_index else value


def _distribution(dim: Categorical | Range) -> BaseDistribution:
    if isinstance(dim, Categorical):
        native = all(isinstance(c, _NATIVE) for c in dim.choices)
        return CategoricalDistribution(dim.choices if native else tuple(range(len(dim.choices))))
    if dim.dtype == "int":
        low = math.ceil(dim.low)
        return IntDistribution(low, max(low, math.floor(dim.high)), log=dim.log)
    return FloatDistribution(dim.low, dim.high, log=dim.log)
