"""The agent contract: a search strategy over a ``BaseGym``, ask/tell style (Optuna's Sampler).

Subclasses implement two methods; ``run`` is the loop and rarely needs overriding:

* ``select_action(observation) -> (step, action) | None`` (ask): the next action, tagged with
  ``self.env.next_step`` (the step it will get); None when the agent has nothing left to try.
* ``update_policy(feedback)`` (tell): learn from one completed step. It is also called with
  steps the agent never asked for (``--resume`` replays the recorded ones first), in any
  order when trials run in parallel.

Class attributes: ``samples_env_params`` says whether the agent copes with a randomized
environment (env_params); ``can_ask_ahead`` whether it may have several trials in flight
(``agent_config.max_parallel``; the DSE tells finished steps in step order, so the same seed asks the
same points whatever the timing, see docs/agents.md, "Reproducible parallel runs"); ``config_model``
validates ``agent_config`` at load time and ``entry_problems`` checks it against the entry (e.g. a
single-objective sampler given several objectives).

``run`` honours ``done`` only in live-RL mode (``env.live``): there ``done=True`` ends the
episode and the env is reset; in offline DSE ``done`` never stops the sweep.

Reproducible parallel runs: ``run`` tells the agent finished steps in step order (a step that
finishes early waits in memory until every earlier one was told), so completion order never
reaches the agent. An agent whose asks depend on what it was told (``asks_depend_on_feedback``,
e.g. optuna) asks step ``n + P`` only once steps ``1..n`` were told (``P = max_parallel``): with
the same seed, every ask sees the same history and the same trials in flight, whatever the
timing. A sweep (grid_search, random_search) asks freely: its asks ignore feedback.

Before the first ask, ``run`` tells the agent the warm-start trials (``warm_start``: earlier
runs' steps, marked ``info["warm_start"]``; they inform the agent but never become ``best``),
then the recorded steps (``--resume``), then evaluates ``agent_config.enqueue`` (known-good
points, in order, minus those already recorded) before asking the agent. When the agent runs
out before ``max_steps`` it sets ``stop_reason`` (what the run prints).

The workload's rule (``env.violation``): a sweep walks valid points only (``env.valid_points()``); a sampler
checks each draw with ``refused(point)``, which records a refused one once as ``infeasible`` (no job, no share
of ``max_steps``), tells the agent (``update_policy``, so Optuna learns the region) and lets it draw again, at
most ``MAX_REJECTS`` times in a row before the agent stops saying why.

``max_steps`` counts measurements, not proposals: a step the env answers from its cache (``cached``: the
point was measured before) is recorded and told like any other, but does not use up the budget, so
``agent_steps = 6`` over a 6-point space measures 6 distinct points (resume counts the same way). The loop is
bounded: it stops, saying why, once the env has every point of a finite space decided (``env.exhausted()``) or
after ``REPEATS_IN_A_ROW`` cached steps in a row (the agent has converged on what it measured).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import Seed, TimeLimitText
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.recordfiles import SCORED, UNBUDGETED

REPEATS_IN_A_ROW = 20  # cached (or, from a rule-blind agent, infeasible) steps in a row: the agent is stuck
MAX_REJECTS = 10_000  # draws in a row the workload's rule refuses before a sampler gives up


class AgentConfig(BaseModel):
    """``agent_config`` fields every agent accepts; subclasses add their own. Strict: ``multivariate = "yes"`` or
    ``penalty_reward = "-5"`` is a mistake to report, not a string to convert."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seed: Seed | None = None  # numpy and Optuna take 0..2**32-1
    max_parallel: int = Field(default=1, ge=1, le=256)
    penalty_reward: float = Field(default=-1.0, allow_inf_nan=False)  # reward of failed/timed-out/infeasible trials
    enqueue: list[dict[str, Any]] = Field(default_factory=list)  # points evaluated first (checked at load)
    confirm: int | None = Field(default=None, ge=0, le=50)  # top-k re-run after the search; None: by noise
    confirm_repeats: int = Field(default=3, ge=1, le=100)  # re-runs per confirmed candidate (env_params: per regime)
    # With env_params: what "best over the environment" is, the expected value or the worst regime's.
    regime_objective: Literal["expectation", "worst"] = "expectation"
    # A trial's job pending longer (Slurm) is cancelled and the trial failed; overrides the system's.
    pending_timeout: TimeLimitText | None = None


