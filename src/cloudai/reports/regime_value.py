"""A configuration's value under a randomized environment: estimated per regime, combined by the env's weights.

With ``env_params`` a measurement is of (configuration, environment draw). Pooling a configuration's rewards
across draws mixes regimes: a configuration an agent tried mostly where the network was quiet looks better than
one tried mostly under load, whatever each is worth. So every estimate here is per *regime*, and combined:

* A regime is one combination of the list-valued env params' candidates (``[env_params.X] weights``; the
  params are drawn independently, so its weight is the product of theirs). A range param (``jitter``) is not a
  regime: it is noise, averaged over inside each regime.
* A configuration's value in a regime is the mean of every scored measurement of it there (search steps and
  confirmation re-runs alike). Its value over the environment (``RegimeSpec.objective``) is the expectation,
  the weighted sum of those means (default), or ``worst``, the lowest regime mean. A regime it was never
  measured in leaves the value NaN: not guessed (confirmation measures every candidate in every regime).
* Its failure share is the same combination of each regime's share of failed measurements (constraint broken,
  crashed, timed out); the recommendation weighs it first. A regime where it only failed is left out of the
  value (the other regimes' weights rescaled): the failure share says what it costs.
* Two candidates re-run under the same draws (``EnvParamSampler.confirmation_draw``) are compared *paired*:
  per draw the difference of their rewards, combined over regimes like the value (``paired``), with a 95 % CI
  from the differences' spread within regimes.

Pure functions over (env_params, status, reward) triples: the run (``cloudai.run.confirm``) and the report
(``cloudai.reports.confirm``) build the same numbers from the same records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from statistics import fmean, stdev
from typing import Any, Literal

from cloudai.recordfiles import SCORED
from cloudai.space import RegimeBins

NOT_MEASURED = frozenset({"cached", "pruned"})
Objective = Literal["expectation", "worst"]
OBJECTIVES: tuple[Objective, ...] = ("expectation", "worst")
Regime = tuple[str, ...]  # one label per list env param, in ``RegimeSpec.names`` order
# Two-sided 95 % Student-t quantiles for 1..30 degrees of freedom; 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)  # fmt: skip


def t95(dof: int) -> float:
    return _T95[dof - 1] if 1 <= dof <= len(_T95) else 1.96


@dataclass(frozen=True)
class RegimeSpec:
    """The environment's regimes and their weights, and what "best over the environment" means (``objective``)."""

    bins: dict[str, RegimeBins]  # every env param's bins (``EnvParamSampler.bins()``, run.json)
    objective: Objective = "expectation"
    weights: dict[Regime, float] = field(init=False)  # regimes in draw order -> probability

    def __post_init__(self) -> None:
        shares = [{k: v for k, v in self.bins[n].shares().items() if v > 0} for n in self.names]
        weights = {combo: math.prod(s[label] for s, label in zip(shares, combo, strict=True))
                   for combo in product(*(list(s) for s in shares))}  # fmt: skip
        object.__setattr__(self, "weights", weights)

    @property
    def names(self) -> tuple[str, ...]:
        """The list params: what a regime is made of."""
        return tuple(n for n, b in self.bins.items() if b.candidates is not None)

    @property
    def noise(self) -> tuple[str, ...]:
        """The range params: averaged over within a regime."""
        return tuple(n for n, b in self.bins.items() if b.candidates is None)

    def regime(self, env: Mapping[str, Any]) -> Regime | None:
        """The regime of one step's env_params (None when a value is missing or outside every regime)."""
        if any(env.get(n) is None for n in self.names):
            return None
        found = tuple(self.bins[n].label(env[n]) for n in self.names)
        return found if found in self.weights else None

    def label(self, regime: Regime) -> str:
        return ", ".join(f"{n}={v}" for n, v in zip(self.names, regime, strict=True)) or "every draw"

    def describe(self) -> str:
        """What the value is, for a note: the objective, the regimes and weights, what is noise."""
        how = "expected value over" if self.objective == "expectation" else "worst regime mean of"
        cells = "; ".join(f"{self.label(r)} ({w:.3g})" for r, w in self.weights.items())
        noise = (
            f"; {', '.join(self.noise)} averaged over within each regime (noise, not a regime)" if self.noise else ""
        )
        return f"{how} the env_params regimes (weight): {cells}{noise}"


