"""``optuna``: an Optuna sampler (TPE by default) through ``study.ask()`` / ``study.tell()``, maximizing reward.

``agent_config.sampler`` picks the sampler (``cloudai.agents.optuna_samplers``). With several
``agent_objectives`` the study is multi-objective: each objective's metric is told with its
direction (TPE becomes MOTPE; ``nsga2`` is NSGA-II) and ``agent_constraints`` are told as Optuna
constraints. The study lives in a journal file Optuna's tools open (``optuna_storage``).

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

The workload's rule is checked inside the sampler: an asked point that breaks it is never submitted. The trial
is told at once like an infeasible step above (COMPLETE, the penalty, ``cloudai_infeasible`` violated: TPE learns
the region, and the study keeps it for the dashboard with user attrs ``status = "infeasible"`` and the ``reason``),
the point is recorded once in trajectory.csv as ``infeasible`` (no job, no share of ``agent_steps``; a resumed
run tells it again from there), and Optuna is asked again, up to ``MAX_REJECTS`` times in a row. Where the valid
part is a sliver (0.8 % of a 10^6-point grid), asking Optuna until it hits one would cost hundreds of ask/tell
rounds (each slower as the study grows): after ``HELP_AFTER`` refusals in a row on a finite space, the next trial
is a valid point enqueued for it (``study.enqueue_trial``): the first valid one after the last refused proposal in
grid order (its leading knobs kept: what the sampler meant), else a uniformly drawn one. Not sooner: on the
benchmark's space (24 % valid) repairing after 1-3 refusals cost TPE 20-80 % more steps to 98 % of the best than
letting it learn from 20 (``benchmarks/bench_constraints.py``).

Steps the agent never asked (``--resume`` replays) are added with ``study.add_trial``;
ones that do not fit the current space are skipped. Optuna's INFO logging is silenced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from cloudai.agents.base import MAX_REJECTS, AgentConfig, BaseAgent
from cloudai.agents.objective_values import constraint_values, objective_values
from cloudai.agents.optuna_config import OptunaConfig
from cloudai.agents.optuna_pruners import build_pruner
from cloudai.agents.optuna_samplers import build_sampler, sampler_note, sampler_problem
from cloudai.agents.optuna_storage import fresh_storage, study_name
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range

_NATIVE = (type(None), bool, int, float, str)
HELP_AFTER = 20  # refused asks in a row before the next trial is a uniformly drawn valid point
_INDEX_DRAWS = 100_000  # grid indices drawn (and checked by the rule) for one valid point


class OptunaAgent(BaseAgent):
    name = "optuna"
    samples_env_params = True
    can_ask_ahead = True
    config_model = OptunaConfig

    @classmethod
    def entry_problems(cls, config: AgentConfig, objectives: int) -> list[tuple[str, str]]:
        assert isinstance(config, OptunaConfig)
        problems = [("sampler", p) for p in [sampler_problem(config.sampler, objectives)] if p]
        if config.pruner is not None and objectives > 1:
            problems.append(("pruner", "Optuna prunes single-objective studies only; drop the pruner or objectives"))
        return problems

    @classmethod
    def list_notes(cls) -> list[str]:
        return [sampler_note()]

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
        self.metrics = env.define_observation_space()
        self.objectives = env.objectives if len(env.objectives) > 1 else ()  # one objective: the reward
        directions: list[Literal["maximize", "minimize"]] = [
            "maximize" if o.direction == "max" else "minimize" for o in self.objectives
        ] or ["maximize"]
        storage, self._publish_journal = fresh_storage(env.record_dir)
        self.study = optuna.create_study(
            storage=storage,
            study_name=study_name(env.record_dir),
            directions=directions,
            sampler=build_sampler(cfg),
            pruner=build_pruner(cfg.pruner) if cfg.pruner is not None else None,
        )
        self._running: dict[int, optuna.Trial] = {}  # step -> asked, not yet told
        self._index_rng = np.random.default_rng(cfg.seed)  # uniform valid points (see the module docstring)
        if cfg.pruner is not None and not self.objectives:
            env.watch_progress(self._should_prune, cfg.pruner.poll_s)

    def replayed(self) -> None:
        self._publish_journal()

    def _should_prune(self, step: int, new: Sequence[tuple[int, float]]) -> bool:
        """Report ``step``'s new intermediate rewards to its trial; Optuna's pruner decides."""
        trial = self._running.get(step)
        if trial is None:
            return False
        for at, value in new:
            trial.report(value, at)
        return trial.should_prune()

    def run(self) -> int:
        try:
            return super().run()
        finally:  # asked but never told (interrupt, error): not in trajectory.csv, so FAIL in the study
            for trial in self._running.values():
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            self._running.clear()

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        proposed: dict[str, Any] | None = None  # the last refused proposal
        for refusals in range(MAX_REJECTS):
            if refusals >= HELP_AFTER and (point := self._valid_draw(proposed)) is not None:
                self.study.enqueue_trial({name: self._internal(name, point[name]) for name in self.distributions})
            trial = self.study.ask(self.distributions)
            step = self.env.next_step
            self._running[step] = trial
            action = {name: self._external(name, value) for name, value in trial.params.items()}
            if not self.refused(action):  # refused: told (update_policy pops the trial) and recorded once
                return step, action
            proposed = action
        self.gave_up(MAX_REJECTS)
        return None

    def update_policy(self, feedback: Feedback) -> None:
        constraints = constraint_values(feedback, self.metrics, self.env.constraints)
        values = self._values(feedback)
        attrs: dict[str, Any] = {"step": feedback.step, "status": feedback.status}
        if feedback.info.get("recorded") is False:  # a refused draw already recorded once: it took no step
            del attrs["step"]
        if feedback.info.get("reason"):
            attrs["reason"] = str(feedback.info["reason"])
        trial = self._running.pop(feedback.step, None)
        if feedback.status == "pruned":
            self._tell_pruned(feedback, trial, attrs)
            return
        if trial is not None:
            for key, value in constraints.items():
                trial.set_constraint(key, value)
            for key, value in attrs.items():
                trial.set_user_attr(key, value)
            self.study.tell(trial, values)
            return
        try:
            params = {name: self._internal(name, feedback.action[name]) for name in self.distributions}
            recorded = optuna.trial.create_trial(
                params=params,
                distributions=self.distributions,
                values=values,
                constraints=constraints,
                user_attrs=attrs,
            )
        except (KeyError, ValueError):
            return  # not a point of this space (e.g. the space changed since the recorded run)
        self.study.add_trial(recorded)

    def _valid_draw(self, proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        """A valid point of a finite space: the first valid one after ``proposed`` in grid order (the last knobs
        changed, the first kept: what the sampler meant), else a uniformly drawn one; None: no rule, a range, none
        found."""
        rule = self.env.valid_points()
        if rule is None or not all(isinstance(d, Categorical) for d in self.space.dims):
            return None
        if proposed is not None:
            index = rule.next_valid(self.space.grid_index(proposed))
            if index is not None and self.env.violation(point := self.space.grid_point(index)) is None:
                return point
        for index in self._index_rng.integers(0, self.space.grid_size, _INDEX_DRAWS):
            if rule.is_valid(int(index)):
                point = self.space.grid_point(int(index))
                if self.env.violation(point) is None:  # env_params: the rule with this step's draw
                    return point
        return None

    def _tell_pruned(self, feedback: Feedback, trial: optuna.Trial | None, attrs: dict[str, Any]) -> None:
        """PRUNED: Optuna ranks it by its last intermediate value (replayed: the recorded one, at its step)."""
        if trial is not None:
            for key, value in attrs.items():
                trial.set_user_attr(key, value)
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return
        at = int(feedback.info.get("pruned_at", 0))
        intermediate = {at: feedback.reward} if math.isfinite(feedback.reward) else None
        try:
            params = {name: self._internal(name, feedback.action[name]) for name in self.distributions}
            recorded = optuna.trial.create_trial(
                state=optuna.trial.TrialState.PRUNED,
                params=params,
                distributions=self.distributions,
                user_attrs=attrs,
                intermediate_values=intermediate,
            )
        except (KeyError, ValueError):
            return
        self.study.add_trial(recorded)

    def _values(self, feedback: Feedback) -> Sequence[float]:
        if not self.objectives:
            return [feedback.reward]
        return objective_values(feedback, self.metrics, self.objectives, self.config.penalty_reward)

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