class BaseAgent(ABC):
    name: ClassVar[str]
    samples_env_params: ClassVar[bool] = False
    can_ask_ahead: ClassVar[bool] = True
    asks_depend_on_feedback: ClassVar[bool] = True  # False: a sweep, whose asks ignore what it was told
    config_model: ClassVar[type[AgentConfig]] = AgentConfig

    @classmethod
    def entry_problems(cls, config: AgentConfig, objectives: int) -> list[tuple[str, str]]:
        """``(agent_config field, message)`` for what this agent cannot do with a valid config here."""
        return []

    def __init__(self, env: BaseGym, config: AgentConfig, max_steps: int) -> None:
        self.env = env
        # Validated at load time as ``config_model``; a base ``AgentConfig`` (e.g. from a test) is lifted to it.
        self.config = config if isinstance(config, self.config_model) else self.config_model(**config.model_dump())
        self.max_steps = max_steps
        self.best: Feedback | None = None
        self.stop_reason: str | None = None  # why the agent stopped short of max_steps (set by the agent)
        self.warm: list[Feedback] = []  # earlier runs' trials, told first (``warm_start``)
        self.uncounted: set[int] = set()  # recorded steps told but not counted toward max_steps (confirmation)

    def warm_start(self, feedbacks: list[Feedback]) -> None:
        """Trials of earlier runs the agent learns from before its first ask (they never become ``best``)."""
        self.warm = [replace(f, info={**f.info, "warm_start": True}) for f in feedbacks]

    @abstractmethod
    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None: ...

    @abstractmethod
    def update_policy(self, feedback: Feedback) -> None: ...

    @classmethod
    def list_notes(cls) -> list[str]:
        """Extra lines ``cloudai list`` prints for this agent (e.g. which samplers are installed)."""
        return []

    def replayed(self) -> None:
        """Called once the warm-start trials and the recorded history have been told, before the first ask
        (the optuna agent publishes its rebuilt journal here)."""

    def best_notes(self) -> list[str]:
        """Comment lines the agent adds to best.toml (e.g. the bandit's best per env_params regime)."""
        return []

    def run(self) -> int:
        """Step the env until ``max_steps`` steps are recorded or the agent runs out; returns steps done."""
        observation, _ = self.env.reset(seed=self.config.seed)
        for feedback in self.warm:
            self.update_policy(feedback)
        history = self.env.history()
        for feedback in history:
            self._tell(feedback)
        self.replayed()
        done_steps = sum(1 for f in history if self._uses_budget(f))
        repeats = 0  # cached steps in a row
        queue = _pending_enqueued(self.config.enqueue, history)
        parallel = min(self.config.max_parallel if self.can_ask_ahead else 1, self.env.max_in_flight)
        asked: deque[int] = deque()  # steps started by this process, not yet told, ascending
        held: dict[int, Feedback] = {}  # finished out of step order: told once every earlier step was
        while True:
            # Fill the free slots; a feedback-driven agent counts held (finished, untold) steps as busy,
            # and refills after each single tell: step n + P is asked right after step n was told,
            # whatever finished meanwhile (see the module docstring).
            # Live RL on one environment: the step after a ``done`` must wait for the reset, so held steps are busy
            # there too (several environments reset their own episodes).
            one_env = self.env.live and self.env.max_in_flight == 1
            busy = len(asked) if self.asks_depend_on_feedback or one_env else len(asked) - len(held)
            while busy < parallel and done_steps + len(asked) < self.max_steps and self.stop_reason is None:
                choice = (self.env.next_step, queue.pop(0)) if queue else self.select_action(observation)
                if choice is None:
                    break
                step, action = choice
                started = self.env.step_async(action)
                if started != step:
                    raise AssertionError(f"{self.name}: asked for step {step}, env started step {started}")
                asked.append(step)
                busy += 1
            if not asked:
                return done_steps
            if asked[0] not in held:
                for feedback in self.env.step_wait():
                    held[feedback.step] = feedback
                continue
            feedback = held.pop(asked.popleft())
            counted = self._uses_budget(feedback)
            done_steps, repeats = done_steps + counted, 0 if counted else repeats + 1
            self._tell(feedback)
            self._check_exhausted(repeats, feedback.status)
            observation = feedback.observation
            if self.env.live and feedback.done and done_steps < self.max_steps and self.env.max_in_flight == 1:
                observation, _ = self.env.reset()  # several environments reset their own episodes

    def refused(self, point: dict[str, Any]) -> bool:
        """Whether the workload's rule refuses ``point`` as the next step; if so it is recorded (once per point) as
        ``infeasible`` and told to this agent, and the caller draws again (see the module docstring)."""
        reason = self.env.violation(point)
        if reason is None:
            return False
        self.update_policy(self.env.reject(point, reason))
        return True

    def gave_up(self, draws: int) -> None:
        """Stop: ``draws`` draws in a row broke the workload's rule."""
        self.stop_reason = (
            f"{draws} draws in a row broke the workload's rule (see the infeasible steps in trajectory.csv): "
            "the valid part of the space looks too small for this sampler; narrow the space to it"
        )

    def _uses_budget(self, feedback: Feedback) -> bool:
        """Whether a recorded step uses up ``max_steps``: a measurement, not a cache hit, a point the workload's rule
        refused (``infeasible``) or a confirmation re-run."""
        return feedback.status not in UNBUDGETED and feedback.step not in self.uncounted

    def _check_exhausted(self, repeats: int, status: str = "cached") -> None:
        if self.stop_reason is not None:
            return
        if (size := self.env.exhausted()) is not None:
            valid = " valid" if self.env.valid_points() is not None else ""
            self.stop_reason = f"every one of the space's {size}{valid} point(s) is measured"
        elif repeats >= REPEATS_IN_A_ROW and status == "infeasible":
            self.stop_reason = f"the agent proposed {repeats} points in a row that break the workload's rule"
        elif repeats >= REPEATS_IN_A_ROW:
            self.stop_reason = (
                f"the agent proposed {repeats} already measured points in a row (converged; a wider space or "
                "another sampler would explore more)"
            )

    def _tell(self, feedback: Feedback) -> None:
        if feedback.status in SCORED and (self.best is None or feedback.reward > self.best.reward):
            self.best = feedback
        self.update_policy(feedback)


def _pending_enqueued(points: list[dict[str, Any]], history: list[Feedback]) -> list[dict[str, Any]]:
    """``enqueue`` minus the points already recorded (a resumed run evaluates each once)."""
    done = {json.dumps(f.action, sort_keys=True, default=str) for f in history}
    return [dict(p) for p in points if json.dumps(p, sort_keys=True, default=str) not in done]
