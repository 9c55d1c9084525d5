"""How a finished job, or a live server's step, becomes a step: the one place that decides a trial's status,
observation and reward."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cloudai.config.objectives import Constraint, broken_constraints
from cloudai.envs.base import Observation
from cloudai.envs.rewards import reward_of
from cloudai.systems.base import Job, JobStatus
from cloudai.untrusted import printable


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


# What a server may report for a step it did not score.
_SERVER_STATUSES = ("failed", "constraint", "infeasible", "timeout")


def step_status(reward: Any, info: Mapping[str, Any]) -> tuple[str, str]:
    """(status, reason) of a server step: the server's own non-ok status wins, then the reward decides."""
    reported = info.get("status")
    if reported in _SERVER_STATUSES:
        return str(reported), printable(info.get("reason") or f"the server reported {reported}")
    number = as_number(reward)
    if number is not None and math.isfinite(number):
        return "ok", ""
    return "failed", f"the server's reward is {reward!r}, not a finite number"


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a real number: Python's, numpy's (``np.float32``, ``np.int64``, a 0-d array)
    or any ``numbers.Real``; None for anything else (a bool, a string, None)."""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":  # numpy's bool_ too
        return None
    if getattr(value, "shape", None) == ():  # a numpy scalar or 0-d array
        value = value.item()
    return float(value) if isinstance(value, numbers.Real) else None


def as_float(value: Any) -> float:
    """``as_number``, NaN for anything that is not a real number."""
    number = as_number(value)
    return math.nan if number is None else number
