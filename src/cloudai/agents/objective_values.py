"""What a multi-objective agent tells its sampler about one step: objective values and constraint violations.

Values come from the observation (``agent_metrics`` order). A failed step measured nothing:
each objective gets the penalty in its direction's bad sense (``penalty`` when maximized,
``-penalty`` when minimized) and a constraint violation of 1, so constrained samplers rank it
below every feasible trial whatever the penalty. A measured step that broke a user constraint
keeps its real values; its violation is ``Constraint.violation`` (> 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cloudai.config.objectives import Constraint, Objective
from cloudai.envs.base import Feedback
from cloudai.recordfiles import SCORED

INFEASIBLE = "cloudai_infeasible"  # constraint key: > 0 for steps that measured nothing usable


def metric_value(feedback: Feedback, metrics: Sequence[str], name: str) -> float:
    try:
        value = float(feedback.observation[list(metrics).index(name)])
    except (ValueError, IndexError):
        return math.nan
    return value


def objective_values(
    feedback: Feedback, metrics: Sequence[str], objectives: Sequence[Objective], penalty: float
) -> list[float]:
    values = []
    for objective in objectives:
        value = metric_value(feedback, metrics, objective.metric)
        if not math.isfinite(value):
            value = penalty if objective.direction == "max" else -penalty
        values.append(value)
    return values


def constraint_values(
    feedback: Feedback, metrics: Sequence[str], constraints: Sequence[Constraint]
) -> dict[str, float]:
    """Optuna constraint values (<= 0 feasible): ``INFEASIBLE`` plus one per user constraint."""
    measured = feedback.status in SCORED or (
        feedback.status == "constraint" and any(math.isfinite(v) for v in feedback.observation)
    )
    values = {INFEASIBLE: 0.0 if feedback.status in SCORED else 1.0}
    for c in constraints:
        values[c.text] = c.violation(metric_value(feedback, metrics, c.metric)) if measured else 1.0
    return values