def memo_regime(spec: RegimeSpec) -> Callable[[Mapping[str, Any]], Regime | None]:
    """``spec.regime``, each distinct combination of the list params' values worked out once (a run draws a few
    combinations 10^5 times). Values are told apart by type too: ``1`` and ``True`` may be different regimes."""
    known: dict[tuple[object, ...], Regime | None] = {}
    names = spec.names

    def regime(env: Mapping[str, Any]) -> Regime | None:
        values = tuple(map(env.get, names))
        key = (values, tuple(map(type, values)))
        if key not in known:
            known[key] = spec.regime(env)
        return known[key]

    return regime


@dataclass(frozen=True)
class Cell:
    """One configuration in one regime: every measurement of it there."""

    regime: Regime
    weight: float
    rewards: tuple[float, ...]  # scored
    failed: int = 0

    @property
    def n(self) -> int:
        return len(self.rewards)

    @property
    def mean(self) -> float:
        return fmean(self.rewards) if self.rewards else math.nan

    @property
    def variance_of_mean(self) -> float:
        return stdev(self.rewards) ** 2 / self.n if self.n > 1 else math.nan

    @property
    def failure_share(self) -> float:
        return self.failed / (self.n + self.failed) if self.n + self.failed else 0.0


def cells(
    spec: RegimeSpec,
    measured: Iterable[tuple[Mapping[str, Any], str, float]],
    regime_of: Callable[[Mapping[str, Any]], Regime | None] | None = None,
) -> tuple[Cell, ...]:
    """One configuration's cells, every regime of ``spec`` in order (empty ones too), from its measurements
    ``(env_params, status, reward)``. Left out: a measurement in no regime (a hand-edited env.csv), a ``cached``
    step (the earlier measurement of the same draw, answered again) and a ``pruned`` one (stopped early).
    ``regime_of``: ``spec.regime`` or its ``memo_regime``."""
    regime_of = regime_of or spec.regime
    scored: dict[Regime, list[float]] = {r: [] for r in spec.weights}
    failed: dict[Regime, int] = dict.fromkeys(spec.weights, 0)
    for env, status, reward in measured:
        regime = regime_of(env)
        if regime is None or status in NOT_MEASURED:
            continue
        if status in SCORED and math.isfinite(reward):
            scored[regime].append(reward)
        else:
            failed[regime] += 1
    return tuple(Cell(r, w, tuple(scored[r]), failed[r]) for r, w in spec.weights.items())


def value(found: Sequence[Cell], objective: Objective) -> float:
    """The combined value over the regimes it scored in; NaN when some regime was never measured at all (not
    guessed). A regime where every measurement failed is left out, its weight shared by the others: its cost is
    ``failure_share``, which the recommendation weighs first."""
    if not found or any(not c.rewards and not c.failed for c in found):
        return math.nan
    scored = [c for c in found if c.rewards]
    if not scored:
        return math.nan
    if objective == "worst":
        return min(c.mean for c in scored)
    total = math.fsum(c.weight for c in scored)
    return math.fsum(c.weight * c.mean for c in scored) / total


def value_ci95(found: Sequence[Cell], objective: Objective) -> float:
    """Half-width of the combined value's 95 % CI (normal approximation; NaN where a scored regime has n < 2)."""
    scored = [c for c in found if c.rewards]
    if not scored or any(c.n < 2 for c in scored) or math.isnan(value(found, objective)):
        return math.nan
    if objective == "worst":
        worst = min(scored, key=lambda c: c.mean)
        return t95(worst.n - 1) * math.sqrt(worst.variance_of_mean)
    total = math.fsum(c.weight for c in scored)
    return 1.96 * math.sqrt(math.fsum((c.weight / total) ** 2 * c.variance_of_mean for c in scored))


