"""What a measured step teaches the workload's rule: the points past one that broke an upper bound of
``agent_constraints`` on a metric the workload says is monotone (``Workload.monotone``: TTFT grows with the batch)
are refused before any step (``ValidPoints.bound``; the offline env's module docstring)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.config.objectives import Constraint
from cloudai.workloads.base import Workload
from cloudai.workloads.validity import ValidPoints


def learn_bound(rule: ValidPoints, workload: Workload, constraints: Sequence[Constraint], action: Mapping[str, Any],
                env: Mapping[str, Any], metrics: Mapping[str, float], step: int) -> None:  # fmt: skip
    """Teach ``rule`` the points past a measured one that broke an upper bound on a monotone metric (see the
    module docstring); nothing with env_params (the regime may move the metric) or without a rule."""
    if env or not rule.has_rule:
        return
    values = rule.point_values(action)
    for c in constraints:
        value = metrics.get(c.metric, math.nan)
        if c.op not in ("<=", "<") or not math.isfinite(value) or not c.broken(value):
            continue
        how = workload.monotone(c.metric, values)
        if how is None:
            continue
        past = ", ".join(sorted(how.grows))
        rule.bound(values, how, f"{c.metric} breaks {c.op} {c.bound:g} here: step {step} measured "
                   f"{value:.6g} with {past} no larger and the knobs it depends on the same")  # fmt: skip
