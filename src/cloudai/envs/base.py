"""The environment contract agents step through (Gymnasium's ``Env``, plus VectorEnv-style async).

Call order: ``reset(seed)`` once, then ``step`` (or ``step_async`` ... ``step_wait``) until the
agent stops. Steps are numbered from 1 in ask order and never repeat, across resets and
episodes; ``next_step`` is the number the next ``step``/``step_async`` will get.

* ``define_action_space()``: the knobs the agent chooses, as a ``cloudai.space.Space``
  (its ``dims``; its ``fixed`` values are injected by the env, not chosen).
* ``define_observation_space()``: observation slot names (``agent_metrics`` order).
* ``step(action) -> (observation, reward, done, info)``; ``info`` carries ``status`` (ok,
  cached, failed, constraint, timeout), ``env_params`` and ``metrics``.
* ``step_async(action) -> step`` starts a trial; ``step_wait()`` blocks until at least one
  started trial finished and returns every finished one as ``Feedback`` (any order).
* ``history()``: steps completed before this process started (``--resume``), in step order.
* ``env_param_sampler()``: the env_params sampler (None without env_params). It is
  deterministic per step, so an agent may peek at ``sample(next_step)`` before choosing.
* ``live``: True in live-RL mode, where ``done`` ends an episode and the agent resets.
* The workload's validity rule (``cloudai.workloads.validity``), so an agent never spends a trial on a point
  that breaks it: ``valid_points()`` (grid counts and walks over the action space; None: no rule),
  ``violation(action)`` (why ``action`` breaks it at ``next_step``, its env_params included) and
  ``reject(action, reason)`` (a sampler drew it and redraws: recorded once per point as ``infeasible``, a step
  number but no job and no share of ``agent_steps``; the agent tells itself, ``step_wait`` never returns it).
* ``objectives`` / ``constraints``: ``agent_objectives`` / ``agent_constraints`` (empty: maximize the
  reward); their metrics are slots of the observation. ``record_dir``: where the env records
  (an agent may keep its own files there, e.g. Optuna's journal); None when nothing is recorded.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.config.objectives import Constraint, Objective
from cloudai.errors import ConfigError
from cloudai.space import Space

if TYPE_CHECKING:
    from cloudai.envs.env_params import EnvParamSampler
    from cloudai.envs.pruning import PruneJudge
    from cloudai.workloads.validity import ValidPoints

Observation = list[float]


@dataclass(frozen=True, slots=True)
class Feedback:
    """One completed step: what ``update_policy`` learns from (slots: a run may keep one per step)."""

    step: int
    episode: int
    action: dict[str, Any]
    reward: float
    observation: Observation
    status: str
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def env_params(self) -> dict[str, Any]:
        return dict(self.info.get("env_params", {}))

    def extra_metrics(self, names: Sequence[str]) -> dict[str, Any] | None:
        """``info["metrics"]`` when it says more than the observation; None when it is exactly ``names`` (the
        agent's metrics, in order) paired with the observation, which ``dict(zip(names, observation))`` rebuilds:
        what a kept step need not store (a 10^5-step run keeps no dict per step)."""
        measured = self.info.get("metrics") or {}
        return None if list(measured.items()) == list(zip(names, self.observation, strict=False)) else measured


class BaseGym(ABC):
    live: bool = False
    draws_on_request: bool = False  # step_async takes env_params to measure under (confirmation's common draws)
    max_in_flight: int = 1  # how many trials step_async may keep running at once
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    record_dir: Path | None = None

    def __init__(self) -> None:
        self._ready: list[Feedback] = []  # finished by the default step_async, not yet handed out

    @abstractmethod
    def define_action_space(self) -> Space: ...

    @abstractmethod
    def define_observation_space(self) -> list[str]: ...

    @abstractmethod
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]: ...

    @abstractmethod
    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]: ...

    @property
    @abstractmethod
    def next_step(self) -> int: ...

    @property
    def last_started(self) -> int:
        """The number of the last step started (0: none yet): what a failure report names. An env that numbers a
        step only once it finished (live RL) says so itself."""
        return self.next_step - 1

    def step_async(self, action: dict[str, Any], env_params: Mapping[str, Any] | None = None) -> int:
        """Start a trial. Default: run it now and hand it out on the next ``step_wait``.

        ``env_params``: measure under these instead of the step's own draw (confirmation's common draws); only
        an env with ``draws_on_request`` takes them."""
        if env_params is not None:
            raise ConfigError(f"{type(self).__name__} draws its own env_params; it cannot measure under given ones")
        step = self.next_step
        observation, reward, done, info = self.step(action)
        self._ready.append(
            Feedback(
                step,
                int(info.get("episode", 1)),
                dict(action),
                reward,
                observation,
                str(info.get("status", "ok")),
                done,
                info,
            )
        )
        return step

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        ready, self._ready = self._ready, []
        return ready

    def history(self) -> list[Feedback]:
        return []

    def env_param_sampler(self) -> EnvParamSampler | None:
        return None

    def valid_points(self) -> ValidPoints | None:
        """The workload's rule over ``define_action_space()`` (None: the env knows none, every point is valid)."""
        return None

    def proposals(self) -> list[dict[str, Any]]:
        """Points the workload's model proposes from the steps measured so far (``Workload.proposals``), best first;
        an agent's local search may measure them first. Default: none."""
        return []

    def violation(self, action: dict[str, Any]) -> str | None:
        """Why ``action`` would break the workload's rule as step ``next_step`` (its env_params drawn); None: valid."""
        rule = self.valid_points()
        if rule is None:
            return None
        sampler = self.env_param_sampler()
        return rule.violation(action, sampler.sample(self.next_step) if sampler else None)

    def reject(self, action: dict[str, Any], reason: str) -> Feedback:
        """A point the agent's sampler drew and refused (``violation``): recorded once per point as ``infeasible``
        (the first time it takes step ``next_step``; a repeat is not recorded and takes no step). Returns the
        step's feedback, for the agent to tell itself."""
        nothing = [float("nan")] * len(self.define_observation_space())
        info = {"status": "infeasible", "reason": reason, "recorded": False}
        return Feedback(self.next_step, 1, dict(action), -1.0, nothing, "infeasible", False, info)

    def exhausted(self) -> int | None:
        """The size of the action space once every point of it is decided (measured, or refused by a constraint),
        so that a further step can only repeat one; None while points remain or the space is not finite."""
        return None

    def measure_again(self) -> None:
        """From now on, run every step even when an equal one was measured (confirmation re-runs)."""

    def watch_progress(self, judge: PruneJudge, poll_s: float) -> bool:
        """Ask the env to poll running trials' intermediate values and stop those ``judge`` prunes.

        Returns whether this env can (default: no; the offline DSE env can when its workload reports progress).
        """
        return False

    def close(self) -> None:
        """Release what the env holds (jobs, connections). Safe to call twice."""
