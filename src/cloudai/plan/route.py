"""Checks that need a registry: workload arguments, agents, rewards, routing.

``config`` checks what the files alone can tell; this module checks the merged scenario
against what is installed, and decides which entries are agent-driven. Every problem is
collected, so one run reports them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cloudai.config.scenario import RunEntry, Scenario
from cloudai.errors import ConfigError, Problem
from cloudai.plan.agent_checks import agent_space, check_agent_entry
from cloudai.plan.env_param_checks import check_env_param_targets
from cloudai.space import Range, Space, parse_space
from cloudai.workloads import WORKLOADS


@dataclass(frozen=True)
class CheckedEntry:
    entry: RunEntry
    space: Space
    agent_driven: bool
    live_rl: bool


def is_live_rl(entry: RunEntry) -> bool:
    return entry.cmd_args.get("live_rl_mode") is True


def is_agent_driven(entry: RunEntry, space: Space) -> bool:
    """The routing rule: an agent runs the test when it has something to choose (a list or range
    knob in cmd_args or extra_env_vars, or a num_nodes list: a dimension of ``space``) or when it
    steps a live environment. Everything else is a plain job."""
    return is_live_rl(entry) or bool(space.dims)


def check_scenario(scenario: Scenario) -> dict[str, CheckedEntry]:
    """Validate every entry; return each entry's space and route. Raises one ``ConfigError``."""
    checked, problems = scan_checks(scenario)
    if problems:
        raise ConfigError(problems=problems)
    return checked


def scan_checks(scenario: Scenario) -> tuple[dict[str, CheckedEntry], list[Problem]]:
    """``check_scenario`` without the stop: the entries that passed, and every problem of the others."""
    problems: list[Problem] = []
    checked: dict[str, CheckedEntry] = {}
    for entry in scenario.entries:
        try:
            checked[entry.id] = _check_entry(entry)
        except ConfigError as exc:
            problems += entry.attribute(exc.problems)
    if not problems:
        problems += _check_routes(scenario, checked)
    return checked, problems


def _check_entry(entry: RunEntry) -> CheckedEntry:
    file = entry.scenario_file
    live = is_live_rl(entry)
    workload_cls = None if live else WORKLOADS.get(entry.workload, file=_test_file(entry), field="test_template_name")
    whole = (*entry.whole, *(workload_cls.value_lists if workload_cls else ()))  # lists that are one value
    branches = workload_cls.branches if workload_cls else {}
    space = parse_space(
        entry.knobs, file=file, field_of=lambda name: entry.knob_field(name), whole=whole, branches=branches
    )
    problems: list[Problem] = []
    if workload_cls is not None:
        problems += workload_cls().validate(space, file=file, prefix=f"{entry.field_prefix}.cmd_args")
    agent_driven = is_agent_driven(entry, space)
    if agent_driven:
        problems += _check_agent(entry, space, live)
    elif entry.agent.env_params:
        problems += check_env_param_targets(entry, space) or [
            Problem(
                str(file),
                f"{entry.field_prefix}.env_params",
                f"env_params ({', '.join(sorted(entry.agent.env_params))}) on a plain test: nothing samples them",
                "env_params apply to agent-driven tests: give the knob a list or range of candidates and an agent",
            )
        ]
    if problems:
        raise ConfigError(problems=problems)
    return CheckedEntry(entry, space, agent_driven, live)


def _check_agent(entry: RunEntry, space: Space, live: bool) -> list[Problem]:
    """Agent, reward and agent_config; the agent-specific rules live with each agent."""

    return check_agent_entry(entry, space, live)


def _check_routes(scenario: Scenario, checked: dict[str, CheckedEntry]) -> list[Problem]:
    """Agent-driven and plain tests do not mix; hook entries (pre_test/post_test) are plain jobs around either."""
    hooks = [c.entry for c in checked.values() if c.entry.hook]
    problems = [
        Problem(
            str(e.test_file or e.scenario_file),
            _hook_knob_field(checked[e.id]),
            f"{e.hook} test '{e.test_name}' ({e.id}) has a list or range knob (or live_rl_mode); "
            "hook tests run as plain jobs",
            "give the hook test single values",
        )
        for e in hooks
        if checked[e.id].agent_driven
    ]
    agent = [c.entry.id for c in checked.values() if c.agent_driven and not c.entry.hook]
    plain = [c.entry.id for c in checked.values() if not c.agent_driven and not c.entry.hook]
    if agent and plain:
        problems.append(
            Problem(
                str(scenario.file),
                "Tests",
                f"scenario mixes agent-driven tests ({', '.join(agent)}) with plain tests ({', '.join(plain)})",
                "put agent-driven tests (a list/range cmd_arg, or live_rl_mode) in a scenario of their own",
            )
        )
    return problems


def _hook_knob_field(checked: CheckedEntry) -> str:
    """The test-file field that makes a hook entry agent-driven: its first knob, else ``live_rl_mode``."""
    entry, dims = checked.entry, checked.space.dims
    if not dims:
        return "cmd_args.live_rl_mode"
    return entry.knob_field(dims[0].name).removeprefix(f"{entry.field_prefix}.")


def _test_file(entry: RunEntry) -> Path:
    return entry.test_file or entry.scenario_file


def check_single_sbatch(
    checked: Mapping[str, CheckedEntry], single_sbatch: bool, scheduler: str = "slurm"
) -> list[Problem]:
    """``--single-sbatch`` renders one Slurm batch script up front, grids unrolled: it needs a Slurm
    system, and no live environment or range without grid_points can live in it."""
    if not single_sbatch:
        return []
    problems = [
        Problem(
            str(c.entry.scenario_file),
            f"{c.entry.field_prefix}.cmd_args.live_rl_mode",
            f"test '{c.entry.id}' is live RL, which cannot run with --single-sbatch",
            "drop --single-sbatch, or run the live-RL test in its own scenario",
        )
        for c in checked.values()
        if c.live_rl
    ]
    problems += [
        Problem(
            str(c.entry.scenario_file),
            c.entry.knob_field(d.name),
            f"--single-sbatch unrolls the grid of '{c.entry.id}', but '{d.name}' is a range without grid_points",
            "add grid_points = N to the range, or drop --single-sbatch",
        )
        for c in checked.values()
        if c.agent_driven and not c.live_rl
        for d in agent_space(c.entry, c.space).dims
        if isinstance(d, Range) and d.grid_points is None
    ]
    if scheduler != "slurm":
        hint = 'pass --system-config with scheduler = "slurm", or drop --single-sbatch'
        problems.append(Problem(None, "scheduler", f"--single-sbatch needs a Slurm system, not '{scheduler}'", hint))
    return problems
