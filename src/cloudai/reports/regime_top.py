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
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
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
    keys = list(map(attrgetter("key"), traj.steps))
    counts = Counter(keys)
    regime = memo_regime(spec)
    rows: dict[str, Row] = {}
    mine: dict[str, list[Step]] = {}  # the steps of each configuration a row is made for (``_steps_of``)

    def row(key: str) -> Row:
        if key not in rows:
            steps = mine[key]
            found = cells(spec, ((s.env, s.status, s.reward) for s in steps), regime)
            rows[key] = Row(steps[0].step, "", dict(steps[0].action), found, value(found, spec.objective),
                            value_ci95(found, spec.objective), failure_share(found, spec.objective))  # fmt: skip
        return rows[key]

    scored = set(itertools.compress(keys, map(attrgetter("scored"), traj.steps)))
    shown = [k for k in counts if k in scored]  # by first step (a Counter keeps the first order), as the rest is ranked
    order = dict.fromkeys(action_key(e.action) for e in ranked(confirmed))
    number = {action_key(e.action): e.candidate for e in confirmed}
    heads = [k for k in order if k in scored]
    others = [k for k in shown if k not in order]
    n = len(spec.weights)  # fewer steps than regimes (nearly every configuration of a long run): no value
    many = [k for k in others if counts[k] >= n]
    room = len(shown) if limit is None else max(limit - len(heads), 0)
    few = itertools.islice((k for k in others if counts[k] < n), room)  # no value: the rest's first, at most
    mine.update(_steps_of(traj.steps, keys, {*heads, *many, *few}))
    top = [replace(row(k), rank=f"candidate {number[k]}") for k in heads]
    found = [row(k) for k in many if _everywhere(mine[k], regime, n)]
    top += [replace(r, rank="searched") for r in sorted((r for r in found if math.isfinite(r.value)), key=_key)]
    room = len(shown) if limit is None else max(limit - len(top), 0)
    rest = (r for k in others if k in mine and not math.isfinite((r := row(k)).value))  # some regime never measured
    top += [replace(r, rank="not in every regime") for r in itertools.islice(rest, room)]
    return top if limit is None else top[:limit]


def _steps_of(steps: list[Step], keys: list[str], wanted: set[str]) -> dict[str, list[Step]]:
    """The steps of each configuration in ``wanted``, in step order (``keys``: each step's): one pass, no list made
    for the ~10^5 configurations a long run measured once and the table never shows."""
    found: dict[str, list[Step]] = {key: [] for key in wanted}
    for key, step in zip(keys, steps, strict=True):
        if key in found:
            found[key].append(step)
    return found


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
