"""The agent contract: a search strategy over a ``BaseGym``, ask/tell style (Optuna's Sampler).

Subclasses implement two methods; ``run`` is the loop and rarely needs overriding:

* ``select_action(observation) -> (step, action) | None`` (ask): the next action, tagged with
  ``self.env.next_step`` (the step it will get); None when the agent has nothing left to try.
* ``update_policy(feedback)`` (tell): learn from one completed step. It is also called with
  steps the agent never asked for (``--resume`` replays the recorded ones first), in any
  order when trials run in parallel.

Class attributes: ``samples_env_params`` says whether the agent copes with a randomized
environment (env_params); ``can_ask_ahead`` whether it may have several trials in flight
(``agent_config.max_parallel``); ``parallel_reproducible`` whether the same seed asks the same
points under ``max_parallel`` > 1 (not when the asks depend on which trial finished first);
``config_model`` validates ``agent_config`` at load time and ``entry_problems`` checks it against
the entry (e.g. a single-objective sampler given several objectives).

``run`` honours ``done`` only in live-RL mode (``env.live``): there ``done=True`` ends the
episode and the env is reset; in offline DSE ``done`` never stops the sweep.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from cloudai.envs.base import BaseGym, Feedback, Observation


class AgentConfig(BaseModel):
    """``agent_config`` fields every agent accepts; subclasses add their own."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = None
    max_parallel: int = Field(default=1, ge=1, le=256)
    penalty_reward: float = -1.0  # reward of failed, timed-out and infeasible trials


class BaseAgent(ABC):
    name: ClassVar[str]
    samples_env_params: ClassVar[bool] = False
    can_ask_ahead: ClassVar[bool] = True
    parallel_reproducible: ClassVar[bool] = True
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

    @abstractmethod
    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None: ...

    @abstractmethod
    def update_policy(self, feedback: Feedback) -> None: ...

    @classmethod
    def list_notes(cls) -> list[str]:
        """Extra lines ``cloudai list`` prints for this agent (e.g. which samplers are installed)."""
        return []

    def best_notes(self) -> list[str]:
        """Comment lines the agent adds to best.toml (e.g. the bandit's best per env_params regime)."""
        return []

    def run(self) -> int:
        """Step the env until ``max_steps`` steps are recorded or the agent runs out; returns steps done."""
        observation, _ = self.env.reset(seed=self.config.seed)
        done_steps = 0
        for feedback in self.env.history():
            self._tell(feedback)
            done_steps += 1
        parallel = self.config.max_parallel if self.can_ask_ahead and not self.env.live else 1
        parallel = min(parallel, self.env.max_in_flight)
        in_flight = 0
        while True:
            while in_flight < parallel and done_steps + in_flight < self.max_steps:
                choice = self.select_action(observation)
                if choice is None:
                    break
                step, action = choice
                started = self.env.step_async(action)
                if started != step:
                    raise AssertionError(f"{self.name}: asked for step {step}, env started step {started}")
                in_flight += 1
            if in_flight == 0:
                return done_steps
            for feedback in self.env.step_wait():
                in_flight -= 1
                done_steps += 1
                self._tell(feedback)
                observation = feedback.observation
                if self.env.live and feedback.done and done_steps < self.max_steps:
                    observation, _ = self.env.reset()

    def _tell(self, feedback: Feedback) -> None:
        if feedback.status in ("ok", "cached") and (self.best is None or feedback.reward > self.best.reward):
            self.best = feedback
        self.update_policy(feedback)
