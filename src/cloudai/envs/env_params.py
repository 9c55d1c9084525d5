"""env_params: knobs the environment samples each trial (domain randomization), and their sampler.

An ``[env_params.<name>]`` table marks the list- or range-valued ``cmd_args.<name>`` as drawn
by the environment, never chosen by the agent (``Space.without`` removes it from the action
space). The candidates stay in ``cmd_args``; ``EnvParamSpec`` says how to draw from them.

Contract of ``EnvParamSampler.sample(step)``: a pure function of (seed, name, step). Each
value comes from its own generator seeded with a stable string of the three (SHA-512 inside
``random.Random``; never the salted ``hash()``), so the draws of a step do not depend on the
agent, on ``max_parallel``, on which steps were sampled before, or on an interrupt and
``--resume`` in between; a different seed gives a different sequence. That also makes
peeking free: an agent may ask for step n's draw before it chooses step n's action (the
contextual ``bandit`` does, through ``env.env_param_sampler()``).

The load-time checks live in ``cloudai.plan.env_param_checks`` (they need the agent registry).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Mapping
from itertools import accumulate, product
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError
from cloudai.space import REGIME_BINS, Categorical, Range, RegimeBins, Space, env_cell

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.config.test import EnvParamSpec
    from cloudai.gymserver.spaces import ObsLeafDescriptor

Regime = tuple[str, ...]  # one label per env param, in ``names`` order


class EnvParamSampler:
    """Draws every env param of one run for any step; see the module docstring for the contract.

    ``specs`` are the entry's ``env_params`` (declaration order = ``names`` = env.csv column
    order), ``space`` the entry's whole space (env-param dimensions included).
    """

    def __init__(self, specs: Mapping[str, EnvParamSpec], space: Space, seed: int) -> None:
        dims = {d.name: d for d in space.dims}
        missing = [name for name in specs if name not in dims]
        if missing:
            raise ConfigError(f"env_params {missing} are not list- or range-valued knobs (run check_env_params first)")
        self.seed = seed
        self.names: list[str] = list(specs)
        self._params = [_Param(name, dims[name], specs[name]) for name in self.names]

    def sample(self, step: int) -> dict[str, Any]:
        """The env params of ``step``: a candidate for a list, a number (int for ``dtype = "int"``) for a range."""
        return {p.name: p.draw(random.Random(f"cloudai.env_params:{self.seed}:{p.name}:{step}")) for p in self._params}

    def confirmation_draw(self, k: int) -> dict[str, Any]:
        """Confirmation draw ``k`` (0, 1, ...): the env params every confirmed candidate is re-run under at its
        k-th re-run, so candidates are compared on the same draws (common random numbers).

        Stratified over the regimes (``regimes()``, the weighted combinations of the list params): draw k is in
        regime ``k mod R``, so R draws meet every regime once and each candidate is measured in each; a range
        param (noise, not a regime) is drawn as ``sample`` draws it, from its own generator keyed by k. A pure
        function of (seed, k), like ``sample``.
        """
        combos = self.regimes()
        chosen = dict(zip([p.name for p in self._params if p.weighted], combos[k % len(combos)], strict=True))
        rng = {p.name: random.Random(f"cloudai.env_params:{self.seed}:{p.name}:confirm:{k}") for p in self._params}
        return {p.name: chosen[p.name] if p.weighted else p.draw(rng[p.name]) for p in self._params}

    def regimes(self) -> list[tuple[Any, ...]]:
        """Every combination of the list params' candidates drawn with a positive weight, in declaration order
        (the first param varies slowest); ``[()]`` when every env param is a range."""
        return list(product(*(p.drawn() for p in self._params if p.weighted)))

    def descriptors(self) -> dict[str, ObsLeafDescriptor]:
        """Observation leaves for agents that take the env params as context: a list's index, a range's value."""
        from cloudai.gymserver.spaces import ObsLeafDescriptor

        return {
            p.name: ObsLeafDescriptor("categorical", n=len(p.dim.choices))
            if isinstance(p.dim, Categorical)
            else ObsLeafDescriptor("box", low=p.dim.low, high=p.dim.high)
            for p in self._params
        }

    def encode(self, values: Mapping[str, Any]) -> dict[str, int | float]:
        """``values`` as ``descriptors`` describe them: a candidate's index, a range value as float."""
        return {p.name: p.encode(values[p.name]) for p in self._params}

    def regime(self, values: Mapping[str, Any], bins: int) -> Regime:
        """Which regime ``values`` fall in (``RegimeBins``: a list's candidate, one of ``bins`` bins of a range).

        ``bins = 1`` puts a whole range in one regime (the param is treated as noise, not as context).
        """
        return tuple(p.bins(bins).label(values[p.name]) for p in self._params)

    def bins(self, bins: int = REGIME_BINS) -> dict[str, RegimeBins]:
        """Each param's regimes with ``bins`` bins per range: what run.json records for the report."""
        return {p.name: p.bins(bins) for p in self._params}


