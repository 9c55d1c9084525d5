"""``CloudAIGymEnv``: one agent-driven (test, iteration) as a ``BaseGym``; a step is one trial, a real job.

``step_async(action)`` canonicalises the action (a knob of a branch not chosen pinned to its first value,
``Space.canonical``), gives the trial the next monotonic step number, then, in order:

1. samples the env_params for that step (``EnvParamSampler``; none declared: ``{}``);
2. looks ``(action, env_params)`` up among this run's successful steps: a hit is recorded
   as ``cached`` with the earlier measurement, and no job is launched;
3. asks the workload's rule (``valid_points``, ``cloudai.workloads.validity``): a point that breaks it is
   recorded as ``infeasible`` with ``penalty_reward``, no job is launched and no ``agent_steps`` budget is used.
   The built-in agents never get here with such a point: they skip it (sweeps) or redraw it (samplers, through
   ``reject``, which records it once per point);
4. otherwise submits the job into ``<iteration dir>/<step>/`` through the ``System``.

``step_wait()`` makes ONE ``system.wait`` call for every trial in flight, reads the metrics of each finished one
in ``agent_metrics`` order and turns the first into the reward. A job that failed, timed out or lacks a metric is
recorded as ``failed``/``timeout`` with the penalty reward; its observation has the declared length with NaN
where nothing was measured (0.0 would read as a measurement; NaN is ``null`` in trajectory.csv).

Rows reach ``trajectory.csv`` in step order: a trial that finishes before an earlier one waits in memory.
``close()`` cancels what is still running (those steps are not recorded, leaving a gap a resumed agent may fill),
then writes every finished step. The cache holds successes only (a transient failure deserves a second chance);
an action asked again while its twin is still running waits for it rather than launching a second job.

A measured step outside an upper bound of ``agent_constraints`` on a metric the workload says is monotone
(``Workload.monotone``: TTFT grows with the batch) teaches the rule the points past it (``ValidPoints.bound``):
they are refused before any step, as infeasible, for the rest of the run (a resumed one learns them again from
trajectory.csv). Not with env_params: the regime may move the metric. Every measured step also goes to what the
workload's model proposes from them (``proposals``, ``envs.proposals``).

This env is offline DSE: ``done`` is always False and the episode never changes. The
live-RL env (steps delegated to a ``GymServer``) is a sibling built by ``cloudai.run.dse.build_env``.

What the two share lives beside them: ``TrialSetup`` and the trial bookkeeping (``envs.trial``), how a finished job
becomes a step (``envs.outcome``), a resume's reading back (``envs.resume``), action checks (``envs.knobs``).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.envs.bounds import learn_bound
from cloudai.envs.knobs import check_action
from cloudai.envs.outcome import trial_outcome
from cloudai.envs.proposals import Proposals
from cloudai.envs.pruning import ProgressWatch, PruneJudge
from cloudai.envs.resume import replayed, set_aside_unrecorded
from cloudai.envs.rewards import REWARDS, reward_of
from cloudai.envs.trial import Measured, Trial, TrialSetup, cache_key
from cloudai.errors import ConfigError
from cloudai.jobs.spec import build_spec, finish_job
from cloudai.recordfiles import SCORED, Row
from cloudai.space import Categorical, Space
from cloudai.systems.base import JobStatus, held_interrupts, redeliver
from cloudai.trajectory.records import SYNC_INTERVAL_S, TrajectoryWriter
from cloudai.workloads.base import Workload
from cloudai.workloads.validity import ValidPoints

if TYPE_CHECKING:
    from cloudai.envs.env_params import EnvParamSampler

__all__ = ["CloudAIGymEnv", "TrialSetup", "cache_key", "check_action", "replayed", "trial_outcome"]

_DECIDED = frozenset({*SCORED, "constraint"})  # a point with one of these is not worth another step


class CloudAIGymEnv(BaseGym):
    live = False
    draws_on_request = True

    def __init__(self, setup: TrialSetup) -> None:
        super().__init__()
        if setup.workload is None:
            raise ConfigError("the offline env runs jobs: it needs the entry's workload", field="test_template_name")
        self.setup, self.workload = setup, setup.workload
        self.metrics = tuple(setup.entry.agent.metrics)
        self.objectives, self.constraints = setup.entry.agent.objectives, setup.entry.agent.constraints
        self.record_dir = setup.out_dir
        self.reward_fn = REWARDS.get(setup.entry.agent.reward)
        self.env_names = tuple(setup.sampler.names) if setup.sampler else ()
        self.action_space = setup.space.without(set(self.env_names))
        self.rule = ValidPoints(
            self.action_space,
            self.workload,
            setup.system.gpus_per_node,
            frozenset(self.env_names),
            nodes_set="num_nodes" in setup.entry.scenario_fields,
        )
        self.max_in_flight = setup.max_in_flight
        self._proposals = Proposals(self.rule, self.workload, self.constraints, self.action_space)
        self.writer = TrajectoryWriter(
            setup.out_dir, self.env_names, resume=setup.resume, sync_interval_s=SYNC_INTERVAL_S
        )
        self._history = [self._replayed(row) for row in self.writer.rows]
        scored = (f for f in self._history if f.status in SCORED)
        self._cache = {cache_key(f.action, f.env_params): self._measured(f) for f in scored}
        self._decided = {cache_key(f.action, f.env_params) for f in self._history if f.status in _DECIDED}
        self._refused = {cache_key(f.action, f.env_params) for f in self._history if f.status == "infeasible"}
        for f in self._history:
            if f.status == "constraint":
                measured = dict(zip(self.metrics, f.observation, strict=False))
                learn_bound(self.rule, self.workload, self.constraints, f.action, f.env_params, measured, f.step)
        set_aside_unrecorded(setup.out_dir, self.writer.last_step)
        self._next = self.writer.last_step + 1  # the numbers of an uninterrupted run: env_params draw by step
        self._episode = self._history[-1].episode if self._history else 1
        self._pending: dict[int, Trial] = {}  # in flight, by step
        self._running: dict[str, Trial] = {}  # in flight, by cache key
        self._unwritten: deque[int] = deque()  # started steps not yet in trajectory.csv, ascending
        self._finished: dict[int, tuple[Feedback, float]] = {}  # finished, waiting for earlier steps
        self._reuse = True  # answer a repeated (action, env_params) from the cache; off: measure again
        self._watch: ProgressWatch | None = None  # pruning (watch_progress)

    def watch_progress(self, judge: PruneJudge, poll_s: float) -> bool:
        if type(self.workload).progress is Workload.progress:
            return False  # the workload reports no intermediate values
        self._watch = ProgressWatch(self.workload, self.reward_fn, judge, poll_s)
        return True

    def define_action_space(self) -> Space:
        return self.action_space

    def define_observation_space(self) -> list[str]:
        return list(self.metrics)

    @property
    def next_step(self) -> int:
        return self._next

    @property
    def in_flight(self) -> list[int]:
        return sorted(self._pending)

    def env_param_sampler(self) -> EnvParamSampler | None:
        """The env_params sampler (None without env_params): deterministic per step, so agents may peek."""
        return self.setup.sampler

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        """Nothing to restart offline: the observation before a measurement is all NaN."""
        return self._nothing(), {"episode": self._episode}

    def history(self) -> list[Feedback]:
        return list(self._history)

    def valid_points(self) -> ValidPoints | None:
        return self.rule if self.rule.has_rule else None

    def proposals(self) -> list[dict[str, Any]]:
        return self._proposals.points()

    def reject(self, action: dict[str, Any], reason: str) -> Feedback:
        env = self.setup.sampler.sample(self._next) if self.setup.sampler else {}
        action = self.action_space.canonical(action)
        key = cache_key(action, env)
        if key in self._refused:  # recorded once: a repeat takes no step
            return super().reject(action, reason)
        self._refused.add(key)
        step = self._next
        self._next += 1
        self._unwritten.append(step)
        trial = Trial(step, dict(action), env, key, time.monotonic())
        return self._complete(trial, self._nothing(), self.setup.penalty_reward, "infeasible", {"reason": reason},
                              ready=False)  # fmt: skip

    def exhausted(self) -> int | None:
        """Every valid point decided (the rule's count; the grid's size without a rule)."""
        space = self.action_space
        finite = self.setup.sampler is None and all(isinstance(d, Categorical) for d in space.dims)
        if not finite:
            return None
        valid = self.rule.count()
        size = space.grid_size if valid is None else valid
        return size if len(self._decided) >= size else None

    def measure_again(self) -> None:
        """Confirmation re-runs: no cache hits, no sharing with a running twin; every step is a job."""
        self._reuse = False

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        step = self.step_async(action)
        mine: Feedback | None = None
        others: list[Feedback] = []
        while mine is None:
            for feedback in self.step_wait():
                if feedback.step == step:
                    mine = feedback
                else:
                    others.append(feedback)
        self._ready = others + self._ready  # finished meanwhile: handed out by the next step_wait
        return mine.observation, mine.reward, mine.done, mine.info

    def step_async(self, action: dict[str, Any], env_params: Mapping[str, Any] | None = None) -> int:
        """``env_params``: the env params to measure under (confirmation's common draw), else the step's own draw."""
        self._check(action)
        action = self.action_space.canonical(action)  # a branch not chosen does not split the step (Space.when)
        if env_params is not None and (self.setup.sampler is None or set(env_params) != set(self.env_names)):
            raise ConfigError(f"env_params {sorted(env_params)} are not this test's {list(self.env_names)}")
        step = self._next
        self._next += 1
        self._unwritten.append(step)
        env = (
            dict(env_params)
            if env_params is not None
            else self.setup.sampler.sample(step)
            if self.setup.sampler
            else {}
        )
        trial = Trial(step, dict(action), env, cache_key(action, env), time.monotonic())
        hit = self._cache.get(trial.key) if self._reuse else None
        if hit is not None:
            self._cached(trial, hit)
        elif self._reuse and trial.key in self._running:  # the same trial is running: share its result when it succeeds
            self._running[trial.key].followers.append(trial)
        elif reason := self.rule.violation(trial.action, trial.env):  # an agent blind to the rule (a plugin)
            self._refused.add(trial.key)
            self._complete(trial, self._nothing(), self.setup.penalty_reward, "infeasible", {"reason": reason})
        else:
            self._submit(trial)
        return step

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            wait_s = 0.0 if self._ready else (None if deadline is None else max(0.0, deadline - time.monotonic()))
            if self._watch is not None:
                wait_s = self._watch.poll_s if wait_s is None else min(wait_s, self._watch.poll_s)
            self.setup.system.wait([t.job for t in self._pending.values() if t.job is not None], wait_s)
            for trial in [t for t in self._pending.values() if t.job is not None and t.job.done]:
                self._finish(trial)
            self._judge_running()
            if self._ready or wait_s == 0.0 or (deadline is not None and time.monotonic() >= deadline):
                break
        ready, self._ready = self._ready, []
        return ready

    def close(self) -> None:
        """Cancel the trials in flight (not recorded), write every finished step, close the files.

        A trial whose job succeeded before the cancel reached it is a real measurement: it is
        recorded like any other (a resumed run must not run it again).
        """
        if self._pending:
            trials = list(self._pending.values())
            self.setup.system.cancel([t.job for t in trials if t.job is not None], "interrupted")
            succeeded = [t for t in trials if t.job is not None and t.job.status is JobStatus.OK]
            for trial in trials:
                if trial in succeeded and not self.writer.broken:
                    continue
                if trial.job is not None:
                    finish_job(trial.job, self.workload)  # job.json says it was cancelled
                for step in [trial.step, *(f.step for f in trial.followers)]:
                    self._unwritten.remove(step)
                del self._pending[trial.step]
                if self._running.get(trial.key) is trial:
                    del self._running[trial.key]
            for trial in succeeded if not self.writer.broken else []:
                self._finish(trial)
        self.setup.system.cancel_all()  # a job started as a signal arrived, which no trial holds
        if not self.writer.broken:
            self._write_ready()
        self.writer.close()

    def _values(self, trial: Trial) -> dict[str, Any]:
        return self.action_space.full({**trial.action, **trial.env})

    def _submit(self, trial: Trial) -> None:
        entry, step = self.setup.entry, trial.step
        name = f"{entry.id}.{self.setup.iteration}.{step}"
        out = self.setup.out_dir / str(step)
        spec = build_spec(
            entry,
            self.workload,
            self._values(trial),
            out,
            name,
            self.setup.system.install_path,
            self.setup.system.gpus_per_node,
            self.setup.system.hf_home_path,
        )
        self._pending[step] = trial  # before submit: close() must know of it
        self._running.setdefault(trial.key, trial)  # a twin measured again (measure_again) is not a follower
        trial.job = self.setup.system.submit(spec)

    def _judge_running(self) -> None:
        """Poll each running trial's progress (pruning); cancel and record the ones the agent prunes."""
        if self._watch is None:
            return
        for trial in [t for t in self._pending.values() if t.job is not None and not t.job.done]:
            assert trial.job is not None
            if self._watch.check(trial.step, trial.job.spec.job_dir):
                self.setup.system.cancel([trial.job], "pruned")
                if trial.job.status is JobStatus.CANCELLED:
                    self._pruned(trial)
                else:  # it ended on its own before the cancel reached it: keep what it measured
                    self._finish(trial)

    def _pruned(self, trial: Trial) -> None:
        del self._pending[trial.step]
        del self._running[trial.key]
        assert trial.job is not None and self._watch is not None
        finish_job(trial.job, self.workload)  # job.json: cancelled, reason "pruned"
        at, value = self._watch.forget(trial.step) or (0, math.nan)
        observation = [value, *self._nothing()[1:]]
        reward = reward_of(self.reward_fn, observation) if math.isfinite(value) else self.setup.penalty_reward
        reason = f"pruned at progress step {at}: {self.metrics[0]} = {value:.6g}"
        info = {"metrics": {}, "reason": reason, "job_dir": str(trial.job.spec.job_dir), "pruned_at": at}
        self._complete(trial, observation, reward, "pruned", info)
        for follower in trial.followers:
            self._submit(follower)

    def _cached(self, trial: Trial, hit: Measured) -> None:
        metrics = dict(zip(self.metrics, hit.observation, strict=False)) if hit.metrics is None else hit.metrics
        info = {"metrics": metrics, "cached_from": hit.step}
        self._complete(trial, hit.observation, hit.reward, "cached", info)

    def _finish(self, trial: Trial) -> None:
        """Record a trial whose job ended. Atomic for Ctrl-C: a signal landing between "job.json says ok" and
        "the row is buffered" would lose a measurement that ``--resume`` then runs again."""
        with held_interrupts() as held:
            self._record_finished(trial)
        redeliver(held)

    def _record_finished(self, trial: Trial) -> None:
        del self._pending[trial.step]
        if self._running.get(trial.key) is trial:
            del self._running[trial.key]
        job = trial.job
        assert job is not None
        metrics = finish_job(job, self.workload, self.metrics)  # a missing metric fails the job, job.json too
        status, observation, reward, reason = trial_outcome(
            job, metrics, self.metrics, self.constraints, self.reward_fn, self.setup.penalty_reward
        )
        info = {"metrics": metrics, "reason": reason, "job_dir": str(job.spec.job_dir)}
        if status == "constraint":
            learn_bound(self.rule, self.workload, self.constraints, trial.action, trial.env, metrics, trial.step)
        self._proposals.learn(trial.action, trial.env, metrics, status, reward)
        feedback = self._complete(trial, observation, reward, status, info)
        for follower in trial.followers:  # a failure is not shared: each follower gets its own chance
            if status == "ok":
                self._cached(follower, self._measured(feedback))
            else:
                self._submit(follower)

    def _complete(
        self,
        trial: Trial,
        observation: Observation,
        reward: float,
        status: str,
        extra: dict[str, Any],
        *,
        ready: bool = True,
    ) -> Feedback:
        """Record a finished step; ``ready=False``: the agent knows it already (a refused draw): not handed out."""
        step, episode = trial.step, self._episode
        info = {"status": status, "step": step, "episode": episode, "env_params": trial.env, **extra}
        feedback = Feedback(step, episode, dict(trial.action), reward, observation, status, False, info)
        if ready:
            self._ready.append(feedback)
        self._finished[step] = (feedback, time.monotonic() - trial.started)
        if status == "ok":
            self._cache[trial.key] = self._measured(feedback)
        if status in _DECIDED:
            self._decided.add(trial.key)
        self._write_ready()
        if self.setup.on_step is not None:
            self.setup.on_step(feedback)
        return feedback

    def _write_ready(self) -> None:
        """Append every finished step whose predecessors are all written (rows stay in step order)."""
        while self._unwritten and self._unwritten[0] in self._finished:
            feedback, elapsed = self._finished.pop(self._unwritten.popleft())
            self.writer.append(
                step=feedback.step,
                episode=feedback.episode,
                action=feedback.action,
                reward=feedback.reward,
                observation=feedback.observation,
                status=feedback.status,
                elapsed_s=elapsed,
                env=feedback.env_params,
                reason=str(feedback.info.get("reason", "")),
            )

    def _check(self, action: Mapping[str, Any]) -> None:
        check_action(self.action_space, action)

    def _measured(self, feedback: Feedback) -> Measured:
        return Measured(feedback.step, feedback.reward, feedback.observation, feedback.extra_metrics(self.metrics))

    def _nothing(self) -> Observation:
        return [math.nan] * len(self.metrics)

    def _replayed(self, row: Row) -> Feedback:
        return replayed(row, self.setup.space, self.metrics)
