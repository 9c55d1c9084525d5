"""How a finished job becomes a step: the one place that decides a trial's status, observation and reward."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from cloudai.config.objectives import Constraint, broken_constraints
from cloudai.envs.base import Observation
from cloudai.envs.rewards import reward_of
from cloudai.systems.base import Job, JobStatus


def trial_outcome(
    job: Job,
    metrics: Mapping[str, float],
    names: Sequence[str],
    constraints: Sequence[Constraint],
    reward_fn: Callable[[float], float],
    penalty: float,
) -> tuple[str, Observation, float, str]:
    """How a finished job becomes a step: ``(status, observation, reward, reason)``. The one place that decides
    it, for the DSE env and for ``--single-sbatch`` alike: ``ok`` only for a job that ended well with every named
    metric and inside ``agent_constraints`` (else ``constraint``, measured but refused), ``timeout``, or
    ``failed``; the reward is the reward function's of the first metric for ``ok``, else the penalty."""
    observation = [metrics.get(name, math.nan) for name in names]
    status = {JobStatus.OK: "ok", JobStatus.TIMEOUT: "timeout"}.get(job.status, "failed")
    reason = job.reason
    if status == "ok" and any(name not in metrics for name in names):
        status = "failed"  # finish_job has already said why in job.json
    if status == "ok" and (broken := broken_constraints(constraints, metrics)):
        status, reason = "constraint", broken  # measured, but outside agent_constraints
    reward = reward_of(reward_fn, observation) if status == "ok" else penalty
    return status, observation, reward, "" if status == "ok" else reason
