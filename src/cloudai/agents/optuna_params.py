"""Each knob of the space as an Optuna distribution, and the ``suggest_*`` call that asks it.

A list is asked by index where its values are not Optuna's native types (``by_index``) or as an ordered integer
axis (``ordered``: ``agent_config.ordinal``); a range is a float or int distribution, log-scaled as declared.
"""

from __future__ import annotations

import math

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from cloudai.space import Categorical, Range


def suggest(trial: optuna.Trial, name: str, dist: BaseDistribution) -> None:
    """Ask ``trial`` for ``name`` from ``dist`` (the public ``suggest_*`` call of each distribution kind)."""
    if isinstance(dist, CategoricalDistribution):
        trial.suggest_categorical(name, dist.choices)
    elif isinstance(dist, IntDistribution):
        trial.suggest_int(name, dist.low, dist.high, log=dist.log)
    else:
        assert isinstance(dist, FloatDistribution)
        trial.suggest_float(name, dist.low, dist.high, log=dist.log)


def distribution(dim: Categorical | Range, by_index: bool, ordered: bool) -> BaseDistribution:
    if isinstance(dim, Categorical):
        if ordered:
            return IntDistribution(0, len(dim.choices) - 1)
        return CategoricalDistribution(tuple(range(len(dim.choices))) if by_index else dim.choices)
    if dim.dtype == "int":
        low = math.ceil(dim.low)
        return IntDistribution(low, max(low, math.floor(dim.high)), log=dim.log)
    return FloatDistribution(dim.low, dim.high, log=dim.log)