class _Param:
    """One env param: its dimension, its drawing rule and its cumulative weights."""

    def __init__(self, name: str, dim: Categorical | Range, spec: EnvParamSpec) -> None:
        self.name, self.dim, self.spec = name, dim, spec
        if isinstance(dim, Categorical):
            weights = spec.weights or [1.0] * len(dim.choices)
            self.cumulative = list(accumulate(weights))
            self.distribution = "choice"
        else:
            self.distribution = spec.distribution or ("loguniform" if dim.log else "uniform")

    def draw(self, rng: random.Random) -> Any:
        dim = self.dim
        if isinstance(dim, Categorical):
            u = rng.random() * self.cumulative[-1]
            return dim.choices[min(bisect_right(self.cumulative, u), len(dim.choices) - 1)]
        if self.distribution == "uniform" and dim.dtype == "int":
            return rng.randint(math.ceil(dim.low), math.floor(dim.high))
        if self.distribution == "uniform":
            return dim.clip(rng.uniform(dim.low, dim.high))
        if self.distribution == "loguniform":
            return dim.clip(math.exp(rng.uniform(math.log(dim.low), math.log(dim.high))))
        assert self.spec.mean is not None and self.spec.std is not None  # EnvParamSpec guarantees it
        return dim.clip(rng.gauss(self.spec.mean, self.spec.std))

    @property
    def weighted(self) -> bool:
        """A list param: its candidates are regimes. A range is noise averaged over within a regime."""
        return isinstance(self.dim, Categorical)

    def drawn(self) -> list[Any]:
        """A list param's candidates that can be drawn (positive weight)."""
        assert isinstance(self.dim, Categorical)
        weights = self.spec.weights or [1.0] * len(self.dim.choices)
        return [c for c, w in zip(self.dim.choices, weights, strict=True) if w > 0]

    def encode(self, value: Any) -> int | float:
        if isinstance(self.dim, Categorical):
            return [env_cell(c) for c in self.dim.choices].index(env_cell(value))
        return float(value)

    def bins(self, count: int) -> RegimeBins:
        """Regimes in the scale the param is drawn in: equal-width in log for ``loguniform``."""
        dim = self.dim
        if isinstance(dim, Categorical):
            weights = tuple(float(w) for w in self.spec.weights) if self.spec.weights else None
            return RegimeBins(candidates=tuple(env_cell(c) for c in dim.choices), weights=weights)
        return RegimeBins(low=dim.low, high=dim.high, log=self.distribution == "loguniform", count=count)


def sampler_for(entry: RunEntry, space: Space) -> EnvParamSampler | None:
    """The entry's sampler (seeded by ``env_seed``), or None when it declares no env_params."""
    specs = entry.agent.env_params
    return EnvParamSampler(specs, space, env_seed(entry)) if specs else None


def env_seed(entry: RunEntry) -> int:
    """The env_params seed: ``agent_config.seed``, else the test-level ``seed``, else 0."""
    seed = (entry.agent.config or {}).get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed
    return entry.agent.seed if entry.agent.seed is not None else 0
