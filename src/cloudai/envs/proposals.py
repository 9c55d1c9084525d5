"""What the measured steps let the workload's model propose (``Workload.proposals``): the env keeps each measured
step's flat values and metrics and turns the workload's proposals into points of the action space, which the
optuna agent's local search measures first (Aiconfigurator: the best prefill and decode sides measured so far,
paired and counted as ``aiconfigurator cli default`` pairs them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.config.objectives import Constraint
from cloudai.space import Categorical, Space, point_problem
from cloudai.workloads.base import MeasuredStep, Workload
from cloudai.workloads.validity import ValidPoints


class Proposals:
    """The measured steps of one env and what the workload proposes from them (see the module docstring)."""

    def __init__(self, rule: ValidPoints, workload: Workload, constraints: Sequence[Constraint], space: Space) -> None:
        self.rule, self.workload, self.constraints, self.space = rule, workload, constraints, space
        self.active = type(workload).proposals is not Workload.proposals
        self._measured: list[MeasuredStep] = []
        self._found: tuple[int, list[dict[str, Any]]] = (0, [])  # ``points`` for that many measured steps
        self._choices = {**{k: [v] for k, v in space.fixed.items()},
                         **{d.name: list(d.choices) for d in space.dims if isinstance(d, Categorical)}}  # fmt: skip

    def learn(
        self,
        action: Mapping[str, Any],
        env: Mapping[str, Any],
        metrics: Mapping[str, float],
        status: str,
        reward: float,
    ) -> None:
        """Keep a measured step (``status`` ok or constraint: its metrics read, in or out of the SLA); none with
        env_params: the regime drawn may move the metrics."""
        if self.active and status in ("ok", "constraint") and not env and metrics:
            self._measured.append((self.rule.point_values(action), dict(metrics), reward))

    def points(self) -> list[dict[str, Any]]:
        """The workload's proposals that are points of the space (each knob at one of its values), best first;
        worked out again only after a new measured step (the agent asks at every local-search turn)."""
        if self._found[0] == len(self._measured):
            return self._found[1]
        found = []
        for proposal in self.workload.proposals(self._measured, self._meets, self._choices):
            point = {name: proposal[name] for name in self.space.names if name in proposal}
            if point_problem(self.space, point) is None:
                found.append(self.space.canonical(point))
        self._found = (len(self._measured), found)
        return found

    def _meets(self, metric: str, value: float) -> bool:
        return not any(c.metric == metric and c.broken(value) for c in self.constraints)
