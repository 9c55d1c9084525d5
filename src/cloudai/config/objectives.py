"""Several objectives and metric constraints of an agent-driven test (``agent_objectives``, ``agent_constraints``).

``agent_objectives = { bus_bw = "max", latency_us = "min" }`` names the metrics to trade off, each
with a direction; ``agent_constraints = { latency_us = "<= 50" }`` bounds measured metrics. Both
add their metrics to the observation (``agent_metrics`` first, then the missing ones, in order).

One objective keeps the single-objective meaning: the agent maximizes the reward of the first
metric (``agent_reward_function``; when not set, ``identity`` for "max" and ``negative`` for
"min"). Several objectives make the optuna agent multi-objective and the run writes the
Pareto front (``pareto.csv``, ``pareto/<step>.toml``). A trial whose measured metric breaks a
constraint is recorded as ``constraint`` with the penalty reward and a reason; Optuna gets each
constraint's violation (``value - bound`` for ``<=``; feasible when <= 0, Optuna's convention).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Direction = Literal["max", "min"]
_CONSTRAINT = re.compile(r"^\s*(<=|>=|<|>)\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Objective:
    metric: str
    direction: Direction


@dataclass(frozen=True)
class Constraint:
    """``metric op bound``; ``<`` and ``<=`` are the same to a measurement (and to Optuna)."""

    metric: str
    op: str
    bound: float

    @property
    def text(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"

    def violation(self, value: float) -> float:
        """How far ``value`` is outside the bound (> 0 infeasible); a missing value counts as infeasible."""
        if not math.isfinite(value):
            return 1.0
        return value - self.bound if self.op in ("<=", "<") else self.bound - value

    def broken(self, value: float) -> bool:
        if not math.isfinite(value):
            return True
        return {"<=": value > self.bound, "<": value >= self.bound, ">=": value < self.bound}.get(
            self.op, value <= self.bound
        )


def parse_constraint(metric: str, text: str) -> Constraint:
    """``"<= 50"`` -> ``Constraint(metric, "<=", 50.0)``; ``ValueError`` names the accepted form."""
    match = _CONSTRAINT.match(text)
    if match is None:
        raise ValueError(f"constraint {text!r} on '{metric}' is not '<= N', '>= N', '< N' or '> N'")
    bound = float(match.group(2))
    if not math.isfinite(bound):
        raise ValueError(f"constraint {text!r} on '{metric}': the bound must be a finite number")
    return Constraint(metric, match.group(1), bound)


def observed_metrics(
    metrics: Sequence[str] | None,
    objectives: Sequence[Objective],
    constraints: Sequence[Constraint],
    default: Sequence[str] = ("default",),
) -> tuple[str, ...]:
    """The observation order: ``agent_metrics`` (or the objectives, or ``default``), then every missing metric."""
    names = list(metrics or [o.metric for o in objectives] or default)
    for name in [*(o.metric for o in objectives), *(c.metric for c in constraints)]:
        if name not in names:
            names.append(name)
    return tuple(names)


def broken_constraints(constraints: Sequence[Constraint], metrics: Mapping[str, float]) -> str | None:
    """Why measured ``metrics`` are infeasible (each broken constraint with its value), or None."""
    broken = [c for c in constraints if c.broken(metrics.get(c.metric, math.nan))]
    if not broken:
        return None
    return "; ".join(f"{c.metric} = {metrics.get(c.metric, math.nan):.6g} breaks {c.op} {c.bound:g}" for c in broken)


def default_reward(objectives: Sequence[Objective]) -> str | None:
    """The reward function that makes 'maximize reward' mean the first objective's direction."""
    if not objectives:
        return None
    return "identity" if objectives[0].direction == "max" else "negative"
