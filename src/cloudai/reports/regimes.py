"""Does the best configuration hold across environment regimes, or is it good only where the env was easy?

A regime is what ``space.RegimeBins`` says, as recorded in ``run.json`` by the run: one candidate of a list
param, one of ``REGIME_BINS`` equal bins of a range (log scale for a loguniform one) — the same regimes best.toml
and the terminal name. A run.json without them (older runs) falls back to the observed values, or their
quartiles for a continuous param, and the page says so. Each param is looked at on its own, so a few params do
not explode into a sparse cross product. In every
regime the best configuration's mean and min reward stand beside every measured configuration's mean. The
verdict calls it a *trap* when it is below the median configuration in some regime it was measured in, and
*unproven* when some regime never measured it; either way it names the most robust configuration (highest
worst-regime mean among those measured in every regime), if there is one.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from statistics import fmean
from typing import cast

from cloudai.display import show_action
from cloudai.reports.analysis import is_number
from cloudai.reports.trajectory import Step, Trajectory
from cloudai.space import RegimeBins


@dataclass(frozen=True)
class Regime:
    """The best configuration in one regime of one env param, beside every configuration measured there."""

    param: str
    label: str  # the value, or the bin of a continuous param
    best_mean: float  # NaN when the best configuration was never measured here
    best_min: float
    best_n: int
    all_mean: float  # mean over configurations of each one's mean reward here
    configs: int
    beaten_by: float  # share of configurations with a higher mean here (NaN when not measured)


@dataclass
class Regimes:
    rows: list[Regime]
    verdict: str
    trap: bool  # the best configuration is weak, or unproven, in some regime
    empty: list[str] = field(default_factory=list)  # "param=label" of declared regimes no scored trial reached
    guessed: list[str] = field(default_factory=list)  # params binned from observed values (no RegimeBins recorded)


def regimes(
    traj: Trajectory,
    best: Step | None = None,
    bins: Mapping[str, RegimeBins] | None = None,
    *,
    alternative: bool = True,
) -> Regimes | None:
    """Per env param, group scored steps by regime; None without a scored step or without env data.

    ``alternative``: name the most robust other configuration in the verdict. Off after a confirmation, whose
    winner is the run's one recommendation: the verdict is then a caveat on it, not a second recommendation.

    ``best``: the configuration to judge (the confirmed winner's step); default the highest-reward step.
    ``bins``: each param's regimes as the run recorded them (``Entry.regimes``); a param without falls back
    to ``labeller`` and is listed in ``Regimes.guessed``."""
    best = best or traj.best()
    if best is None or not traj.env_params:
        return None
    bins = bins or {}
    rows: list[Regime] = []
    empty: list[str] = []
    worst_per_param: list[dict[str, float]] = []  # per param: config measured in all its regimes -> worst mean
    import numpy as np  # only for a page with regimes: a plain run's report imports no numpy

    from cloudai.reports.regime_means import pair_means

    scored = traj.scored()
    keys, rewards = [s.key for s in scored], [s.reward for s in scored]
    configs = list(dict.fromkeys(keys))  # in order of first step
    code = dict(zip(configs, range(len(configs)), strict=True))
    config = np.fromiter(map(code.__getitem__, keys), np.intp, len(keys))
    reward = np.array(rewards, dtype=np.float64)
    best_code, best_at = code.get(best.key, -1), [i for i, k in enumerate(keys) if k == best.key]
    envs = list(map(attrgetter("env"), scored))
    for param in traj.env_params:
        labels = _labels([env.get(param) for env in envs], _label_of(traj, param, bins.get(param)), bins.get(param))
        order = _order_of(labels, bins.get(param))
        position: dict[str | None, int] = {label: i for i, label in enumerate(order)}
        position[None] = -1
        regime = np.fromiter(map(position.__getitem__, labels), np.intp, len(labels))
        pairs = pair_means(regime, config, reward, len(order), len(configs))
        declared = bins[param].labels() if param in bins else []
        empty += [f"{param}={label}" for label in declared if label not in position]
        for i, label in enumerate(order):
            means = pairs.regime(i)[1]
            mine = [rewards[j] for j in best_at if labels[j] == label]
            found = pairs.mean_of(i, best_code)
            best_mean = math.nan if found is None else found
            beaten = int(np.count_nonzero(means > best_mean)) / len(means) if mine else math.nan
            rows.append(Regime(param, label, best_mean, min(mine, default=math.nan), len(mine),
                               fmean(means.tolist()), len(means), beaten))  # fmt: skip
        worst = pairs.worst(len(order), len(configs))
        worst_per_param.append({configs[c]: value for c, value in worst.items()})
    common = set.intersection(*(set(w) for w in worst_per_param))
    worst_of = {k: min(w[k] for w in worst_per_param) for k in common}
    guessed = [p for p in traj.env_params if p not in bins]
    robust = _robust(traj, worst_of) if alternative else None
    return Regimes(rows, *_verdict(rows, empty, best, robust), empty=empty, guessed=guessed)


def _label_of(traj: Trajectory, param: str, bins: RegimeBins | None) -> Callable[[object], str]:
    """How a value of ``param`` is labelled: the run's own bins, else ``labeller`` of every step's value."""
    return bins.label if bins else labeller([s.env.get(param) for s in traj.steps])


def _order_of(labels: list[str | None], bins: RegimeBins | None) -> list[str]:
    """The regimes the steps were measured in (``labels``: each step's), in order: the declared one, else by value."""
    found = [label for label in dict.fromkeys(labels) if label is not None]
    if bins:  # the declared order; a value outside every candidate (a hand-edited env.csv) goes last
        order = {label: i for i, label in enumerate(bins.labels())}
        return sorted(found, key=lambda label: (order.get(label, len(order)), label))
    return sorted(found, key=_order)


MANY_VALUES = 256  # distinct values of a range param from which numpy labels them


def _labels(
    values: list[object], label_of: Callable[[object], str], bins: RegimeBins | None = None
) -> list[str | None]:
    """The regime label of each value (None for none), ``label_of`` called once per distinct value (1 and True
    are different values: of one type, the values themselves are the keys; of several, (type, value)). A range
    param's many distinct finite floats (a continuous one: ~2 10^4 of 10^5 steps) labelled by ``bins``' numpy
    columns (``RegimeBins.label_floats``), its other values one by one."""
    if len(set(map(type, values)) - {type(None)}) <= 1:
        distinct = [v for v in dict.fromkeys(values) if v is not None]
        numbers = cast("list[float]", distinct)  # when the first is a float: all are (one type)
        floats = len(distinct) >= MANY_VALUES and type(distinct[0]) is float and all(map(math.isfinite, numbers))
        found = bins.label_floats(numbers) if bins is not None and floats else None
        labels = found if found is not None else list(map(label_of, distinct))
        table: dict[object, str | None] = dict(zip(distinct, labels, strict=True))
        table[None] = None
        return list(map(table.__getitem__, values))
    pairs = list(zip(map(type, values), values, strict=True))
    typed = {p: None if p[1] is None else label_of(p[1]) for p in dict.fromkeys(pairs)}
    return list(map(typed.__getitem__, pairs))


def _order(label: str) -> tuple[int, float, str]:
    head = label.split(" to ")[0]
    try:
        return (0, float(head), label)
    except ValueError:
        return (1, 0.0, label)


def labeller(values: list[object]) -> Callable[[object], str]:
    """Value -> regime label for a run that recorded no ``RegimeBins`` (older run.json): the value itself, or its
    quartile bin of the observed values for a continuous numeric param."""
    present = [v for v in values if v is not None]
    numbers = sorted(float(v) for v in present if is_number(v))
    if len(numbers) != len(present) or len(set(numbers)) <= 6:
        return str
    edges = sorted({numbers[int(q * (len(numbers) - 1))] for q in (0.25, 0.5, 0.75)})
    bounds = [numbers[0], *edges, numbers[-1]]

    def label(v: object) -> str:
        if not is_number(v):
            return str(v)
        i = min(bisect_right(edges, float(v)), len(bounds) - 2)
        return f"{bounds[i]:.3g} to {bounds[i + 1]:.3g}"

    return label


def _robust(traj: Trajectory, worst_of: dict[str, float]) -> tuple[Step, float] | None:
    if not worst_of:
        return None
    key = max(worst_of, key=lambda k: worst_of[k])
    step = next(s for s in traj.steps if s.key == key)
    return step, worst_of[key]


def _verdict(rows: list[Regime], empty: list[str], best: Step, robust: tuple[Step, float] | None) -> tuple[str, bool]:
    """``empty``: declared regimes no trial reached: the best configuration is unproven there too."""
    hardest = min(rows, key=lambda r: r.all_mean)
    weak = [r for r in rows if r.best_n and r.configs > 1 and r.beaten_by > 0.5]
    unseen = [f"{r.param}={r.label}" for r in rows if not r.best_n] + empty
    alternative = ""
    if robust is not None and robust[0].key != best.key:
        alternative = (
            f" The most robust configuration measured in every regime is {show_action(robust[0].action)} "
            f"(worst regime mean {robust[1]:.4g})."
        )
    if weak:
        where = "; ".join(f"{r.param}={r.label}" for r in weak)
        return (
            f"Trap: the best configuration is below the median configuration in {where}. It looks best "
            f"because of the easier regimes.{alternative}",
            True,
        )
    if unseen:
        return (
            f"Unproven: the best configuration was never measured in {len(unseen)} of {len(rows) + len(empty)} "
            f"regimes ({_some(unseen)}; the hardest any configuration was measured in: "
            f"{hardest.param}={hardest.label}); it may be good only where it was tried.{alternative}",
            True,
        )
    return (
        f"The best configuration holds in every observed regime (hardest: {hardest.param}={hardest.label}, "
        f"where it averages {hardest.best_mean:.4g}).",
        False,
    )


def _some(labels: list[str], most: int = 6) -> str:
    return ", ".join(labels[:most]) + (f" and {len(labels) - most} more" if len(labels) > most else "")
