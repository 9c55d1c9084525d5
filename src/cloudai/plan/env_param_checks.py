"""The load-time rules of env_params that need the entry's space or its agent (``check_env_params``).

What env_params are and how they are drawn: ``cloudai.envs.env_params``. The rules a table can break on
its own (weights negative or all zero, normal without mean/std, weights with a distribution) live in the
``EnvParamSpec`` model and fire while the TOML loads; the ones here need the knobs (the param must name a
list- or range-valued cmd_arg) or the agent (it must sample env_params), so they run in ``plan``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.space import ENV_PREFIX, NUM_NODES, Categorical, Range, Space

if TYPE_CHECKING:
    from cloudai.agents.base import BaseAgent
    from cloudai.config.scenario import RunEntry
    from cloudai.config.test import EnvParamSpec


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


def check_env_param_targets(entry: RunEntry, space: Space) -> list[Problem]:
    """The rules that hold for any entry, plain ones too: each env_param names a list- or range-valued
    cmd_arg. (A plain entry has only scalars, so an ``[env_params.x]`` table there, empty or not, is
    an error rather than silently ignored.)"""
    return [p for name, spec in (entry.agent.env_params or {}).items() for p in _check_one(entry, space, name, spec)]


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
