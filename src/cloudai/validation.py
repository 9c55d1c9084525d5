"""Checks that need a registry: workload arguments, agents, rewards, routing.

``config`` checks what the files alone can tell; this module checks the merged scenario
against what is installed, and decides which entries are agent-driven. Every problem is
collected, so one run reports them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cloudai.config.scenario import RunEntry, Scenario
from cloudai.errors import ConfigError, Problem
from cloudai.space import ENV_PREFIX, NUM_NODES, Space, entry_knobs, parse_space
from cloudai.workloads import WORKLOADS


@dataclass(frozen=True)
class CheckedEntry:
    entry: RunEntry
    space: Space
    agent_driven: bool
    live_rl: bool


def knob_field(entry: RunEntry, name: str) -> str:
    """The TOML path of a knob, for messages: ``Tests[0].cmd_args.algo``."""
    if name.startswith(ENV_PREFIX) or name == NUM_NODES:
        return f"{entry.field_prefix}.{name}"
    return f"{entry.field_prefix}.cmd_args.{name}"


def is_live_rl(entry: RunEntry) -> bool:
    return entry.cmd_args.get("live_rl_mode") is True


def is_agent_driven(entry: RunEntry, space: Space) -> bool:
    """The routing rule: an agent runs the test when it has something to choose (a list or range
    knob in cmd_args or extra_env_vars, or a num_nodes list: a dimension of ``space``) or when it
    steps a live environment. Everything else is a plain job."""
    return is_live_rl(entry) or bool(space.dims)


def check_scenario(scenario: Scenario) -> dict[str, CheckedEntry]:
    """Validate every entry; return each entry's space and route. Raises one ``ConfigError``."""
    problems: list[Problem] = []
    checked: dict[str, CheckedEntry] = {}
    for entry in scenario.entries:
        try:
            checked[entry.id] = _check_entry(entry)
        except ConfigError as exc:
            problems += exc.problems
    if not problems:
        problems += _check_routes(scenario, checked)
    if problems:
        raise ConfigError(problems=problems)
    return checked


def _check_entry(entry: RunEntry) -> CheckedEntry:
    file = entry.scenario_file
    live = is_live_rl(entry)
    knobs = entry_knobs(entry.cmd_args, entry.extra_env_vars, entry.num_nodes)
    space = parse_space(knobs, file=file, field_of=lambda name: knob_field(entry, name))
    problems: list[Problem] = []
    if not live:
        workload_cls = WORKLOADS.get(entry.workload, file=_test_file(entry), field="test_template_name")
        problems += workload_cls().validate(space, file=file, prefix=f"{entry.field_prefix}.cmd_args")
    agent_driven = is_agent_driven(entry, space)
    if agent_driven:
        problems += _check_agent(entry, space, live)
    if problems:
        raise ConfigError(problems=problems)
    return CheckedEntry(entry, space, agent_driven, live)


def _check_agent(entry: RunEntry, space: Space, live: bool) -> list[Problem]:
    """Agent, reward and agent_config; the agent-specific rules live with each agent."""
    from cloudai.dse_checks import check_agent_entry

    return check_agent_entry(entry, space, live)


def _check_routes(scenario: Scenario, checked: dict[str, CheckedEntry]) -> list[Problem]:
    agent = [c.entry.id for c in checked.values() if c.agent_driven]
    plain = [c.entry.id for c in checked.values() if not c.agent_driven]
    if agent and plain:
        return [
            Problem(
                str(scenario.file),
                "Tests",
                f"scenario mixes agent-driven tests ({', '.join(agent)}) with plain tests ({', '.join(plain)})",
                "put agent-driven tests (a list/range cmd_arg, or live_rl_mode) in a scenario of their own",
            )
        ]
    return []


def _test_file(entry: RunEntry) -> Path:
    return entry.test_file or entry.scenario_file
