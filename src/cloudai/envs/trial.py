"""One trial of an agent-driven (entry, iteration): what it runs with, its state in flight, what a cache hit repeats.

``TrialSetup`` is built by ``cloudai.run.dse`` and shared by the offline env and its live-RL sibling; ``Trial``,
``Measured`` and ``cache_key`` are the offline env's bookkeeping (a step's job, its twins, its cache entry).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.envs.base import Feedback, Observation
from cloudai.space import Space
from cloudai.systems.base import Job, System
from cloudai.workloads.base import Workload

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.env_params import EnvParamSampler


@dataclass(frozen=True)
class TrialSetup:
    """What one agent-driven (entry, iteration) runs with; built by ``cloudai.run.dse``."""

    entry: RunEntry
    space: Space  # the entry's whole space: env_param dimensions included
    workload: Workload | None  # None in live-RL mode: a trial is a server step, not a job
    system: System
    out_dir: Path  # <run dir>/<test id>/<iteration>
    iteration: int = 0
    penalty_reward: float = -1.0
    max_in_flight: int = 1
    sampler: EnvParamSampler | None = None
    resume: bool = False
    on_step: Callable[[Feedback], None] | None = field(default=None, compare=False)


@dataclass(eq=False)
class Trial:
    step: int
    action: dict[str, Any]
    env: dict[str, Any]
    key: str  # cache_key(action, env)
    started: float
    job: Job | None = None
    followers: list[Trial] = field(default_factory=list)  # the same key asked while this one ran


@dataclass(frozen=True, slots=True)
class Measured:
    """What a cache hit repeats of a successful step; ``metrics`` None when they are the observation itself
    (``agent_metrics`` in order: the usual case, no dict kept per step of a 10^5-step run)."""

    step: int
    reward: float
    observation: Observation
    metrics: dict[str, Any] | None


_KEY_JSON = json.JSONEncoder(sort_keys=True, default=str)  # made once: json.dumps with options makes one per call


def cache_key(action: Mapping[str, Any], env_params: Mapping[str, Any]) -> str:
    """Canonical JSON of (action, env_params): equal configurations in an equal environment, equal keys."""
    return _KEY_JSON.encode([action, env_params])