def failure_share(found: Sequence[Cell], objective: Objective) -> float:
    """The chance a measurement fails, over the environment (``worst``: in the worst regime)."""
    if not found:
        return 0.0
    if objective == "worst":
        return max(c.failure_share for c in found)
    return math.fsum(c.weight * c.failure_share for c in found)


def selection_value(found: Sequence[Cell], objective: Objective, typical: Mapping[Regime, float]) -> float:
    """Which configurations to confirm: the value with a regime this configuration was never measured in taken
    at ``typical`` (there, the mean of every configuration measured in it: a neutral stand-in, neither the
    optimism of leaving the regime out nor a verdict; the confirmation then measures it). Only for choosing
    candidates, never for recommending one."""
    if not any(c.rewards for c in found):
        return math.nan
    means = [c.mean if c.rewards else typical.get(c.regime, math.nan) for c in found]
    known = [(c.weight, m) for c, m in zip(found, means, strict=True) if math.isfinite(m)]
    if objective == "worst":
        return min(m for _, m in known)
    total = math.fsum(w for w, _ in known)
    return math.fsum(w * m for w, m in known) / total if total > 0 else fmean(m for _, m in known)


@dataclass(frozen=True)
class Paired:
    """``a - b`` over the draws both were scored in: the combined difference, its 95 % CI, how many pairs."""

    diff: float
    ci95: float  # NaN: no spread to estimate (one pair per regime)
    pairs: int
    regimes: int  # regimes with at least one pair
    of: int  # regimes the objective needs

    @property
    def separable(self) -> bool:
        """The interval excludes 0 (and every regime the objective needs has a pair)."""
        whole = self.regimes == self.of and math.isfinite(self.diff) and math.isfinite(self.ci95)
        return whole and abs(self.diff) > self.ci95


def paired(
    spec: RegimeSpec,
    a: Mapping[int, tuple[Mapping[str, Any], float]],
    b: Mapping[int, tuple[Mapping[str, Any], float]],
) -> Paired:
    """``a`` and ``b``: draw -> (env_params, reward) of two candidates' scored re-runs. Per regime the mean
    difference over the draws both have; combined as the value is (``worst``: in a's worst regime, where a's
    value is decided). The CI pools the differences' spread within regimes (t with pairs - regimes dof). The
    regimes it needs are those either scored in (where both only failed, there is nothing to compare)."""
    either = {r for draws in (a, b) for env, _ in draws.values() if (r := spec.regime(env)) is not None}
    by_regime: dict[Regime, list[float]] = {}
    for k in sorted(set(a) & set(b)):
        regime = spec.regime(a[k][0])
        if regime is not None:
            by_regime.setdefault(regime, []).append(a[k][1] - b[k][1])
    pairs = sum(map(len, by_regime.values()))
    if not by_regime:
        return Paired(math.nan, math.nan, 0, 0, len(either))
    dof = pairs - len(by_regime)
    pooled = math.fsum((d - fmean(ds)) ** 2 for ds in by_regime.values() for d in ds) / dof if dof else math.nan
    if spec.objective == "worst":
        means = {r: fmean(ds) for r, ds in by_regime.items()}
        worst = min(by_regime, key=lambda r: fmean(x for k, (env, x) in a.items() if spec.regime(env) == r))
        diff, ci = means[worst], t95(dof) * math.sqrt(pooled / len(by_regime[worst])) if dof else math.nan
        return Paired(diff, ci, pairs, len(by_regime), len(either))
    weights = {r: spec.weights[r] for r in by_regime}
    total = math.fsum(weights.values())
    diff = math.fsum(weights[r] * fmean(ds) for r, ds in by_regime.items()) / total
    spread = math.fsum((weights[r] / total) ** 2 / len(ds) for r, ds in by_regime.items())
    ci = t95(dof) * math.sqrt(pooled * spread) if dof else math.nan
    return Paired(diff, ci, pairs, len(by_regime), len(either))
