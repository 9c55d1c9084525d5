"""Load-time checks of an agent-driven entry: agent, reward, metrics, agent_config, steps, env_params.

Called from ``cloudai.plan.route`` for every agent-driven entry, before anything is
written, so each problem is reported at once with exit code 2 and no results dir. The
helpers ``agent_space`` and ``default_steps`` are shared with ``cloudai.run.dse`` so that the
run does exactly what validation accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from cloudai.agents import AGENTS
from cloudai.config.messages import toml_value
from cloudai.config.scenario import RunEntry
from cloudai.config.tomlfile import problems_from
from cloudai.envs.rewards import GROWS_WITH_METRIC, REWARDS
from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.plan.env_param_checks import check_env_params
from cloudai.plan.points import check_enqueue
from cloudai.space import Categorical, Range, Space
from cloudai.workloads import WORKLOADS

if TYPE_CHECKING:
    from cloudai.agents.base import AgentConfig, BaseAgent


def agent_space(entry: RunEntry, space: Space) -> Space:
    """The space the agent chooses from: the entry's space minus the env-sampled dimensions."""
    return space.without(set(entry.agent.env_params or {}))


GRID_AGENTS = frozenset({"grid_search", "bandit"})  # they walk Space.grid_point: a range needs grid_points


def finite(space: Space, agent_cls: type[BaseAgent]) -> bool:
    """Whether the agent's space has a grid: every knob a list, or (grid agents) a range with grid_points."""
    if agent_cls.name in GRID_AGENTS:
        return space.has_grid
    return not any(isinstance(d, Range) for d in space.dims)


def default_steps(entry: RunEntry, space: Space, agent_cls: type[BaseAgent], valid: int | None = None) -> int | None:
    """``agent_steps``, or the grid size when the agent's space is finite (``valid``: how many of its points the
    workload's rule allows, when known: skipped points take no step); None when neither is known."""
    if entry.agent.steps is not None:
        return entry.agent.steps
    action = agent_space(entry, space)
    if not finite(action, agent_cls):
        return None
    return action.grid_size if valid is None or entry.agent.env_params else valid


def short_sweep_note(entry: RunEntry, space: Space, agent_cls: type[BaseAgent]) -> str | None:
    """What to tell the user when a sweep ends before ``agent_steps`` (grid smaller than asked): None otherwise."""
    steps = entry.agent.steps
    action = agent_space(entry, space)
    if steps is None or entry.cmd_args.get("live_rl_mode") or agent_cls.name not in ("grid_search", "random_search"):
        return None
    if not finite(action, agent_cls):
        return None
    repeats = agent_cls.name == "random_search" and bool(entry.agent.env_params)  # a new draw per pass
    if repeats or action.grid_size >= steps:
        return None
    return (
        f"{entry.id}: agent_steps = {steps}, but the grid has {action.grid_size} point(s): "
        f"{agent_cls.name} tries each once and stops after {action.grid_size} step(s)"
    )


def agent_config(entry: RunEntry, agent_cls: type[BaseAgent]) -> AgentConfig:
    """``agent_config`` validated by the agent's model; ``seed`` falls back to the test's ``seed``."""
    config = agent_cls.config_model.model_validate(entry.agent.config or {})
    if config.seed is None and entry.agent.seed is not None:
        config = config.model_copy(update={"seed": entry.agent.seed})
    return config


def _reward_against_objective(entry: RunEntry) -> list[Problem]:
    """``latency_us = "min"`` with ``identity`` would maximise the latency: a contradiction, refused."""
    objectives = entry.agent.objectives
    grows = GROWS_WITH_METRIC.get(entry.agent.reward)
    if not objectives or grows is None or grows == (objectives[0].direction == "max"):
        return []
    first = objectives[0]
    fitting = "identity or log" if first.direction == "max" else "negative or inverse"
    return [
        Problem(
            str(entry.scenario_file),
            f"{entry.field_prefix}.agent_reward_function",
            f"'{entry.agent.reward}' rewards a higher {first.metric}, but agent_objectives says "
            f'{first.metric} = "{first.direction}"',
            f"use {fitting}, or leave agent_reward_function out (it follows the objective)",
        )
    ]


