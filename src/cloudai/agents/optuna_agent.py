"""``optuna``: an Optuna sampler (TPE by default) through ``study.ask()`` / ``study.tell()``, maximizing reward.

``agent_config.sampler`` picks the sampler (``cloudai.agents.optuna_samplers``). With several
``agent_objectives`` the study is multi-objective: each objective's metric is told with its
direction (TPE becomes MOTPE; ``nsga2`` is NSGA-II) and ``agent_constraints`` are told as Optuna
constraints. The study lives in a journal file Optuna's tools open (``optuna_storage``).

Each dimension becomes an Optuna distribution: a list → ``CategoricalDistribution`` (its values when they are
all None/bool/int/float/str, else their indices), or with ``agent_config.ordinal`` a list of three or more
numbers → ``IntDistribution`` over its sorted values' indices (an ordered axis, a log scale for powers of two);
a range → ``FloatDistribution`` / ``IntDistribution`` with ``log``; indices are mapped back on ask. ``ordinal``
is off by default: it helps TPE on the aiconfigurator landscape, but on a training space with a validity rule
(``benchmarks/bench_constraints.py``) TPE's Parzen estimator over a few indices collapsed onto points it had
measured and the run stopped on repeats short of the target in 4 of 5 seeds; a categorical kernel keeps
weight on every value. Local search uses the order either way. Several trials may be asked before any is told
(``max_parallel``); TPE's constant liar keeps them apart.

Local search (``agent_config.local_search``, TPE, single objective): after the startup trials, that share of the
trials is a point the workload's model proposes (``BaseGym.proposals``) or one next to the best measured ones
(``neighbours``; ``_local_tiers`` says which, in which order) that no trial has had yet, enqueued for Optuna (so
TPE is told it like any trial); when there is none, TPE asks alone. TPE finds the good region of a discrete space
quickly, then keeps drawing from a wide density around it: on the aiconfigurator landscape (82 944 points, 20
seeds, 200 trials, with its SLA) TPE alone reaches a median 87.8 % of the optimum (5/20 runs at 98 %), with local
search 99.6 % (16/20) (``benchmarks/bench_aiconfigurator.py --section landscape``); on ``bench_constraints.py``'s
training space, 98 % of the best in 135 steps over 5 seeds instead of 170. The model's proposals took the question
set (``--section questions``) from 39 to 48 of 48 runs at 98 % of ``aiconfigurator cli default``'s best.

Failed, timed-out and infeasible (``constraint``) steps are told as COMPLETE with the env's penalty reward *and* an
Optuna constraint violation (``Trial.set_constraint``). Why not ``TrialState.FAIL``: TPE ignores failed trials, so
it would keep proposing the region that broke. Why not the penalty alone: its value competes with real rewards
(with the ``negative`` reward every real reward may be below -1). As a violated constraint, TPE ranks the step
below every feasible one and learns to avoid it whatever the penalty is.

Where the rule is vectorised (lists and ranges alike), TPE's candidates are judged by it before TPE picks one
(``optuna_valid``): after its random startup trials TPE proposes valid points only, and no ask is spent on a
refusal (``benchmarks/bench_constraints.py``: 98 % in 88 steps over 5 seeds, 135 before; drawing the startup
trials from the valid set too cost 312: TPE learns from the refused random ones). What only the scalar rule can
tell (a memory estimate) goes the way below.

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

import heapq
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import optuna
from optuna.distributions import BaseDistribution

from cloudai.agents.base import MAX_REJECTS, AgentConfig, BaseAgent
from cloudai.agents.neighbours import neighbours, ordinal_values
from cloudai.agents.objective_values import constraint_values, objective_values
from cloudai.agents.optuna_config import OptunaConfig
from cloudai.agents.optuna_draws import valid_draw, validity
from cloudai.agents.optuna_params import distribution, suggest
from cloudai.agents.optuna_pruners import build_pruner
from cloudai.agents.optuna_samplers import build_sampler, sampler_note, sampler_problem
from cloudai.agents.optuna_storage import fresh_storage, study_name
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, first_value, point_problem

_NATIVE = (type(None), bool, int, float, str)
LOCAL_POOL = 20  # the best measured points whose neighbours local search tries, best first
PLATEAU = 0.01  # points within 1 % of the best are the best's plateau: local search tries all their neighbours
HELP_AFTER = 20  # refused asks in a row before the next trial is a uniformly drawn valid point
FRESH_AFTER = 5  # cached steps in a row before a repeated proposal is replaced by an untried point


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
        self._by_index: dict[str, tuple[Any, ...]] = {}  # lists asked by index: ordered ones, non-native values
        ordered: set[str] = set()
        for d in self.space.dims:
            if cfg.ordinal and (values := ordinal_values(d)) is not None:
                self._by_index[d.name] = values
                ordered.add(d.name)
            elif isinstance(d, Categorical) and not all(isinstance(c, _NATIVE) for c in d.choices):
                self._by_index[d.name] = d.choices
        self.distributions: dict[str, BaseDistribution] = {  # by Optuna param name (``_param``)
            self._param(d.name): distribution(d, d.name in self._by_index, d.name in ordered) for d in self.space.dims
        }
        self._local_share = cfg.local_search if cfg.sampler == "tpe" else 0.0  # measured with TPE only
        self._startup = cfg.n_startup_trials
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
            sampler=build_sampler(
                cfg,
                validity(env, self.space, self.distributions, self._param) if cfg.sampler == "tpe" else None,
                conditional=bool(self.space.when),
            ),
            pruner=build_pruner(cfg.pruner) if cfg.pruner is not None else None,
        )
        self._running: dict[int, optuna.Trial] = {}  # step -> asked, not yet told
        self._index_rng = np.random.default_rng(cfg.seed)  # uniform valid points (see the module docstring)
        self._asks = 0  # select_action calls: which of them search locally
        self._tried: set[str] = set()  # every point asked or told: local search proposes none of them again
        self._measured: list[tuple[float, int, dict[str, Any]]] = []  # (reward, -step, point) of ok steps
        self._branch_asks: dict[tuple[str, Any], int] = {}  # (selector, value) -> steps asked on it
        self._cached_in_a_row = 0  # steps answered from the env's cache since the last measured one (``_stuck``)
        self._invalid: set[str] = set()  # points local search found the rule refuses
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
        self._asks += 1
        queued = False  # a whole point enqueued for the next ask (it names its branch)
        if self._local_turn() and (point := self._untried_neighbour()) is not None:
            self._enqueue(point)
            queued = True
        branch = self._next_branch()
        proposed: dict[str, Any] | None = None  # the last refused proposal
        replaced = False  # a repeat of a tried point was replaced by ``_fresh_point`` (once per step)
        for refusals in range(MAX_REJECTS):
            if (
                refusals >= HELP_AFTER
                and (point := valid_draw(self.env, self.space, self._index_rng, proposed)) is not None
            ):
                self._enqueue(point)
                queued = True
            trial = self._ask({} if queued else branch)
            queued = False
            action = self._action(trial.params)
            if self._stuck() and not replaced and _key(action) in self._tried and (point := self._fresh_point()):
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)  # a repeat: the study has it already
                self._enqueue(point)
                trial, replaced = self._ask({}), True
                action = self._action(trial.params)
            step = self.env.next_step
            self._running[step] = trial
            self._tried.add(_key(action))
            if not self.refused(action):  # refused: told (update_policy pops the trial) and recorded once
                return step, action
            proposed = action
        self.gave_up(MAX_REJECTS)
        return None

    def _next_branch(self) -> dict[str, Any]:
        """The branch of the next step's asks, per selector knob the agent chooses (``Space.when``): the value asked
        least so far, so each branch gets an equal share of the steps, as ``aiconfigurator cli default`` sweeps
        agg and disagg alike. Left to TPE, the branch that fits and scores first (agg) takes nearly every ask, and
        the other (disagg: most points infeasible until TPE learns where) is never searched: on
        ``aiconf_serve_mode`` 2 disagg steps in 200, best agg 215.4 tokens/s/GPU against disagg's 256.5."""
        chosen: dict[str, Any] = {}
        for selector in dict.fromkeys(sel for sel, _ in self.space.when.values()):
            dim = next((d for d in self.space.dims if d.name == selector), None)
            if isinstance(dim, Categorical):
                value = min(dim.choices, key=lambda c: self._branch_asks.get((selector, c), 0))
                self._branch_asks[(selector, value)] = self._branch_asks.get((selector, value), 0) + 1
                chosen[selector] = value
        return chosen

    def _ask(self, branch: Mapping[str, Any]) -> optuna.Trial:
        """One trial; in a space with branches (``Space.when``) the knobs of a branch are asked only when the
        trial chose that branch, so TPE learns each branch from its own trials and no draw varies a knob that
        does not apply (Optuna's define-by-run conditional space). ``branch``: the selectors' values to ask
        (``_next_branch``), enqueued as a partial trial whose other knobs the sampler draws."""
        when = self.space.when
        if not when:
            return self.study.ask(self.distributions)
        if branch:
            by_index = self._by_index
            self.study.enqueue_trial(
                {self._param(n): by_index[n].index(v) if n in by_index else v for n, v in branch.items()}
            )
        trial = self.study.ask({self._param(n): self.distributions[self._param(n)] for n in self.space.names
                                if n not in when})  # fmt: skip
        chosen = self._action(trial.params)
        for name in self.space.names:
            if name in when and name not in self.space.inactive(chosen):
                suggest(trial, self._param(name), self.distributions[self._param(name)])
        return trial

    def _enqueue(self, point: dict[str, Any]) -> None:
        self.study.enqueue_trial(self._params(point))

    def _fresh_point(self) -> dict[str, Any] | None:
        """What to ask instead of a point the agent has tried (a cache hit, a refused draw again): an untried
        neighbour of the best (``_untried_neighbour``), else an untried valid point of a finite space drawn uniformly
        (``valid_draw``, or 64 grid draws without a vectorised rule); None: neither. TPE at a local optimum keeps
        proposing what it measured, and ``REPEATS_IN_A_ROW`` such steps end the run short of the best."""
        point = self._untried_neighbour() if not self.objectives else None
        if point is None and all(isinstance(d, Categorical) for d in self.space.dims):
            drawn = valid_draw(self.env, self.space, self._index_rng, None)  # None: no vectorised rule
            indices = self._index_rng.integers(0, self.space.grid_size, 64)
            draws = [drawn] if drawn else map(self.space.grid_point, indices)
            point = next((p for p in draws if _key(p) not in self._tried and self.env.violation(p) is None), None)
        return point

    def _stuck(self) -> bool:
        """Whether the last ``FRESH_AFTER`` steps were all cache hits (a live env caches nothing): TPE circles a
        local optimum. Not sooner: replacing every repeat (refused draws too) cost ``bench_constraints.py`` 193
        steps to 98 % instead of 88 (TPE learns from its repeats early on)."""
        return not self.env.live and self._cached_in_a_row >= FRESH_AFTER

    def _local_turn(self) -> bool:
        """Whether this ask searches next to the best points: ``local_search`` of the asks after the startup
        trials, spread evenly (0.5: every other one)."""
        share, done = self._local_share, self._asks - self._startup
        return not self.objectives and done > 0 and math.floor(done * share) > math.floor((done - 1) * share)

    def _untried_neighbour(self) -> dict[str, Any] | None:
        """A point next to a measured one that no trial has had and the workload's rule allows (``_local_tiers``:
        which points, in which order)."""
        for around in self._local_tiers():
            for i in self._index_rng.permutation(len(around)):
                candidate = around[int(i)]
                if (key := _key(candidate)) not in self._tried and key not in self._invalid:
                    if self.env.violation(candidate) is None:
                        return candidate
                    if self.env.env_param_sampler() is None:  # the rule only learns to refuse more: for good
                        self._invalid.add(key)
        return None

    def _local_tiers(self) -> Iterator[list[dict[str, Any]]]:
        """Where local search looks, nearest the best first: one move from each point within ``PLATEAU`` of the
        best (equal configurations abound: tp 2 x pp 1 and tp 1 x pp 2), then two moves from the best (a local
        optimum of single moves: a worker ratio is two knobs), then one move from the rest of the ``LOCAL_POOL``
        best. Measured on the aiconfigurator landscape (``ordinal`` on), 20 seeds: 18/20 runs reach 98 % of the
        optimum with the SLA and 18/20 without; single moves of the best alone, 19/20 and 12/20."""
        ranked = heapq.nlargest(LOCAL_POOL, self._measured)
        if not ranked:
            return
        top = ranked[0][0]
        near = sum(reward >= top - abs(top) * PLATEAU for reward, _, _ in ranked)
        points = [point for _, _, point in ranked]
        yield from ([p] for p in self.env.proposals())  # the model's picks from what was measured, best first
        for point in points[:near]:
            yield neighbours(self.space, point)
        yield neighbours(self.space, points[0], knobs=2)
        for point in points[near:]:
            yield neighbours(self.space, point)

    def _remember(self, feedback: Feedback) -> None:
        if feedback.info.get("recorded") is not False:  # a refused draw took no step: the run goes on as it was
            self._cached_in_a_row = self._cached_in_a_row + 1 if feedback.status == "cached" else 0
        point = {name: feedback.action[name] for name in self.space.names if name in feedback.action}
        self._tried.add(_key(point))
        if feedback.status != "ok" or not math.isfinite(feedback.reward) or feedback.info.get("warm_start"):
            return  # warm-start steps inform TPE but never become best (``BaseAgent``), here neither
        if point_problem(self.space, point) is None:  # not a resumed step of an edited space: no neighbours
            self._measured.append((feedback.reward, -feedback.step, point))  # ties: the earlier step first

    def update_policy(self, feedback: Feedback) -> None:
        self._remember(feedback)
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
            params = self._params(feedback.action)
            recorded = optuna.trial.create_trial(
                params=params,
                distributions=self._distributions(params),
                values=values,
                constraints=constraints,
                user_attrs=attrs,
            )
        except (KeyError, ValueError):
            return  # not a point of this space (e.g. the space changed since the recorded run)
        self.study.add_trial(recorded)

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
            params = self._params(feedback.action)
            recorded = optuna.trial.create_trial(
                state=optuna.trial.TrialState.PRUNED,
                params=params,
                distributions=self._distributions(params),
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

    def _param(self, name: str) -> str:
        """The Optuna param of knob ``name``: a list asked by index says so (``"d_bs (index)"``), so that the
        dashboard's numbers are not mistaken for the knob's values."""
        return f"{name} (index)" if name in self._by_index else name

    def _params(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """Optuna params of an action (``KeyError``/``ValueError``: not a point of this space); a knob of a branch
        the action did not choose has none."""
        by_index, off = self._by_index, self.space.inactive(point)
        names = [n for n in self.space.names if n not in off]
        return {self._param(n): by_index[n].index(point[n]) if n in by_index else point[n] for n in names}

    def _distributions(self, params: Mapping[str, Any]) -> dict[str, BaseDistribution]:
        """The distributions of ``params`` (a trial of one branch has its knobs alone)."""
        return {name: self.distributions[name] for name in params}

    def _action(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The action of Optuna params (``_params`` inverted); a knob not asked (another branch's) at its first
        value, as the env records it (``Space.canonical``)."""
        by_index, out = self._by_index, {}
        for n in self.space.names:
            if (param := self._param(n)) not in params:
                out[n] = first_value(self.space.dim(n))
            else:
                out[n] = by_index[n][params[param]] if n in by_index else params[param]
        return out


def _key(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True, default=str)
