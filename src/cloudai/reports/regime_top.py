"""The configurations of an env_params run, ranked by the recommendation's own estimate (no pooled mean).

A table that ranks by the mean over all of a configuration's measurements ranks by where the agent happened to
measure it (issue 40: ring measured mostly on a quiet network topped such a table, collnet measured mostly under
load was recommended). Here every configuration's value is ``regime_value``'s, and the order is the
recommendation's: the confirmed candidates first, as ``confirm.ranked`` orders them, then the configurations
measured in every regime (fewest failures, then highest value), then the rest, which have no value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cloudai.reports.confirm import Estimate, ranked
from cloudai.reports.regime_value import (
    NOT_MEASURED,
    Cell,
    Regime,
    RegimeSpec,
    cells,
    failure_share,
    memo_regime,
    value,
    value_ci95,
)
from cloudai.reports.trajectory import Step, Trajectory, action_key


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


def regime_top(
    traj: Trajectory, spec: RegimeSpec, confirmed: Sequence[Estimate] = (), limit: int | None = None
) -> list[Row]:
    """Every configuration with a scored step, best first (see the module docstring); the first ``limit`` only.

    Only the configurations that can rank are estimated: the confirmed candidates, those measured in every regime
    (the others have no value) and, when those are fewer than ``limit``, the first of the rest by first step. A
    10^5-step run has ~10^5 configurations, nearly all measured once: the table never estimates them all."""
    mine: dict[str, list[Step]] = {}
    for s in traj.steps:
        mine.setdefault(s.key, []).append(s)
    regime = memo_regime(spec)
    rows: dict[str, Row] = {}

    def row(key: str) -> Row:
        if key not in rows:
            steps = mine[key]
            found = cells(spec, ((s.env, s.status, s.reward) for s in steps), regime)
            rows[key] = Row(steps[0].step, "", dict(steps[0].action), found, value(found, spec.objective),
                            value_ci95(found, spec.objective), failure_share(found, spec.objective))  # fmt: skip
        return rows[key]

    scored = {s.key for s in traj.steps if s.scored}
    shown = [k for k in mine if k in scored]  # by first step, as the rest is ranked
    order = dict.fromkeys(action_key(e.action) for e in ranked(confirmed))
    number = {action_key(e.action): e.candidate for e in confirmed}
    heads = [k for k in order if k in scored]
    top = [replace(row(k), rank=f"candidate {number[k]}") for k in heads]
    others = [k for k in shown if k not in order]
    n = len(spec.weights)  # fewer steps than regimes (nearly every configuration of a long run): no value
    found = [row(k) for k in others if len(mine[k]) >= n and _everywhere(mine[k], regime, n)]
    top += [replace(r, rank="searched") for r in sorted((r for r in found if math.isfinite(r.value)), key=_key)]
    room = len(shown) if limit is None else max(limit - len(top), 0)
    rest = (r for k in others if not math.isfinite((r := row(k)).value))  # no value: some regime never measured
    top += [replace(r, rank="not in every regime") for r in itertools.islice(rest, room)]
    return top if limit is None else top[:limit]


def value_in(traj: Trajectory, key: str, spec: RegimeSpec) -> float:
    """The value over the env regimes of the configuration ``key`` (``Step.key``), from every step of ``traj``."""
    found = cells(spec, ((s.env, s.status, s.reward) for s in traj.steps if s.key == key))
    return value(found, spec.objective)


def _key(r: Row) -> tuple[float, float, int]:
    return r.failure_share, -r.value, r.first


def _everywhere(steps: list[Step], regime: Callable[[Mapping[str, Any]], Regime | None], regimes: int) -> bool:
    """Whether ``steps`` measured every one of the ``regimes`` (as ``cells`` counts: not cached, not pruned);
    without that a configuration has no value (``regime_value.value``)."""
    return len({r for s in steps if s.status not in NOT_MEASURED and (r := regime(s.env)) is not None}) == regimes