def check_agent_entry(entry: RunEntry, space: Space, live: bool) -> list[Problem]:
    problems: list[Problem] = []
    prefix, file = entry.field_prefix, str(entry.scenario_file)
    try:
        REWARDS.get(entry.agent.reward, file=file, field=f"{prefix}.agent_reward_function")
    except ConfigError as exc:
        problems += exc.problems
    problems += _reward_against_objective(entry)
    try:
        agent_cls = AGENTS.get(entry.agent.name, file=file, field=f"{prefix}.agent")
    except ConfigError as exc:
        return problems + exc.problems
    try:
        config = agent_config(entry, agent_cls)
        if not live:  # a live server defines its space when the run starts: checked then
            problems += check_enqueue(entry, agent_space(entry, space), config.enqueue)
        problems += [
            Problem(file, f"{prefix}.agent_config.{name}", message)
            for name, message in agent_cls.entry_problems(config, len(entry.agent.objectives))
        ]
    except ValidationError as exc:
        problems += [
            Problem(
                file, f"{prefix}.agent_config.{p.field}" if p.field else f"{prefix}.agent_config", p.message, p.hint
            )
            for p in problems_from(exc, agent_cls.config_model, None)
        ]
    if not live:
        problems += _check_metrics(entry, space)
        problems += _check_space(entry, space, agent_cls)
    problems += check_env_params(entry, space, agent_cls)
    if live:
        from cloudai.gymserver.factory import validate_live_rl_args

        problems += validate_live_rl_args(entry.cmd_args, file, prefix=f"{prefix}.cmd_args")
    if live and entry.agent.steps is None:
        problems.append(Problem(file, f"{prefix}.agent_steps", "live RL needs agent_steps", "add agent_steps = N"))
    return problems


def _check_metrics(entry: RunEntry, space: Space) -> list[Problem]:
    declared = getattr(WORKLOADS.get(entry.workload), "metrics", None)
    if declared is not None and not declared:
        return [_nothing_to_optimise(entry, space)]
    return check_metric_names(
        entry.workload,
        entry.agent.metrics,
        str(entry.scenario_file),
        f"{entry.field_prefix}.agent_metrics",
        lambda name: _metric_field(entry, name),
    )


def _nothing_to_optimise(entry: RunEntry, space: Space) -> Problem:
    """A search over a workload without metrics, reported at the value that made it a search (``num_nodes =
    [1, 2]`` is the scenario's mistake, not the test file's ``test_template_name``)."""
    no_metrics = f"{entry.workload!r} reports no metrics, so an agent has nothing to optimise"
    if not space.dims:  # agent-driven by its agent fields alone
        hint = "make the test plain (no agent fields, no list or range values), or use a workload that writes metrics"
        return Problem(str(entry.scenario_file), f"{entry.field_prefix}.test_template_name", no_metrics, hint)
    dim = space.dims[0]
    value = list(dim.choices) if isinstance(dim, Categorical) else entry.knobs.get(dim.name)
    others = f" (and {', '.join(d.name for d in space.dims[1:])})" if len(space.dims) > 1 else ""
    one = dim.choices[0] if isinstance(dim, Categorical) else dim.low
    return Problem(
        str(entry.scenario_file),
        entry.knob_field(dim.name),
        f"{dim.name} = {toml_value(value)}{others} makes this a search (a list or range is a knob), but {no_metrics}",
        f"give one value ({dim.name} = {toml_value(one)}) to run it as a plain test, or use a workload that writes "
        "metrics",
    )


def check_metric_names(
    workload: str, metrics: Sequence[str], file: str, field: str, field_of: Callable[[str], str] | None = None
) -> list[Problem]:
    """Metric names against the workload's declared ``metrics`` (a workload that declares none is trusted);
    ``field_of(name)``: the field that brought a metric in (agent_metrics, agent_objectives, ...)."""
    declared = getattr(WORKLOADS.get(workload), "metrics", None)
    problems = []
    if len(set(metrics)) != len(metrics):
        problems.append(Problem(file, field, "a metric is listed twice"))
    if declared:
        for name in metrics:
            if name not in declared:
                hint = f"{did_you_mean(name, declared)} ({workload} reports: {', '.join(declared)})"
                problems.append(Problem(file, field_of(name) if field_of else field, f"unknown metric '{name}'", hint))
    return problems


def _metric_field(entry: RunEntry, name: str) -> str:
    """The field that brought metric ``name`` into the observation (agent_metrics, objectives, constraints)."""
    if any(o.metric == name for o in entry.agent.objectives):
        return f"{entry.field_prefix}.agent_objectives.{name}"
    if any(c.metric == name for c in entry.agent.constraints):
        return f"{entry.field_prefix}.agent_constraints.{name}"
    return f"{entry.field_prefix}.agent_metrics"


def _check_space(entry: RunEntry, space: Space, agent_cls: type[BaseAgent]) -> list[Problem]:
    file, prefix = str(entry.scenario_file), entry.field_prefix
    action = agent_space(entry, space)
    problems = []
    if agent_cls.name in GRID_AGENTS:
        for dim in action.dims:
            if isinstance(dim, Range) and dim.grid_points is None:
                problems.append(
                    Problem(
                        file,
                        entry.knob_field(dim.name),
                        f"{agent_cls.name} cannot use the range '{dim.name}' without grid_points",
                        'add grid_points = N to the range, or use agent = "random_search" or "optuna"',
                    )
                )
    if not problems and default_steps(entry, space, agent_cls) is None:
        problems.append(
            Problem(
                file,
                f"{prefix}.agent_steps",
                f"the space of '{entry.id}' has a continuous range, so {agent_cls.name} needs agent_steps",
                "add agent_steps = N (how many trials to run)",
            )
        )
    return problems
