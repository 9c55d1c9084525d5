"""The configurations of an env_params run, ranked by the recommendation's own estimate (no pooled mean).

A table that ranks by the mean over all of a configuration's measurements ranks by where the agent happened to
measure it (issue 40: ring measured mostly on a quiet network topped such a table, collnet measured mostly under
load was recommended). Here every configuration's value is ``regime_value``'s, and the order is the
recommendation's: the confirmed candidates first, as ``confirm.ranked`` orders them, then the configurations
measured in every regime (fewest failures, then highest value), then the rest, which have no value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cloudai.reports.confirm import Estimate, action_key, ranked
from cloudai.reports.regime_value import Cell, RegimeSpec, cells, failure_share, value, value_ci95
from cloudai.reports.trajectory import Trajectory


@dataclass(frozen=True)
class Row:
    first: int  # the configuration's first step
    rank: str  # "candidate 1" (confirmed), "searched", "not in every regime"
    action: dict[str, Any]
    cells: tuple[Cell, ...]
    value: float  # NaN: some regime never scored
    ci95: float
    failure_share: float

    @property
    def n(self) -> int:
        return sum(c.n for c in self.cells)


def regime_top(traj: Trajectory, spec: RegimeSpec, confirmed: Sequence[Estimate] = ()) -> list[Row]:
    """Every configuration with a scored step, best first (see the module docstring)."""
    measured: dict[str, list[tuple[dict[str, Any], str, float]]] = {}
    first: dict[str, tuple[int, dict[str, Any]]] = {}
    for s in traj.steps:
        measured.setdefault(s.key, []).append((dict(s.env), s.status, s.reward))
        first.setdefault(s.key, (s.step, dict(s.action)))
    rows: dict[str, Row] = {}
    for key in {s.key for s in traj.scored()}:
        found = cells(spec, measured[key])
        rows[key] = Row(first[key][0], "", first[key][1], found, value(found, spec.objective),
                        value_ci95(found, spec.objective), failure_share(found, spec.objective))  # fmt: skip
    order = [action_key(e.action) for e in ranked(confirmed)]
    number = {action_key(e.action): e.candidate for e in confirmed}
    head = [replace(rows.pop(k), rank=f"candidate {number[k]}") for k in order if k in rows]
    valued = sorted((r for r in rows.values() if math.isfinite(r.value)), key=_key)
    rest = sorted((r for r in rows.values() if not math.isfinite(r.value)), key=lambda r: r.first)
    return [
        *head,
        *(replace(r, rank="searched") for r in valued),
        *(replace(r, rank="not in every regime") for r in rest),
    ]


def value_in(traj: Trajectory, key: str, spec: RegimeSpec) -> float:
    """The value over the env regimes of the configuration ``key`` (``Step.key``), from every step of ``traj``."""
    found = cells(spec, ((s.env, s.status, s.reward) for s in traj.steps if s.key == key))
    return value(found, spec.objective)


def _key(r: Row) -> tuple[float, float, int]:
    return r.failure_share, -r.value, r.first
