"""env_params: knobs the environment samples each trial (domain randomization), and their checks.

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

``check_env_params`` holds every rule that needs the entry's space or agent; the rules a
table can break on its own (weights negative or all zero, normal without mean/std, weights
with a distribution) live in the ``EnvParamSpec`` model and fire at load time.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Mapping
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.space import ENV_PREFIX, NUM_NODES, Categorical, Range, Space
from cloudai.trajectory import env_cell

if TYPE_CHECKING:
    from cloudai.agents.base import BaseAgent
    from cloudai.config.scenario import RunEntry
    from cloudai.config.test import EnvParamSpec
    from cloudai.gym.spaces import ObsLeafDescriptor

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

    def descriptors(self) -> dict[str, ObsLeafDescriptor]:
        """Observation leaves for agents that take the env params as context: a list's index, a range's value."""
        from cloudai.gym.spaces import ObsLeafDescriptor

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
        """Which regime ``values`` fall in: a list's candidate, or one of ``bins`` equal bins of a range.

        Bins are equal-width in the range's sampling scale (log for ``loguniform``); ``bins = 1``
        puts the whole range in one regime (the param is treated as noise, not as context).
        """
        return tuple(p.label(values[p.name], bins) for p in self._params)

    def labels(self, bins: int) -> dict[str, list[str]]:
        """Every regime label of each param, in order: a list's candidates, a range's ``bins`` bins."""
        return {p.name: p.labels(bins) for p in self._params}


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

    def encode(self, value: Any) -> int | float:
        if isinstance(self.dim, Categorical):
            return [env_cell(c) for c in self.dim.choices].index(env_cell(value))
        return float(value)

    def labels(self, bins: int) -> list[str]:
        dim = self.dim
        if isinstance(dim, Categorical):
            return list(dict.fromkeys(env_cell(c) for c in dim.choices))
        if self.distribution == "loguniform":
            low, high = math.log(dim.low), math.log(dim.high)
            return [self.label(math.exp(low + (high - low) * (i + 0.5) / bins), bins) for i in range(bins)]
        return [self.label(dim.low + (dim.high - dim.low) * (i + 0.5) / bins, bins) for i in range(bins)]

    def label(self, value: Any, bins: int) -> str:
        dim = self.dim
        if isinstance(dim, Categorical):
            return env_cell(value)
        log = self.distribution == "loguniform"
        scale: Any = math.log if log else float
        low, high = scale(dim.low), scale(dim.high)
        index = min(max(int((scale(float(value)) - low) / (high - low) * bins), 0), bins - 1)
        edge = (lambda i: math.exp(low + (high - low) * i / bins)) if log else (lambda i: low + (high - low) * i / bins)
        closing = "]" if index == bins - 1 else ")"
        return f"[{edge(index):.4g}, {edge(index + 1):.4g}{closing}"


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


def check_env_params(entry: RunEntry, space: Space, agent_cls: type[BaseAgent]) -> list[Problem]:
    """Every env_params rule that needs the entry's knobs or agent, one ``Problem`` each.

    "env_params naming a field also swept by the agent" cannot happen for a whole knob: a
    name is one flat knob, and declaring it under env_params takes it out of the action space.
    What can happen is naming a *table* of cmd_args whose leaves the agent sweeps
    (``env_params.nccl`` with ``cmd_args.nccl.algo = [...]``): that is reported here.
    """
    specs = entry.agent.env_params or {}
    if not specs:
        return []
    file, prefix = str(entry.scenario_file), entry.field_prefix
    problems: list[Problem] = []
    if not agent_cls.samples_env_params:
        samplers = ", ".join(sampling_agents()) or "none installed"
        problems.append(
            Problem(
                file,
                f"{prefix}.env_params",
                f"agent '{agent_cls.name}' does not sample env_params (a randomized environment would break its sweep)"
                f"; agents that do: {samplers}",
                f'set agent = "<one of: {samplers}>", or remove env_params',
            )
        )
    for name, spec in specs.items():
        problems += _check_one(entry, space, name, spec)
    return problems


def sampling_agents() -> list[str]:
    """Names of the installed agents whose ``samples_env_params`` is True (a plugin that fails to load is skipped)."""
    from cloudai.agents import AGENTS

    names = []
    for name in AGENTS.names():
        try:
            if AGENTS.get(name).samples_env_params:
                names.append(name)
        except ConfigError:  # a broken plugin: reported where it is used, not here
            continue
    return names


def _check_one(entry: RunEntry, space: Space, name: str, spec: EnvParamSpec) -> list[Problem]:
    file, field = str(entry.scenario_file), f"{entry.field_prefix}.env_params.{name}"
    if name.startswith(ENV_PREFIX) or name == NUM_NODES:
        return [Problem(file, field, f"env_params apply to cmd_args only, not '{name}'", "move the knob to cmd_args")]
    if name in space.fixed:
        return [
            Problem(
                file,
                f"{entry.field_prefix}.cmd_args.{name}",
                f"env_params.{name} needs candidates, but cmd_args.{name} is the scalar {space.fixed[name]!r}",
                f"give cmd_args.{name} a list of candidates or a {{low, high}} range",
            )
        ]
    dims = {d.name: d for d in space.dims}
    if name not in dims:
        leaves = [k for k in (*space.fixed, *dims) if k.startswith(f"{name}.")]
        if leaves:
            swept = [k for k in leaves if k in dims]
            return [
                Problem(
                    file,
                    field,
                    f"'{name}' is a table of cmd_args ({', '.join(leaves)})"
                    + (f", swept by the agent: {', '.join(swept)}" if swept else ""),
                    f'env_params name one list- or range-valued leaf, quoted: [env_params."{(swept or leaves)[0]}"]',
                )
            ]
        knobs = [k for k in dims if not k.startswith(ENV_PREFIX) and k != NUM_NODES]
        return [Problem(file, field, f"no cmd_args.{name} to sample", did_you_mean(name, knobs))]
    return _check_rule(file, field, dims[name], spec)


def _check_rule(file: str, field: str, dim: Categorical | Range, spec: EnvParamSpec) -> list[Problem]:
    """The drawing rule against the candidates: weights fit a list, a distribution fits a range."""
    if isinstance(dim, Categorical):
        if spec.distribution is not None:
            return [
                Problem(
                    file,
                    f"{field}.distribution",
                    f"distribution applies to a range; cmd_args.{dim.name} is a list of {len(dim.choices)} candidates",
                    "use weights = [...] (one per candidate) for a list",
                )
            ]
        if spec.weights is not None and len(spec.weights) != len(dim.choices):
            return [
                Problem(
                    file,
                    f"{field}.weights",
                    f"{len(spec.weights)} weight(s) for {len(dim.choices)} candidate(s) of cmd_args.{dim.name}",
                    f"give exactly one weight per candidate: {list(dim.choices)!r}",
                )
            ]
        return []
    if spec.weights is not None:
        return [
            Problem(
                file,
                f"{field}.weights",
                f"weights apply to a list of candidates; cmd_args.{dim.name} is a range",
                'use distribution = "uniform" | "loguniform" | "normal" for a range',
            )
        ]
    if spec.distribution == "loguniform" and dim.low <= 0:
        return [
            Problem(file, f"{field}.distribution", f"loguniform needs low > 0 (cmd_args.{dim.name}.low = {dim.low:g})")
        ]
    if spec.mean is not None and not dim.low <= spec.mean <= dim.high:
        return [
            Problem(
                file,
                f"{field}.mean",
                f"mean {spec.mean:g} is outside cmd_args.{dim.name} [{dim.low:g}, {dim.high:g}]",
                "draws are clipped to the range: put the mean inside it",
            )
        ]
    return []
